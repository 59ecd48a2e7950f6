"""Packets captured twice on a forwarding host (`tcpdump -i any`), one rule per test.

The host sees each packet come in (TTL 64) and leave (TTL 63). Copies that left are the
view; what came in and never left while later packets did is the host's own drops.
"""

from __future__ import annotations

import numpy as np

from spline_analysis._core.columns import TCP_ACK, TCP_SYN
from spline_analysis._core.copies import unwrapped_seq
from test_truth_crafted import MSS, Flow, analyze, row_of


def forwarded_transfer(
    segments_per_frame: int,
    frames: int,
    drop_frames=(),
    split_on_the_way_out=True,
    drop_pieces=None,
    hops: int = 1,
    server_isn: int = 1000,
) -> Flow:
    """b (server) sends `frames` super-segments of `segments_per_frame` MSS through the host;
    each leaves cut into single segments (a TSO sender, a router without TSO out) or whole;
    `drop_pieces`: frame -> the pieces of it that never leave; `hops`: the TTL the copies
    that left lost (more than 1: the two ends of a longer path, captured and merged);
    `server_isn`: b's initial sequence number (its data wraps past 2^32 when near it)."""
    f = Flow()
    out_ttl = 64 - hops
    # the handshake passes the host too: each packet in, then out one hop later
    for when, direction, seq, ack, flags in (
        (0.0, 0, 5000, 0, TCP_SYN),
        (0.010, 1, server_isn, 5001, TCP_SYN | TCP_ACK),
        (0.020, 0, 5001, server_isn + 1, TCP_ACK),
    ):
        f.add(when, direction, seq, ack, flags=flags, ttl=64, ip_id=7 + direction, mss_option=1460)
        f.add(when + 0.0001, direction, seq, ack, flags=flags, ttl=out_ttl, ip_id=7 + direction, mss_option=1460)
    t = 0.020
    base, ip_id = server_isn + 1, 100
    for frame in range(frames):
        when = t + 0.001 * (frame + 1)
        start = base + frame * segments_per_frame * MSS
        f.add(when, 1, start, 5001, length=segments_per_frame * MSS, ip_id=ip_id, ttl=64)
        if frame not in drop_frames:
            if split_on_the_way_out:
                for k in range(segments_per_frame):
                    if k in (drop_pieces or {}).get(frame, ()):
                        continue
                    f.add(
                        when + 0.0001 + 0.00001 * k, 1, start + k * MSS, 5001, length=MSS, ip_id=ip_id + k, ttl=out_ttl
                    )
            else:
                f.add(when + 0.0001, 1, start, 5001, length=segments_per_frame * MSS, ip_id=ip_id, ttl=out_ttl)
        ip_id += segments_per_frame
    return f


def test_super_segments_forwarded_in_pieces_are_copies_not_retransmissions():
    _, _, d = analyze(forwarded_transfer(4, 30))
    r = row_of(d, 0, 1)
    assert r["duplicate_frames"] == 31  # 30 frames and the SYN/ACK
    assert r["retransmissions"] == 0 and r["lost_segments"] == 0 and r["forwarded_drops"] == 0
    assert r["data_segments"] == 120


def test_super_segment_that_came_in_and_never_left_counts_its_segments_as_the_hosts_drops():
    _, _, d = analyze(forwarded_transfer(4, 30, drop_frames=(10, 20)))
    r = row_of(d, 0, 1)
    assert r["forwarded_drops"] == 8 and r["lost_segments"] == 8
    assert r["retransmissions"] == 0


def test_pieces_of_a_super_segment_that_never_left_are_the_hosts_drops():
    """A queue that cuts a GSO packet into segments (tbf) drops the pieces that find it full:
    those pieces came in and never left although the rest of their packet did."""
    _, _, d = analyze(forwarded_transfer(4, 30, drop_frames=(20,), drop_pieces={10: (2, 3), 15: (0,)}))
    r = row_of(d, 0, 1)
    assert r["forwarded_drops"] == 4 + 2 + 1 and r["lost_segments"] == 7
    assert r["retransmissions"] == 0


