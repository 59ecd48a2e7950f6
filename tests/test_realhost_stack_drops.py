"""The receiver's and the router's stack drop counters in a transfer's truth, the copies the
receiver's capture saw and its TCP never took, and how they enter the lost-segment comparison
at each capture point."""

from __future__ import annotations

import numpy as np
import pytest

from spline_analysis._core.ranges import covered, merged
from spline_analysis.testbed.realhost import (
    TransferTruth,
    receiver_resends_truth,
    sack_blocks_kept_by_receiver,
    stack_counter_deltas,
)
from spline_analysis.testbed.receiver_resends import (
    dsack_blocks,
    later_copies,
    dsack_overwritten,
    paws_discarded,
    reported_held,
    resends_not_dsacked,
    segment_starts,
)
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


def test_a_copy_the_receivers_tcp_dropped_is_lost_before_the_routers_drops_and_passed_after_them():
    truth = truth_with({"TcpExtTCPBacklogDrop": 20, "TcpExtTCPRcvQDrop": 5})
    assert truth["lost_segments"] == 100 and truth["receiver_tcp_drop_packets"] == 25
    for vantage in ("sender", "router-any", "router-in"):
        assert expected_lost_segments(truth, vantage) == 125
    for vantage in ("receiver", "receiver-any", "router-out"):
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


def test_a_gro_packet_is_cut_into_its_mss_segments_and_only_repeated_starts_are_later_copies():
    lo = np.array([0, 3000, 1000, 0], dtype=np.int64)
    hi = np.array([3000, 4000, 2000, 1000], dtype=np.int64)
    starts, ends = segment_starts(lo, hi, 1000)
    assert starts.tolist() == [0, 1000, 2000, 3000, 1000, 0] and ends.tolist() == [1000, 2000, 3000, 4000, 2000, 1000]
    later_starts, later_ends = later_copies(starts, ends)
    assert later_starts.tolist() == [1000, 0] and later_ends.tolist() == [2000, 1000]


def test_dsack_blocks_are_a_first_block_below_the_ack_or_inside_the_second():
    ack = np.array([5000, 5000, 5000], dtype=np.int64)
    left = np.array([[1000, 0, 0, 0], [7000, 6000, 0, 0], [6000, 0, 0, 0]], dtype=np.int64)
    right = np.array([[2000, 0, 0, 0], [8000, 9000, 0, 0], [7000, 0, 0, 0]], dtype=np.int64)
    count = np.array([1, 2, 1])
    starts, ends = dsack_blocks(ack, left, right, count, ack)
    assert starts.tolist() == [1000, 7000] and ends.tolist() == [2000, 8000]  # the third is a plain SACK


def test_a_later_copy_no_dsack_covers_is_counted_and_one_a_dsack_covers_is_not():
    union = merged(np.array([3000, 1000, 1500], dtype=np.int64), np.array([4000, 2000, 2500], dtype=np.int64))
    assert union[0].tolist() == [1000, 3000] and union[1].tolist() == [2500, 4000]
    inside = covered(np.array([1000, 1500, 2500, 3000], dtype=np.int64), np.array([2000, 2500, 3500, 4000]), union)
    assert inside.tolist() == [True, True, False, True]


def test_the_per_segment_count_replaces_the_skb_counters_upstream_of_the_receivers_tcp():
    truth = {"lost_segments": 100, "receiver_tcp_drop_packets": 3, "receiver_resends_not_dsacked": 29}
    assert expected_lost_segments(truth, "sender") == 129 and expected_lost_segments(truth, "router-any") == 129
    assert expected_lost_segments(truth, "receiver") == 100 == expected_lost_segments(truth, "router-out")
    truth["receiver_resends_not_dsacked"] = None  # no receiver capture, no SACK, or it dropped packets
    assert expected_lost_segments(truth, "sender") == 103


