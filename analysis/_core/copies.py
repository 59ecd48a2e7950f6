"""Packets captured twice on a forwarding host (`tcpdump -i any` on a router, a bridge).

A host that forwards a flow and captures on all its interfaces records every packet twice:
once on its way in, once on its way out with the TTL (hop limit) one lower. Counted as they
are, the second copies look like retransmissions of everything and hide the host's own drops.

`find_forwarded_copies` pairs each copy that left with the one that came in. The analysed
view keeps what left the host (as a capture just downstream of it would see it) and sets
aside the incoming copies. An incoming packet that never left, although packets of the same
direction that came in after it did, was dropped by this host: its own drops, reported as such.

Pure functions over the packet table's arrays; the pairing sorts only the packets of
directions whose TTLs show both copies, so other captures pay nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import numpy as np

from .columns import DECODE_IP_FRAGMENT, DECODE_IN_ICMP_ERROR, DECODE_IP_ID_VALID, LINKTYPE_LINUX_SLL

# A copy leaves at most this long after it came in: more than any queue a forwarding host
# holds (a 1-BDP queue of a 1 s RTT path), far less than a retransmission of the same bytes
# with identical IP ID and timestamps would ever be apart (those never are: both change).
MAX_FORWARDING_DELAY_NS = 2_000_000_000
# Incoming copies searched back for an outgoing piece whose nearest one does not hold it
# (_pieces_in_wholes): a timeout's resends of one super-segment's bytes (a slow start's bursts).
_PIECE_LOOKBACK = 64
# Share of a direction's packets (the fewer of its in and out copies) that must pair up before
# its incoming copies are set aside.
MIN_PAIRED_FRACTION = 0.5
# TCP sequence space
_SEQ_SPACE = 1 << 32
_HALF_SEQ_SPACE = 1 << 31
# Fields a forwarding host leaves as they are; only the TTL (and checksum) changes.
_HASH_MULTIPLIERS = (
    0x9E3779B97F4A7C15,
    0xC2B2AE3D27D4EB4F,
    0x165667B19E3779F9,
    0xD6E8FEB86659FD93,
    0xFF51AFD7ED558CCD,
    0xC4CEB9FE1A85EC53,
    0x94D049BB133111EB,
    0xBF58476D1CE4E5B9,
)


@dataclass
class ForwardedCopies:
    """Per packet: `hidden` (left out of the analysed view: the incoming copy of a packet that
    left, or an incoming packet that never did). Per slot (stream * 2 + direction):
    `duplicate_frames` (incoming copies of packets also captured leaving) and
    `forwarded_drops` (segments, or packets without payload, that came in and never left
    while later ones did) and `forwarded_data_drops` (of those, the data segments: a SYN or a
    FIN without payload the host dropped is sent again, but is no data lost)."""

    hidden: np.ndarray
    duplicate_frames: np.ndarray
    forwarded_drops: np.ndarray
    forwarded_data_drops: np.ndarray


def forwarding_slots(ttl_min: np.ndarray, ttl_max: np.ndarray, packets_per_slot: np.ndarray) -> np.ndarray:
    """Slots whose packets carry two TTLs: candidates for in-and-out copies. One apart on a
    forwarding host; further apart where the two ends of a path of several hops were captured
    and the files merged (`mergecap`: the copies that "left" are the far end's)."""
    return (packets_per_slot > 1) & (ttl_max > ttl_min)


def _content_hash(packets: Mapping[str, np.ndarray], rows: np.ndarray, slot: np.ndarray) -> np.ndarray:
    """64-bit hash of what a forwarding host leaves unchanged (everything but TTL and checksum)."""
    ip_id = np.where(
        (np.asarray(packets["decode_flags"])[rows] & DECODE_IP_ID_VALID) != 0, np.asarray(packets["ip_id"])[rows], 0
    )
    fields = (
        slot[rows],
        packets["seq"][rows],
        packets["ack"][rows],
        packets["tcp_flags"][rows],
        packets["tcp_payload_len"][rows],
        ip_id,
        packets["opt_tsval"][rows],
        packets["window"][rows],
    )
    h = np.zeros(len(rows), dtype=np.uint64)
    with np.errstate(over="ignore"):
        for values, multiplier in zip(fields, _HASH_MULTIPLIERS):
            h ^= np.asarray(values).astype(np.uint64) * np.uint64(multiplier)
            h = (h << np.uint64(17)) | (h >> np.uint64(47))
    return h


def find_forwarded_copies(
    packets: Mapping[str, np.ndarray],
    slot: np.ndarray,
    n_slots: int,
    candidate_slots: np.ndarray,
    ttl_max: np.ndarray,
    mss: np.ndarray,
    capture_dropped: bool = False,
) -> ForwardedCopies:
    """Pair incoming and outgoing copies in `candidate_slots` (bool per slot; `ttl_max` per
    slot is the incoming TTL). Copies of one content are paired first in, first out.
    `capture_dropped`: the file's own counters say the capture missed packets, so an incoming
    data copy seen never leaving counts as this host's drop only where its bytes came in again
    (a copy the capture missed leaving is not repaired)."""
    n = len(slot)
    hidden = np.zeros(n, dtype=bool)
    duplicate_frames = np.zeros(n_slots, dtype=np.int64)
    forwarded_drops = np.zeros(n_slots, dtype=np.int64)
    usable = (slot >= 0) & ((np.asarray(packets["decode_flags"]) & (DECODE_IP_FRAGMENT | DECODE_IN_ICMP_ERROR)) == 0)
    in_candidate = np.zeros(n, dtype=bool)
    in_candidate[usable] = candidate_slots[slot[usable]]
    rows = np.flatnonzero(in_candidate)
    if len(rows) == 0:
        return ForwardedCopies(hidden, duplicate_frames, forwarded_drops, forwarded_drops.copy())

    ts = np.asarray(packets["ts_ns"])[rows]
    row_slot = slot[rows].astype(np.int64)
    incoming = np.asarray(packets["ttl"])[rows] == ttl_max[row_slot]
    content = _content_hash(packets, rows, slot)
    order = np.lexsort((ts, content))
    h_sorted = content[order]
    group_start = np.empty(len(order), dtype=bool)
    group_start[0] = True
    np.not_equal(h_sorted[1:], h_sorted[:-1], out=group_start[1:])
    group = np.cumsum(group_start) - 1
    first_of_group = np.flatnonzero(group_start)

    def rank_within_group(mask: np.ndarray) -> np.ndarray:
        counted = np.cumsum(mask)
        before = np.concatenate(([0], counted))[first_of_group][group]
        return counted - before - 1

    inc_sorted = incoming[order]
    key = group.astype(np.int64) << 32
    in_pos = np.flatnonzero(inc_sorted)
    out_pos = np.flatnonzero(~inc_sorted)
    in_key = (key + rank_within_group(inc_sorted))[in_pos]
    out_key = (key + rank_within_group(~inc_sorted))[out_pos]
    at = np.searchsorted(in_key, out_key)
    at_ok = at < len(in_key)
    matched_out = np.zeros(len(out_pos), dtype=bool)
    matched_out[at_ok] = in_key[at[at_ok]] == out_key[at_ok]
    pair_in = order[in_pos[at[matched_out]]]
    pair_out = order[out_pos[matched_out]]
    # the copies that left may carry another host's clock (two captures merged), behind the
    # first's by more than the path's delay: the earliest copies then "left" before they came in
    shift_ns = clock_shift_ns(row_slot, pair_in, ts[pair_out] - ts[pair_in], n_slots)
    ts = np.where(incoming, ts, ts + shift_ns[row_slot])
    delay = ts[pair_out] - ts[pair_in]
    real = (delay >= 0) & (delay <= MAX_FORWARDING_DELAY_NS)
    pair_in, pair_out = pair_in[real], pair_out[real]
    # a super-segment that came in (TSO at the sender, GRO on the way in) may leave cut into
    # segments: those pair by sequence range instead
    seq = unwrapped_seq(np.asarray(packets["seq"])[rows], row_slot)
    payload_len = np.asarray(packets["tcp_payload_len"])[rows].astype(np.int64)
    tsval = np.asarray(packets["opt_tsval"])[rows].astype(np.int64)
    split_in, split_out = _pair_by_range(row_slot, seq, payload_len, tsval, ts, incoming, pair_in, pair_out, True)
    pair_in, pair_out = np.concatenate([pair_in, split_in]), np.concatenate([pair_out, split_out])
    # and segments that came in one by one may leave coalesced (GRO where the outgoing copies
    # were captured: two hosts' captures merged, the receiver's with GRO on)
    joined_in, joined_out = _pair_by_range(row_slot, seq, payload_len, tsval, ts, incoming, pair_in, pair_out, False)
    pair_in, pair_out = np.concatenate([pair_in, joined_in]), np.concatenate([pair_out, joined_out])

    # A direction is forwarded through this host when most of its packets pair up; two TTLs
    # alone also come from a TTL change of the sender (or a crafted file) and prove nothing.
    pairs = np.bincount(row_slot[pair_in], minlength=n_slots)
    n_in = np.bincount(row_slot[incoming], minlength=n_slots)
    n_out = np.bincount(row_slot[~incoming], minlength=n_slots)
    confirmed = (pairs > 0) & (pairs >= MIN_PAIRED_FRACTION * np.minimum(n_in, n_out))
    keep_pair = confirmed[row_slot[pair_in]]
    pair_in, pair_out = pair_in[keep_pair], pair_out[keep_pair]
    # the incoming copy each outgoing one left as (-1: none paired)
    left_as_copy_of = np.full(len(rows), -1, dtype=np.int64)
    left_as_copy_of[pair_out] = pair_in
    incoming &= confirmed[row_slot]

    forwarded = np.zeros(len(rows), dtype=bool)
    forwarded[pair_in] = True
    # segments of each incoming copy that left (a super-segment cut into k pieces pairs k times)
    payload = np.asarray(packets["tcp_payload_len"])[rows].astype(np.int64)
    row_mss = np.maximum(mss[row_slot], 1)
    segments = np.where(payload > 0, (payload + row_mss - 1) // row_mss, 1)
    segments_left = np.zeros(len(rows), dtype=np.int64)
    np.add.at(segments_left, pair_in, segments[pair_out])
    # bytes of each incoming copy that left as it or in pieces (not those that left coalesced
    # with others: the outgoing packet pairs with each of them)
    bytes_left = np.zeros(len(rows), dtype=np.int64)
    whole_or_piece = payload[pair_out] <= payload[pair_in]
    np.add.at(bytes_left, pair_in[whole_or_piece], payload[pair_out[whole_or_piece]])
    # The view is what left the host. A host that holds the answers (ACKs) on their way back
    # (a delay line: netem, a satellite hop, a shaper on the return path) sends them on long
    # after the receiver sent them, and as they left they lag the data by that hold: the view
    # would put the receiver a round trip's half away on a path whose receiver is next to the
    # host. There the answers are kept as they came in (the host's interface towards the data's
    # receiver sees the data as they left and the answers so). Only on a forwarding host (one
    # hop between the copies): captures of a path's two ends merged keep the far end's copies.
    row_ttl = np.asarray(packets["ttl"])[rows].astype(np.int64)
    far = ttl_max[row_slot].astype(np.int64) - row_ttl > 1
    several_hops = np.bincount(row_slot[far], minlength=n_slots)[:n_slots] > 0
    held = mostly_held(row_slot[pair_in], ts[pair_out] - ts[pair_in], n_slots)
    answers = answer_slots(row_slot, payload, n_slots) & ~several_hops & held
    answer_row = answers[row_slot]
    # every incoming data copy leaves the view: forwarded ones are seen again leaving, the others
    # never left (dropped here, or still queued when the capture stopped); of the answers, the
    # copies that left leave it
    hidden[rows[incoming & ~answer_row]] = True
    hidden[rows[pair_out[answer_row[pair_out]]]] = True
    pair_in = np.unique(pair_in)
    np.add.at(duplicate_frames, row_slot[pair_in], 1)

    # never left although a later arrival of the same direction did: dropped by this host;
    # so were the pieces that never left of a super-segment that left in part (a queue that
    # cuts GSO packets into segments, as tbf does, drops the pieces that find it full)
    last_forwarded_in_ns = np.full(n_slots, -1, dtype=np.int64)
    np.maximum.at(last_forwarded_in_ns, row_slot[pair_in], ts[pair_in])
    settled = incoming & (ts < last_forwarded_in_ns[row_slot])
    dropped_segments = np.where(forwarded, np.maximum(segments - segments_left, 0), segments)
    if capture_dropped:
        # data this host dropped came in again (the sender repairs every loss while the
        # connection lasts); data whose outgoing copy the capture itself missed (its kernel or
        # dumpcap dropped it: two interfaces into one file) did not, and left unseen
        # (as many of its segments as the bytes that came in again hold, at most those missing)
        data_dropped = np.flatnonzero(settled & (payload > 0) & (dropped_segments > 0))
        again = bytes_in_again(row_slot, seq, payload, ts, left_as_copy_of, data_dropped)
        resent_segments = (again + row_mss[data_dropped] - 1) // row_mss[data_dropped]
        dropped_segments[data_dropped] = np.minimum(dropped_segments[data_dropped], resent_segments)
        settled[data_dropped[resent_segments == 0]] = False
    np.add.at(forwarded_drops, row_slot[settled], dropped_segments[settled])
    # pieces paired with a copy beyond its own bytes are another copy's, not drops here
    excess = pieces_of_other_copies(row_slot, payload, bytes_left, forwarded & settled, mss, n_slots)
    forwarded_data_drops = np.zeros(n_slots, dtype=np.int64)
    data = settled & (payload > 0)
    np.add.at(forwarded_data_drops, row_slot[data], dropped_segments[data])
    return ForwardedCopies(
        hidden,
        duplicate_frames,
        np.maximum(forwarded_drops - excess, 0),
        np.maximum(forwarded_data_drops - excess, 0),
    )


def pieces_of_other_copies(
    row_slot: np.ndarray,
    payload: np.ndarray,
    bytes_left: np.ndarray,
    counted: np.ndarray,
    mss: np.ndarray,
    n_slots: int,
) -> np.ndarray:
    """Per slot, segments that left as pieces paired with an incoming copy (of `counted`, a bool
    per row; `bytes_left`: the payload of the pieces paired with it) beyond its own bytes: two copies of the same bytes with one TSval (a repair in the same
    millisecond as the original, RACK on a short path) both came in, and pieces of one were
    paired with the other, which reads whole while the first reads short, as dropped here
    (ro-unshaped-tso-gro-v6-p3-bbr-l1, `-i any`: 1,563 of 10,483 segments, and what came in and
    never left was the router's 8,920). Counted in bytes: pieces cut smaller than the MSS on
    the way out (a smaller MTU) are no excess."""
    excess = np.where(counted, np.maximum(bytes_left - payload, 0), 0)
    per_slot = np.zeros(n_slots, dtype=np.float64)
    np.add.at(per_slot, row_slot, excess / np.maximum(mss[row_slot], 1))
    return np.rint(per_slot).astype(np.int64)


def bytes_in_again(
    row_slot: np.ndarray,
    seq: np.ndarray,
    payload_len: np.ndarray,
    ts: np.ndarray,
    left_as_copy_of: np.ndarray,
    candidates: np.ndarray,
) -> np.ndarray:
    """For each candidate row (an incoming data copy), how many of its bytes later data copies of
    its direction overlap, coming in or leaving (`seq` unwrapped; copies of the same bytes added
    up): the bytes that were sent again. A copy leaving counts only where no incoming copy was
    paired with it (`left_as_copy_of`: the incoming row each outgoing one left as, -1 none): a
    resend whose incoming copy the capture missed; the candidate's own pieces leaving, and a
    resend seen both ways, do not (again). Looks at the _PIECE_LOOKBACK copies starting nearest
    below the candidate's end (a repair may start below it: a resend cut otherwise than the first
    copy)."""
    again = np.zeros(len(candidates), dtype=np.int64)
    data_in = np.flatnonzero(payload_len > 0)
    if len(candidates) == 0 or len(data_in) == 0:
        return again
    by_start = data_in[np.lexsort((seq[data_in], row_slot[data_in]))]
    # the rank of each candidate's end among the (direction, start) keys of the copies
    ranks = _dense_rank(
        np.concatenate((row_slot[by_start], row_slot[candidates])),
        np.concatenate((seq[by_start], seq[candidates] + payload_len[candidates])),
    )
    at = np.searchsorted(ranks[: len(by_start)], ranks[len(by_start) :], side="left") - 1
    todo = np.arange(len(candidates))
    lo, hi = seq[candidates], seq[candidates] + payload_len[candidates]
    for _ in range(_PIECE_LOOKBACK):
        todo = todo[at[todo] >= 0]
        other = by_start[at[todo]]
        same_direction = row_slot[other] == row_slot[candidates[todo]]
        todo, other = todo[same_direction], other[same_direction]
        if len(todo) == 0:
            break
        overlap = np.minimum(hi[todo], seq[other] + payload_len[other]) - np.maximum(lo[todo], seq[other])
        later = (ts[other] > ts[candidates[todo]]) & (left_as_copy_of[other] < 0)
        np.add.at(again, todo[later], np.maximum(overlap[later], 0))
        at[todo] -= 1
    return again


# A direction whose payload is at most this share of its peer's answers it (ACKs, a request).
ANSWER_PAYLOAD_SHARE = 0.01
# A forwarding host holds a direction's packets when most of them stay longer than a TSval tick
# of Linux (1 ms): the time the copies that left carry is then not the time they were sent at.
ANSWERS_HELD_NS = 1_000_000


def mostly_held(slots: np.ndarray, stays_ns: np.ndarray, n_slots: int) -> np.ndarray:
    """Per slot, whether most of its forwarded copies (their slots and the time each stayed
    in the host) stayed longer than ANSWERS_HELD_NS."""
    pairs = np.bincount(slots, minlength=n_slots)[:n_slots]
    held = np.bincount(slots[stays_ns > ANSWERS_HELD_NS], minlength=n_slots)[:n_slots]
    return 2 * held > pairs


def answer_slots(row_slot: np.ndarray, payload_bytes: np.ndarray, n_slots: int) -> np.ndarray:
    """Per slot (stream * 2 + direction), whether it answers its peer's data: its payload (of the
    rows given) is at most ANSWER_PAYLOAD_SHARE of its peer's, which carries some."""
    per_slot = np.bincount(row_slot, weights=payload_bytes, minlength=n_slots)[:n_slots]
    peer = per_slot[np.arange(n_slots) ^ 1] if n_slots % 2 == 0 else np.zeros(n_slots)
    return (peer > 0) & (per_slot <= ANSWER_PAYLOAD_SHARE * peer)


def unwrapped_seq(seq: np.ndarray, row_slot: np.ndarray) -> np.ndarray:
    """Sequence numbers (32 bits, per row) unwrapped to 64 bits along each slot in row order:
    each step from the slot's previous row is the signed 32-bit difference, so a range that
    crosses 2^32 stays contiguous (a super-segment whose pieces wrap past zero still holds
    them). A slot's first row keeps its own value."""
    out = np.asarray(seq).astype(np.int64)
    if len(out) < 2:
        return out
    order = np.argsort(row_slot, kind="stable")
    sorted_seq, sorted_slot = out[order], row_slot[order]
    step = (sorted_seq[1:] - sorted_seq[:-1] + _HALF_SEQ_SPACE) % _SEQ_SPACE - _HALF_SEQ_SPACE
    new_slot = sorted_slot[1:] != sorted_slot[:-1]
    step[new_slot] = 0
    walked = np.concatenate(([0], np.cumsum(step)))
    first = np.maximum.accumulate(np.where(np.concatenate(([True], new_slot)), np.arange(len(order)), 0))
    out[order] = sorted_seq[first] + walked - walked[first]
    return out


def clock_shift_ns(row_slot: np.ndarray, pair_in: np.ndarray, delay_ns: np.ndarray, n_slots: int) -> np.ndarray:
    """Per slot, what to add to the outgoing copies' timestamps so that its paired copies
    (`delay_ns`: outgoing less incoming time, pairs by content) left after they came in and
    within MAX_FORWARDING_DELAY_NS: 0 where they did (one host's clock: a forwarding host, or
    two in step); else minus the shortest delay among the pairs within MAX_FORWARDING_DELAY_NS
    of the slot's median (two hosts' clocks may be seconds apart, either way; the median is
    where its copies cluster). Aligned so, the copies that left nearest their arrival left at
    once; the path's delay between them is not known."""
    shift_ns = np.zeros(n_slots, dtype=np.int64)
    if len(pair_in) == 0:
        return shift_ns
    slots = row_slot[pair_in]
    order = np.lexsort((delay_ns, slots))
    sorted_slots, sorted_delays = slots[order], delay_ns[order]
    starts = np.flatnonzero(np.concatenate(([True], sorted_slots[1:] != sorted_slots[:-1])))
    counts = np.diff(np.concatenate((starts, [len(order)])))
    median_ns = np.zeros(n_slots, dtype=np.int64)
    median_ns[sorted_slots[starts]] = sorted_delays[starts + (counts - 1) // 2]
    near = np.abs(delay_ns - median_ns[slots]) <= MAX_FORWARDING_DELAY_NS
    shortest = np.full(n_slots, np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(shortest, slots[near], delay_ns[near])
    off = (shortest != np.iinfo(np.int64).max) & ((shortest < 0) | (shortest > MAX_FORWARDING_DELAY_NS))
    shift_ns[off] = -shortest[off]
    return shift_ns


def _dense_rank(major: np.ndarray, minor: np.ndarray) -> np.ndarray:
    """Per element, the rank of its (major, minor) pair among the distinct pairs, in order."""
    order = np.lexsort((minor, major))
    new_pair = np.ones(len(order), dtype=bool)
    new_pair[1:] = (major[order][1:] != major[order][:-1]) | (minor[order][1:] != minor[order][:-1])
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.cumsum(new_pair) - 1
    return rank


def _pieces_in_wholes(
    row_slot: np.ndarray,
    seq: np.ndarray,
    payload_len: np.ndarray,
    tsval: np.ndarray,
    ts: np.ndarray,
    whole_rows: np.ndarray,
    piece_rows: np.ndarray,
    piece_after_whole: bool,
):
    """(whole, piece) rows where each piece lies inside the sequence range of a whole of its
    direction with its TSval (the pieces of a super-segment carry its timestamps, and GRO
    coalesces only segments whose options agree), the piece captured after the whole
    (`piece_after_whole`) or before it, within MAX_FORWARDING_DELAY_NS. Each piece finds the
    last whole of its direction and TSval starting at or below its own start."""
    none = np.zeros(0, dtype=np.int64)
    if len(whole_rows) == 0 or len(piece_rows) == 0:
        return none, none
    # a group per direction and TSval, numbered over these rows only (most captures have few)
    involved = np.concatenate((whole_rows, piece_rows))
    _, involved_group = np.unique((row_slot[involved] << 32) | tsval[involved], return_inverse=True)
    group = np.zeros(len(row_slot), dtype=np.int64)
    group[involved] = involved_group.ravel()
    # (group, sequence) as one ordered key: sequences are unwrapped (beyond 32 bits)
    key = np.zeros(len(row_slot), dtype=np.int64)
    key[involved] = _dense_rank(group[involved], seq[involved])
    whole_key = key[whole_rows]
    order = np.lexsort((ts[whole_rows], whole_key))
    whole_rows, whole_key = whole_rows[order], whole_key[order]
    piece_key = key[piece_rows]
    at = np.searchsorted(whole_key, piece_key, side="right") - 1
    cand = whole_rows[np.maximum(at, 0)]

    def holds(whole: np.ndarray, piece: np.ndarray) -> np.ndarray:
        delay = ts[piece] - ts[whole] if piece_after_whole else ts[whole] - ts[piece]
        return (
            (group[whole] == group[piece])
            & (seq[piece] + payload_len[piece] <= seq[whole] + payload_len[whole])
            & (delay >= 0)
            & (delay <= MAX_FORWARDING_DELAY_NS)
        )

    ok = (at >= 0) & holds(cand, piece_rows)
    # the last whole at or below a piece's start may not hold it: a sender without timestamps
    # (one TSval group) resends the same bytes in other pieces after a timeout, and a resend
    # that was captured later, or starts higher inside the original, is found first; the piece
    # then belongs to an earlier whole that holds it
    # (one step back at a time for all such pieces at once, nearest first)
    todo = np.flatnonzero(~ok & (at > 0))
    for back in range(1, _PIECE_LOOKBACK):
        k = at[todo] - back
        same = k >= 0
        same[same] = group[whole_rows[k[same]]] == group[piece_rows[todo[same]]]
        todo, k = todo[same], k[same]
        if len(todo) == 0:
            break
        hit = holds(whole_rows[k], piece_rows[todo])
        cand[todo[hit]], ok[todo[hit]] = whole_rows[k[hit]], True
        todo = todo[~hit]
    return cand[ok].astype(np.int64), piece_rows[ok].astype(np.int64)


def _pair_by_range(
    row_slot: np.ndarray,
    seq: np.ndarray,
    payload_len: np.ndarray,
    tsval: np.ndarray,
    ts: np.ndarray,
    incoming: np.ndarray,
    pair_in: np.ndarray,
    pair_out: np.ndarray,
    split_on_the_way_out: bool,
):
    """Pairs (incoming row, outgoing row) of data packets not yet paired, one inside the other's
    sequence range with its TSval. `split_on_the_way_out`: an outgoing packet lies inside an
    incoming one that came in before it (a super-segment forwarded in pieces; without the
    TSval, a retransmission of the same bytes that came in while the first copy was still
    queued would take that copy's pieces, and the first copy would count as dropped here);
    otherwise an incoming packet lies inside an outgoing one that left after it (segments that
    left coalesced: GRO where the outgoing copies were captured, as in two hosts' captures
    merged, the receiver's with GRO on; the outgoing copy pairs with each of them)."""
    paired = np.zeros(len(payload_len), dtype=bool)
    paired[pair_in] = True
    paired[pair_out] = True
    data = (payload_len > 0) & ~paired
    in_rows, out_rows = np.flatnonzero(data & incoming), np.flatnonzero(data & ~incoming)
    if split_on_the_way_out:
        return _pieces_in_wholes(row_slot, seq, payload_len, tsval, ts, in_rows, out_rows, True)
    whole, piece = _pieces_in_wholes(row_slot, seq, payload_len, tsval, ts, out_rows, in_rows, False)
    return piece, whole


def find_interface_copies(
    packets: Mapping[str, np.ndarray], slot: np.ndarray, n_slots: int, eligible_slots: np.ndarray
) -> ForwardedCopies:
    """Copies of one packet seen on several interfaces with the same TTL: a bridge, a bond,
    or `tcpdump -i any` on a host whose interfaces pass a packet on unchanged (the
    `interface` column tells them apart: pcapng interface, Linux cooked v2 ifindex, v1
    in/out). Identical copies (everything but the checksum, SACK blocks included) follow each
    other in a burst, each gap within MAX_FORWARDING_DELAY_NS; in a burst, a copy on another
    interface than the burst's first is set aside, while one on the same interface is a real
    repeat (a retransmission the sender made). Linux cooked v1 frames name no interface: on a
    host whose address sits on a bridge, both copies of a packet it receives read "in" (the
    port's and the bridge's), both of one it sends "out" (Wireshark's dumpcap writes v1 for
    `-i any`); there every second frame of a burst is the copy (each frame, the original and
    any repeat, comes twice). A direction's copies are set aside only when at least
    MIN_PAIRED_FRACTION of its packets (half of them: each has its copy) have one."""
    n = len(slot)
    hidden = np.zeros(n, dtype=bool)
    duplicate_frames = np.zeros(n_slots, dtype=np.int64)
    none = ForwardedCopies(
        hidden, duplicate_frames, np.zeros(n_slots, dtype=np.int64), np.zeros(n_slots, dtype=np.int64)
    )
    interface = np.asarray(packets["interface"])
    usable = (slot >= 0) & ((np.asarray(packets["decode_flags"]) & (DECODE_IP_FRAGMENT | DECODE_IN_ICMP_ERROR)) == 0)
    in_eligible = np.zeros(n, dtype=bool)
    in_eligible[usable] = eligible_slots[slot[usable]]
    rows = np.flatnonzero(in_eligible)
    if len(rows) < 2:
        return none
    unnamed = np.asarray(packets["link_type"])[rows] == LINKTYPE_LINUX_SLL
    if np.all(interface[rows] == interface[rows[0]]) and not unnamed.any():
        return none
    ts = np.asarray(packets["ts_ns"])[rows]
    content = (
        _content_hash(packets, rows, slot)
        ^ _sack_hash(packets, rows)
        ^ (np.asarray(packets["ttl"])[rows].astype(np.uint64) << np.uint64(56))
    )
    order = np.lexsort((ts, content))
    h, t, ifc = content[order], ts[order], interface[rows][order]
    # a burst starts where the content changes or the gap to the previous copy is too long
    starts = np.ones(len(order), dtype=bool)
    starts[1:] = (h[1:] != h[:-1]) | (t[1:] - t[:-1] > MAX_FORWARDING_DELAY_NS)
    burst_first = np.maximum.accumulate(np.where(starts, np.arange(len(order)), 0))
    second_of_pair = (np.arange(len(order)) - burst_first) % 2 == 1
    copy = ~starts & np.where(unnamed[order], second_of_pair, ifc != ifc[burst_first])
    copy_rows = rows[order[copy]]
    row_slot = slot[copy_rows].astype(np.int64)
    copies = np.bincount(row_slot, minlength=n_slots)
    packets_per_slot = np.bincount(slot[rows].astype(np.int64), minlength=n_slots)
    confirmed = (copies > 0) & (copies >= MIN_PAIRED_FRACTION * packets_per_slot / 2)
    keep = confirmed[row_slot]
    hidden[copy_rows[keep]] = True
    np.add.at(duplicate_frames, row_slot[keep], 1)
    return ForwardedCopies(hidden, duplicate_frames, none.forwarded_drops, none.forwarded_data_drops)


def _sack_hash(packets: Mapping[str, np.ndarray], rows: np.ndarray) -> np.ndarray:
    """64-bit hash of the SACK blocks (count and first block): duplicate ACKs that differ only
    in them are distinct packets, not copies of one."""
    left = np.asarray(packets["sack_left"])[rows]
    right = np.asarray(packets["sack_right"])[rows]
    first_left = left[:, 0] if left.ndim == 2 else left
    first_right = right[:, 0] if right.ndim == 2 else right
    h = np.asarray(packets["sack_count"])[rows].astype(np.uint64) * np.uint64(_HASH_MULTIPLIERS[0])
    with np.errstate(over="ignore"):
        h ^= first_left.astype(np.uint64) * np.uint64(_HASH_MULTIPLIERS[1])
        h ^= (first_right.astype(np.uint64) * np.uint64(_HASH_MULTIPLIERS[2])) >> np.uint64(7)
    return h