def test_pieces_of_a_super_segment_that_wraps_past_2_32_pair_with_it_not_counted_as_drops():
    """A super-segment whose sequence range crosses 2^32 leaves in pieces, the later ones
    numbered from zero again: they are still its pieces (the range is unwrapped), and only
    what never left counts as the host's drops."""
    straddling_frame_start = 2**32 - 700  # frame 10 starts 700 bytes below the wrap
    server_isn = straddling_frame_start - 10 * 4 * MSS - 1
    _, _, d = analyze(forwarded_transfer(4, 30, drop_frames=(20,), drop_pieces={15: (0,)}, server_isn=server_isn))
    r = row_of(d, 0, 1)
    assert r["forwarded_drops"] == 4 + 1 and r["lost_segments"] == 5
    assert r["retransmissions"] == 0 and r["duplicate_frames"] == 30


def test_a_repeat_that_came_in_while_the_first_copy_was_queued_leaves_that_copy_its_pieces():
    """A super-segment waits in the host's queue; the sender repeats it (spuriously: a loss
    probe, or reordering before the host) before it leaves. Both leave in pieces, each piece
    with its own copy's TSval: neither copy was dropped here."""
    f = forwarded_transfer(4, 10)
    start, when, queued_s = 1001 + 10 * 4 * MSS, 0.040, 0.012
    # the sender numbers its packets per connection: frames 0-9 took IDs 100-139
    for copy, (tsval, ip_id, in_s) in enumerate(((500, 140, when), (508, 144, when + 0.008))):
        f.add(in_s, 1, start, 5001, length=4 * MSS, ip_id=ip_id, ttl=64, tsval=tsval)
        for k in range(4):
            out_s = when + queued_s + 0.001 * copy + 0.00001 * k
            f.add(out_s, 1, start + k * MSS, 5001, length=MSS, ip_id=ip_id + k, ttl=63, tsval=tsval)
    # the receiver has it all, and reports the repeat with a D-SACK (through the host)
    end = start + 4 * MSS
    for ttl, late_s in ((64, 0.0), (63, 0.0001)):
        f.add(0.070 + late_s, 0, 5001, end, ttl=ttl, ip_id=50, sack=[(start, end)])
    _, _, d = analyze(f)
    r = row_of(d, 0, 1)
    assert r["forwarded_drops"] == 0 and r["lost_segments"] == 0
    assert r["retransmissions"] == 4 and r["duplicate_frames"] == 10 + 2 + 1


def test_pieces_of_two_copies_with_one_tsval_that_both_left_count_no_drop():
    """The repeat of a queued super-segment comes in within the same millisecond (one TSval: a
    repair on a short path), and both copies leave in pieces after it: the pieces cannot tell
    their copy, and all eight pair with the later one. What came in all left: no drop here
    (ro-unshaped-tso-gro-v6-p3-bbr-l1's router read 10,483 dropped for 8,920)."""
    f = forwarded_transfer(4, 10)
    start, when = 1001 + 10 * 4 * MSS, 0.040
    for ip_id, in_s in ((140, when), (144, when + 0.0004)):
        f.add(in_s, 1, start, 5001, length=4 * MSS, ip_id=ip_id, ttl=64, tsval=500)
    for copy, ip_id in enumerate((140, 144)):
        for k in range(4):
            f.add(
                when + 0.002 + 0.001 * copy + 0.00001 * k,
                1,
                start + k * MSS,
                5001,
                length=MSS,
                ip_id=ip_id + k,
                ttl=63,
                tsval=500,
            )
    f.add(0.070, 1, start + 4 * MSS, 5001, length=MSS, ip_id=148, ttl=64, tsval=530)
    f.add(0.0701, 1, start + 4 * MSS, 5001, length=MSS, ip_id=148, ttl=63, tsval=530)
    _, _, d = analyze(f)
    r = row_of(d, 0, 1)
    assert r["forwarded_drops"] == 0