def test_frames_the_routers_receiver_side_link_dropped_after_router_out_saw_them_are_not_router_outs_loss():
    """The router's egress veth could not hand 40 frames to the receiver's full backlog
    (tx_dropped): router-out had already seen them leave; the receiver sees the holes."""
    truth = {"lost_segments": 140, "data_drop_segments": 100, "qdisc_drops": 0}
    truth["router_stack_drops"] = {"rhr1_tx_dropped": 40, "rhr1_rx_dropped": 0, "IpInDiscards": 0}
    assert expected_lost_segments(truth, "router-out") == 100
    for vantage in ("receiver", "router-any", "sender", "router-in"):
        assert expected_lost_segments(truth, vantage) == 140
    # never more than the loss the drop rule and the queue leave unexplained
    truth["qdisc_drops"] = 25
    assert expected_lost_segments(truth, "router-out") == 125
    truth["router_stack_drops"] = None  # a record made before the counters were read
    assert expected_lost_segments(truth, "router-out") == 140


def test_the_receivers_copies_are_not_read_without_sack_or_from_a_capture_that_dropped_packets():
    capture = {"pcap": "/nonexistent.pcap", "counters": {"kernel_drops": 5}}
    transfer = Transfer(name="t", offloads="off", data_loss=0.01)
    assert receiver_resends_truth({"receiver": capture}, transfer, "10.72.1.1", [41001]) is None
    capture["counters"]["kernel_drops"] = 0
    no_sack = Transfer(name="t", offloads="off", data_loss=0.01, sender_sack=False)
    assert receiver_resends_truth({"receiver": capture}, no_sack, "10.72.1.1", [41001]) is None
    assert receiver_resends_truth({"sender": capture}, transfer, "10.72.1.1", [41001]) is None


def receiver_capture(frames):
    """A receiver's packet table from (from_sender, seq, ack, payload bytes, tsval, sack blocks[,
    TCP flags])."""
    sender = b"\x00" * 10 + b"\xff\xff" + bytes([10, 72, 1, 1])
    receiver = b"\x00" * 10 + b"\xff\xff" + bytes([10, 72, 2, 1])
    n = len(frames)
    sack_left, sack_right = np.zeros((n, 4), dtype=np.uint32), np.zeros((n, 4), dtype=np.uint32)
    for row, frame in enumerate(frames):
        for k, (left, right) in enumerate(frame[5]):
            sack_left[row, k], sack_right[row, k] = left, right
    return {
        "src_addr": np.array([np.frombuffer(sender if f[0] else receiver, dtype=np.uint8) for f in frames]),
        "sport": np.array([41001 if f[0] else 5201 for f in frames]),
        "dport": np.array([5201 if f[0] else 41001 for f in frames]),
        "ip_proto": np.full(n, 6),
        "tcp_flags": np.array([f[6] if len(f) > 6 else 0x10 for f in frames]),
        "seq": np.array([f[1] for f in frames], dtype=np.uint32),
        "ack": np.array([f[2] for f in frames], dtype=np.uint32),
        "tcp_payload_len": np.array([f[3] for f in frames]),
        "opt_has_ts": np.ones(n, dtype=bool),
        "opt_tsval": np.array([f[4] for f in frames], dtype=np.uint32),
        "sack_count": np.array([len(f[5]) for f in frames]),
        "sack_left": sack_left,
        "sack_right": sack_right,
    }


