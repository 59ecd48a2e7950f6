"""The real-host matrix: its definition, the truth it reads from the hosts, the agreement rules."""

from __future__ import annotations

import json
from dataclasses import asdict, replace
from pathlib import Path

import pytest

from spline_analysis.testbed.errors import TestbedError
from spline_analysis.testbed.realhost import (
    BRIDGE_DEVICE,
    CAPTURE_POINTS,
    capture_argv,
    capture_counters,
    host_device,
    parse_dumpcap_counters,
    counted_segments,
    data_header_bytes,
    data_match,
    iperf3_truth,
    mss_bytes,
    transfer_mss_bytes,
    parse_ss_info,
    segment_buckets,
    segments_from_buckets,
    receiving_seconds,
    recounted_truth,
    router_qdisc_commands,
)
from spline_analysis.testbed.realhost_compare import (
    compare_capture,
    delivery_rate_bps,
    expected_lost_segments,
    relative_error,
)
from spline_analysis.testbed.realhost_spec import (
    DEFAULT_VANTAGES,
    LOST_TOLERANCE,
    expected_warnings,
    load_matrix,
    matrix_from_document,
    recorded_transfer,
    Transfer,
    VANTAGES,
)

MATRIX = Path(__file__).resolve().parent.parent / "capture" / "experiments" / "realhost-matrix.toml"


def test_committed_matrix_spans_offloads_families_flows_ccas_and_loss_in_24_transfers():
    matrix = load_matrix(MATRIX)
    plain = [t for t in matrix.transfers if not t.issue_case]
    assert len(plain) >= 24
    assert {t.offloads for t in plain} >= {"off", "gro", "tso+gro", "tso"}
    assert {t.family for t in plain} == {4, 6}
    assert {t.flows for t in plain} >= {1, 3}
    assert {t.cca for t in plain} == {"cubic", "bbr", "reno"}
    random_loss = [t for t in plain if t.data_loss > 0]
    assert min(t.data_loss for t in random_loss) == 0.005 and max(t.data_loss for t in random_loss) == 0.05
    assert any(t.ack_loss > 0 for t in plain)
    assert all(set(t.vantages) >= set(DEFAULT_VANTAGES) for t in plain)
    assert any("router-in" in t.vantages for t in plain)
    assert sorted(t.issue_case for t in matrix.transfers if t.issue_case) == [1, 2, 3, 4]


def test_committed_matrix_has_congestive_loss_rows_in_ipv6_with_an_ipv4_twin():
    """Loss at a full queue alone (no random loss): bursts, tails repaired with no hole."""
    congestive = [t for t in load_matrix(MATRIX).transfers if t.data_loss == 0 and t.queue_ms < 20 and t.rate_bps]
    assert len(congestive) >= 3
    assert {t.family for t in congestive} == {4, 6}
    assert {t.cca for t in congestive if t.family == 6} == {"cubic", "bbr", "reno"}
    assert {t.flows for t in congestive} >= {1, 3}
    assert any(t.receiver_gro for t in congestive)
    assert all(set(t.vantages) >= set(DEFAULT_VANTAGES) for t in congestive)


def test_matrix_rejects_unknown_keys_offloads_and_duplicate_names():
    with pytest.raises(TestbedError, match="unknown key"):
        matrix_from_document({"transfer": [{"name": "a", "gro": True}]})
    with pytest.raises(TestbedError, match="offloads"):
        matrix_from_document({"transfer": [{"name": "a", "offloads": "lro"}]})
    with pytest.raises(TestbedError, match="unique"):
        matrix_from_document({"transfer": [{"name": "a"}, {"name": "a"}]})


def test_defaults_apply_and_transfer_overrides_them():
    matrix = matrix_from_document(
        {
            "defaults": {"rate": "50mbit", "data_loss": "2%", "buffer_kib": 4096},
            "transfer": [{"name": "a"}, {"name": "b", "rate": "0", "receiver_buffer_kib": 32}],
        }
    )
    a, b = matrix.transfers
    assert (a.rate_bps, a.data_loss, a.buffer_at("receiver")) == (50_000_000, 0.02, 4096)
    assert (b.rate_bps, b.buffer_at("receiver"), b.buffer_at("sender")) == (0, 32, 4096)