def test_a_super_segment_that_left_in_pieces_smaller_than_the_mss_leaves_the_drops_of_others():
    """Frame 5 leaves cut into five pieces (a smaller MTU on the way out), more pieces than its
    segments but no more bytes; frame 10 never left: its 4 segments are the host's drops."""
    f = forwarded_transfer(4, 30, drop_frames=(10,))
    start = 1001 + 5 * 4 * MSS
    f.rows = [r for r in f.rows if not (r["ttl"] == 63 and r["d"] == 1 and start <= r["seq"] < start + 4 * MSS)]
    piece = 4 * MSS // 5
    for k in range(5):
        f.add(
            0.026 + 0.0001 + 0.00001 * k,
            1,
            start + k * piece,
            5001,
            length=piece if k < 4 else 4 * MSS - 4 * piece,
            ip_id=300 + k,
            ttl=63,
        )
    f.rows.sort(key=lambda r: r["t"])
    _, _, d = analyze(f)
    r = row_of(d, 0, 1)
    assert r["forwarded_drops"] == 4


def test_without_timestamps_pieces_pair_with_the_copy_that_came_in_before_them_not_a_later_resend():
    """A sender without timestamps (no TSval tells copies apart) resends the second half of a
    super-segment after its timeout, as a smaller super-segment, once the first copy has left
    in pieces: the first copy's pieces are its own (the resend came in after they left), and
    nothing was dropped here."""
    f = forwarded_transfer(4, 10)
    start = 1001 + 2 * 4 * MSS + 2 * MSS  # the second half of frame 2
    f.add(0.300, 1, start, 5001, length=2 * MSS, ip_id=900, ttl=64)
    for k in range(2):
        f.add(0.3001 + 0.00001 * k, 1, start + k * MSS, 5001, length=MSS, ip_id=900 + k, ttl=63)
    _, _, d = analyze(f)
    r = row_of(d, 0, 1)
    assert r["forwarded_drops"] == 0
    assert r["duplicate_frames"] == 10 + 1 + 1 and r["retransmissions"] == 2


def coalesced_on_the_way_out(runs: int, run_segments: int, dropped=()) -> Flow:
    """b sends single segments that come in one by one (TTL 64) and leave coalesced (TTL 63):
    each run of `run_segments` (one TSval) as one packet, or, where a segment of it
    (`dropped`: indices counted over the whole transfer) never left, as the pieces around it:
    the outgoing copies were captured after GRO (two hosts' captures merged, the receiver's
    with GRO on)."""
    f = forwarded_transfer(1, 0)
    base, t = 1001, 0.021
    for run in range(runs):
        first = run * run_segments
        for k in range(first, first + run_segments):
            f.add(t + 0.0001 * k, 1, base + k * MSS, 5001, length=MSS, ip_id=100 + k, ttl=64, tsval=500 + run)
        pieces, piece = [], []
        for k in range(first, first + run_segments):
            if k in dropped:
                pieces, piece = pieces + [piece] if piece else pieces, []
            else:
                piece.append(k)
        pieces += [piece] if piece else []
        for piece in pieces:
            out_s = t + 0.0001 * piece[-1] + 0.002
            length = len(piece) * MSS
            f.add(out_s, 1, base + piece[0] * MSS, 5001, length=length, ip_id=100 + piece[0], ttl=63, tsval=500 + run)
    return f


def test_segments_that_left_coalesced_are_copies_and_those_that_never_left_the_hosts_drops():
    _, _, d = analyze(coalesced_on_the_way_out(10, 4, dropped=(9, 22)))
    r = row_of(d, 0, 1)
    assert r["retransmissions"] == 0
    assert r["forwarded_drops"] == 2 and r["lost_segments"] == 2
    assert r["duplicate_frames"] == 38 + 1  # the segments that left, and the SYN/ACK


