"""Transfers both ways at once (`bidir`, iperf3 --bidir): each capture point a sender and a receiver.

The unit tests hold the matrix key, the way back's path, rules and truth, and the comparison's
two rows per capture point; the live ones (root, iproute2, iptables, ethtool, tcpdump, iperf3;
skipped otherwise) make one transfer of the committed bidir matrix and hold both directions'
truth to each other and spline-analyze to each direction's truth at the role each capture plays.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from spline_analysis.testbed.errors import TestbedError
from spline_analysis.testbed.realhost import (
    CLIENT_PORT,
    REVERSE_CHAINS,
    SERVER_PORT,
    add_reverse_rules,
    counted_segments,
    iperf3_truth,
    parse_ss_info,
    reverse_client_ports,
    reverse_receiver_document,
    router_qdisc_commands,
    run_transfer,
    unread_at_end_s,
)
from spline_analysis.testbed.realhost_compare import (
    REVERSE_NAME_SUFFIX,
    compare_record,
    data_directions,
    delivery_rate_bps,
    format_table,
    write_csv,
)
from spline_analysis.testbed.realhost_retransmissions import client_side_ports, sender_data_rows
from spline_analysis.testbed.realhost_spec import (
    REVERSE_ROLE,
    Transfer,
    expected_warnings,
    load_matrix,
    matrix_from_document,
    reverse_transfer,
)

MATRIX = Path(__file__).resolve().parent.parent / "capture" / "experiments" / "realhost-bidir.toml"
SENDER, RECEIVER = "10.72.1.1", "10.72.2.1"


def test_bidir_is_a_switch_refused_beside_settings_of_one_way_only():
    table = {"name": "b", "bidir": True, "data_loss": "1%"}
    assert matrix_from_document({"transfer": [table]}).transfers[0].bidir
    assert not matrix_from_document({"transfer": [{"name": "o"}]}).transfers[0].bidir
    for key, value in (("jitter", "2ms"), ("syn_loss", "1%"), ("receiver_rmem_kib", 64), ("path_mtu", 1400)):
        extra = {"delay": "5ms"} if key == "jitter" else {}
        with pytest.raises(TestbedError, match=key):
            matrix_from_document({"transfer": [{**table, key: value, **extra}]})
    with pytest.raises(TestbedError, match="bidir"):
        matrix_from_document({"transfer": [{**table, "connections": 3, "connection_kib": 100}]})
    with pytest.raises(TestbedError, match="true or false"):
        matrix_from_document({"transfer": [{**table, "bidir": "yes"}]})


def test_the_way_back_swaps_the_hosts_their_mtus_bridges_delays_and_the_capture_points_roles():
    there = Transfer(
        name="b",
        bidir=True,
        delay_ms=20.0,
        ack_delay_ms=5.0,
        sender_mtu=1400,
        bridged=("receiver",),
        vantages=("sender", "receiver", "router-in", "router-out", "router-any", "sender-any"),
    )
    back = reverse_transfer(there)
    assert (back.delay_ms, back.ack_delay_ms) == (5.0, 20.0)
    assert (back.sender_mtu, back.receiver_mtu, back.bridged) == (1500, 1400, ("sender",))
    assert back.vantages == ("receiver", "sender", "router-out", "router-in", "router-any", "receiver-any")
    assert all(REVERSE_ROLE[REVERSE_ROLE[v]] == v for v in REVERSE_ROLE)
    assert reverse_transfer(back) == there


def test_the_way_back_runs_on_client_ports_after_the_way_theres_and_none_one_way():
    assert reverse_client_ports(Transfer(name="b", flows=2, bidir=True)) == [CLIENT_PORT + 2, CLIENT_PORT + 3]
    assert reverse_client_ports(Transfer(name="o", flows=2)) == []


def test_the_way_back_queues_behind_a_tbf_of_the_same_rate_under_its_own_delay():
    one_way = router_qdisc_commands(Transfer(name="o", ack_delay_ms=5.0))
    both = router_qdisc_commands(Transfer(name="b", ack_delay_ms=5.0, bidir=True))
    added = [c for c in both if c not in one_way]
    assert len(added) == 1 and added[0][4:10] == ["rhr0", "parent", "1:", "handle", "2:", "tbf"]
    tbf_there = next(c for c in both if c[4] == "rhr1" and "tbf" in c)
    assert added[0][added[0].index("tbf") :] == tbf_there[tbf_there.index("tbf") :]
    (undelayed,) = [c for c in router_qdisc_commands(Transfer(name="b", bidir=True)) if c[4] == "rhr0"]
    assert undelayed[5:9] == ["root", "handle", "1:", "tbf"]
    assert router_qdisc_commands(Transfer(name="u", rate_bps=0, bidir=True)) == []


def test_the_way_backs_rules_count_its_segments_at_both_hosts_and_drop_its_data_and_acks_at_random():
    names = {"snd": "S", "rtr": "R", "rcv": "C"}
    batch = {name: [] for name in names.values()}
    add_reverse_rules(batch, names, Transfer(name="b", data_loss=0.02, ack_loss=0.01, bidir=True), [41003, 41004])
    sent = [r for r in batch["C"] if r[:2] == ["-A", "OUTPUT"]]
    arrived = [r for r in batch["S"] if r[:2] == ["-A", "INPUT"]]
    assert sent and arrived and sent[0][-1] == "RHRSENT" and arrived[0][-1] == "RHRARRIVED"
    for rule in sent + arrived:
        assert rule[rule.index("--sport") + 1] == str(SERVER_PORT) and rule[rule.index("--dport") + 1] == "41003:41004"
    drops = [r for r in batch["R"] if r[0] == "-A" and r[-1] == "RHRDROP"]
    assert len(drops) == 1 and drops[0][2:6] == ["-i", "rhr1", "-o", "rhr0"] and "0.020000" in drops[0]
    acks = [r for r in batch["R"] if r[0] == "-A" and r[-1] == "RHRACKDROP"]
    assert len(acks) == 1 and acks[0][2:6] == ["-i", "rhr0", "-o", "rhr1"] and "0.010000" in acks[0]
    assert acks[0][acks[0].index("--sport") + 1] == "41003:41004"
    quiet = {name: [] for name in names.values()}
    add_reverse_rules(quiet, names, Transfer(name="b", bidir=True), [41003])
    assert not [r for r in quiet["R"] if r[0] == "-A" and r[-1] in ("RHRDROP", "RHRACKDROP")]


LISTINGS = """Chain RHSENT (1 references)
    pkts      bytes target     prot opt in     out     source               destination
     100   150000            all  --  *      *       0.0.0.0/0            0.0.0.0/0            /* seg1 */
     100   150000            all  --  *      *       0.0.0.0/0            0.0.0.0/0            /* packets */
