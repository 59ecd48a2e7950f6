"""The receiver's and the router's stack drop counters in a transfer's truth, and how they
enter the lost-segment comparison at each capture point."""

from __future__ import annotations

import pytest

from spline_analysis.testbed.realhost import TransferTruth, stack_counter_deltas
from spline_analysis.testbed.realhost_compare import compare_capture, expected_lost_segments
from spline_analysis.testbed.realhost_spec import Transfer
from spline_analysis.testbed.stack_drops import (
    RECEIVER_TCP_DROP_COUNTERS,
    parse_link_json,
    parse_mib_text,
    receiver_ofo_prunes,
    receiver_tcp_drop_packets,
)

NETSTAT = """TcpExt: SyncookiesSent PruneCalled RcvPruned OfoPruned TCPBacklogDrop TCPOFODrop TCPRcvQDrop TCPZeroWindowDrop
TcpExt: 0 4 1 2 7 3 5 6
IpExt: InNoRoutes InOctets
IpExt: 2 1000
"""
SNMP6 = """Ip6InReceives                   	45029
Ip6InDiscards                   	0
"""
IP_LINK = (
    '[{"ifname":"rhc0","stats64":{"rx":{"bytes":10,"packets":1,"errors":0,"dropped":9,"missed":0},'
    '"tx":{"bytes":5,"packets":1,"errors":0,"dropped":4}}}]'
)


def test_mib_tables_are_read_as_prefixed_counter_names_from_both_layouts():
    counters = parse_mib_text(NETSTAT + SNMP6)
    assert counters["TcpExtTCPBacklogDrop"] == 7 and counters["TcpExtOfoPruned"] == 2
    assert counters["IpExtInNoRoutes"] == 2 and counters["IpExtInOctets"] == 1000
    assert counters["Ip6InReceives"] == 45029 and counters["Ip6InDiscards"] == 0


def test_link_drop_counters_come_from_ip_json_and_nothing_from_an_unreadable_listing():
    assert parse_link_json(IP_LINK) == {"rx_dropped": 9, "tx_dropped": 4, "rx_missed": 0}
    assert parse_link_json("") == {} and parse_link_json("not json") == {}


def test_deltas_keep_every_drop_counter_even_at_zero_and_only_the_other_counters_that_moved():
    before = {**parse_mib_text(NETSTAT), "TcpInSegs": 10, "rhc0_rx_dropped": 1}
    after = {**before, "TcpExtTCPBacklogDrop": 10, "TcpInSegs": 25, "rhc0_rx_dropped": 3}
    deltas = stack_counter_deltas(before, after, "rhc0")
    assert deltas["TcpExtTCPBacklogDrop"] == 3 and deltas["TcpExtTCPOFODrop"] == 0
    assert deltas["TcpInSegs"] == 15 and deltas["rhc0_rx_dropped"] == 2
    assert "IpExtInOctets" not in deltas  # did not move


def test_receiver_tcp_drops_add_the_skbs_its_tcp_threw_away_and_prunes_are_counted_apart():
    deltas = {name: 1 for name in RECEIVER_TCP_DROP_COUNTERS} | {"TcpExtOfoPruned": 2, "TcpExtPruneCalled": 5}
    assert receiver_tcp_drop_packets(deltas) == len(RECEIVER_TCP_DROP_COUNTERS) == 4
    assert receiver_ofo_prunes(deltas) == 2
    assert receiver_tcp_drop_packets({"TcpExtPruneCalled": 5, "TcpInSegs": 9}) == 0


def truth_with(receiver_stack_drops: dict | None) -> dict:
    fields = dict(
        sent_segments=1000,
        arrived_segments=900,
        data_drop_packets=100,
        data_drop_segments=100,
        ack_drop_packets=0,
        qdisc_drops=0,
        sent_packets=1000,
        arrived_packets=900,
        tcpinfo_retransmissions=130,
        tcpinfo_per_stream={41001: 130},
        tcpinfo_at_close={},
        delivered_bytes=1,
        delivered_seconds=1.0,
        delivered_bps=8.0,
        sent_bytes=1,
        cca_reported="cubic",
    )
    if receiver_stack_drops is not None:
        fields["receiver_stack_drops"] = receiver_stack_drops
    return TransferTruth(**fields).to_json()  # type: ignore[arg-type]


def test_a_copy_the_receivers_tcp_dropped_is_lost_upstream_of_it_and_arrived_at_its_capture():
    truth = truth_with({"TcpExtTCPBacklogDrop": 20, "TcpExtTCPRcvQDrop": 5})
    assert truth["lost_segments"] == 100 and truth["receiver_tcp_drop_packets"] == 25
    for vantage in ("sender", "router-any", "router-out", "router-in"):
        assert expected_lost_segments(truth, vantage) == 125
    for vantage in ("receiver", "receiver-any"):
        assert expected_lost_segments(truth, vantage) == 100


def test_a_record_made_before_the_stack_counters_were_read_compares_as_before():
    truth = truth_with(None)
    assert truth["receiver_tcp_drop_packets"] is None and truth["receiver_stack_drops"] is None
    assert expected_lost_segments(truth, "sender") == 100


@pytest.mark.parametrize("vantage, ok", [("sender", True), ("receiver", False)])
def test_rows_hold_each_capture_point_to_its_own_expected_loss(vantage: str, ok: bool):
    truth = truth_with({"TcpExtTCPBacklogDrop": 25})
    transfer = Transfer(name="t", offloads="off", data_loss=0.01)
    record = {
        "transfer": {**transfer.__dict__, "vantages": list(transfer.vantages)},
        "sender_address": "10.72.1.1",
        "client_ports": [41001],
        "captures": {vantage: {"pcap": "x", "buffer_kib": 8192, "counters": {"kernel_drops": 0}}},
        "truth": truth,
    }
    data = {"src": "10.72.1.1", "sport": 41001, "lost_segments": 125, "retransmissions": 130}
    data.update(goodput_bps=8.0, delivered_bytes=1, delivery_start_s=0.0, delivery_end_s=1.0)
    data["retransmissions_in_capture"] = 130
    row = compare_capture(record, vantage, {"directions": [data], "warnings": []})
    assert row["receiver_tcp_drop_packets"] == 25
    assert row["lost_ok"] is ok