def test_copies_at_the_two_ends_of_a_longer_path_pair_and_what_never_arrived_is_the_paths_drops():
    """The sender's and the receiver's captures merged, three hops apart (TTL 64 and 61)."""
    _, _, d = analyze(forwarded_transfer(1, 40, drop_frames=(5, 17), split_on_the_way_out=False, hops=3))
    r = row_of(d, 0, 1)
    assert r["duplicate_frames"] == 39 and r["forwarded_drops"] == 2 and r["lost_segments"] == 2
    assert r["retransmissions"] == 0


def test_copies_at_two_ends_whose_clocks_differ_pair_and_what_never_arrived_is_the_paths_drops():
    """The sender's (b's) and the receiver's (a's) captures merged, a's clock 8 ms behind b's,
    more than the path's delay: b's data reach a before they left b, by a's clock, and the
    handshake's legs read across the two clocks."""
    f = forwarded_transfer(1, 40, drop_frames=(5, 17), split_on_the_way_out=False, hops=3)
    for row in f.rows:  # a's capture: a's packets as they left (TTL 64), b's as they arrived
        if (row["d"] == 0) == (row["ttl"] == 64):
            row["t"] -= 0.008
    f.rows.sort(key=lambda row: row["t"])
    _, _, d = analyze(f)
    r = row_of(d, 0, 1)
    assert r["duplicate_frames"] == 39 and r["forwarded_drops"] == 2 and r["lost_segments"] == 2
    assert r["retransmissions"] == 0 and r["vantage"] == "in-path"


def test_copies_at_two_ends_whose_clocks_are_seconds_apart_pair_either_way():
    for offset_s in (-3.0, 3.0):
        f = forwarded_transfer(1, 40, drop_frames=(5, 17), split_on_the_way_out=False, hops=3)
        for row in f.rows:  # a's capture: a's packets as they left (TTL 64), b's as they arrived
            if (row["d"] == 0) == (row["ttl"] == 64):
                row["t"] += offset_s
        f.rows.sort(key=lambda row: row["t"])
        _, _, d = analyze(f)
        r = row_of(d, 0, 1)
        assert r["duplicate_frames"] == 39 and r["forwarded_drops"] == 2 and r["lost_segments"] == 2, offset_s
        assert r["retransmissions"] == 0


def test_whole_copies_pair_as_before():
    _, _, d = analyze(forwarded_transfer(1, 40, drop_frames=(5,), split_on_the_way_out=False))
    r = row_of(d, 0, 1)
    assert r["duplicate_frames"] == 40 and r["forwarded_drops"] == 1 and r["retransmissions"] == 0


def bridged_capture(tmp_path, copies_per_packet: int = 2, retransmit: int = 7):
    """`tcpdump -i any` on a bridge (Linux cooked v2): every data packet of 10.0.0.1 is seen on
    each bridge port (ifindex 2, 3, ...) with the same TTL; segment `retransmit` is lost
    beyond the bridge and sent again later (seen on every port again)."""
    from pcapbuild import LINKTYPE_LINUX_SLL2, ipv4, pcap_file, sll2, tcp

    records = []
    t_ns = 1_000_000_000
    sends = list(range(20)) + [retransmit]
    for n, k in enumerate(sends):
        ident = 100 + n  # Linux: a new IP ID for the retransmission
        segment = tcp(sport=40000, dport=5201, seq=1 + k * 1000, ack=1, flags="A", payload=b"d" * 1000)
        packet = ipv4("10.0.0.1", "10.0.0.2", segment, ident=ident)
        t_ns += 1_000_000 if n < 20 else 30_000_000
        for port in range(copies_per_packet):
            records.append((t_ns + port * 20_000, sll2(packet, ifindex=2 + port, packet_type=4 if port else 0)))
    path = tmp_path / "bridge.pcap"
    path.write_bytes(pcap_file(records, link_type=LINKTYPE_LINUX_SLL2, nanosecond=True))
    return path