Chain RHRSENT (1 references)
    pkts      bytes target     prot opt in     out     source               destination
      70   100000            all  --  *      *       0.0.0.0/0            0.0.0.0/0            /* seg1 */
      10    29000            all  --  *      *       0.0.0.0/0            0.0.0.0/0            /* seg2 */
      80   129000            all  --  *      *       0.0.0.0/0            0.0.0.0/0            /* packets */
Chain RHRDROP (1 references)
    pkts      bytes target     prot opt in     out     source               destination
       3     4500            all  --  *      *       0.0.0.0/0            0.0.0.0/0            /* seg1 */
       3     4500            all  --  *      *       0.0.0.0/0            0.0.0.0/0            /* packets */
Chain RHRARRIVED (1 references)
    pkts      bytes target     prot opt in     out     source               destination
      87   126000            all  --  *      *       0.0.0.0/0            0.0.0.0/0            /* seg1 */
      87   126000            all  --  *      *       0.0.0.0/0            0.0.0.0/0            /* packets */
Chain RHRACKDROP (1 references)
    pkts      bytes target     prot opt in     out     source               destination
       4      208 DROP       all  --  *      *       0.0.0.0/0            0.0.0.0/0            /* ack-drop */
"""


def test_each_direction_reads_its_own_chains_from_one_listing():
    transfer = Transfer(name="b", bidir=True)
    there, back = counted_segments(LISTINGS, transfer), counted_segments(LISTINGS, transfer, REVERSE_CHAINS)
    assert (there["sent_segments"], there["data_drop_segments"], there["ack_drop_packets"]) == (100, 0, 0)
    assert (back["sent_segments"], back["arrived_segments"], back["data_drop_segments"]) == (90, 87, 3)
    assert (back["ack_drop_packets"], back["syn_drop_packets"]) == (4, 0)


BIDIR_CLIENT_JSON = {
    "start": {
        "connected": [
            {"socket": 5, "local_port": 41001},
            {"socket": 7, "local_port": 41002},
        ]
    },
    "intervals": [
        {"sum": {"start": 0.0, "end": 0.1, "bytes": 900}, "sum_bidir_reverse": {"start": 0.0, "end": 0.1, "bytes": 0}},
        {"sum": {"start": 0.1, "end": 0.2, "bytes": 800}, "sum_bidir_reverse": {"start": 0.1, "end": 0.2, "bytes": 70}},
    ],
    "end": {
        "streams": [
            {"sender": {"socket": 5, "sender": True, "retransmits": 11}},
            {"sender": {"socket": 7, "sender": False, "retransmits": 4}},
        ],
        "sum_sent": {"bytes": 1700, "retransmits": 11},
        "sum_received": {"bytes": 1700, "seconds": 4.0, "bits_per_second": 3400.0},
        "sum_sent_bidir_reverse": {"bytes": 70, "retransmits": 4},
        "sum_received_bidir_reverse": {"bytes": 70, "seconds": 4.0, "bits_per_second": 140.0},
        "sender_tcp_congestion": "cubic",
        "receiver_tcp_congestion": "bbr",
    },
}


def test_iperf3s_bidir_result_splits_into_each_directions_streams_sums_and_cca():
    there, back = iperf3_truth(BIDIR_CLIENT_JSON), iperf3_truth(BIDIR_CLIENT_JSON, reverse=True)
    assert (there["tcpinfo_per_stream"], there["tcpinfo_retransmissions"], there["delivered_bytes"]) == (
        {41001: 11},
        11,
        1700,
    )
    assert (back["tcpinfo_per_stream"], back["tcpinfo_retransmissions"], back["delivered_bytes"]) == ({41002: 4}, 4, 70)
    assert (there["cca_reported"], back["cca_reported"]) == ("cubic", "bbr")
    received = reverse_receiver_document(BIDIR_CLIENT_JSON)
    assert received is not None and [i["sum"]["bytes"] for i in received["intervals"]] == [0, 70]


def test_the_servers_sockets_as_they_closed_are_told_apart_by_the_clients_port():
    text = (
        "UNCONN 0 0 [::ffff:10.72.2.1]:5201 [::ffff:10.72.1.1]:41003\n"
        "\t cubic retrans:0/7 segs_out:900 bytes_acked:1300000\n"
        "UNCONN 0 0 [::ffff:10.72.2.1]:5201 [::ffff:10.72.1.1]:41004\n"
        "\t cubic retrans:0/2 segs_out:800 bytes_acked:1100000\n"
    )
    by_peer = parse_ss_info(text, by_peer_port=True)
    assert {port: s["total_retrans"] for port, s in by_peer.items()} == {41003: 7, 41004: 2}
    assert list(parse_ss_info(text)) == [5201]


def packet_table(rows):
    """A packet table of (src, sport, dport, payload) rows as the analyzer's reader gives one."""
    from spline_analysis.testbed.realhost_retransmissions import address_bytes

    return {
        "src_addr": np.array([np.frombuffer(address_bytes(r[0]), dtype=np.uint8) for r in rows]),
        "sport": np.array([r[1] for r in rows]),
        "dport": np.array([r[2] for r in rows]),
        "tcp_payload_len": np.array([r[3] for r in rows]),
        "ip_proto": np.full(len(rows), 6),
        "tcp_flags": np.full(len(rows), 0x10),
    }