@pytest.mark.parametrize("family", [4, 6])
def test_length_buckets_count_a_gso_packet_as_the_segments_it_is_split_into(family):
    header = {4: 52, 6: 72}[family]
    mss = mss_bytes(family)
    buckets = segment_buckets(family)

    def segments_of(ip_length):
        return next(k for k, low, high in buckets if low <= ip_length <= high)

    assert segments_of(header + 1) == 1
    assert segments_of(header + mss) == 1
    assert segments_of(header + mss + 1) == 2
    assert segments_of(header + 10 * mss) == 10
    assert segments_of(65535) == -(-(65535 - header) // mss)
    assert all(buckets[i][2] + 1 == buckets[i + 1][1] for i in range(len(buckets) - 1))


@pytest.mark.parametrize("family, header, mss", [(4, 40, 1460), (6, 60, 1440)])
def test_without_timestamps_the_segment_is_12_bytes_longer_and_the_buckets_follow(family, header, mss):
    """A sender with tcp_timestamps=0 (Windows' default) sends 1460-byte segments over IPv4: a
    GSO packet of k of them is header + k * 1460 long, which the timestamps' buckets (1448 a
    segment) would count as k + 1 segments from k = 2 on."""
    assert mss_bytes(family, timestamps=False) == mss == mss_bytes(family) + 12
    buckets = segment_buckets(family, timestamps=False)

    def segments_of(ip_length):
        return next(k for k, low, high in buckets if low <= ip_length <= high)

    for k in (1, 2, 10, 44):
        assert segments_of(header + k * mss) == k
        assert segments_of(header + (k - 1) * mss + 1) == k
    stamped = segment_buckets(family)
    assert next(k for k, low, high in stamped if low <= header + 2 * mss <= high) == 3, "the bug this guards"
    assert data_match(family, [41001], timestamps=False)[-1] == f"{header + 1}:65535"


def test_sender_stack_keys_become_the_sender_namespaces_sysctls_and_default_to_linuxs():
    plain, windows = matrix_from_document(
        {
            "transfer": [
                {"name": "linux"},
                {"name": "w", "sender_timestamps": False, "sender_sack": False, "sender_ecn": True},
            ]
        }
    ).transfers
    assert plain.sender_sysctls == {
        "net.ipv4.tcp_timestamps": "1",
        "net.ipv4.tcp_sack": "1",
        "net.ipv4.tcp_ecn": "0",
    }
    assert windows.sender_sysctls == {
        "net.ipv4.tcp_timestamps": "0",
        "net.ipv4.tcp_sack": "0",
        "net.ipv4.tcp_ecn": "1",
    }
    # the receiver keeps its defaults (tcp_ecn=2 answers an ECN SYN): only its buffer is set
    assert plain.receiver_sysctls == {} and windows.receiver_sysctls == {}


@pytest.mark.parametrize("key", ["sender_timestamps", "sender_sack", "sender_ecn"])
def test_sender_stack_keys_take_only_true_or_false(key):
    with pytest.raises(TestbedError, match=key):
        matrix_from_document({"transfer": [{"name": "a", key: "off"}]})
    with pytest.raises(TestbedError, match=key):
        matrix_from_document({"transfer": [{"name": "a", key: 0}]})


def test_receiver_rmem_limits_the_receivers_buffer_ceiling_in_kib():
    (limited,) = matrix_from_document({"transfer": [{"name": "a", "receiver_rmem_kib": 256}]}).transfers
    assert limited.receiver_sysctls == {"net.ipv4.tcp_rmem": f"4096 131072 {256 * 1024}"}
    (small,) = matrix_from_document({"transfer": [{"name": "a", "receiver_rmem_kib": 64}]}).transfers
    assert small.receiver_sysctls == {"net.ipv4.tcp_rmem": f"4096 {64 * 1024} {64 * 1024}"}
    for bad in (-1, 4, "64k", 1.5, True):
        with pytest.raises(TestbedError, match="receiver_rmem_kib"):
            matrix_from_document({"transfer": [{"name": "a", "receiver_rmem_kib": bad}]})


def test_app_rate_and_block_make_iperf3_an_application_limited_sender():
    (plain,) = matrix_from_document({"transfer": [{"name": "a"}]}).transfers
    assert plain.iperf3_application_args == []
    (limited,) = matrix_from_document(
        {"transfer": [{"name": "a", "app_rate": "20mbit", "app_block_kib": 64}]}
    ).transfers
    assert limited.app_rate_bps == 20_000_000 and limited.iperf3_application_args == ["-b", "20000000", "-l", "64K"]
    (rate_only,) = matrix_from_document({"transfer": [{"name": "a", "app_rate": "5mbit"}]}).transfers
    assert rate_only.iperf3_application_args == ["-b", "5000000"]
    for bad in (-1, 2048, "64k", 1.5, True):
        with pytest.raises(TestbedError, match="app_block_kib"):
            matrix_from_document({"transfer": [{"name": "a", "app_block_kib": bad}]})


def test_snaplen_is_checked_and_a_short_one_may_cut_sack_acks_where_headers_are_long():
    (short,) = matrix_from_document({"transfer": [{"name": "a", "family": 6, "snaplen_bytes": 96}]}).transfers
    assert short.snaplen_bytes == 96
    # Ethernet 14 + IPv6 40 + a TCP header with SACK blocks up to 60 = 114 > 96
    assert short.snaplen_cuts_headers("receiver") and short.snaplen_cuts_headers("router-out")
    assert "snaplen_short" in expected_warnings(short, "receiver", 0)[1]
    assert "snaplen_short" not in expected_warnings(short, "receiver", 0)[0], "no loss, no SACK block: nothing cut"
    v4 = Transfer(name="b", family=4, snaplen_bytes=96)
    assert not v4.snaplen_cuts_headers("receiver"), "14 + 20 + 60 = 94 fit"
    assert v4.snaplen_cuts_headers("receiver-any"), "SLL2's 20-byte header: 100 do not"
    assert "snaplen_short" not in set().union(*expected_warnings(Transfer(name="c"), "router-any", 0))
    for bad in (59, 300000, "96", 96.0):
        with pytest.raises(TestbedError, match="snaplen_bytes"):
            matrix_from_document({"transfer": [{"name": "a", "snaplen_bytes": bad}]})
    # IPv6's header is 20 bytes longer: -s 64 cut its TCP header after 10 bytes (s28-hx)
    with pytest.raises(TestbedError, match="snaplen_bytes 64: 80 to 262144 for IPv6"):
        matrix_from_document({"transfer": [{"name": "a", "family": 6, "snaplen_bytes": 64}]})
    assert matrix_from_document({"transfer": [{"name": "a", "family": 6, "snaplen_bytes": 80}]}).transfers


def test_receiver_any_is_the_receivers_any_interface_with_the_receivers_warnings_and_buffer():
    assert "receiver-any" in VANTAGES and CAPTURE_POINTS["receiver-any"] == ("rcv", "any")
    (t,) = matrix_from_document(
        {"transfer": [{"name": "a", "offloads": "gro", "vantages": ["receiver-any"], "receiver_buffer_kib": 32}]}
    ).transfers
    assert t.buffer_at("receiver-any") == 32
    must, _ = expected_warnings(t, "receiver-any", 0)
    assert must == {"super_segments"}, "GRO coalesces before the capture, whichever interface it names"


def test_sender_any_is_the_senders_any_interface_held_to_the_senders_tolerances_and_warnings():
    assert "sender-any" in VANTAGES and CAPTURE_POINTS["sender-any"] == ("snd", "any")
    assert LOST_TOLERANCE["sender-any"] == LOST_TOLERANCE["sender"]
    for offloads, flags in (("tso", {"jitter_reorders": False}), ("gro", {"sender_sack": False})):
        t = Transfer(name="a", offloads=offloads, data_loss=0.01, rate_bps=0, **flags)
        assert expected_warnings(t, "sender-any", 0) == expected_warnings(t, "sender", 0)
    # no repair overtakes first copies before the sender's own capture
    assert "paws_discards" not in set().union(*expected_warnings(Transfer(name="b"), "sender-any", 0))
    # SLL2's header is 6 bytes longer: -s 98 cuts an IPv4 ACK's SACK blocks only with -i any
    short = Transfer(name="c", snaplen_bytes=98)
    assert short.snaplen_cuts_headers("sender-any") and not short.snaplen_cuts_headers("sender")


def test_dropped_segments_weigh_each_bucket_by_its_segment_count():
    counts = {"seg1": (10, 14_480), "seg3": (2, 8_792), "seg45": (1, 65_212), "packets": (13, 88_484)}
    assert segments_from_buckets(counts, 52, 1448) == 10 + 6 + 45


@pytest.mark.parametrize("family", [4, 6])
@pytest.mark.parametrize("mtu", [1280, 1400, 1500])
@pytest.mark.parametrize("timestamps", [True, False])
def test_length_buckets_reach_a_64_kib_gso_packet_whatever_the_senders_mtu(family, mtu, timestamps):
    """A sender behind a 1280-byte MTU (a tunnel) puts up to 54 segments of 1,208 bytes in a
    64 KiB GSO packet over IPv6: buckets that stopped at 46 segments (enough for 1,428) counted
    such a packet in none, and a run's truth read 98 segments short (lost 128 where the router
    dropped 226)."""
    buckets = segment_buckets(family, timestamps, mtu)
    header = data_header_bytes(family, timestamps)
    segment = mss_bytes(family, timestamps, mtu)
    assert buckets[0][1] == header + 1 and buckets[-1][2] == 65535
    assert all(buckets[i][2] + 1 == buckets[i + 1][1] for i in range(len(buckets) - 1))
    for k in (1, 2, 46, 47, 49):
        if header + k * segment <= 65535:
            assert next(n for n, low, high in buckets if low <= header + k * segment <= high) == k
    assert buckets[-1][0] == -(-(65535 - header) // segment)


# Listings as a record made with buckets up to 46 segments keeps them (`iptables -L -v -x -n`):
# the sender's OUTPUT saw 2 GSO packets of 49 segments of 1,208 bytes (72 + 49 * 1,208 = 59,264
# bytes each) in no bucket; the router dropped 2 packets of 2 segments.
OLD_RECORD_LISTINGS = """Chain RHSENT (1 references)
    pkts      bytes target     prot opt in     out     source               destination
     130   164058            0    --  *      *       ::/0                 ::/0                 length 73:1280 /* seg1 */
     597  1485336            0    --  *      *       ::/0                 ::/0                 length 1281:2488 /* seg2 */
     729  1767922            0    --  *      *       ::/0                 ::/0                 /* packets */

Chain RHACKDROP (0 references)
    pkts      bytes target     prot opt in     out     source               destination
       0        0 DROP       0    --  *      *       ::/0                 ::/0                 /* ack-drop */

Chain RHDROP (0 references)
    pkts      bytes target     prot opt in     out     source               destination
       2     4976            0    --  *      *       ::/0                 ::/0                 length 1281:2488 /* seg2 */
       2     4976 DROP       0    --  *      *       ::/0                 ::/0                 /* packets */

Chain RHARRIVED (1 references)
    pkts      bytes target     prot opt in     out     source               destination
     130   164058            0    --  *      *       ::/0                 ::/0                 length 73:1280 /* seg1 */
     595  1480360            0    --  *      *       ::/0                 ::/0                 length 1281:2488 /* seg2 */
       2   118528            0    --  *      *       ::/0                 ::/0                 length 58057:59264 /* seg49 */
     727  1762946            0    --  *      *       ::/0                 ::/0                 /* packets */
"""


def test_a_records_truth_counts_packets_past_its_last_bucket_by_their_payload_bytes():
    """The packets a chain's `packets` rule saw in no bucket carry (bytes - headers) / MSS
    segments, so a record made while the buckets stopped short is read again right."""
    (tunnel,) = matrix_from_document(
        {"transfer": [{"name": "t", "family": 6, "offloads": "tso+gro", "sender_mtu": 1280}]}
    ).transfers
    counts = counted_segments(OLD_RECORD_LISTINGS, tunnel)
    assert counts["sent_segments"] == 130 + 2 * 597 + 2 * 49
    assert counts["arrived_segments"] == 130 + 2 * 595 + 2 * 49
    assert (counts["data_drop_packets"], counts["data_drop_segments"]) == (2, 4)
    assert (counts["sent_packets"], counts["arrived_packets"], counts["ack_drop_packets"]) == (729, 727, 0)
    as_recorded = {**counts, "sent_segments": 130 + 2 * 597, "lost_segments": -94, "other_drop_segments": -98}
    iperf3 = {
        "qdisc_drops": 0,
        "tcpinfo_retransmissions": 4,
        "tcpinfo_per_stream": {"41001": 4},
        "tcpinfo_at_close": {"41001": {"total_retrans": 4}},
        "delivered_bytes": 1,
        "delivered_seconds": 1.0,
        "delivered_bps": 8.0,
        "sent_bytes": 1,
        "cca_reported": "bbr",
    }
    truth = recounted_truth({"rules_text": OLD_RECORD_LISTINGS, "truth": {**as_recorded, **iperf3}}, tunnel)
    assert (truth["lost_segments"], truth["data_drop_segments"], truth["other_drop_segments"]) == (4, 4, 0)
    assert truth["retransmissions_at_close"] == 4 and truth["tcpinfo_per_stream"] == {"41001": 4}


SS_OUTPUT = """ESTAB 0 1234 10.72.1.1:41001 10.72.2.1:5201
\t cubic wscale:7,7 rto:204 rtt:1.2/0.3 mss:1448 cwnd:10 bytes_sent:100 bytes_retrans:2896 bytes_acked:90 segs_out:120 segs_in:60 data_segs_out:118 retrans:0/2 lost:0 dsack_dups:1 reord_seen:3
FIN-WAIT-1 0 0 [fd72:1::1]:41002 [fd72:2::1]:5201
\t bbr wscale:7,7 bytes_acked:5 segs_out:7 data_segs_out:5
TIME-WAIT 0 0 10.72.1.1:41003 10.72.2.1:5201
"""


def test_ss_info_gives_each_sockets_retransmissions_segments_and_dsacks_received():
    samples = parse_ss_info(SS_OUTPUT)
    assert samples[41001] == {
        "total_retrans": 2,
        "segs_out": 120,
        "data_segs_out": 118,
        "bytes_acked": 90,
        "bytes_sent": 100,
        "bytes_retrans": 2896,
        "dsack_dups": 1,
        "reord_seen": 3,
    }
    # ss prints dsack_dups and reord_seen only when not 0
    assert samples[41002]["total_retrans"] == 0 and samples[41002]["segs_out"] == 7
    assert (samples[41002]["dsack_dups"], samples[41002]["reord_seen"]) == (0, 0)
    assert 41003 not in samples


def test_iperf3_truth_takes_per_stream_retransmissions_and_receiver_bytes():
    document = {
        "start": {"connected": [{"socket": 5, "local_port": 41001}, {"socket": 7, "local_port": 41002}]},
        "end": {
            "streams": [{"sender": {"socket": 5, "retransmits": 3}}, {"sender": {"socket": 7, "retransmits": 4}}],
            "sum_sent": {"retransmits": 7, "bytes": 1000},
            "sum_received": {"bytes": 900, "seconds": 2.0, "bits_per_second": 3600.0},
            "sender_tcp_congestion": "bbr",
        },
    }
    truth = iperf3_truth(document)
    assert truth["tcpinfo_per_stream"] == {41001: 3, 41002: 4}
    assert (truth["tcpinfo_retransmissions"], truth["delivered_bytes"], truth["delivered_bps"]) == (7, 900, 3600.0)


def _server_document(bytes_per_interval):
    intervals = [
        {"sum": {"start": 0.5 * i, "end": 0.5 * (i + 1), "bytes": size}} for i, size in enumerate(bytes_per_interval)
    ]
    return {"intervals": intervals}


def test_receiving_seconds_leave_out_the_servers_idle_tail_waiting_for_the_end_of_test():
    # the data stopped halfway through the fourth interval (half the bytes of the one before);
    # the end-of-test message came 1.75 s later
    received = {"delivered_bytes": 3_500_000, "delivered_seconds": 3.5, "delivered_bps": 8e6}
    trimmed = receiving_seconds(received, _server_document([1e6, 1e6, 1e6, 5e5, 0, 0, 0]))
    assert trimmed["server_idle_tail_s"] == pytest.approx(1.75)
    assert trimmed["delivered_seconds"] == pytest.approx(1.75)
    assert trimmed["delivered_bps"] == pytest.approx(8 * 3_500_000 / 1.75)


def test_receiving_seconds_leave_out_the_idle_part_of_the_last_interval_with_data():
    """q1-tso-v4-p2-cubic (1 ms of queue at 100 Mbit/s): the last data came 13 ms into the
    server's interval 4.0-4.1 s and the end-of-test message ~200 ms later; counting the rest of
    that interval read the rate 2.2% low at every capture point."""
    intervals = [
        {"sum": {"start": 3.9, "end": 4.0, "bytes": 1_078_760}},
        {"sum": {"start": 4.0, "end": 4.1, "bytes": 154_936}},
        {"sum": {"start": 4.1, "end": 4.2, "bytes": 0}},
        {"sum": {"start": 4.2, "end": 4.21, "bytes": 0}},
    ]
    received = {"delivered_bytes": 45_174_704, "delivered_seconds": 4.21, "delivered_bps": 85.8e6}
    trimmed = receiving_seconds(received, {"intervals": intervals})
    assert trimmed["delivered_seconds"] == pytest.approx(4.0 + 0.1 * 154_936 / 1_078_760)
    # a server that read to its end keeps its seconds, even where the flows' tail came slower:
    # with no empty interval after it, the end message came in time and nothing was idle
    assert receiving_seconds(received, _server_document([1e6, 1e6, 1e6, 1e6])) == {"server_idle_tail_s": 0.0}
    assert receiving_seconds(received, _server_document([1e6, 1e6, 1e6, 1e5])) == {"server_idle_tail_s": 0.0}


def test_a_records_truth_read_again_trims_the_servers_idle_tail_once(tmp_path):
    """r10-gro-v6-p2-bbr-q5 (10 Mbit/s, 5 ms of queue): the client's end of test reached the
    server 3.4 s after the last data, and iperf3's rate counted those seconds (6.75 Mbit/s for
    the 9.2 the receiver took in). A record made before the trim is trimmed when read again,
    one made after it is not trimmed twice."""
    (transfer,) = matrix_from_document({"transfer": [{"name": "t", "family": 6}]}).transfers
    (tmp_path / "server.json").write_text(json.dumps(_server_document([1e6, 1e6, 1e6, 5e5, 0, 0, 0])))
    iperf3 = {
        "qdisc_drops": 0,
        "tcpinfo_retransmissions": 0,
        "tcpinfo_per_stream": {},
        "tcpinfo_at_close": {},
        "delivered_bytes": 3_500_000,
        "delivered_seconds": 3.5,
        "delivered_bps": 8e6,
        "sent_bytes": 3_500_000,
        "cca_reported": "cubic",
    }
    counts = counted_segments(OLD_RECORD_LISTINGS, transfer)
    record = {"rules_text": OLD_RECORD_LISTINGS, "run_dir": str(tmp_path), "truth": {**counts, **iperf3}}
    truth = recounted_truth(record, transfer)
    assert (truth["delivered_seconds"], truth["server_idle_tail_s"]) == (pytest.approx(1.75), pytest.approx(1.75))
    again = recounted_truth({**record, "truth": truth}, transfer)
    assert again["delivered_seconds"] == pytest.approx(1.75) and again["delivered_bps"] == pytest.approx(16e6)
    # a record trimmed by the older rule (whole empty intervals only) is trimmed by today's
    older = {**truth, "delivered_seconds": 2.0, "server_idle_tail_s": 1.5, "delivered_bps": 14e6}
    today = recounted_truth({**record, "truth": older}, transfer)
    assert today["delivered_seconds"] == pytest.approx(1.75) and today["delivered_bps"] == pytest.approx(16e6)


def test_receiving_seconds_leave_out_half_the_last_interval_where_its_bytes_came_after_a_stall():
    """ns-v4-p1-bbr-q2 (no SACK, 2 ms of queue): the receiver took its last 43,440 bytes at once
    16 ms into the server's interval 3.80-3.90 s, when a repair filled the hole that held them,
    after an interval that read nothing; the whole interval counted read the goodput 2.3% high at
    every capture point. Where those bytes came is not in the record: half the interval is."""
    intervals = [
        {"sum": {"start": 3.6, "end": 3.7, "bytes": 311_320}},
        {"sum": {"start": 3.7, "end": 3.8, "bytes": 0}},
        {"sum": {"start": 3.8, "end": 3.9, "bytes": 43_440}},
        {"sum": {"start": 3.9, "end": 4.0, "bytes": 0}},
    ]
    received = {"delivered_bytes": 2_183_360, "delivered_seconds": 4.0, "delivered_bps": 4.37e6}
    trimmed = receiving_seconds(received, {"intervals": intervals})
    assert trimmed["server_idle_tail_s"] == pytest.approx(0.15)
    assert trimmed["delivered_seconds"] == pytest.approx(3.85)


def test_a_records_truth_keeps_the_servers_silent_start_and_goodput_leaves_it_out(tmp_path):
    """d50-gro-v4-p1-bbr-l1-j10-reorder (a VM, 50 ms round trip): TEST_RUNNING waited 208 ms
    behind TEST_START's delayed ACK and the first data came 341 ms into the server's test, which
    read nothing for 394 ms; taking off the round trip alone read the goodput 3.1% high."""
    (transfer,) = matrix_from_document({"transfer": [{"name": "d", "delay": "25ms", "ack_delay": "25ms"}]}).transfers
    (tmp_path / "server.json").write_text(json.dumps(_server_document([0, 2e5, 1e6, 1e6, 1e6])))
    iperf3 = {
        "qdisc_drops": 0,
        "tcpinfo_retransmissions": 0,
        "tcpinfo_per_stream": {},
        "tcpinfo_at_close": {},
        "delivered_bytes": 3_200_000,
        "delivered_seconds": 2.5,
        "delivered_bps": 3_200_000 * 8 / 2.5,
        "sent_bytes": 3_200_000,
        "cca_reported": "bbr",
    }
    counts = counted_segments(OLD_RECORD_LISTINGS, transfer)
    record = {"rules_text": OLD_RECORD_LISTINGS, "run_dir": str(tmp_path), "truth": {**counts, **iperf3}}
    truth = recounted_truth(record, transfer)
    assert truth["server_idle_head_s"] == pytest.approx(0.5)
    assert delivery_rate_bps(truth, transfer) == pytest.approx(3_200_000 * 8 / 2.0)
    # where the first interval read data the round trip is all that is left out
    (tmp_path / "server.json").write_text(json.dumps(_server_document([2e5, 1e6, 1e6, 1e6, 1e6])))
    truth = recounted_truth(record, transfer)
    assert truth["server_idle_head_s"] == 0.0
    assert delivery_rate_bps(truth, transfer) == pytest.approx(3_200_000 * 8 / 2.45)


def test_receiving_seconds_keep_iperf3s_own_when_the_server_read_data_to_its_end():
    received = {"delivered_bytes": 2_000_000, "delivered_seconds": 2.0, "delivered_bps": 8e6}
    assert receiving_seconds(received, _server_document([5e5, 5e5, 5e5, 5e5])) == {"server_idle_tail_s": 0.0}
    assert receiving_seconds(received, None) == {"server_idle_tail_s": 0.0}


def test_expected_warnings_follow_the_capture_conditions():
    gro = Transfer(name="a", offloads="gro", data_loss=0.01)
    assert expected_warnings(gro, "receiver", 0) == ({"super_segments"}, {"paws_discards", "time_backwards"})
    assert expected_warnings(gro, "sender", 0) == (set(), {"time_backwards"})
    # a repair overtaking first copies makes the receiver discard them: below the sender only;
    # at the sender, a path that reorders leaves some first copies' fate to an estimate
    reorders = Transfer(name="r", offloads="gro", data_loss=0.01, delay_ms=25, jitter_ms=10, jitter_reorders=True)
    assert expected_warnings(reorders, "sender", 0) == (
        set(),
        {"loss_estimated", "spurious_retransmissions", "time_backwards"},
    )
    assert "loss_estimated" not in expected_warnings(reorders, "receiver", 0)[1]
    # an unshaped path reorders as well (veths at several Gbit/s across CPUs); a shaped one keeps order
    assert "loss_estimated" in expected_warnings(Transfer(name="u", rate_bps=0, data_loss=0.01), "sender", 0)[1]
    assert "loss_estimated" not in expected_warnings(Transfer(name="s", data_loss=0.01), "sender", 0)[1]
    # a shaped path that keeps order, with SACK: its retransmissions are needed ones
    assert "spurious_retransmissions" not in expected_warnings(Transfer(name="s", data_loss=0.01), "sender", 0)[1]
    # without SACK, the fate of first copies resent with a window and of resent copies no D-SACK
    # reports is estimated at the sender
    no_sack = Transfer(name="n", data_loss=0.01, sender_sack=False)
    assert expected_warnings(no_sack, "sender", 0) == (
        set(),
        {"loss_estimated", "spurious_retransmissions", "time_backwards"},
    )
    assert "loss_estimated" not in expected_warnings(no_sack, "receiver", 0)[1]
    # with both sides of the router in one file, the loss after it rests on the same repeats
    unshaped = Transfer(name="u", rate_bps=0, data_loss=0.005)
    assert "spurious_retransmissions" in expected_warnings(unshaped, "router-any", 0, path_lost_segments=9)[1]
    assert "spurious_retransmissions" not in expected_warnings(unshaped, "router-out", 0, path_lost_segments=9)[1]
    shaped = Transfer(name="s", data_loss=0.005)
    assert "spurious_retransmissions" not in expected_warnings(shaped, "router-any", 0, path_lost_segments=9)[1]
    # the receiver resets with a flight in flight: where the router dropped segments, the queue
    # may have overflowed in the round trips before it, and the sender estimates part of it lost
    assert "unacknowledged_at_end" in expected_warnings(gro, "sender", 0, path_lost_segments=12)[1]
    assert "unacknowledged_at_end" in expected_warnings(gro, "router-in", 0, path_lost_segments=12)[1]
    assert "unacknowledged_at_end" not in expected_warnings(gro, "sender", 0, path_lost_segments=0)[1]
    assert "unacknowledged_at_end" not in expected_warnings(gro, "receiver", 0, path_lost_segments=12)[1]
    must, may = expected_warnings(gro, "router-any", 0, path_lost_segments=12)
    assert must == {"duplicate_frames", "forwarding_drops"}
    assert "time_backwards" in may, "-i any on a busy forwarding host writes frames out of time order"
    must, may = expected_warnings(Transfer(name="b", offloads="tso"), "sender", 5)
    # the repairs a sender's capture missed are estimated (loss_estimated where that matters)
    assert must == {"super_segments", "capture_drops"} and may == {"capture_gaps", "time_backwards", "loss_estimated"}


def test_random_loss_that_dropped_nothing_requires_no_forwarding_drops():
    """short1-gro-v6-p4-bbr-l1: 1% random loss over a 1 s transfer, which the router stops half a
    second before the end; its four connections opened late and the router dropped nothing."""
    lossy = Transfer(name="s", family=6, flows=4, duration_s=1.0, data_loss=0.01)
    must, may = expected_warnings(lossy, "router-any", 0, path_lost_segments=0)
    assert "forwarding_drops" not in must and "forwarding_drops" in may
    assert "forwarding_drops" in expected_warnings(lossy, "router-any", 0, path_lost_segments=3)[0]


def test_ipv6_loss_above_the_orderly_rate_may_be_called_a_floor_or_not():
    """r500-v6-p1-cubic-l1 (held out, 2 runs): 20 and 32 first copies reached the router behind
    data sent after them; the holes counted 582 and 484 for 573 and 477 drops, and the analyzer
    rightly said `loss_not_floor`. At 100 Mbit/s the veths keep order: `loss_floor` only."""
    for rate_bps, expected in (
        (500_000_000, (set(), {"loss_floor", "loss_not_floor"})),
        (100_000_000, ({"loss_floor"}, set())),
    ):
        t = Transfer(name="v6", family=6, data_loss=0.01, rate_bps=rate_bps)
        must, may = expected_warnings(t, "router-out", 0, path_lost_segments=500)
        assert (must & {"loss_floor", "loss_not_floor"}, may & {"loss_floor", "loss_not_floor"}) == expected
    assert "loss_estimated" in expected_warnings(Transfer(name="f", rate_bps=500_000_000), "sender", 0)[1]


def test_ipv6_loss_is_expected_to_be_called_a_floor_after_the_routers_drops_only():
    v6 = Transfer(name="v6", offloads="off", family=6, data_loss=0.02)
    for vantage in ("receiver", "receiver-any", "router-out"):
        assert "loss_floor" in expected_warnings(v6, vantage, 0, 333)[0], vantage
        # the router dropped nothing: no holes, no floor
        assert "loss_floor" not in set().union(*expected_warnings(v6, vantage, 0, 0)), vantage
    # the sender counts its retransmissions; before the drops there is no hole
    for vantage in ("sender", "router-in"):
        assert "loss_floor" not in set().union(*expected_warnings(v6, vantage, 0, 333)), vantage
    # `-i any` counts the router's own drops exactly; the holes may come to a few more
    must, may = expected_warnings(v6, "router-any", 0, 333)
    assert "loss_floor" in may and "loss_floor" not in must
    # IPv4 from Linux numbers its IDs per connection: they count loss exactly; only iperf3's
    # control connection, mostly the client's pure ACKs, may lose a segment at the bottleneck's
    # queue and count it from holes (p16-v4-reno-q2: 2 segments), never on an unshaped path
    v4 = Transfer(name="v4", offloads="off", family=4, data_loss=0.02)
    must, may = expected_warnings(v4, "receiver", 0, 333)
    assert "loss_floor" in may and "loss_floor" not in must
    unshaped = Transfer(name="v4u", offloads="off", family=4, data_loss=0.02, rate_bps=0)
    assert "loss_floor" not in set().union(*expected_warnings(unshaped, "receiver", 0, 333))
    assert "loss_floor" not in set().union(*expected_warnings(v4, "router-in", 0, 333))
    # without timestamps the holes' count is no floor: no_timestamps instead
    no_timestamps = Transfer(name="nots", offloads="off", family=6, data_loss=0.02, sender_timestamps=False)
    must, may = expected_warnings(no_timestamps, "receiver", 0, 333)
    assert "no_timestamps" in must and "loss_floor" not in must | may


def test_a_snaplen_that_cuts_the_timestamps_option_is_expected_to_read_as_no_timestamps():
    # -s 80: Ethernet + IPv6 + 26 bytes of TCP, the option ends at 32 (s27-h8h's snap80 row:
    # no_timestamps where loss_floor was required); -i any's 20-byte header cuts sooner
    snap80 = Transfer(name="s80", offloads="gro", family=6, data_loss=0.01, snaplen_bytes=80)
    assert not snap80.timestamps_seen_at("receiver") and not snap80.timestamps_seen_at("router-any")
    must, may = expected_warnings(snap80, "receiver", 0, 134)
    assert "no_timestamps" in must and "loss_floor" not in must | may
    assert "no_timestamps" in expected_warnings(snap80, "router-any", 0, 134)[1]
    # IPv4 keeps them at 80 on Ethernet (66 bytes) and with -i any (72); IPv6 at 86 on Ethernet
    assert Transfer(name="v4", family=4, snaplen_bytes=80).timestamps_seen_at("receiver-any")
    assert Transfer(name="v6", family=6, snaplen_bytes=86).timestamps_seen_at("receiver")
    assert not Transfer(name="v6", family=6, snaplen_bytes=86).timestamps_seen_at("receiver-any")
    must, may = expected_warnings(replace(snap80, snaplen_bytes=128), "receiver", 0, 134)
    assert "loss_floor" in must and "no_timestamps" not in must | may


def test_ipv6_loss_is_expected_to_be_no_floor_where_the_capture_dropped_or_the_path_reorders():
    """A repair the capture missed hides a loss, a late original taken for a repair adds one:
    `loss_not_floor` replaces `loss_floor` where the capture's counter shows drops or the path's
    jitter reorders; at an unlimited rate (~1 Gbit/s on the veths, which reorder by chance)
    either may be raised."""
    v6 = Transfer(name="v6", offloads="off", family=6, data_loss=0.01, receiver_buffer_kib=16)
    for vantage in ("receiver", "receiver-any", "router-out"):
        must, may = expected_warnings(v6, vantage, 316_284, 5742)
        assert "loss_not_floor" in must and "loss_floor" not in must | may, vantage
        assert set().union(*expected_warnings(v6, vantage, 0, 5742)) >= {"loss_floor"}, vantage
        assert "loss_not_floor" not in set().union(*expected_warnings(v6, vantage, 0, 5742)), vantage
    # where the router dropped nothing, holes can only be the capture's: allowed, not required
    must, may = expected_warnings(v6, "receiver", 316_284, 0)
    assert "loss_not_floor" in may and "loss_not_floor" not in must
    assert "loss_not_floor" not in set().union(*expected_warnings(v6, "sender", 316_284, 5742))
    jitter = Transfer(name="j", offloads="off", family=6, data_loss=0.01, jitter_ms=10, jitter_reorders=True)
    must, may = expected_warnings(jitter, "receiver", 0, 300)
    assert "loss_not_floor" in must and "loss_floor" not in must | may
    unlimited = Transfer(name="u", offloads="off", family=6, data_loss=0.01, rate_bps=0)
    in_order_jitter = Transfer(name="i", offloads="off", family=6, data_loss=0.01, jitter_ms=10)
    for transfer in (unlimited, in_order_jitter):
        must, may = expected_warnings(transfer, "router-out", 0, 3173)
        assert not {"loss_floor", "loss_not_floor"} & must and {"loss_floor", "loss_not_floor"} <= may


def test_any_capture_point_may_write_frames_out_of_time_order_but_none_must():
    # issue4's receiver (1 Gbit/s, one interface, host load ~8): an outgoing ACK written 3.2 ms
    # after the incoming data frame stamped later than it; the file does step back
    for vantage in ("sender", "receiver", "router-any", "router-out", "router-in"):
        must, may = expected_warnings(Transfer(name="c", offloads="off", data_loss=0.01), vantage, 0)
        assert "time_backwards" in may and "time_backwards" not in must


def record_for(vantage: str, kernel_drops: int = 0) -> dict:
    transfer = Transfer(name="t", offloads="gro", flows=2, data_loss=0.01)
    return {
        "transfer": {**transfer.__dict__, "vantages": list(transfer.vantages)},
        "sender_address": "10.72.1.1",
        "client_ports": [41001, 41002],
        "captures": {vantage: {"pcap": "x", "buffer_kib": 8192, "counters": {"kernel_drops": kernel_drops}}},
        "truth": {
            "lost_segments": 200,
            "sent_segments": 20000,
            "data_drop_segments": 190,
            "data_drop_packets": 190,
            "other_drop_segments": 10,
            "qdisc_drops": 10,
            "ack_drop_packets": 0,
            "tcpinfo_retransmissions": 200,
            "retransmissions_at_close": 201,
            "bytes_acked_at_close": None,
            "delivered_bps": 1e8,
            "delivered_bytes": 5e7,
        },
    }


def direction(
    port: int, lost: int, retransmissions: int, goodput_bps: float, src: str = "10.72.1.1", start_s: float = 0.0
) -> dict:
    """A data direction's record that delivered half its goodput in bytes: over 4 s from `start_s`."""
    return {
        "src": src,
        "sport": port,
        "lost_segments": lost,
        "retransmissions": retransmissions,
        "goodput_bps": goodput_bps,
        "delivered_bytes": goodput_bps / 2,
        "delivery_start_s": start_s,
        "delivery_end_s": start_s + 4.0,
        "retransmissions_in_capture": retransmissions,
    }


def test_sender_row_sums_the_data_directions_and_applies_the_sender_tolerances():
    document = {
        "directions": [
            direction(41001, 100, 100, 5e7),
            direction(41002, 103, 101, 5e7),
            direction(5201, 0, 0, 1.0, src="10.72.2.1"),
        ],
        "warnings": [],
    }
    row = compare_capture(record_for("sender"), "sender", document)
    assert (row["lost_segments"], row["retransmissions"], row["directions_found"]) == (203, 201, 2)
    assert row["lost_ok"] and row["retransmissions_ok"] and row["goodput_ok"] and row["ok"]
    assert row["delivered_bytes"] == 5e7 and row["delivered_ok"]
    assert row["per_flow_retransmissions_worst_error"] is None  # no per-socket TCP_INFO in this record
    record = record_for("sender")
    record["truth"]["tcpinfo_at_close"] = {"41001": {"total_retrans": 100}, "41002": {"total_retrans": 104}}
    assert compare_capture(record, "sender", document)["per_flow_retransmissions_worst_error"] == pytest.approx(
        -3 / 104
    )
    document["directions"][1]["lost_segments"] = 105  # 205 vs 200: 2.5% > 2% at the sender
    assert not compare_capture(record_for("sender"), "sender", document)["ok"]


def test_multi_flow_goodput_is_the_transfers_bytes_over_the_time_any_flow_delivered_not_rates_added():
    """Two streams of one iperf3 test: the second's first flight was lost and it started a
    timeout (1 s) later, so it delivered over 3 s of the test's 4. The truth is the test's
    bytes over its clock (5e7 bytes in 4 s: 1e8 bit/s); the flows' rates added read +12.5%."""
    record = record_for("receiver")
    record["truth"].update(delivered_bytes=5e7, delivered_seconds=4.0, delivered_bps=1e8)
    early = direction(41001, 100, 0, 6.25e7)  # 3.125e7 bytes over 0-4 s
    late = {**direction(41002, 100, 0, 5e7), "delivered_bytes": 1.875e7, "delivery_start_s": 1.0}
    assert early["goodput_bps"] + late["goodput_bps"] == pytest.approx(1.125e8)
    warned = [{"code": "super_segments"}]
    row = compare_capture(record, "receiver", {"directions": [early, late], "warnings": warned})
    assert row["goodput_bps"] == pytest.approx(1e8) and row["goodput_ok"] and row["ok"]


def test_comparison_reports_the_analyzers_own_transfer_goodput_and_each_flows_delivered_bytes():
    record = record_for("receiver")
    record["truth"]["tcpinfo_at_close"] = {"41001": {"bytes_acked": 2.5e7}, "41002": {"bytes_acked": 2.4e7}}
    summary = {"transfer": {"flows": 2, "goodput_bps": 1e8}}
    directions = [direction(41001, 100, 0, 5e7), direction(41002, 100, 0, 5e7)]
    row = compare_capture(record, "receiver", {"directions": directions, "warnings": [], "summary": summary})
    assert (row["summary_flows"], row["summary_goodput_bps"]) == (2, 1e8) == (2, row["goodput_bps"])
    assert row["per_flow_delivered_worst_error"] == pytest.approx(0.1e7 / 2.4e7)


def test_receiver_row_needs_the_expected_warning_and_no_other():
    directions = [direction(41001, 103, 0, 5e7), direction(41002, 103, 0, 5e7)]
    row = compare_capture(record_for("receiver"), "receiver", {"directions": directions, "warnings": []})
    assert row["lost_ok"] and row["retransmissions_ok"] is None
    assert row["warnings_missing"] == "super_segments" and not row["ok"]
    warned = [{"code": "super_segments"}, {"code": "ip_id_contradicted"}]
    row = compare_capture(record_for("receiver"), "receiver", {"directions": directions, "warnings": warned})
    assert row["warnings_unexpected"] == "ip_id_contradicted" and not row["ok"]


def test_goodput_truth_counts_what_the_receiver_acknowledged_not_only_what_iperf3_read():
    """A lagging iperf3 server stops with bytes still in its socket: they were delivered
    (the sender's bytes_acked counts them) and the rate over its seconds must count them too."""
    truth = {
        "delivered_bytes": 31_179_840,
        "delivered_seconds": 4.088448,
        "delivered_bps": 31_179_840 * 8 / 4.088448,
        "bytes_acked_at_close": 31_531_742,
    }
    rate_bps = delivery_rate_bps(truth, Transfer(name="g", offloads="gro"))
    assert rate_bps == pytest.approx(31_531_742 * 8 / 4.088448)
    assert rate_bps > 1.01 * truth["delivered_bps"]


def test_a_record_missing_one_streams_close_sums_nothing_at_close_and_falls_back_to_iperf3():
    """Two streams, one socket's close unrecorded (still resending after a timeout as the watch
    stopped; seen on a no-SACK TSO/BBR row in two runs): the other socket's bytes_acked alone
    (468,698 of iperf3's 810,084 bytes) is not the transfer's, nor its total_retrans."""
    transfer = Transfer(name="s", offloads="tso+gro", flows=2)
    one_closed = {"41002": {"bytes_acked": 468_698, "total_retrans": 287, "dsack_dups": 0}}
    fields = {
        **counted_segments(OLD_RECORD_LISTINGS, transfer),
        "qdisc_drops": 0,
        "tcpinfo_retransmissions": 437,
        "tcpinfo_per_stream": {"41001": 151, "41002": 286},
        "tcpinfo_at_close": one_closed,
        "delivered_bytes": 810_084,
        "delivered_seconds": 4.0,
        "delivered_bps": 810_084 * 8 / 4.0,
        "sent_bytes": 1,
        "cca_reported": "bbr",
    }
    truth = recounted_truth({"rules_text": OLD_RECORD_LISTINGS, "truth": fields}, transfer)
    assert truth["bytes_acked_at_close"] is None and truth["retransmissions_at_close"] is None
    assert truth["dsack_dups_at_close"] is None
    assert delivery_rate_bps(truth, transfer) == pytest.approx(810_084 * 8 / 4.0)
    both_closed = {**one_closed, "41001": {"bytes_acked": 341_424, "total_retrans": 151, "dsack_dups": 0}}
    truth = recounted_truth(
        {"rules_text": OLD_RECORD_LISTINGS, "truth": {**fields, "tcpinfo_at_close": both_closed}}, transfer
    )
    assert (truth["bytes_acked_at_close"], truth["retransmissions_at_close"]) == (810_122, 438)


def test_goodput_truth_leaves_out_the_round_trip_before_the_first_data_on_a_delayed_path():
    """iperf3's receiving clock starts a round trip before its first data arrives (the test's
    announcement goes out, the data comes back); on a 200 ms path over 10 s that alone read 2%
    high. Without added delay iperf3's rate is the truth as it is."""
    truth = {"delivered_bytes": 12_500_000, "delivered_seconds": 10.2, "delivered_bps": 12_500_000 * 8 / 10.2}
    delayed = Transfer(name="d", offloads="gro", delay_ms=100, ack_delay_ms=100)
    assert delivery_rate_bps(truth, delayed) == pytest.approx(1e7)
    assert delivery_rate_bps(truth, Transfer(name="p", offloads="gro")) == pytest.approx(truth["delivered_bps"])
    record = record_for("receiver")
    record["transfer"].update(delay_ms=100.0, ack_delay_ms=100.0)
    record["truth"].update(truth)
    directions = [direction(41001, 100, 0, 5e6), direction(41002, 100, 0, 5e6)]
    row = compare_capture(record, "receiver", {"directions": directions, "warnings": [{"code": "super_segments"}]})
    assert row["truth_goodput_bps"] == pytest.approx(1e7) and row["goodput_error"] == pytest.approx(0.0)


def test_relative_error_is_unknown_without_a_figure_and_exact_at_zero():
    assert relative_error(None, 5) is None
    assert relative_error(0, 0) == 0.0
    assert relative_error(3, 0) is None
    assert relative_error(103, 100) == pytest.approx(0.03)


def test_a_sender_without_timestamps_makes_ipv6_downstream_counts_warn_no_timestamps():
    v6 = Transfer(name="w", family=6, data_loss=0.02, sender_timestamps=False)
    for vantage in ("receiver", "receiver-any", "router-out"):
        assert "no_timestamps" in expected_warnings(v6, vantage, 0)[0]
    assert "no_timestamps" not in set().union(*expected_warnings(v6, "sender", 0))
    # IPv4 IDs and a forwarding host's own drops count without timestamps: allowed, not required
    v4 = Transfer(name="w4", family=4, data_loss=0.02, sender_timestamps=False)
    assert "no_timestamps" in expected_warnings(v4, "receiver", 0)[1]
    assert "no_timestamps" in expected_warnings(v6, "router-any", 0)[1]
    assert "no_timestamps" not in set().union(*expected_warnings(Transfer(name="l", family=6), "receiver", 0))


def test_a_sender_mtu_below_the_receivers_shortens_the_segments_the_truth_counts():
    """The sender takes the smaller of the receiver's MSS and its own MTU's: a 1400-byte uplink
    (a VPN) sends 1348-byte segments over IPv4 with timestamps, and the buckets follow."""
    (vpn,) = matrix_from_document({"transfer": [{"name": "v", "sender_mtu": 1400}]}).transfers
    assert transfer_mss_bytes(vpn) == 1348 and transfer_mss_bytes(Transfer(name="d")) == 1448
    buckets = segment_buckets(4, True, 1400)
    assert next(k for k, low, high in buckets if low <= 52 + 3 * 1348 <= high) == 3
    for bad in (1279, 9001, "1400", True):
        with pytest.raises(TestbedError, match="sender_mtu"):
            matrix_from_document({"transfer": [{"name": "a", "sender_mtu": bad}]})


def test_a_receiver_mtu_below_the_senders_sets_the_segments_through_the_mss_it_announces():
    """A receiver behind PPPoE (1492) or a tunnel announces a smaller MSS in its SYN; the sender's
    segments take the smaller of the two MTUs, and the truth's buckets follow."""
    downlink, both = matrix_from_document(
        {
            "transfer": [
                {"name": "d", "family": 6, "receiver_mtu": 1280},
                {"name": "b", "family": 4, "sender_mtu": 1400, "receiver_mtu": 1492},
            ]
        }
    ).transfers
    assert transfer_mss_bytes(downlink) == 1280 - 72 and transfer_mss_bytes(both) == 1400 - 52
    older_record = {key: value for key, value in asdict(downlink).items() if key != "receiver_mtu"}
    assert recorded_transfer(older_record).receiver_mtu == 1500, "records made before the key read as the veths' own"
    for bad in (1279, 9001, 1400.0):
        with pytest.raises(TestbedError, match="receiver_mtu"):
            matrix_from_document({"transfer": [{"name": "a", "receiver_mtu": bad}]})


def test_a_tunnel_in_the_path_sets_the_segments_the_sender_learns_and_the_truth_counts():
    """`path_mtu` is the router's MTU towards the receiver: the sender learns it from ICMP and the
    truth's buckets count segments of it, the smallest of the three MTUs."""
    (tunnel,) = matrix_from_document(
        {"transfer": [{"name": "p", "family": 6, "sender_mtu": 1400, "receiver_mtu": 1492, "path_mtu": 1280}]}
    ).transfers
    assert transfer_mss_bytes(tunnel) == 1280 - 72
    must, may = expected_warnings(tunnel, "sender", 0)
    assert "super_segments" in may and "super_segments" not in must, "its first flight is longer, TSO or not"
    assert "super_segments" not in set().union(*expected_warnings(Transfer(name="plain"), "sender", 0))
    with pytest.raises(TestbedError, match="path_mtu"):
        matrix_from_document({"transfer": [{"name": "a", "path_mtu": 9001}]})


def test_jumbo_frames_give_8948_byte_segments_and_buckets_up_to_a_64_kib_packet_of_them():
    """MTU 9000 on every veth (jumbo frames): IPv4 segments of 8,948 bytes with timestamps, 8,928
    over IPv6; a GRO or GSO packet of 64 KiB holds 7 of them and the buckets count it so."""
    (jumbo,) = matrix_from_document(
        {"transfer": [{"name": "j", "sender_mtu": 9000, "receiver_mtu": 9000, "path_mtu": 9000}]}
    ).transfers
    assert transfer_mss_bytes(jumbo) == 8948
    assert transfer_mss_bytes(replace(jumbo, family=6)) == 8928
    buckets = segment_buckets(4, True, 9000)
    assert next(k for k, low, high in buckets if low <= 52 + 7 * 8948 <= high) == 7
    assert buckets[-1][2] == 65535 and len(buckets) == 8
    # a jumbo sender towards a 1500-byte receiver: the receiver's MSS sets the segments
    (mixed,) = matrix_from_document({"transfer": [{"name": "m", "sender_mtu": 9000}]}).transfers
    assert transfer_mss_bytes(mixed) == 1448


def test_a_bridged_hosts_any_capture_must_say_it_holds_each_packet_twice():
    """A host whose address sits on a bridge (containers, VMs) with its veth as the port: `-i any`
    there captures each packet on the port and on the bridge, one TTL, so `duplicate_frames` is
    required of that host's any-interface capture and of no other of its captures."""
    (both,) = matrix_from_document(
        {"transfer": [{"name": "b", "bridged": ["receiver", "sender"], "data_loss": "1%"}]}
    ).transfers
    assert both.bridged == ("receiver", "sender")
    for vantage in ("receiver-any", "sender-any"):
        assert "duplicate_frames" in expected_warnings(both, vantage, 0, 10)[0]
    for vantage in ("receiver", "sender", "router-out"):
        assert "duplicate_frames" not in set().union(*expected_warnings(both, vantage, 0, 10))
    (receiver_only,) = matrix_from_document({"transfer": [{"name": "r", "bridged": ["receiver"]}]}).transfers
    assert "duplicate_frames" not in set().union(*expected_warnings(receiver_only, "sender-any", 0))
    assert "duplicate_frames" not in set().union(*expected_warnings(Transfer(name="plain"), "receiver-any", 0))
    older_record = {key: value for key, value in asdict(both).items() if key != "bridged"}
    assert recorded_transfer(older_record).bridged == (), "records made before the key had no bridge"
    assert recorded_transfer(json.loads(json.dumps(asdict(both)))).bridged == ("receiver", "sender")
    for bad in ("receiver", ["router"], [1]):
        with pytest.raises(TestbedError, match="bridged"):
            matrix_from_document({"transfer": [{"name": "a", "bridged": bad}]})


def test_a_bridged_hosts_address_and_truth_counters_sit_on_its_bridge_not_its_port():
    """The bridge is where a bridged host's IP stack sends and receives (its OUTPUT and INPUT
    counters name it); an unbridged host's veth, as before."""
    assert host_device("receiver", ("receiver",)) == BRIDGE_DEVICE
    assert host_device("sender", ("receiver",)) == CAPTURE_POINTS["sender"][1]
    assert host_device("receiver") == CAPTURE_POINTS["receiver"][1]


def test_flows_run_from_1_to_32():
    (many,) = matrix_from_document({"transfer": [{"name": "p", "flows": 32}]}).transfers
    assert many.flows == 32
    for bad in (0, 33):
        with pytest.raises(TestbedError, match="flows"):
            matrix_from_document({"transfer": [{"name": "a", "flows": bad}]})


def test_committed_matrix_has_senders_without_timestamps_or_sack_a_short_snaplen_and_smaller_mtus():
    """Conditions other hosts bring: no timestamps, no SACK (both families, random and congestive
    loss), `-s 96`, `tcpdump -i any` at the receiver, a sender behind a 1280-byte tunnel with TSO (more segments to a GSO packet than
    1,428-byte ones: the truth's buckets must reach them) and a receiver whose smaller MTU sets
    the MSS. No transfer uses `path_mtu`, whose lost-segment truth is not exact."""
    transfers = load_matrix(MATRIX).transfers
    assert len(transfers) == 42
    assert any(not t.sender_timestamps for t in transfers)
    assert any(not t.sender_sack for t in transfers)
    # without SACK: both families, and a congested queue's drops as well as random loss
    no_sack = [t for t in transfers if not t.sender_sack]
    assert {t.family for t in no_sack} == {4, 6}
    assert any(t.data_loss == 0 for t in no_sack) and any(t.data_loss > 0 for t in no_sack)
    assert any(t.snaplen_bytes == 96 and t.family == 6 for t in transfers)
    assert any("receiver-any" in t.vantages for t in transfers)
    assert any(t.sender_mtu == 1280 and t.sender_tso and t.family == 6 for t in transfers)
    assert any(t.receiver_mtu < t.sender_mtu for t in transfers)
    assert all(t.path_mtu == 1500 for t in transfers)


def test_applimited_matrix_holds_only_application_limited_senders_clean_and_lossy_in_both_families():
    matrix = load_matrix(MATRIX.with_name("realhost-applimited.toml"))
    assert all(t.app_rate_bps > 0 for t in matrix.transfers)
    assert any(t.app_block_kib for t in matrix.transfers)
    assert {t.family for t in matrix.transfers} == {4, 6}
    deep_queue_ms = max(t.queue_ms for t in matrix.transfers)
    assert any(t.data_loss == 0 and t.queue_ms == deep_queue_ms for t in matrix.transfers)  # clean: nothing dropped
    assert any(t.data_loss > 0 for t in matrix.transfers)  # random loss
    assert any(t.data_loss == 0 and t.queue_ms < 10 for t in matrix.transfers)  # bursts that overflow a short queue


# dumpcap 4.0's closing lines, captured on two veths and loopback with -B 2 at ~14 Gbit/s
DUMPCAP_STDERR = """Capturing on 'a0', 'a1', and 'Loopback: lo'
File: /tmp/d.pcapng
Packets: 4 Packets: 8 Packets: 6311 Packets: 35281 Packets captured: 35281
Packets received/dropped on interface 'a0': 10/0 (pcap:0/dumpcap:0/flushed:0/ps_ifdrop:0) (100.0%)
Packets received/dropped on interface 'a1': 10/3 (pcap:1/dumpcap:0/flushed:2/ps_ifdrop:4) (100.0%)
Packets received/dropped on interface 'Loopback: lo': 35261/625 (pcap:0/dumpcap:625/flushed:0/ps_ifdrop:0) (98.3%)
"""


def test_dumpcaps_counters_read_as_tcpdumps_with_every_host_side_drop_in_the_kernels():
    """The packets dumpcap lost on the host (the kernel's ring, its own buffer, flushed) are the
    capture's drops, as tcpdump's "dropped by kernel"; ps_ifdrop the interface's."""
    counters = parse_dumpcap_counters(DUMPCAP_STDERR)
    assert counters == {"captured": 35281, "received_by_filter": 35281, "kernel_drops": 628, "interface_drops": 4}
    assert capture_counters("dumpcap", DUMPCAP_STDERR) == counters
    assert set(parse_dumpcap_counters("dumpcap: killed\n").values()) == {None}
    assert capture_counters("tcpdump", "5 packets captured\n0 packets dropped by kernel\n")["kernel_drops"] == 0


def test_dumpcap_captures_into_pcapng_with_its_buffer_in_mib_and_needs_whole_mib():
    (wireshark,) = matrix_from_document(
        {"transfer": [{"name": "w", "capturer": "dumpcap", "receiver_buffer_kib": 2048}]}
    ).transfers
    assert wireshark.trace_file_name == "trace.pcapng" and Transfer(name="t").trace_file_name == "trace.pcap"
    argv = capture_argv("dumpcap", "any", Path("x/trace.pcapng"), wireshark.buffer_at("receiver"), 128)
    assert argv[0] == "dumpcap" and argv[argv.index("-B") + 1] == "2" and argv[argv.index("-f") + 1] == "tcp"
    tcpdump = capture_argv("tcpdump", "any", Path("x/trace.pcap"), 2048, 128)
    assert tcpdump[0] == "tcpdump" and tcpdump[tcpdump.index("-B") + 1] == "2048"
    for bad in ({"capturer": "wireshark"}, {"capturer": "dumpcap", "receiver_buffer_kib": 32}):
        with pytest.raises(TestbedError, match="capturer|dumpcap"):
            matrix_from_document({"transfer": [{"name": "a", **bad}]})
    older_record = {key: value for key, value in asdict(wireshark).items() if key != "capturer"}
    assert recorded_transfer(older_record).capturer == "tcpdump"


def test_the_routers_tbf_bucket_and_queue_hold_at_least_two_and_ten_frames_of_the_paths_mtu():
    """tbf drops a frame longer than its bucket and releases a bucket's worth at once: at
    100 Mbit/s a 1 ms bucket (12,500 bytes) held one jumbo frame of 9,014 bytes, so the receiver's
    GRO never found two arriving together (run 1: no super-segment in 4 s with GRO on)."""
    (jumbo,) = matrix_from_document(
        {"transfer": [{"name": "j", "sender_mtu": 9000, "receiver_mtu": 9000, "path_mtu": 9000, "queue_ms": 5}]}
    ).transfers
    (tbf,) = router_qdisc_commands(jumbo)
    assert tbf[tbf.index("burst") + 1] == "18028" and tbf[tbf.index("limit") + 1] == "90140"
    (plain,) = router_qdisc_commands(replace(jumbo, sender_mtu=1500, receiver_mtu=1500, path_mtu=1500))
    assert plain[plain.index("burst") + 1] == "12500" and plain[plain.index("limit") + 1] == "62500"


def test_router_both_is_dumpcap_on_both_router_interfaces_in_one_file_read_as_router_any():
    """Wireshark's capture of several interfaces: one pcapng with an interface block for each,
    each packet seen coming in and leaving, as with `-i any` on the router; tcpdump cannot."""
    role, interfaces = CAPTURE_POINTS["router-both"]
    argv = capture_argv("dumpcap", interfaces, Path("x/trace.pcapng"), 8192, 128)
    assert role == "rtr" and [argv[i + 1] for i, a in enumerate(argv) if a == "-i"] == ["rhr0", "rhr1"]
    (both,) = matrix_from_document(
        {"transfer": [{"name": "b", "capturer": "dumpcap", "vantages": ["router-both"], "data_loss": "1%"}]}
    ).transfers
    assert LOST_TOLERANCE["router-both"] == LOST_TOLERANCE["router-any"]
    assert expected_warnings(both, "router-both", 0, 10) == expected_warnings(both, "router-any", 0, 10)
    truth = {"lost_segments": 100, "receiver_resends_not_dsacked": 3}
    assert expected_lost_segments(truth, "router-both") == expected_lost_segments(truth, "router-any") == 103
    with pytest.raises(TestbedError, match="router-both"):
        matrix_from_document({"transfer": [{"name": "a", "vantages": ["router-both"]}]})


def test_gro_at_the_receiver_must_merge_only_where_the_shaper_releases_more_than_two_frames_at_once():
    standard = Transfer(name="a", offloads="gro")
    jumbo = Transfer(name="b", offloads="gro", sender_mtu=9000, receiver_mtu=9000, path_mtu=9000)
    jumbo_fast = replace(jumbo, rate_bps=1_000_000_000)
    unshaped_jumbo = replace(jumbo, rate_bps=0)
    assert "super_segments" in expected_warnings(standard, "receiver", 0)[0]
    must, may = expected_warnings(jumbo, "receiver", 0)
    assert "super_segments" not in must and "super_segments" in may, "2 jumbo frames per 100 Mbit/s bucket"
    assert "super_segments" in expected_warnings(jumbo_fast, "receiver", 0)[0]
    assert "super_segments" in expected_warnings(unshaped_jumbo, "receiver", 0)[0]