def test_copies_on_two_bridge_ports_with_one_ttl_are_set_aside_not_retransmissions(tmp_path):
    from spline_analysis._core.pipeline import analyze as analyze_file

    document = analyze_file(bridged_capture(tmp_path)).to_json()
    d = max(document["directions"], key=lambda x: x["payload_bytes"])
    assert d["data_packets"] == 21 and d["duplicate_frames"] == 21
    assert d["retransmissions"] == 1
    assert "duplicate_frames" in {w["code"] for w in document["warnings"]}


def test_three_ports_leave_one_copy_and_a_capture_on_one_interface_is_untouched(tmp_path):
    from spline_analysis._core.pipeline import analyze as analyze_file

    d = max(
        analyze_file(bridged_capture(tmp_path, copies_per_packet=3)).to_json()["directions"],
        key=lambda x: x["payload_bytes"],
    )
    assert (d["data_packets"], d["duplicate_frames"], d["retransmissions"]) == (21, 42, 1)
    single = max(
        analyze_file(bridged_capture(tmp_path, copies_per_packet=1)).to_json()["directions"],
        key=lambda x: x["payload_bytes"],
    )
    assert (single["data_packets"], single["duplicate_frames"], single["retransmissions"]) == (21, 0, 1)


def test_sequence_numbers_unwrap_per_direction_across_2_32_and_back_for_resends():
    seq = np.array([2**32 - 100, 50, 2**32 - 100, 1000, 2**32 - 50, 2000], dtype=np.uint32)
    slot = np.array([1, 0, 1, 0, 1, 1])
    assert unwrapped_seq(seq, slot).tolist() == [2**32 - 100, 50, 2**32 - 100, 1000, 2**32 - 50, 2**32 + 2000]


def forwarded_with_answers(hold_s: float, frames: int = 40) -> Flow:
    """b sends `frames` segments through the host (each leaves 0.1 ms after it came in); a's ACK
    of each comes back in 0.1 ms later and the host sends it on after `hold_s` (a delay line on
    the return path)."""
    f = forwarded_transfer(1, 0, split_on_the_way_out=False)
    base = 1001
    for frame in range(frames):
        when = 0.030 + 0.001 * frame
        f.add(when, 1, base + frame * MSS, 5001, length=MSS, ip_id=100 + frame, ttl=64)
        f.add(when + 0.0001, 1, base + frame * MSS, 5001, length=MSS, ip_id=100 + frame, ttl=63)
        ack = base + (frame + 1) * MSS
        f.add(when + 0.0002, 0, 5001, ack, ip_id=20 + frame, ttl=64)
        f.add(when + 0.0002 + hold_s, 0, 5001, ack, ip_id=20 + frame, ttl=63)
    f.rows.sort(key=lambda row: row["t"])
    return f


def test_answers_a_forwarding_host_held_are_seen_as_they_came_in_and_quick_ones_as_they_left():
    held = row_of(analyze(forwarded_with_answers(0.250))[2], 0, 1)
    assert held["vantage"] == "receiver" and held["duplicate_frames"] == 40 + 1
    quick = row_of(analyze(forwarded_with_answers(0.0002))[2], 0, 1)
    assert quick["vantage"] == "in-path" and quick["duplicate_frames"] == 40 + 1


def bridged_host_sll1_capture(tmp_path, doubled: bool = True):
    """`dumpcap -i any` (Linux cooked v1) on a host whose address sits on a bridge: each data
    packet it receives from 10.0.0.1 is captured on the bridge's port and on the bridge, both
    "in", 2 us apart, and each ACK it sends on both, "out". The sender leaves the IP ID at 0
    (as some stacks do) and uses no timestamps: its resend of segment 7, 30 ms later, is
    byte for byte the first copy, and must still count as one retransmission."""
    from pcapbuild import LINKTYPE_LINUX_SLL, ipv4, pcap_file, sll, tcp

    records = []
    t_ns = 1_000_000_000
    for n, k in enumerate(list(range(20)) + [7]):
        t_ns += 1_000_000 if n < 20 else 30_000_000
        segment = tcp(sport=40000, dport=5201, seq=1 + k * 1000, ack=1, flags="A", payload=b"d" * 1000)
        data = ipv4("10.0.0.1", "10.0.0.2", segment, ident=0)
        acked = 1 + min(n + 1, 20) * 1000
        answer = ipv4("10.0.0.2", "10.0.0.1", tcp(sport=5201, dport=40000, seq=1, ack=acked, flags="A"), ident=500 + n)
        for copy in range(2 if doubled else 1):
            records.append((t_ns + copy * 2_000, sll(data, packet_type=0)))
        for copy in range(2 if doubled else 1):
            records.append((t_ns + 50_000 + copy * 2_000, sll(answer, packet_type=4)))
    path = tmp_path / "bridged-host.pcap"
    path.write_bytes(pcap_file(records, link_type=LINKTYPE_LINUX_SLL, nanosecond=True))
    return path


