"""Copies the receiver's tcpdump saw that its TCP never took, segment by segment.

The receiver's capture taps each frame before IP; its TCP may still lose the frame after that
(the socket's backlog, its queues, the per-CPU input queues between the tap and the socket)
without any counter the kernel keeps per namespace (`stack_drops`) moving. TCP tells by what it
answers: a copy of bytes it already holds is answered with a D-SACK block (RFC 2883; Linux
sends one for every duplicate it processes, in order or out of order). So a later copy of a
segment the capture had already seen, which no D-SACK block of the receiver ever covers, found
the receiver without its earlier copy: that copy was lost inside the receiver, after the
capture point, and the sender had to resend it. Unless the receiver's own ACKs had already
reported the segment held (its cumulative ACK, or a SACK block while it never dropped
out-of-order data): then its TCP had the earlier copy, and the D-SACK for the later one went
missing instead (Linux keeps one D-SACK block, and its compressed ACKs of out-of-order data
carry the last one set; with timestamps an ACK has room for three blocks).
"""

from __future__ import annotations

from pathlib import Path
from typing import Dict, Optional, Sequence, Tuple

import numpy as np

from .._core.ranges import Ranges, covered, merged
from .realhost_retransmissions import SEQ_SPACE, HALF_SEQ_SPACE, sender_data_rows, unwrap

TCP_ACK, TCP_RST = 0x010, 0x004

# Linux's TCP_PAWS_WINDOW: a TSval this many ticks older than TS.Recent still passes.
PAWS_WINDOW_TICKS = 1


