"""A bottleneck whose rate changes during the transfer (`rate_steps`, `rate_step_ms`): the matrix
keys, the `tc` that applies a step, and one short transfer made for real (root; skips otherwise)
whose captures must show each step's rate, whose truth must hold, and that spline-analyze must
read within the issue's tolerances."""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import asdict, replace
from pathlib import Path

import numpy as np
import pytest

from spline_analysis import read
from spline_analysis.testbed.errors import TestbedError
from spline_analysis.testbed.netns import tbf_limit_bytes
from spline_analysis.testbed.rate_schedule import step_due, step_rate_bps, tbf_change_command
from spline_analysis.testbed.realhost_compare import compare_record, format_table
from spline_analysis.testbed.realhost_spec import load_matrix, matrix_from_document, recorded_transfer
from spline_analysis.testbed.vm import tcg_rate_step_warning

RATES = Path(__file__).resolve().parent.parent / "capture" / "experiments" / "realhost-rates.toml"
TOOLS = ("ip", "tc", "iptables", "ip6tables", "ethtool", "ss", "stdbuf", "tcpdump", "iperf3")


def one_transfer(**keys):
    return matrix_from_document({"transfer": [{"name": "t", **keys}]}).transfers[0]


def test_rate_steps_make_the_highest_step_the_transfer_rate_and_the_first_step_its_start():
    transfer = one_transfer(rate_steps=["20mbit", "100mbit", "5mbit"], rate_step_ms=300)
    assert transfer.rate_steps_bps == (20_000_000, 100_000_000, 5_000_000)
    assert transfer.rate_bps == 100_000_000
    assert transfer.initial_rate_bps == 20_000_000
    assert transfer.rate_step_ms == 300.0


def test_a_fixed_rate_transfer_has_no_schedule():
    transfer = one_transfer(rate="50mbit")
    assert transfer.rate_steps_bps == () and transfer.initial_rate_bps == transfer.rate_bps == 50_000_000


@pytest.mark.parametrize(
    "keys",
    [
        {"rate_steps": ["100mbit"], "rate_step_ms": 300},  # one rate is no schedule
        {"rate_steps": ["100mbit", "0"], "rate_step_ms": 300},  # a tbf has a rate
        {"rate_steps": ["100mbit", "5mbit"]},  # how long each lasts
        {"rate_steps": ["100mbit", "5mbit"], "rate_step_ms": 10},  # shorter than a busy host's tc
        {"rate_steps": ["100mbit", "5mbit"], "rate_step_ms": 300, "rate": "10mbit"},  # both
        {"rate_step_ms": 300},
    ],
)
def test_a_schedule_the_testbed_cannot_apply_is_refused(keys):
    with pytest.raises(TestbedError):
        one_transfer(**keys)


def test_a_recorded_transfer_keeps_its_schedule():
    transfer = one_transfer(rate_steps=["100mbit", "5mbit"], rate_step_ms=250)
    saved = json.loads(json.dumps(asdict(transfer)))  # as truth.json holds it
    assert recorded_transfer(saved) == transfer


def test_each_step_keeps_the_queue_and_the_bucket_of_the_highest_rate():
    # a GSO packet the fast step's bucket passed whole into the queue must fit it at the slow step
    transfer = one_transfer(rate_steps=["100mbit", "5mbit"], rate_step_ms=300, queue_ms=10)
    fast, slow = (tbf_change_command(transfer, "rhr1", rate) for rate in transfer.rate_steps_bps)
    limit = str(tbf_limit_bytes(100_000_000, 10))
    assert fast[fast.index("limit") + 1] == slow[slow.index("limit") + 1] == limit
    assert fast[fast.index("burst") + 1] == slow[slow.index("burst") + 1] == "12500"
    assert slow[slow.index("rate") + 1] == "5000000bit"
    assert fast[:5] == ["tc", "qdisc", "change", "dev", "rhr1"] and fast[5:8] == ["root", "handle", "1:"]


def test_the_tbf_under_netem_is_changed_as_netem_child():
    transfer = one_transfer(rate_steps=["100mbit", "5mbit"], rate_step_ms=300, delay="10ms")
    assert tbf_change_command(transfer, "rhr1", 5_000_000)[5:9] == ["parent", "1:", "handle", "2:"]


def test_steps_are_due_on_the_schedule_clock_and_cycle_through_the_rates():
    assert [step_due(s, 300.0) for s in (0.0, 0.299, 0.3, 0.95, 3.0)] == [0, 0, 1, 3, 10]
    assert [step_rate_bps((1, 2, 3), i) for i in range(7)] == [1, 2, 3, 1, 2, 3, 1]


def test_steps_shorter_than_two_of_tcgs_execs_are_warned_under_tcg_only():
    warning = tcg_rate_step_warning([300.0, 2000.0, 300.0], kvm=False)
    assert warning is not None and "rate steps of 300 ms" in warning and "2000" not in warning
    assert tcg_rate_step_warning([300.0], kvm=True) is None
    assert tcg_rate_step_warning([1000.0], kvm=False) is None