def test_a_bridged_hosts_cooked_v1_copies_with_one_direction_flag_are_set_aside_not_retransmissions(tmp_path):
    """Cooked v1 names no interface: both copies of a frame the bridged host received read "in"
    (s29 dumpcap runs: 33,144 retransmissions read for 296, before every second copy of a burst
    was set aside)."""
    from spline_analysis._core.pipeline import analyze as analyze_file

    document = analyze_file(bridged_host_sll1_capture(tmp_path)).to_json()
    data = max(document["directions"], key=lambda x: x["payload_bytes"])
    assert (data["data_packets"], data["duplicate_frames"], data["retransmissions"]) == (21, 21, 1)
    assert "duplicate_frames" in {w["code"] for w in document["warnings"]}
    single = max(
        analyze_file(bridged_host_sll1_capture(tmp_path, doubled=False)).to_json()["directions"],
        key=lambda x: x["payload_bytes"],
    )
    assert (single["data_packets"], single["duplicate_frames"], single["retransmissions"]) == (21, 0, 1)


def test_duplicate_acks_that_differ_only_in_their_sack_blocks_are_not_copies_of_one(tmp_path):
    """A receiver's ACKs during a recovery (IPv6: no IP ID; one TSval tick) repeat the same
    cumulative ACK with growing SACK blocks: in a cooked v1 capture, where no interface tells
    copies apart, those are distinct packets and all stay."""
    from pcapbuild import ETHERTYPE_IPV6, LINKTYPE_LINUX_SLL, ipv6, pcap_file, sll, tcp, tcp_options
    from spline_analysis._core.pipeline import analyze as analyze_file

    records = []
    t_ns = 1_000_000_000
    for k in range(30):
        segment = tcp(sport=40000, dport=5201, seq=1 + k * 1000, ack=1, flags="A", payload=b"d" * 1000)
        records.append((t_ns + k * 10_000, sll(ipv6("fd00::1", "fd00::2", segment), protocol=ETHERTYPE_IPV6)))
        if k >= 2:  # segment 1 was lost: every later one draws a duplicate ACK with one SACK block more
            options = tcp_options(sack=[(1 + 2 * 1000, 1 + (k + 1) * 1000)], ts=(777, 555))
            answer = tcp(sport=5201, dport=40000, seq=1, ack=1 + 1000, flags="A", options=options)
            records.append(
                (
                    t_ns + k * 10_000 + 5_000,
                    sll(ipv6("fd00::2", "fd00::1", answer), protocol=ETHERTYPE_IPV6, packet_type=4),
                )
            )
    path = tmp_path / "dupacks.pcap"
    path.write_bytes(pcap_file(records, link_type=LINKTYPE_LINUX_SLL, nanosecond=True))
    document = analyze_file(path).to_json()
    (data,) = document["directions"]
    assert data["dup_acks"] == 27 and data["sack_blocks"] == 28 and data["duplicate_frames"] == 0
    assert "duplicate_frames" not in {w["code"] for w in document["warnings"]}


