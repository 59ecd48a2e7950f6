"""A few transfers of the committed real-host matrix, made for real and held to its tolerances.

Each runs 8 s through three namespaces (root; iproute2, iptables, ip6tables, ethtool,
tcpdump, iperf3; skips otherwise) and is captured at the sender, the receiver, the router
with `-i any` and the router's egress. The hosts' own counters must agree with each other
and with the router's own account of every copy (each retransmission needed or
spurious), and spline-analyze must agree with them within the issue's tolerances, raising
the warnings the conditions explain and no others; at the sender, its label of each
retransmission is held to the router's.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path

import pytest

from spline_analysis.testbed import cli, netns
from spline_analysis.testbed.realhost import ADDRESSES, build_hosts, run_transfer
from spline_analysis.testbed.realhost_compare import compare_record, format_table
from spline_analysis.testbed.realhost_spec import LOST_TOLERANCE, load_matrix

TOOLS = ("ip", "tc", "iptables", "ip6tables", "ethtool", "ss", "stdbuf", "tcpdump", "iperf3")
pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or not all(shutil.which(t) for t in TOOLS),
    reason="needs root, iproute2, iptables, ip6tables, ethtool, tcpdump, iperf3",
)
MATRIX = Path(__file__).resolve().parent.parent / "capture" / "experiments" / "realhost-matrix.toml"
# 8 s, not 3: the downstream IPv6 count misses the lost repairs that leave no trace (about 1.6%
# of the drops on the sub-millisecond gro-v6-p1-cubic-l2 path, a Poisson count), so its error's
# spread shrinks with the drops a run holds: 20 fresh 3-second runs (~240 drops) read -1.6% +-
# 0.9% and 1 of 20 passed the 3% tolerance; 8 s holds ~640 drops (spread ~0.5%).
DURATION_S = 8.0
# transfer -> the capture points held to the tolerances here. IPv6 downstream of the drops
# counts holes and lost repairs (no IP ID); a loss at the head of the data that nothing after
# it revealed leaves no hole, and on a path shorter than a TSval tick about half of the lost
# repairs leave nothing to see, so the count runs a little low.
# The bbr transfer's sender (+5.2%) and -i any (+8%) read high while a TSO repeat D-SACKed a
# segment at a time went unrecognised; both now hold (22 of 22 captures, s20). Its receiver
# and egress captures still read -4.2% to -6.0% in 3 of those 22 (holes that leave no trace
# downstream, no spurious retransmission involved): not held here (open in issue 8).
SUBSET = {
    "gro-v4-p3-reno-l1-a1": ("sender", "receiver", "router-any", "router-out"),
    "tso-gro-v4-p3-cubic-l1": ("sender", "receiver", "router-any", "router-out"),
    "gro-v6-p1-cubic-l2": ("sender", "receiver", "router-any", "router-out"),
    "tso-gro-v6-p1-bbr-l2": ("sender", "router-any"),
}


@pytest.fixture(scope="module")
def out_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("realhost")


@pytest.fixture(scope="module")
def made(out_dir):
    """Each transfer of SUBSET, made once into OUT/runs/NAME, with its comparison rows by capture point."""
    transfers = {t.name: t for t in load_matrix(MATRIX).transfers}
    results = {}
    for number, name in enumerate(SUBSET):
        transfer = replace(transfers[name], duration_s=DURATION_S)
        record = run_transfer(transfer, out_dir / "runs" / name, f"t{os.getpid() % 100000}-{number}")
        results[name] = (record, {row["vantage"]: row for row in compare_record(record.to_json())})
    return results


@pytest.mark.parametrize("name", SUBSET)
def test_each_retransmission_was_needed_or_spurious_and_the_hosts_counters_say_the_same(made, name):
    """The router's two sides follow every copy (realhost_retransmissions): they must see what
    the hosts counted, and split the sender's retransmissions into needed and spurious so that
    both of the hosts' counts follow. A sender may retransmit spuriously (a loss probe, a
    timer, a reordered segment), so TCP_INFO's retransmissions exceed the drops by those."""
    record, _ = made[name]
    truth = record.truth
    router = truth.retransmissions
    assert truth.data_drop_segments > 50 and truth.lost_segments >= truth.data_drop_segments
    if record.transfer.sender_tso:
        assert truth.data_drop_segments > truth.data_drop_packets, "no GSO packet reached the router whole"
    assert router is not None and router["unmatched_out_copies"] == 0
    # the router saw what left the sender and what never arrived, segment for segment
    assert (router["sent_segments"], router["lost_segments"]) == (truth.sent_segments, truth.lost_segments)
    # every retransmission the sender counted, each either needed or spurious
    assert router["needed"] + router["spurious"] == router["retransmitted_segments"] == truth.retransmissions_at_close
    # every copy lost was needed again, or was a spurious copy lost as well
    assert truth.lost_segments == router["needed"] + router["spurious_dropped"] + router["undelivered_segments"]
    assert all(c.counters["captured"] and c.counters["kernel_drops"] == 0 for c in record.captures.values())