def test_the_way_backs_data_is_the_servers_to_its_client_ports_and_keyed_by_them():
    packets = packet_table(
        [
            (SENDER, 41001, 5201, 1448),  # the way there's data
            (RECEIVER, 5201, 41001, 0),  # its ACK
            (RECEIVER, 5201, 41003, 1448),  # the way back's data
            (SENDER, 41003, 5201, 0),  # its ACK
            (RECEIVER, 5201, 41004, 1448),
        ]
    )
    assert sender_data_rows(packets, SENDER, [41001]).tolist() == [True, False, False, False, False]
    assert sender_data_rows(packets, RECEIVER, [41003, 41004]).tolist() == [False, False, True, False, True]
    assert client_side_ports(packets, [41003, 41004]).tolist()[2:] == [41003, 41003, 41004]
    document = {"directions": [{"src": RECEIVER, "sport": 5201, "dport": 41003}, {"src": SENDER, "sport": 41003}]}
    assert data_directions(document, RECEIVER, [41003]) == document["directions"][:1]


def truth_of(lost: int, retransmissions: int, delivered_bytes: float) -> dict:
    return {
        "lost_segments": lost,
        "sent_segments": 20000,
        "data_drop_segments": lost,
        "data_drop_packets": lost,
        "other_drop_segments": 0,
        "qdisc_drops": 0,
        "ack_drop_packets": 0,
        "tcpinfo_retransmissions": retransmissions,
        "retransmissions_at_close": retransmissions,
        "bytes_acked_at_close": None,
        "delivered_bytes": delivered_bytes,
        "delivered_seconds": 4.0,
        "delivered_bps": 8 * delivered_bytes / 4.0,
    }