def test_where_the_capture_dropped_packets_only_copies_whose_bytes_came_in_again_are_the_hosts_drops():
    """Two interfaces into one file (dumpcap -i in -i out) drop packets of their own: an incoming
    copy whose outgoing copy the capture missed looks dropped by the host, but the host's real
    drops are repaired, and the repair comes in again. Frame 5 was dropped here and resent;
    frame 12 left unseen (s29 held-out, dumpcap on both router interfaces: 2,475 read for the
    router's 246 drops, 244 with this rule)."""
    from spline_analysis._core import truth

    f = forwarded_transfer(1, 40, drop_frames=(5, 12), split_on_the_way_out=False)
    repair = 1001 + 5 * MSS
    f.add(0.070, 1, repair, 5001, length=MSS, ip_id=900, ttl=64)
    f.add(0.0701, 1, repair, 5001, length=MSS, ip_id=900, ttl=63)
    packets, flows = f.table()
    counted = row_of(truth.analyze_directions(packets, flows, capture_drops={"kernel": 1, "interface": 0}), 0, 1)
    # the IP-ID gap frame 12 leaves among the copies that left is the capture's, not a loss
    assert counted["forwarded_drops"] == 1 and counted["lost_segments"] == 1
    uncounted = row_of(truth.analyze_directions(packets, flows, capture_drops={"kernel": 0, "interface": 0}), 0, 1)
    assert (uncounted["forwarded_drops"], uncounted["lost_segments"]) == (2, 2), "no capture drops: as before"


