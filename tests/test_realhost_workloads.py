"""Workloads other than one iperf3 bulk transfer: short connections one after the other, and
Spline, the product's own congestion control (`capture/experiments/realhost-workloads.toml`)."""

from __future__ import annotations

import socket
import threading
from dataclasses import asdict
from pathlib import Path

import pytest

from spline_analysis.testbed import short_transfers
from spline_analysis.testbed.errors import TestbedError
from spline_analysis.testbed.realhost import short_connections_truth, union_span_s
from spline_analysis.testbed.realhost_compare import delivery_rate_bps, whole_capture_retransmissions
from spline_analysis.testbed.realhost_spec import (
    DEFAULT_VANTAGES,
    MAX_CONNECTIONS,
    Transfer,
    load_matrix,
    matrix_from_document,
    recorded_transfer,
)

WORKLOADS = Path(__file__).resolve().parent.parent / "capture" / "experiments" / "realhost-workloads.toml"


def test_short_connections_open_one_client_port_each_and_survive_the_record():
    (short,) = matrix_from_document({"transfer": [{"name": "s", "connections": 30, "connection_kib": 100}]}).transfers
    assert (short.connections, short.connection_kib, short.data_connections) == (30, 100, 30)
    (bulk,) = matrix_from_document({"transfer": [{"name": "b", "flows": 3}]}).transfers
    assert (bulk.connections, bulk.data_connections) == (0, 3)
    saved = {**asdict(short), "vantages": list(short.vantages)}
    assert recorded_transfer(saved) == short


@pytest.mark.parametrize(
    "table, message",
    [
        ({"connections": 10}, "go together"),
        ({"connection_kib": 100}, "go together"),
        ({"connections": 10, "connection_kib": 100, "flows": 2}, "flows must be 1"),
        ({"connections": MAX_CONNECTIONS + 1, "connection_kib": 100}, "connections"),
        ({"connections": -1, "connection_kib": 100}, "connections"),
        ({"connections": True, "connection_kib": 100}, "connections"),
        ({"connections": 10, "connection_kib": "100k"}, "connection_kib"),
        ({"connections": 10, "connection_kib": 1.5}, "connection_kib"),
    ],
)
def test_short_connections_refuse_a_count_without_a_size_parallel_flows_and_non_numbers(table, message):
    with pytest.raises(TestbedError, match=message):
        matrix_from_document({"transfer": [{"name": "s", **table}]})


def test_union_span_counts_overlapping_spans_once_and_leaves_the_pauses_between_out():
    assert union_span_s([(0.0, 1.0), (2.0, 3.0)]) == pytest.approx(2.0)
    assert union_span_s([(2.0, 3.0), (0.0, 1.0), (0.5, 1.5)]) == pytest.approx(2.5)
    assert union_span_s([]) == 0.0


def test_short_connections_truth_takes_each_sockets_retransmissions_at_close_and_the_reads_spans():
    served = {
        "connections": [
            {"port": 41001, "bytes": 102400, "first_read_s": 10.0, "last_read_s": 10.01},
            {"port": 41002, "bytes": 102400, "first_read_s": 10.5, "last_read_s": 10.53},
        ]
    }
    sent = {
        "connections": [
            {"port": 41001, "bytes": 102400, "cca": "spline"},
            {"port": 41002, "bytes": 102400, "cca": "spline"},
        ]
    }
    at_close = {
        41001: {"total_retrans": 3, "bytes_acked": 102402},
        41002: {"total_retrans": 0},
        5201: {"total_retrans": 9},
    }
    truth = short_connections_truth(served, sent, at_close)
    assert truth["tcpinfo_per_stream"] == {41001: 3, 41002: 0}
    assert truth["tcpinfo_retransmissions"] == 3
    assert truth["delivered_bytes"] == truth["sent_bytes"] == 204800
    assert truth["delivered_seconds"] == pytest.approx(0.04)  # the 0.49 s between them left out
    assert truth["delivered_bps"] == pytest.approx(204800 * 8 / 0.04)
    assert truth["cca_reported"] == "spline"


def test_short_connections_goodput_truth_is_the_receivers_own_reads_with_no_round_trip_taken_off():
    """iperf3's receiving clock starts a round trip before its data (delivery_rate_bps takes it
    off); the short connections' reader stamps its first and last data itself."""
    truth = {"delivered_bytes": 1_000_000, "delivered_seconds": 0.5, "delivered_bps": 16e6}
    short = Transfer(name="s", connections=10, connection_kib=100, delay_ms=50, ack_delay_ms=50)
    assert delivery_rate_bps(truth, short) == pytest.approx(16e6)
    bulk = Transfer(name="b", delay_ms=50, ack_delay_ms=50)
    assert delivery_rate_bps(truth, bulk) == pytest.approx(1_000_000 * 8 / 0.4)


def test_whole_capture_retransmissions_are_the_analyzers_own_where_no_iperf3_test_windows_them():
    windowed = [
        {"retransmissions": 5, "retransmissions_in_capture": 7},
        {"retransmissions": 1, "retransmissions_in_capture": 1},
    ]
    assert whole_capture_retransmissions(windowed) == 8
    unwindowed = [{"retransmissions": 5, "retransmissions_in_capture": None}, {"retransmissions": 2}]
    assert whole_capture_retransmissions(unwindowed) == 7
    assert whole_capture_retransmissions([]) is None


