"""The router's account of each retransmission: needed when no earlier copy of its bytes
passed the router, spurious when one did; the copies lost are the needed retransmissions
plus the spurious copies dropped as well."""

from __future__ import annotations

from typing import List, Sequence, Tuple

import numpy as np

from spline_analysis.testbed.realhost_retransmissions import (
    ByteRanges,
    Copies,
    connection_retransmissions,
    passed_ranges,
    unwrap,
)

MSS = 1000
BASE = 2**32 - 1500  # sequence numbers wrap during the transfer


def copies(rows: Sequence[Tuple[float, int, int, int, int]]) -> Copies:
    """(time s, first segment, segments, TSval, IP ID) per copy, in capture order."""
    ts = np.array([int(r[0] * 1e9) for r in rows], dtype=np.int64)
    lo = np.array([r[1] * MSS for r in rows], dtype=np.int64)
    hi = lo + np.array([r[2] * MSS for r in rows], dtype=np.int64)
    return Copies(
        ts_ns=ts,
        seq=(lo + BASE) % 2**32,
        lo=lo,
        hi=hi,
        tsval=np.array([r[3] for r in rows], dtype=np.int64),
        ip_id=np.array([r[4] for r in rows], dtype=np.int64),
    )


def fate(way_in: List[Tuple[float, int, int, int, int]], way_out: List[Tuple[float, int, int, int, int]]):
    passed, unmatched = passed_ranges(copies(way_in), copies(way_out), MSS)
    assert unmatched == 0
    return connection_retransmissions(41001, copies(way_in), passed, MSS)


def test_a_repeat_of_bytes_that_passed_is_spurious_and_of_bytes_that_did_not_is_needed():
    way_in = [
        (0.0, 0, 1, 1, 10),
        (0.001, 1, 1, 1, 11),
        (0.002, 2, 1, 1, 12),
        (0.030, 1, 1, 30, 13),
        (0.031, 2, 1, 31, 14),
    ]
    way_out = [(0.0001, 0, 1, 1, 10), (0.0021, 2, 1, 1, 12), (0.0301, 1, 1, 30, 13), (0.0311, 2, 1, 31, 14)]
    f = fate(way_in, way_out)
    assert (f.sent_segments, f.retransmitted_segments, f.needed, f.spurious) == (5, 2, 1, 1)
    assert (f.lost_segments, f.spurious_dropped, f.undelivered_segments) == (1, 0, 0)
    assert [(c.needed_segments, c.passed) for c in f.copies] == [(1, True), (0, True)]
    # the spurious repeat dropped as well: lost, but still not needed
    f = fate(way_in, way_out[:-1])
    assert (f.needed, f.spurious, f.spurious_dropped, f.lost_segments) == (1, 1, 1, 2)
    assert f.lost_segments == f.needed + f.spurious_dropped


def test_each_lost_copy_before_the_first_that_passed_makes_one_needed_retransmission():
    # segment 0 sent three times: dropped, dropped, passed; then once more (not needed)
    way_in = [(0.0, 0, 1, 1, 10), (0.2, 0, 1, 200, 11), (0.6, 0, 1, 600, 12), (0.7, 0, 1, 700, 13)]
    way_out = [(0.6001, 0, 1, 600, 12), (0.7001, 0, 1, 700, 13)]
    f = fate(way_in, way_out)
    assert (f.retransmitted_segments, f.needed, f.spurious, f.lost_segments) == (3, 2, 1, 2)


def test_a_gso_copy_cut_on_the_way_out_counts_each_segment_that_passed():
    # 3 segments in one packet (IDs 20-22 once cut); the middle piece is dropped by the queue
    way_in = [(0.0, 0, 3, 5, 20), (0.050, 1, 1, 55, 23)]
    way_out = [(0.001, 0, 1, 5, 20), (0.001, 2, 1, 5, 22), (0.051, 1, 1, 55, 23)]
    f = fate(way_in, way_out)
    assert (f.sent_segments, f.lost_segments, f.needed, f.spurious) == (4, 1, 1, 0)
    assert not any(c.needed_segments != c.segments for c in f.copies)


def test_pieces_belong_to_the_copy_with_their_tsval_even_when_a_repeat_came_in_first():
    # the first copy waits 12 ms in the queue; the sender repeats it after 8 ms: spurious
    way_in = [(0.000, 0, 2, 100, 40), (0.008, 0, 2, 108, 50)]
    way_out = [(0.012, 0, 1, 100, 40), (0.012, 1, 1, 100, 41), (0.013, 0, 1, 108, 50), (0.013, 1, 1, 108, 51)]
    f = fate(way_in, way_out)
    assert (f.needed, f.spurious, f.lost_segments, f.spurious_dropped) == (0, 2, 0, 0)


def test_an_original_that_reaches_the_router_after_its_repeat_is_still_the_first_copy():
    # the sender's original (TSval 28) is overtaken on the way to the router by its repeat
    # (TSval 32); both pass: the repeat is the retransmission, and it was not needed
    way_in = [(0.0001, 0, 1, 32, 71), (0.0004, 0, 1, 28, 70)]
    way_out = [(0.0002, 0, 1, 32, 71), (0.0005, 0, 1, 28, 70)]
    f = fate(way_in, way_out)
    assert (f.retransmitted_segments, f.needed, f.spurious, f.lost_segments) == (1, 0, 1, 0)
    assert [c.tsval for c in f.copies] == [32]


def test_ipv4_ids_tell_same_tsval_copies_apart():
    # a repeat within the same TSval tick; only the repeat (ID 61) passed
    way_in = [(0.0, 0, 1, 7, 60), (0.0005, 0, 1, 7, 61)]
    way_out = [(0.0006, 0, 1, 7, 61)]
    f = fate(way_in, way_out)
    assert (f.needed, f.spurious, f.lost_segments) == (1, 0, 1)


def test_byte_ranges_merge_and_answer_cover_and_overlap():
    r = ByteRanges()
    for lo, hi in ((10, 20), (30, 40), (20, 30), (50, 60)):
        r.add(lo, hi)
    assert (r.starts, r.ends) == ([10, 50], [40, 60])
    assert r.covers(12, 40) and not r.covers(35, 55)
    assert r.overlaps(39, 45) and not r.overlaps(40, 50) and r.total() == 40


def test_sequence_numbers_unwrap_across_zero_and_for_a_repeat_below_the_highest():
    # the fourth repeats the second; the last is the third again, written as on the wire
    seq = np.array([BASE, (BASE + 1000) % 2**32, (BASE + 2000) % 2**32, (BASE + 1000) % 2**32, 500], dtype=np.int64)
    assert unwrap(seq, BASE).tolist() == [0, 1000, 2000, 1000, 2000]