def two_interface_pcapng(tmp_path, block_ns: int):
    """A forwarding host captured by dumpcap on both interfaces into one pcapng: data come in on
    interface 0 and leave on 1 0.1 ms later, their ACKs come in on 1 5 ms later and leave on 0;
    `block_ns` > 0: each interface's frames reach the file in blocks of that span (dumpcap)."""
    from pcapbuild import Interface, Packet, Section, ethernet, ipv4, pcapng_file, tcp

    frames = []
    t = 1_000_000_000
    for k in range(400):
        seg = tcp(sport=40000, dport=5201, seq=1 + k * 1000, ack=1, flags="A", payload=b"d" * 1000)
        ack = tcp(sport=5201, dport=40000, seq=1, ack=1 + (k + 1) * 1000, flags="A")
        for interface, ttl, delay_ns, src, dst, segment, ident in (
            (0, 64, 0, "10.0.0.1", "10.0.1.2", seg, 100 + k),
            (1, 63, 100_000, "10.0.0.1", "10.0.1.2", seg, 100 + k),
            (1, 64, 5_000_000, "10.0.1.2", "10.0.0.1", ack, 500 + k),
            (0, 63, 5_100_000, "10.0.1.2", "10.0.0.1", ack, 500 + k),
        ):
            frames.append(
                (interface, t + k * 200_000 + delay_ns, ethernet(ipv4(src, dst, segment, ident=ident, ttl=ttl)))
            )
    frames.sort(key=lambda r: (r[1] // block_ns, r[0], r[1]) if block_ns else r[1])
    path = tmp_path / f"both-{block_ns}.pcapng"
    section = Section([Interface(1, name="in"), Interface(1, name="out")], [Packet(i, ts, f) for i, ts, f in frames])
    path.write_bytes(pcapng_file([section]))
    return path


def test_two_interfaces_written_in_blocks_out_of_time_order_read_as_in_time_order(tmp_path):
    """dumpcap writes each interface's frames in blocks, up to 96 ms behind the other's: the
    truth-seeking figures read the file in time order (held-out dumpcap router-both, 4 BBR
    flows: goodput 93.64 -> 95.70 Mbit/s for 95.60 delivered)."""
    from spline_analysis._core.pipeline import analyze as analyze_file

    def figures(path):
        document = analyze_file(path).to_json()
        (d,) = document["directions"]
        return d["goodput_bps"], d["rtt_ms"]["samples"], d["retransmissions"], d["lost_segments"]

    blocked = two_interface_pcapng(tmp_path, 20_000_000)
    assert "time_backwards" in {w["code"] for w in analyze_file(blocked).to_json()["warnings"]}
    assert figures(blocked) == figures(two_interface_pcapng(tmp_path, 0))
    assert figures(blocked)[1] == 399


def test_where_the_capture_dropped_packets_a_super_segment_counts_only_its_missing_pieces_resent():
    """A GSO packet forwarded in pieces: of its two pieces missing on the way out, the host
    dropped one (resent later) and the capture missed the other (held-out dumpcap router-both,
    4 BBR flows with TSO: 1,381 read for the router's 1,326 while any resent piece admitted all
    missing ones, 1,326 with the resent bytes counted)."""
    from spline_analysis._core import truth

    f = forwarded_transfer(4, 30, drop_pieces={10: (2, 3)})
    repair = 1001 + (10 * 4 + 2) * MSS
    f.add(0.070, 1, repair, 5001, length=MSS, ip_id=900, ttl=64)
    f.add(0.0701, 1, repair, 5001, length=MSS, ip_id=900, ttl=63)
    packets, flows = f.table()
    counted = row_of(truth.analyze_directions(packets, flows, capture_drops={"kernel": 1, "interface": 0}), 0, 1)
    assert counted["forwarded_drops"] == 1
    uncounted = row_of(truth.analyze_directions(packets, flows, capture_drops={"kernel": 0, "interface": 0}), 0, 1)
    assert uncounted["forwarded_drops"] == 2


def test_where_the_capture_dropped_packets_a_resend_seen_only_leaving_still_shows_the_drop():
    """The capture may miss either copy of the resend: frame 5, dropped here, was resent, and
    only the resend's outgoing copy was captured; it still counts as the host's drop (a copy
    leaving that no incoming copy was paired with is a resend whose arrival the capture missed)."""
    from spline_analysis._core import truth

    f = forwarded_transfer(1, 40, drop_frames=(5, 12), split_on_the_way_out=False)
    f.add(0.0701, 1, 1001 + 5 * MSS, 5001, length=MSS, ip_id=900, ttl=63, tsval=70)  # a later TSval
    packets, flows = f.table()
    counted = row_of(truth.analyze_directions(packets, flows, capture_drops={"kernel": 1, "interface": 0}), 0, 1)
    assert counted["forwarded_drops"] == 1 and counted["lost_segments"] == 1


def test_a_syn_the_forwarding_host_dropped_is_its_drop_but_no_data_lost():
    """`-i any` on a router that dropped a's first SYN (a's own is sent again 1 s later): the
    host's drop (`forwarded_drops`), but no data segment was lost; 20 data segments through."""
    f = Flow()
    f.add(0.0, 0, 5000, 0, flags=TCP_SYN, ttl=64, ip_id=1, mss_option=1460)  # came in, never left
    for when, direction, seq, ack, flags in (
        (1.0, 0, 5000, 0, TCP_SYN),
        (1.010, 1, 1000, 5001, TCP_SYN | TCP_ACK),
        (1.020, 0, 5001, 1001, TCP_ACK),
    ):
        f.add(when, direction, seq, ack, flags=flags, ttl=64, ip_id=7 + direction, mss_option=1460)
        f.add(when + 0.0001, direction, seq, ack, flags=flags, ttl=63, ip_id=7 + direction, mss_option=1460)
    for k in range(20):
        when, seq = 1.021 + 0.001 * k, 5001 + k * MSS
        f.add(when, 0, seq, 1001, length=MSS, ip_id=100 + k, ttl=64)
        f.add(when + 0.0001, 0, seq, 1001, length=MSS, ip_id=100 + k, ttl=63)
        f.add(when + 0.0005, 1, 1001, seq + MSS, ip_id=50 + k, ttl=64)
        f.add(when + 0.0006, 1, 1001, seq + MSS, ip_id=50 + k, ttl=63)
    r = row_of(analyze(f)[2], 0, 0)
    assert r["forwarded_drops"] == 1 and r["retransmissions"] == 0
    assert r["lost_segments"] == 0