def test_short_transfers_deliver_every_byte_of_each_connection_over_loopback_and_report_the_cca():
    """The driver for real, over loopback: each connection is read to its end, from the ports
    asked for, with the congestion control set on the socket."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        server_port = probe.getsockname()[1]
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        first_client_port = probe.getsockname()[1]
    results = {}
    server = threading.Thread(target=lambda: results.update(served=short_transfers.serve("127.0.0.1", server_port, 3)))
    server.start()
    for _ in range(100):
        with socket.socket() as check:
            if check.connect_ex(("127.0.0.1", server_port)) == 0:
                break
        threading.Event().wait(0.02)
    sent = short_transfers.send("127.0.0.1", server_port, first_client_port, 2, 70_000, "cubic")
    server.join(10)
    assert not server.is_alive()
    reads = results["served"]  # the first: the check that the server listened, closed at once
    assert [r["bytes"] for r in reads] == [0, 70_000, 70_000]
    assert [r["port"] for r in reads[1:]] == [first_client_port, first_client_port + 1]
    assert all(r["last_read_s"] >= r["first_read_s"] > 0 for r in reads[1:])
    assert sent == [
        {"port": first_client_port, "bytes": 70_000, "cca": "cubic"},
        {"port": first_client_port + 1, "bytes": 70_000, "cca": "cubic"},
    ]


def test_workloads_matrix_holds_spline_and_short_connections_in_both_families_every_offload_and_vantage():
    transfers = load_matrix(WORKLOADS).transfers
    assert 12 <= len(transfers) <= 20
    spline = [t for t in transfers if t.cca == "spline"]
    short = [t for t in transfers if t.connections]
    assert spline and short and any(t.connections for t in spline)
    for kind in (spline, short):
        assert {t.family for t in kind} == {4, 6}
        assert any(t.data_loss == 0 and t.queue_ms < 10 for t in kind)  # the router's queue overflows
        assert max(t.data_loss for t in kind) >= 0.03 and min(t.data_loss for t in kind if t.data_loss) <= 0.005
    assert {t.offloads for t in transfers} == {"off", "gro", "tso", "tso+gro"}
    assert {t.connection_kib for t in short} >= {50, 2048}
    assert any(t.syn_loss for t in short) and any(t.syn_loss and not t.data_loss for t in short)
    seen = {v for t in transfers for v in t.vantages}
    assert seen >= set(DEFAULT_VANTAGES) | {"router-in", "receiver-any", "sender-any"}


def test_the_sender_is_held_to_tcp_info_with_its_syns_sent_again_counted_beside_the_data():
    """TCP_INFO's total_retrans counts a SYN sent again; the analyzer counts it apart
    (`handshake_retransmissions`), and the comparison adds the two: 63 + 1 against 64."""
    from test_realhost_matrix import direction, record_for

    from spline_analysis.testbed.realhost_compare import compare_capture

    record = record_for("sender")
    record["truth"].update(tcpinfo_retransmissions=64, retransmissions_at_close=64)
    first, second = direction(41001, 40, 40, 5e7), direction(41002, 23, 23, 5e7)
    first["handshake_retransmissions"], second["handshake_retransmissions"] = 0, 1
    row = compare_capture(record, "sender", {"directions": [first, second], "warnings": []})
    assert (row["retransmissions"], row["handshake_retransmissions"]) == (64, 1)
    assert row["retransmissions_ok"]
    del first["handshake_retransmissions"], second["handshake_retransmissions"]  # an analyzer before the key
    assert compare_capture(record, "sender", {"directions": [first, second], "warnings": []})["retransmissions"] == 63


def test_syn_loss_drops_the_senders_data_connection_syns_at_the_router_and_counts_them():
    from spline_analysis.testbed.realhost import SYN_DROP_CHAIN, counted_segments, syn_drop_rule

    (lossy,) = matrix_from_document({"transfer": [{"name": "s", "syn_loss": "20%"}]}).transfers
    assert lossy.syn_loss == pytest.approx(0.2)
    rule = " ".join(syn_drop_rule(lossy, [41001, 41040]))
    assert "-i rhr0 -o rhr1" in rule and "--sport 41001:41040 --dport 5201" in rule
    assert "--tcp-flags SYN,ACK SYN" in rule and "--probability 0.200000" in rule and rule.endswith(SYN_DROP_CHAIN)
    listing = (
        f"Chain {SYN_DROP_CHAIN} (1 references)\n    pkts      bytes target     prot opt in     out\n"
        "      13      780 DROP       6    --  *      *       0.0.0.0/0   0.0.0.0/0   /* syn-drop */\n"
    )
    assert counted_segments(listing, lossy)["syn_drop_packets"] == 13
    assert counted_segments("", lossy)["syn_drop_packets"] == 0  # a record made before syn_loss
    with pytest.raises(TestbedError, match="syn_loss"):
        matrix_from_document({"transfer": [{"name": "s", "syn_loss": "120%"}]})