def test_a_late_first_copy_the_receivers_paws_check_discarded_is_no_copy_lost_inside_it():
    frames = [
        (False, 1, 1000, 0, 1, []),
        (True, 1000, 1, 1000, 100, []),
        (False, 1, 2000, 0, 2, []),
        # 2000-3000 (TSval 101) lost on the path; 4000-5000 (TSval 103) delayed behind its repair
        (True, 3000, 1, 1000, 102, []),
        (False, 1, 2000, 0, 3, [(3000, 4000)]),
        (True, 2000, 1, 1000, 110, []),  # the repair: in order, TS.Recent 110
        (False, 1, 4000, 0, 4, []),
        (True, 4000, 1, 1000, 103, []),  # the late original: TSval 103 < 110 - 1, discarded (no D-SACK)
        (False, 1, 4000, 0, 5, []),
        (True, 4000, 1, 1000, 120, []),  # its resend, taken
        (False, 1, 5000, 0, 6, []),
        (True, 5000, 1, 1000, 121, []),  # seen by the capture, lost inside the receiver
        (True, 5000, 1, 1000, 130, []),  # its resend, taken without a D-SACK
        (False, 1, 6000, 0, 7, []),
    ]
    assert resends_not_dsacked(receiver_capture(frames), "10.72.1.1", [41001], 1000) == {41001: 1}


def test_paws_reads_ts_recent_from_data_at_or_below_the_receivers_last_cumulative_ack():
    lo = np.array([0, 2000, 1000, 3000, 4000], dtype=np.int64)
    tsval = np.array([100, 102, 110, 103, 109], dtype=np.int64)
    rcv_wup = np.array([0, 1000, 1000, 3000, 3000], dtype=np.int64)
    has_ts = np.ones(5, dtype=bool)
    # 2000 (above rcv_wup) leaves TS.Recent at 100; the repair at 1000 raises it to 110; 103 is
    # older by more than a tick, 109 by one tick only
    assert paws_discarded(lo, tsval, has_ts, rcv_wup).tolist() == [False, False, False, True, False]


# Data 1000-3000 in order, 4000-6000 out of order (3000-4000 lost on the path); then the
# sender resends 4000-5000 and 5000-6000 (the receiver holds both) before the receiver's next
# ACK, which reports only the second as a D-SACK: Linux keeps one D-SACK block.
TWO_DUPLICATES_ONE_ACK = [
    (False, 1, 1000, 0, 1, []),
    (True, 1000, 1, 1000, 100, []),
    (True, 2000, 1, 1000, 101, []),
    (False, 1, 3000, 0, 2, []),
    (True, 4000, 1, 1000, 103, []),
    (True, 5000, 1, 1000, 104, []),
    (False, 1, 3000, 0, 3, [(4000, 6000)]),
    (True, 4000, 1, 1000, 110, []),
    (True, 5000, 1, 1000, 111, []),
    (False, 1, 3000, 0, 4, [(5000, 6000), (4000, 6000)]),
    (True, 3000, 1, 1000, 112, []),
    (False, 1, 6000, 0, 5, []),
]


def test_a_duplicate_whose_dsack_the_next_one_replaced_counts_only_where_the_receiver_set_more_dsacks_than_it_sent():
    packets = receiver_capture(TWO_DUPLICATES_ONE_ACK)
    assert resends_not_dsacked(packets, "10.72.1.1", [41001], 1000, dsacks_set=2) == {41001: 0}
    assert resends_not_dsacked(packets, "10.72.1.1", [41001], 1000, dsacks_set=1) == {41001: 1}
    assert resends_not_dsacked(packets, "10.72.1.1", [41001], 1000) == {41001: 1}  # counters not kept


def test_a_dsack_may_be_replaced_only_by_a_later_copy_before_the_next_reply_that_carries_one():
    replies = np.array([3, 6, 9], dtype=np.int64)
    dsack = np.array([False, False, True])
    copies = np.array([4, 5, 7, 8, 8], dtype=np.int64)
    assert dsack_overwritten(copies, replies, dsack).tolist() == [False, False, True, False, False]


def test_a_resend_that_comes_after_the_receiver_reset_the_connection_is_no_copy_lost_inside_it():
    frames = [
        (False, 1, 1000, 0, 1, []),
        (True, 1000, 1, 1000, 100, []),
        (False, 1, 2000, 0, 2, []),
        (False, 1, 2000, 0, 0, [], 0x14),  # the receiver's iperf3 closed with data unread: RST
        (True, 1000, 1, 1000, 120, []),  # a resend the reset socket never answers
    ]
    assert resends_not_dsacked(receiver_capture(frames), "10.72.1.1", [41001], 1000) == {41001: 0}