def test_the_committed_rates_matrix_spans_the_conditions_it_is_for():
    transfers = load_matrix(RATES).transfers
    assert 8 <= len(transfers) <= 12
    assert {t.offloads for t in transfers} >= {"off", "gro", "tso+gro"}
    assert {t.family for t in transfers} == {4, 6} and {t.cca for t in transfers} == {"cubic", "bbr", "reno"}
    assert all(t.rate_steps_bps and 100 <= t.rate_step_ms <= 500 for t in transfers)
    assert all(2_000_000 <= min(t.rate_steps_bps) <= 10_000_000 for t in transfers)
    assert any(t.data_loss > 0 for t in transfers) and any(t.data_loss == 0 for t in transfers)
    assert any(t.ack_loss > 0 for t in transfers)


# --- one short transfer, for real --------------------------------------------------------------

# three reno flows, 0.5% random data loss, 1% ACK loss, 40/10/20/3 Mbit/s in 400 ms steps: the
# queue overflows when the rate falls (85 of 126 lost segments in the first run)
LIVE = "rs-off-v4-p3-reno-l0.5-a1"
LIVE_DURATION_S = 4.0


def payload_bits_per_step(pcap: Path, steps, server_port: int) -> list:
    """(rate the step set, bit/s of data that left the router in it) for each whole step applied
    during the transfer, from the router's egress capture (the captures' clock is the steps')."""
    packets = read(pcap).packets
    times_s = np.asarray(packets["ts_ns"]) / 1e9
    payload = np.asarray(packets["tcp_payload_len"])
    data = (payload > 0) & (np.asarray(packets["dport"]) == server_port)
    during = [s for s in steps if not s["after_transfer"]]
    found = []
    for step, following in zip(during, during[1:]):
        start_s, end_s = step["applied_epoch_s"], following["applied_epoch_s"]
        inside = data & (times_s >= start_s) & (times_s < end_s)
        found.append((step["rate_bps"], 8.0 * payload[inside].sum() / (end_s - start_s)))
    return found


@pytest.mark.root
@pytest.mark.skipif(
    os.geteuid() != 0 or not all(shutil.which(t) for t in TOOLS),
    reason="needs root, iproute2, iptables, ip6tables, ethtool, tcpdump, iperf3",
)
def test_a_rate_step_transfer_applies_its_schedule_keeps_its_truth_and_is_read_within_tolerance(tmp_path):
    from spline_analysis.testbed.realhost import run_transfer

    transfer = {t.name: t for t in load_matrix(RATES).transfers}[LIVE]
    transfer = replace(transfer, duration_s=LIVE_DURATION_S)
    record = run_transfer(transfer, tmp_path / LIVE, f"vr{os.getpid() % 100000}-1")
    steps = record.truth.rate_schedule
    assert steps is not None
    during = [s for s in steps if not s["after_transfer"]]
    # every step applied on time (a busy host's tc takes tens of ms, not a step), cycled in order
    assert len(during) >= LIVE_DURATION_S * 1000 / transfer.rate_step_ms, steps
    assert [s["rate_bps"] for s in during] == [step_rate_bps(transfer.rate_steps_bps, s["index"]) for s in during]
    assert all(0 <= s["applied_s"] - s["due_s"] < transfer.rate_step_ms / 2000 for s in during), steps
    # ... and last, the highest rate once the client was done, so the queue drained before the counts
    assert steps[-1]["after_transfer"] and steps[-1]["rate_bps"] == transfer.rate_bps
    # the router's egress carried no step faster than its rate allows (a bucket of ~1 ms at the
    # rate, refilled at each change) and the fast steps far more than the slow ones
    measured = payload_bits_per_step(Path(record.captures["router-out"].pcap), steps, 5201)
    assert all(
        bits_per_s <= 1.1 * rate + 8 * 12_500 / (transfer.rate_step_ms / 1000) for rate, bits_per_s in measured
    ), measured
    by_rate = {rate: [b for r, b in measured if r == rate] for rate in transfer.rate_steps_bps}
    assert np.median(by_rate[max(by_rate)]) > 5 * np.median(by_rate[min(by_rate)]), measured
    # the truth holds across the changes: the qdisc's counters ran on through every `tc qdisc
    # change` (one packet a segment here, no TSO), so its drops are every lost segment the
    # random-drop rule did not take
    truth = record.truth
    counts = (truth.data_drop_segments, truth.qdisc_drops, truth.other_drop_segments, record.qdisc_text)
    assert truth.data_drop_segments > 0 and truth.qdisc_drops > 0, counts
    assert truth.qdisc_drops == truth.other_drop_segments, counts
    assert f"rate {transfer.rate_bps // 1_000_000}Mbit" in record.qdisc_text
    rows = compare_record(record.to_json())
    assert all(row["ok"] for row in rows), "\n" + format_table(rows)