CASES = [(name, vantage) for name, vantages in SUBSET.items() for vantage in vantages]


@pytest.mark.parametrize("name,vantage", CASES)
def test_spline_analyze_agrees_with_the_hosts_within_the_issue_tolerances(made, name, vantage):
    """Lost segments, retransmissions at the sender (both counts) and warnings.

    Goodput and delivered bytes are left to the matrix report: at the end of a test the
    receiving iperf3 resets its connections with a window in flight, which spline-analyze
    counts as delivered (up to 0.9 MB, 2.7% of a 4 s test, here) and whose drain stretches
    the span it divides by; on a 3 s test that alone can pass the 2% tolerance.
    """
    _, rows = made[name]
    row = rows[vantage]
    assert row["directions_found"] == made[name][0].transfer.flows
    assert row["lost_ok"] and row["retransmissions_ok"] is not False and row["warnings_ok"], "\n" + format_table([row])


@pytest.mark.parametrize("name", SUBSET)
def test_at_the_sender_each_retransmission_is_labelled_needed_or_spurious_as_the_router_saw_it(made, name):
    """Every copy the router saw repeat is a retransmission in the sender's capture, and its
    label (spurious, or a kind of needed) is the router's for all but a few: within the lost
    tolerance of the sender, since each spurious one taken as needed counts as lost."""
    record, rows = made[name]
    row, router = rows["sender"], record.truth.retransmissions
    assert router is not None and row["retransmissions_not_labelled"] == 0
    mislabelled = row["spurious_taken_as_needed"] + row["needed_taken_as_spurious"]
    assert mislabelled <= LOST_TOLERANCE["sender"] * router["retransmitted_segments"], (router, row)


def test_reanalyse_compares_the_finished_transfers_again_and_writes_the_results(made, out_dir, capsys):
    status = cli.main(["realhost", "--out", str(out_dir), "--reanalyse"])
    printed = capsys.readouterr().out
    rows = list(csv.DictReader(open(out_dir / "results.csv", encoding="utf-8")))
    expected = {(name, vantage) for name, (record, _) in made.items() for vantage in record.transfer.vantages}
    assert {(r["transfer"], r["vantage"]) for r in rows} == expected
    assert status == (0 if all(r["ok"] == "True" for r in rows) else 1)
    assert all(name in printed for name in SUBSET) and "captures within every tolerance" in printed
    document = json.loads((out_dir / "results.json").read_text(encoding="utf-8"))
    assert len(document["rows"]) == len(rows) and len(document["transfers"]) == len(SUBSET)


def test_the_hosts_ipv6_addresses_are_usable_as_built_so_a_transfer_starts_at_once():
    """No address of the three hosts is left tentative (duplicate address detection) once they
    are built: neighbour discovery from a tentative link-local address waited 1-2 s, the router
    held the first SYN until it was sent a third time, and every IPv6 transfer's data began
    1.0-2.0 s after iperf3 started, while the random drops stop on iperf3's clock."""
    with ExitStack() as stack:
        names = build_hosts(stack, f"dad{os.getpid() % 100000}")
        for namespace_name in names.values():
            tentative = netns.run_command(["ip", "-6", "addr", "show", "tentative"], namespace=namespace_name)
            assert "inet6" not in tentative.stdout, (namespace_name, tentative.stdout)
        receiver = ADDRESSES[6]["receiver"]
        listen = (
            f"import socket; s = socket.socket(socket.AF_INET6); s.bind(('{receiver}', 5299)); s.listen(); s.accept()"
        )
        server = subprocess.Popen(netns.in_namespace(["python3", "-c", listen], names["rcv"]))
        try:
            assert netns.wait_until(lambda: netns.tcp_port_listening(names["rcv"], 5299), 10)
            connect = f"import socket, time; t = time.monotonic(); socket.create_connection(('{receiver}', 5299), timeout=10); print(time.monotonic() - t)"
            took_s = float(netns.run_command(["python3", "-c", connect], namespace=names["snd"]).stdout)
            assert took_s < 0.5, took_s
        finally:
            server.kill()
            server.wait(5)