# 1000-2000 in order, 3000-5000 out of order (2000-3000 lost on the path) and SACKed; the sender
# resends 3000-4000 and 4000-5000 anyway (its ACKs lag on a busy host) and the receiver's ACKs
# that follow carry no D-SACK for them; then the repair of 2000-3000 and the ACK of it all.
HELD_THEN_RESENT_WITHOUT_DSACK = [
    (False, 1, 1000, 0, 1, []),
    (True, 1000, 1, 1000, 100, []),
    (False, 1, 2000, 0, 2, []),
    (True, 3000, 1, 1000, 102, []),
    (True, 4000, 1, 1000, 102, []),
    (False, 1, 2000, 0, 3, [(3000, 5000)]),
    (True, 3000, 1, 1000, 110, []),
    (True, 4000, 1, 1000, 110, []),
    (False, 1, 2000, 0, 4, [(3000, 5000)]),
    (True, 2000, 1, 1000, 111, []),
    (False, 1, 5000, 0, 5, []),
]


def test_a_resend_of_data_the_receiver_had_sacked_is_no_copy_lost_inside_it_where_it_kept_what_it_sacked():
    packets = receiver_capture(HELD_THEN_RESENT_WITHOUT_DSACK)
    assert resends_not_dsacked(packets, "10.72.1.1", [41001], 1000, sack_blocks_kept=True) == {41001: 0}
    # a receiver that dropped out-of-order data (reneging) may have lost what it SACKed
    assert resends_not_dsacked(packets, "10.72.1.1", [41001], 1000, sack_blocks_kept=False) == {41001: 2}


def test_a_resend_of_data_the_receiver_had_acknowledged_is_no_copy_lost_inside_it():
    frames = [
        (False, 1, 1000, 0, 1, []),
        (True, 1000, 1, 1000, 100, []),
        (True, 2000, 1, 1000, 100, []),
        (False, 1, 3000, 0, 2, []),
        (True, 2000, 1, 1000, 105, []),  # a spurious resend; the ACK carrying its D-SACK never came
        (False, 1, 3000, 0, 3, []),
    ]
    assert resends_not_dsacked(receiver_capture(frames), "10.72.1.1", [41001], 1000) == {41001: 0}


def test_held_is_what_a_reply_before_the_copy_acknowledged_or_sacked():
    starts, ends = np.array([3000, 3000, 5000, 1000]), np.array([4000, 4000, 6000, 2000])
    copy_rows = np.array([4, 8, 8, 2])
    replies, acks = np.array([1, 5, 9]), np.array([1000, 2000, 6000])
    left = np.array([[0, 0], [3000, 0], [0, 0]])
    right = np.array([[-1, -1], [5000, -1], [-1, -1]])
    # before row 4 only the ACK of 1000; row 8 after the SACK of 3000-5000; 5000-6000 reported only
    # after row 8; 1000-2000 only at row 5, after its copy at row 2
    held = reported_held(starts, ends, copy_rows, replies, acks, (left, right))
    assert held.tolist() == [False, True, False, False]
    assert reported_held(starts, ends, copy_rows, replies, acks, None).tolist() == [False, False, False, False]


def test_the_receivers_sack_blocks_say_what_it_held_unless_it_pruned_out_of_order_data():
    assert sack_blocks_kept_by_receiver({"TcpInSegs": 10, "TcpExtOfoPruned": 0})
    assert sack_blocks_kept_by_receiver({"TcpInSegs": 10})
    assert not sack_blocks_kept_by_receiver({"TcpInSegs": 10, "TcpExtOfoPruned": 3})
    assert not sack_blocks_kept_by_receiver(None)
    assert not sack_blocks_kept_by_receiver({"TcpExtOfoPruned": 0})  # moved counters not kept