def segment_starts(lo: np.ndarray, hi: np.ndarray, mss: int) -> Ranges:
    """Each copy [lo, hi) cut into MSS segments (a GRO or TSO packet of k segments gives k)."""
    counts = np.maximum(1, -(-(hi - lo) // mss))
    first = np.repeat(lo, counts)
    offset = np.arange(int(counts.sum()), dtype=np.int64) - np.repeat(np.cumsum(counts) - counts, counts)
    starts = first + offset * mss
    return starts, np.minimum(starts + mss, np.repeat(hi, counts))


def later_copies(starts: np.ndarray, ends: np.ndarray) -> Ranges:
    """The segments (in capture order) whose start an earlier segment already had."""
    later = later_copy_mask(starts)
    return starts[later], ends[later]


def later_copy_mask(starts: np.ndarray) -> np.ndarray:
    """Whether each segment (in capture order) repeats the start of an earlier one."""
    _, first = np.unique(starts, return_index=True)
    later = np.ones(len(starts), dtype=bool)
    later[first] = False
    return later


def first_copy_of(starts: np.ndarray) -> np.ndarray:
    """For each segment (in capture order), the index of the first segment with its start."""
    _, first, inverse = np.unique(starts, return_index=True, return_inverse=True)
    return first[inverse]


def paws_discarded(lo: np.ndarray, tsval_ticks: np.ndarray, has_ts: np.ndarray, rcv_wup: np.ndarray) -> np.ndarray:
    """Whether each data copy (capture order; sequence and TSval unwrapped) failed the receiver's
    PAWS check: its TSval older than TS.Recent by more than PAWS_WINDOW_TICKS, TS.Recent being the
    newest TSval among the earlier copies with timestamps that began at or below `rcv_wup` (the
    cumulative ACK the receiver had sent last before each copy). A discarded copy never updates
    TS.Recent, and one that passes only raises it (Linux keeps the newer), so the newest such
    TSval is TS.Recent."""
    if len(lo) == 0:
        return np.zeros(0, dtype=bool)
    lowest = np.iinfo(np.int64).min
    recent = np.maximum.accumulate(np.where(has_ts & (lo <= rcv_wup), tsval_ticks, lowest))
    recent_before = np.concatenate(([lowest], recent[:-1]))
    return has_ts & (recent_before != lowest) & (recent_before - tsval_ticks > PAWS_WINDOW_TICKS)


def last_ack_before(data_rows: np.ndarray, ack_rows: np.ndarray, ack_unwrapped: np.ndarray) -> np.ndarray:
    """For each data row (capture order), the cumulative ACK (unwrapped) of the latest ACK row
    before it; the lowest int64 where no ACK came before."""
    lowest = np.iinfo(np.int64).min
    where = np.searchsorted(ack_rows, data_rows, side="left") - 1
    if len(ack_rows) == 0:
        return np.full(len(data_rows), lowest, dtype=np.int64)
    return np.where(where >= 0, ack_unwrapped[np.maximum(where, 0)], lowest)


def signed_offset(values: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """`values - reference` in sequence space, as signed 64-bit."""
    delta = (values.astype(np.int64) - reference.astype(np.int64)) % SEQ_SPACE
    return np.where(delta >= HALF_SEQ_SPACE, delta - SEQ_SPACE, delta)


def dsack_rows(
    ack: np.ndarray, left: np.ndarray, right: np.ndarray, count: np.ndarray, ack_unwrapped: np.ndarray
) -> Tuple[np.ndarray, Ranges]:
    """Which of a receiver's ACKs carry a D-SACK block (a first SACK block below the cumulative
    ACK, or inside the second block: RFC 2883 section 4), and every ACK's first block
    (unwrapped like `ack_unwrapped`)."""
    has = count >= 1
    left0 = ack_unwrapped + signed_offset(left[:, 0], ack)
    right0 = ack_unwrapped + signed_offset(right[:, 0], ack)
    left1 = ack_unwrapped + signed_offset(left[:, 1], ack)
    right1 = ack_unwrapped + signed_offset(right[:, 1], ack)
    below = right0 <= ack_unwrapped
    inside_second = (count >= 2) & (left0 >= left1) & (right0 <= right1)
    return has & (below | inside_second), (left0, right0)


def dsack_blocks(
    ack: np.ndarray, left: np.ndarray, right: np.ndarray, count: np.ndarray, ack_unwrapped: np.ndarray
) -> Ranges:
    """The D-SACK blocks of a receiver's ACKs (unwrapped like `ack_unwrapped`)."""
    is_dsack, (left0, right0) = dsack_rows(ack, left, right, count, ack_unwrapped)
    return left0[is_dsack], right0[is_dsack]


def dsack_overwritten(copy_rows: np.ndarray, reply_rows: np.ndarray, reply_dsack: np.ndarray) -> np.ndarray:
    """Whether each later copy (its capture row; the receiver's replies `reply_rows`, sorted, with
    `reply_dsack` telling which carry a D-SACK) may have had its D-SACK block replaced: another
    later copy came after it before the receiver's next reply, and that reply carries a D-SACK.
    Linux keeps one D-SACK block, and a duplicate taken out of order replaces the one before it
    (tcp_dsack_set); where it compresses its ACKs of out-of-order data, several duplicates can
    come between two ACKs, and only the last is reported."""
    if len(reply_rows) == 0:
        return np.zeros(len(copy_rows), dtype=bool)
    following = np.searchsorted(reply_rows, copy_rows, side="right")
    has_reply = following < len(reply_rows)
    reply = np.minimum(following, len(reply_rows) - 1)
    distinct = np.unique(copy_rows)
    others_before_reply = np.searchsorted(distinct, reply_rows[reply], side="left") - np.searchsorted(
        distinct, copy_rows, side="right"
    )
    return has_reply & reply_dsack[reply] & (others_before_reply > 0)


def first_rows_only(mask: np.ndarray, rows: np.ndarray, budget: int) -> np.ndarray:
    """`mask` kept only on the copies of its first `budget` distinct rows (capture order)."""
    chosen = np.unique(rows[mask])[: max(0, budget)]
    return mask & np.isin(rows, chosen)


def dsacks_reported(packets, rows: np.ndarray, client_ports: Sequence[int]) -> int:
    """The distinct D-SACK blocks the receiver's replies on the client ports carry (`rows`: the
    sender's data rows)."""
    dport, sack_count = np.asarray(packets["dport"]), np.asarray(packets["sack_count"])
    replies = np.flatnonzero(np.isin(dport, np.asarray(list(client_ports))) & ~rows & (sack_count > 0))
    ack = np.asarray(packets["ack"])[replies].astype(np.int64)
    left = np.asarray(packets["sack_left"])[replies].astype(np.int64)
    right = np.asarray(packets["sack_right"])[replies].astype(np.int64)
    is_dsack, _ = dsack_rows(ack, left, right, sack_count[replies], ack)
    return len(set(zip(dport[replies][is_dsack].tolist(), left[is_dsack, 0].tolist(), right[is_dsack, 0].tolist())))


def reported_held(
    starts: np.ndarray,
    ends: np.ndarray,
    copy_rows: np.ndarray,
    reply_rows: np.ndarray,
    reply_ack: np.ndarray,
    reply_blocks: Optional[Ranges],
) -> np.ndarray:
    """Whether each segment [starts, ends) (a later copy, at capture row `copy_rows`) had been
    reported held by one of the receiver's replies before that row: its cumulative ACK
    (`reply_ack`, at `reply_rows`, sorted) reached the segment's end, or one of the replies' SACK
    blocks (`reply_blocks`: left and right edges, one row per reply, one column per block, empty
    blocks with right <= left; None: SACK blocks not trusted) covered it."""
    held = np.zeros(len(starts), dtype=bool)
    if len(reply_rows) == 0:
        return held
    before = np.searchsorted(reply_rows, copy_rows, side="left")
    acked = np.maximum.accumulate(reply_ack)
    held = (before > 0) & (acked[np.maximum(before - 1, 0)] >= ends)
    if reply_blocks is None:
        return held
    left, right = reply_blocks
    for k in np.flatnonzero(~held & (before > 0)):
        earlier = slice(0, int(before[k]))
        held[k] = bool(np.any((left[earlier] <= starts[k]) & (right[earlier] >= ends[k])))
    return held


def resends_not_dsacked(
    packets,
    sender_address: str,
    client_ports: Sequence[int],
    mss: int,
    dsacks_set: Optional[int] = None,
    sack_blocks_kept: bool = False,
) -> Dict[int, int]:
    """Per client port, the segments of later copies no D-SACK of the receiver covered, less
    those its ACKs had reported held before they came (`reported_held`; its SACK blocks only
    where `sack_blocks_kept`: the receiver's counters say it never dropped out-of-order data
    it had reported), those the receiver's PAWS check discarded (or whose earlier copy it
    discarded), those that came after the receiver reset the connection (nothing is answered
    then), and, where the receiver's TCP counted more D-SACKs set (`dsacks_set`:
    TCPDSACKOldSent + TCPDSACKOfoSent) than distinct D-SACK blocks its ACKs carry, up to that
    many copies whose block was replaced (`dsack_overwritten`)."""
    rows = sender_data_rows(packets, sender_address, client_ports)
    sport, dport = np.asarray(packets["sport"]), np.asarray(packets["dport"])
    flags = np.asarray(packets["tcp_flags"])
    sack_count = np.asarray(packets["sack_count"])
    seq_all, ack_all = np.asarray(packets["seq"]).astype(np.int64), np.asarray(packets["ack"]).astype(np.int64)
    lengths = np.asarray(packets["tcp_payload_len"]).astype(np.int64)
    budget = 0 if dsacks_set is None else dsacks_set - dsacks_reported(packets, rows, client_ports)
    out: Dict[int, int] = {}
    for port in client_ports:
        data = np.flatnonzero(rows & (sport == port))
        if len(data) == 0:
            continue
        base = int(seq_all[data[0]])
        lo = unwrap(seq_all[data], base)
        hi = lo + lengths[data]
        all_starts, all_ends = segment_starts(lo, hi, mss)
        segment_rows = np.repeat(data, np.maximum(1, -(-(hi - lo) // mss)))
        later = later_copy_mask(all_starts)
        starts, ends = all_starts[later], all_ends[later]
        replies = np.flatnonzero((dport == port) & ~rows)
        ack = ack_all[replies]
        ack_unwrapped = signed_offset(ack, np.full(len(ack), base))
        left = np.asarray(packets["sack_left"])[replies].astype(np.int64)
        right = np.asarray(packets["sack_right"])[replies].astype(np.int64)
        blocks_carried = sack_count[replies]
        is_dsack, _ = dsack_rows(ack, left, right, blocks_carried, ack_unwrapped)
        is_dsack &= blocks_carried > 0
        blocks = dsack_blocks(
            ack[is_dsack], left[is_dsack], right[is_dsack], blocks_carried[is_dsack], ack_unwrapped[is_dsack]
        )
        unanswered = ~covered(starts, ends, merged(*blocks))
        reply_blocks = None
        if sack_blocks_kept:
            count = blocks_carried[:, None] > np.arange(left.shape[1])[None, :]
            edges = [ack_unwrapped[:, None] + signed_offset(edge, ack[:, None]) for edge in (left, right)]
            reply_blocks = (np.where(count, edges[0], 0), np.where(count, edges[1], -1))
        open_ = np.flatnonzero(unanswered)
        held = reported_held(
            starts[open_], ends[open_], segment_rows[later][open_], replies, ack_unwrapped, reply_blocks
        )
        unanswered[open_[held]] = False
        resets = replies[(flags[replies] & TCP_RST) != 0]
        if len(resets):
            unanswered &= segment_rows[later] < resets[0]
        if budget > 0:
            overwritten = dsack_overwritten(segment_rows[later], replies, is_dsack) & unanswered
            replaced = first_rows_only(overwritten, segment_rows[later], budget)
            budget -= len(np.unique(segment_rows[later][replaced]))
            unanswered &= ~replaced
        discarded = copies_paws_discarded(packets, rows, port, data, lo, base)
        if discarded is not None:
            segment_discarded = np.repeat(discarded, np.maximum(1, -(-(hi - lo) // mss)))
            by_paws = segment_discarded | segment_discarded[first_copy_of(all_starts)]
            unanswered &= ~by_paws[later]
        out[int(port)] = int(np.count_nonzero(unanswered))
    return out


def copies_paws_discarded(
    packets, rows: np.ndarray, port: int, data: np.ndarray, lo: np.ndarray, base: int
) -> Optional[np.ndarray]:
    """`paws_discarded` for the data rows `data` of client `port` (sequence `lo` unwrapped from
    `base`), reading rcv_wup from the receiver's ACKs in the same capture; None where the data
    carry no timestamps."""
    has_ts = np.asarray(packets["opt_has_ts"])[data].astype(bool)
    if not has_ts.any():
        return None
    tsval_raw = np.asarray(packets["opt_tsval"])[data].astype(np.int64)
    tsval = signed_offset(tsval_raw, np.full(len(data), tsval_raw[has_ts][0]))
    dport = np.asarray(packets["dport"])
    acks = np.flatnonzero((dport == port) & ~rows & ((np.asarray(packets["tcp_flags"]) & TCP_ACK) != 0))
    ack = np.asarray(packets["ack"])[acks].astype(np.int64)
    rcv_wup = last_ack_before(data, acks, signed_offset(ack, np.full(len(ack), base)))
    return paws_discarded(lo, tsval, has_ts, rcv_wup)


def receiver_resends_not_dsacked(
    pcap: Path,
    sender_address: str,
    client_ports: Sequence[int],
    mss: int,
    dsacks_set: Optional[int] = None,
    sack_blocks_kept: bool = False,
) -> Optional[int]:
    """`resends_not_dsacked` summed over the connections of the receiver's capture `pcap`."""
    from .. import read

    packets = read(pcap).packets
    return sum(resends_not_dsacked(packets, sender_address, client_ports, mss, dsacks_set, sack_blocks_kept).values())