def data_direction(src: str, sport: int, dport: int, lost: int, vantage: str, goodput_bps: float) -> dict:
    return {
        "src": src,
        "sport": sport,
        "dport": dport,
        "vantage": vantage,
        "lost_segments": lost,
        "retransmissions": lost,
        "retransmissions_in_capture": lost,
        "goodput_bps": goodput_bps,
        "delivered_bytes": goodput_bps / 2,
        "delivery_start_s": 0.0,
        "delivery_end_s": 4.0,
    }


def bidir_record() -> dict:
    transfer = Transfer(name="b", data_loss=0.01, bidir=True, vantages=("sender", "receiver"))
    capture = {"pcap": "x", "buffer_kib": 8192, "counters": {"kernel_drops": 0}}
    return {
        "transfer": {**transfer.__dict__, "vantages": list(transfer.vantages)},
        "sender_address": SENDER,
        "client_ports": [41001],
        "captures": {"sender": {**capture, "pcap": "s"}, "receiver": {**capture, "pcap": "r"}},
        "truth": truth_of(200, 200, 5e7),
        "reverse": {"sender_address": RECEIVER, "client_ports": [41002], "truth": truth_of(300, 300, 4e7)},
    }


def test_each_capture_point_gives_a_row_per_direction_against_its_truth_at_the_role_it_plays():
    """The sender's file holds the way there as its sender and the way back as its receiver:
    two rows, each against its own direction's truth and tolerances; a figure off in one
    direction fails that row only."""
    files = {
        "s": [
            data_direction(SENDER, 41001, 5201, 200, "sender", 1e8),
            data_direction(RECEIVER, 5201, 41002, 330, "receiver", 8e7),  # +10%: off
        ],
        "r": [
            data_direction(SENDER, 41001, 5201, 201, "receiver", 1e8),
            data_direction(RECEIVER, 5201, 41002, 300, "sender", 8e7),
        ],
    }

    def analyser(pcap, labelled):
        return {"directions": files[str(pcap)], "warnings": []}, {}

    rows = compare_record(bidir_record(), analyser)
    by_key = {(r["transfer"], r["vantage"]): r for r in rows}
    assert [(r["capture_point"], r["direction"], r["vantage"]) for r in rows] == [
        ("sender", "forward", "sender"),
        ("sender", "reverse", "receiver"),
        ("receiver", "forward", "receiver"),
        ("receiver", "reverse", "sender"),
    ]
    back = "b" + REVERSE_NAME_SUFFIX
    assert by_key[("b", "sender")]["ok"] and by_key[("b", "receiver")]["ok"] and by_key[(back, "sender")]["ok"]
    off = by_key[(back, "receiver")]
    assert (off["lost_segments"], off["truth_lost_segments"], off["lost_ok"]) == (330, 300, False)
    assert by_key[(back, "sender")]["retransmissions_ok"] and by_key[("b", "receiver")]["retransmissions_ok"] is None
    assert all(r["directions_found"] == 1 for r in rows)
    assert "b.reverse" in format_table(rows)


def test_a_one_way_table_keeps_its_columns_and_a_bidir_one_says_each_rows_direction(tmp_path):
    one_way = {"transfer": "o", "vantage": "sender", "ok": True}
    write_csv([one_way], tmp_path / "one.csv")
    write_csv([one_way, {**one_way, "direction": "reverse", "capture_point": "receiver"}], tmp_path / "both.csv")
    header = (tmp_path / "one.csv").read_text().splitlines()[0]
    assert "direction" not in header.split(",") and "capture_point" not in header.split(",")
    both = (tmp_path / "both.csv").read_text().splitlines()
    assert both[0] == header + ",direction,capture_point" and both[2].endswith(",reverse,receiver")


def test_committed_bidir_matrix_holds_offloads_families_ccas_loss_both_ways_ack_loss_and_flows():
    transfers = load_matrix(MATRIX).transfers
    assert 6 <= len(transfers) <= 10 and all(t.bidir for t in transfers)
    assert {t.offloads for t in transfers} >= {"off", "gro", "tso+gro"}
    assert {t.family for t in transfers} == {4, 6} and {t.cca for t in transfers} >= {"cubic", "bbr"}
    assert {t.flows for t in transfers} == {1, 2}
    assert any(t.ack_loss > 0 for t in transfers) and max(t.data_loss for t in transfers) >= 0.05
    vantages = {v for t in transfers for v in t.vantages}
    assert vantages >= {"sender", "receiver", "router-any", "router-out", "router-in"}


TOOLS = ("ip", "tc", "iptables", "ip6tables", "ethtool", "ss", "stdbuf", "tcpdump", "iperf3")
live = pytest.mark.skipif(
    os.geteuid() != 0 or not all(shutil.which(t) for t in TOOLS),
    reason="needs root, iproute2, iptables, ip6tables, ethtool, tcpdump, iperf3",
)
LIVE_TRANSFER = "bd-gro-v4-p2-bbr-l2"  # GRO at both hosts, two flows each way, IPv4 (IDs count loss exactly)
LIVE_DURATION_S = 3.0


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """One bidir transfer of the committed matrix, made for real, and its comparison rows."""
    transfer = next(t for t in load_matrix(MATRIX).transfers if t.name == LIVE_TRANSFER)
    out = tmp_path_factory.mktemp("bidir")
    record = run_transfer(
        replace(transfer, duration_s=LIVE_DURATION_S), out / "runs" / transfer.name, f"bd{os.getpid() % 100000}"
    )
    document = record.to_json()
    return record, document, compare_record(document)


@live
def test_both_directions_truths_agree_with_the_routers_account_of_every_copy(made):
    """Each direction's hosts' chains, the router's two sides and the sending sockets' TCP_INFO
    tell one story: what left, what never arrived, every retransmission needed or spurious."""
    record, document, _ = made
    assert record.reverse is not None and record.reverse.client_ports == reverse_client_ports(record.transfer)
    for truth in (record.truth, record.reverse.truth):
        router = truth.retransmissions
        assert truth.data_drop_segments > 20 and truth.lost_segments >= truth.data_drop_segments
        assert router is not None and router["unmatched_out_copies"] == 0
        assert (router["sent_segments"], router["lost_segments"]) == (truth.sent_segments, truth.lost_segments)
        assert router["needed"] + router["spurious"] == truth.retransmissions_at_close
        assert truth.delivered_bytes > 0 and len(truth.tcpinfo_at_close) == record.transfer.flows
    assert set(record.truth.tcpinfo_at_close).isdisjoint(record.reverse.truth.tcpinfo_at_close)
    assert document["reverse"]["truth"]["lost_segments"] == record.reverse.truth.lost_segments


@live
def test_spline_analyze_reads_each_direction_at_each_capture_point_within_the_issue_tolerances(made):
    record, _, rows = made
    assert len(rows) == 2 * len(record.transfer.vantages)
    for row in rows:
        expected_role = row["capture_point"] if row["direction"] == "forward" else REVERSE_ROLE[row["capture_point"]]
        assert row["vantage"] == expected_role
        assert row["directions_found"] == record.transfer.flows, format_table([row])
        assert row["lost_ok"] and row["retransmissions_ok"] is not False and row["warnings_ok"], format_table([row])


def test_a_senders_capture_that_dropped_packets_may_say_its_loss_is_estimated():
    """The sender's own capture on a host that also receives (bidir) drops packets when the
    receiving fills its ring: the repairs it missed are estimated (`loss_estimated`)."""
    transfer = Transfer(name="b", bidir=True, data_loss=0.01)
    for vantage in ("sender", "sender-any", "router-in"):
        must, may = expected_warnings(transfer, vantage, capture_kernel_drops=100, path_lost_segments=50)
        assert "loss_estimated" in may and "capture_drops" in must
        assert "loss_estimated" not in expected_warnings(transfer, vantage, 0, 50)[1]


def test_the_way_backs_data_after_the_clients_clock_counts_at_its_last_rate():
    """The client stops reading at its timer; the server's send buffer drains on until the client
    closes: what its TCP acknowledged beyond what iperf3 read arrived after the clock, at the rate
    of the clock's last half second (1 MB per 0.1 s here: 0.5 MB unread is 0.05 s more)."""
    intervals = [(0.1 * k, 0.1 * (k + 1), 1_000_000) for k in range(40)]
    assert unread_at_end_s(40_500_000, 40_000_000, intervals) == pytest.approx(0.05)
    assert unread_at_end_s(40_000_000, 40_000_000, intervals) == 0.0
    assert unread_at_end_s(None, 40_000_000, intervals) == 0.0
    assert unread_at_end_s(40_500_000, 40_000_000, []) == 0.0
    quiet = intervals + [(4.0, 4.1, 0)]  # an empty last interval: the rate of those with data
    assert unread_at_end_s(40_500_000, 40_000_000, quiet) == pytest.approx(0.05)
    truth = {**truth_of(0, 0, 40_000_000), "bytes_acked_at_close": 40_500_000}
    there = Transfer(name="b", bidir=True)
    assert delivery_rate_bps(truth, there) == pytest.approx(8 * 40_500_000 / 4.0)
    assert delivery_rate_bps({**truth, "unread_at_end_s": 0.05}, there) == pytest.approx(8 * 40_500_000 / 4.05)


def test_both_ways_at_once_a_sender_may_resend_spuriously_as_its_acks_queue_behind_the_other_ways_data():
    there, one_way = Transfer(name="b", bidir=True, data_loss=0.02), Transfer(name="o", data_loss=0.02)
    for vantage in ("sender", "router-in", "router-any"):
        assert "spurious_retransmissions" in expected_warnings(there, vantage, 0, 50)[1]
        assert "spurious_retransmissions" not in expected_warnings(one_way, vantage, 0, 50)[1]
    assert "spurious_retransmissions" not in expected_warnings(there, "receiver", 0, 50)[1]


def test_both_ways_at_once_an_ipv6_capture_below_the_drops_may_say_its_holes_are_no_floor():
    """Each host sends and receives at once on both CPUs: at 100 Mbit/s its veths let late
    originals fall behind (6 of 8 transfers of a fresh bidir run, up to 29 a capture), and a
    capture that recognises 10 or more says `loss_not_floor` instead of `loss_floor`; a one-way
    IPv6 transfer at that rate keeps order and must say `loss_floor`."""
    both, one_way = (
        Transfer(name="b", bidir=True, family=6, data_loss=0.02),
        Transfer(name="o", family=6, data_loss=0.02),
    )
    for vantage in ("receiver", "router-out"):
        must, may = expected_warnings(both, vantage, 0, 50)
        assert "loss_floor" not in must and {"loss_floor", "loss_not_floor"} <= may
        must, may = expected_warnings(one_way, vantage, 0, 50)
        assert "loss_floor" in must and "loss_not_floor" not in may
