"""The ECN codepoint as evidence of which data copies are first transmissions (RFC 3168).

A sender that negotiated ECN marks its new data ECN-capable (ECT(0) or ECT(1); a router may
turn that into CE) and must not mark retransmitted data so (RFC 3168 section 6.1.5; Linux's
tcp_ecn_send marks only data sent at snd_nxt). On such a connection every copy of a data
segment, wherever it is captured, says whether it is a first transmission (ECT or CE) or a
resend (not-ECT). Below the point where loss happens, a segment of which only not-ECT copies
arrived had its original lost, whether or not it left a sequence hole: a burst's tail resent
in order leaves none, and a hole count misses it.

The evidence is weighed per direction (`ecn_states`): the handshake negotiated classic ECN
(SYN with ECE and CWR, SYN/ACK with ECE alone; Accurate ECN, RFC 9768, lets resends carry
ECT), the data is mostly ECT, and the copies that provably are resends (sequence-hole fills)
are mostly not-ECT. Where a path bleaches the codepoint, resends carry ECT, or the evidence
is mixed, the codepoint says nothing and the hole count stands.

A slot is one flow direction (stream * 2 + direction), as in truth.py.
"""

from __future__ import annotations

from typing import Mapping, Tuple

import numpy as np

from .columns import ECN_NOT_ECT, TCP_ACK, TCP_CWR, TCP_ECE, TCP_NS, TCP_SYN
from .copies import unwrapped_seq
from .ranges import covered, merged, points_covered

# What the evidence says of a direction's ECN codepoints (the `ecn` key of a direction):
ECN_ON = "on"  # negotiated, first copies ECT and resends not-ECT: the codepoint tells them apart
ECN_OFF = "off"  # not negotiated (or no handshake and no ECT data)
ECN_ACCURATE = "accurate"  # Accurate ECN negotiated: resends may carry ECT (RFC 9768, RFC 8311)
ECN_BLEACHED = "bleached"  # negotiated, but every data copy here is not-ECT (a path clears the field)
ECN_RESENDS_ECT = "resends_ect"  # the hole fills carry ECT as first copies do: the sender marks resends
ECN_MIXED = "mixed"  # ECT on fewer than ECN_MIN_ECT_SHARE of the data copies
ECN_UNPROVEN = "unproven"  # no handshake and too few hole fills to show that resends are not-ECT

# Handshake of a connection, as far as ECN goes.
HANDSHAKE_UNKNOWN, HANDSHAKE_OFF, HANDSHAKE_CLASSIC, HANDSHAKE_ACCURATE = 0, 1, 2, 3

# Most data copies of an ECN connection are first copies: below this share of ECT the marks are
# not the sender's policy (a path that bleaches some packets, a host that marks a few).
ECN_MIN_ECT_SHARE = 0.5
# Hole fills that show the resend policy: at least this many, of which at least this share is
# not-ECT (on a path that reorders, late originals fill holes too, and are ECT: 350 of ~1,300
# fills on ~1 Gbit/s IPv6 paths; a sender that marks its resends makes nearly all fills ECT).
ECN_MIN_FILLS = 8
ECN_MIN_NOT_ECT_FILL_SHARE = 0.5
# Slots' sequence spaces laid end to end in one int64 space (2^40 bytes each).
SLOT_SHIFT_BITS = 40


def handshake_ecn(tcp_flags: np.ndarray, first_syn: np.ndarray) -> np.ndarray:
    """Per slot: its connection's ECN negotiation (HANDSHAKE_*) from the first SYN of each side
    (`first_syn`: packet index per slot, -1 none; the even slot sent the SYN). Classic ECN: the
    SYN sets ECE and CWR, the SYN/ACK ECE alone; Accurate ECN: the SYN also sets AE (the old
    NS bit) and the SYN/ACK answers with CWR or AE set."""
    n_slots = len(first_syn)
    out = np.full(n_slots, HANDSHAKE_UNKNOWN, dtype=np.int8)
    if n_slots == 0:
        return out
    pairs = np.arange(0, n_slots - 1, 2)
    syn_at, synack_at = first_syn[pairs], first_syn[pairs + 1]
    seen = (syn_at >= 0) & (synack_at >= 0)
    syn = np.where(seen, tcp_flags[np.maximum(syn_at, 0)], 0).astype(np.int64)
    synack = np.where(seen, tcp_flags[np.maximum(synack_at, 0)], 0).astype(np.int64)
    seen &= (synack & TCP_ACK) != 0
    asked = (syn & (TCP_ECE | TCP_CWR)) == (TCP_ECE | TCP_CWR)
    answer = synack & (TCP_ECE | TCP_CWR | TCP_NS)
    state = np.where(
        asked & (answer == TCP_ECE),
        HANDSHAKE_CLASSIC,
        np.where(asked & ((synack & (TCP_CWR | TCP_NS)) != 0), HANDSHAKE_ACCURATE, HANDSHAKE_OFF),
    )
    state = np.where(seen, state, HANDSHAKE_UNKNOWN)
    out[pairs] = state
    out[pairs + 1] = state
    return out


def ecn_states(
    handshake: np.ndarray,
    ect_copies: np.ndarray,
    data_copies: np.ndarray,
    fills: np.ndarray,
    not_ect_fills: np.ndarray,
) -> np.ndarray:
    """Per direction: what its codepoints tell (ECN_*), from its connection's handshake
    (HANDSHAKE_*), its data packets that are ECT (or CE) among all, and its sequence-hole
    fills (copies that provably are resends) that are not-ECT among all."""
    n = len(handshake)
    state = np.full(n, ECN_ON, dtype=object)
    enough_fills = fills >= ECN_MIN_FILLS
    fills_not_ect = not_ect_fills >= ECN_MIN_NOT_ECT_FILL_SHARE * np.maximum(fills, 1)
    # the order of the rules: the last that applies stands
    state[~enough_fills & (handshake != HANDSHAKE_CLASSIC)] = ECN_UNPROVEN
    state[enough_fills & ~fills_not_ect] = ECN_RESENDS_ECT
    state[ect_copies < ECN_MIN_ECT_SHARE * data_copies] = ECN_MIXED
    state[(ect_copies == 0) & (handshake == HANDSHAKE_CLASSIC)] = ECN_BLEACHED
    state[(ect_copies == 0) & (handshake != HANDSHAKE_CLASSIC)] = ECN_OFF
    state[handshake == HANDSHAKE_ACCURATE] = ECN_ACCURATE
    state[handshake == HANDSHAKE_OFF] = ECN_OFF
    return state.astype(str)


def codepoint_counts(
    ecn: np.ndarray, payload: np.ndarray, slot: np.ndarray, is_fill: np.ndarray, n_slots: int
) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per slot: data packets that are ECT or CE, data packets, hole fills (`is_fill`, per
    packet), and hole fills that are not-ECT. One count over a key of slot, codepoint and fill
    (every other packet in one bin past the slots' own): no pass per figure."""
    key = slot * 4
    key += (ecn != ECN_NOT_ECT) * 2
    key += is_fill
    key[(slot < 0) | (payload == 0)] = n_slots * 4
    counts = np.bincount(key, minlength=n_slots * 4 + 1)[: n_slots * 4].reshape(n_slots, 2, 2)
    # counts[slot, ect, fill]
    return (
        counts[:, 1, :].sum(axis=1),
        counts.sum(axis=(1, 2)),
        counts[:, :, 1].sum(axis=1),
        counts[:, 0, 1],
    )


def _slot_data(
    packets: Mapping[str, np.ndarray], slot: np.ndarray, slots: np.ndarray, n_slots: int
) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The data packets of `slots`: their rows, each one's slot rank (its index in `slots`), its
    byte range laid in one sequence space (each slot's from its lowest byte, SLOT_SHIFT_BITS
    apart), and whether it is ECT (or CE)."""
    rank_of_slot = np.full(n_slots + 1, -1, dtype=np.int64)
    rank_of_slot[slots] = np.arange(len(slots))
    payload = np.asarray(packets["tcp_payload_len"])
    rows = np.flatnonzero((rank_of_slot[np.where(slot >= 0, slot, n_slots)] >= 0) & (payload > 0))
    rank = rank_of_slot[slot[rows]]
    syn = (np.asarray(packets["tcp_flags"])[rows] & TCP_SYN) != 0
    start = unwrapped_seq(np.asarray(packets["seq"])[rows], rank) + syn
    lowest = np.full(len(slots), np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(lowest, rank, start)
    start = start - lowest[rank] + (rank << SLOT_SHIFT_BITS)
    end = start + payload[rows]
    ect = np.asarray(packets["ip_ecn"])[rows] != ECN_NOT_ECT
    return rows, rank, start, end, ect


def originals_never_seen(
    packets: Mapping[str, np.ndarray], slot: np.ndarray, slots: np.ndarray, n_slots: int, mss: np.ndarray
) -> np.ndarray:
    """Per slot of `slots`: the segments of which the capture holds not-ECT copies only (their
    first transmission, ECT, never came past here: lost before the capture point). Counted per
    run of such bytes, in whole segments (`mss` per slot; a run's last piece may be short).
    A not-ECT copy of data an ECT copy also brought is a resend not needed here."""
    out = np.zeros(len(slots), dtype=np.int64)
    rows, _, start, end, ect = _slot_data(packets, slot, slots, n_slots)
    if len(rows) == 0:
        return out
    ect_runs = merged(start[ect], end[ect])
    resent_runs = merged(start[~ect], end[~ect])
    if len(resent_runs[0]) == 0:
        return out
    # cut the resent runs at every edge of an ECT run; keep the pieces no ECT copy covers
    edges = np.concatenate(ect_runs)
    edges = edges[points_covered(edges, resent_runs)]
    bounds = np.unique(np.concatenate((*resent_runs, edges)))
    piece_start, piece_end = bounds[:-1], bounds[1:]
    keep = points_covered(piece_start, resent_runs) & ~points_covered(piece_start, ect_runs)
    piece_start, piece_end = piece_start[keep], piece_end[keep]
    if len(piece_start) == 0:
        return out
    # adjacent pieces form one run of bytes lost before the capture point
    joins = np.empty(len(piece_start), dtype=bool)
    joins[0] = False
    np.equal(piece_start[1:], piece_end[:-1], out=joins[1:])
    run = np.cumsum(~joins) - 1
    run_bytes = np.bincount(run, weights=piece_end - piece_start).astype(np.int64)
    run_rank = (piece_start[~joins] >> SLOT_SHIFT_BITS).astype(np.int64)
    segment_bytes = np.maximum(np.asarray(mss, dtype=np.int64)[slots], 1)[run_rank]
    segments = (run_bytes + segment_bytes - 1) // segment_bytes
    out += np.bincount(run_rank, weights=segments, minlength=len(slots)).astype(np.int64)
    return out


def copies_by_codepoint(
    packets: Mapping[str, np.ndarray], slot: np.ndarray, slots: np.ndarray, n_slots: int
) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The data packets of `slots`: their rows, whether each is a first copy (ECT or CE), and
    whether each resend (not-ECT) repeats data an ECT copy brought here too (all of its bytes)."""
    rows, _, start, end, ect = _slot_data(packets, slot, slots, n_slots)
    if not ect.any():
        return rows, ect, np.zeros(len(rows), dtype=bool)
    return rows, ect, ~ect & covered(start, end, merged(start[ect], end[ect]))


def repairs_lost_below_resends(
    packets: Mapping[str, np.ndarray], slot: np.ndarray, slots: np.ndarray, n_slots: int, mss: np.ndarray
) -> Tuple[np.ndarray, np.ndarray]:
    """Hole segments whose resend before a later one was lost, by the codepoints: a segment
    missing here when a resend (not-ECT) of higher data came, from the one that opened its
    hole on. A sender resends the segments it holds lost in sequence order, and it holds a
    segment lost no later than a higher one sent after it, so on a path that keeps order the
    missing segment's resend went first and did not come. (A tail loss probe, which resends
    the highest segment alone, is the exception the hole fills' ages would show.) Returns
    the data rows of `slots` and, per row, the hole segments it was the first copy of that
    are such (each counts one resend lost)."""
    rows, rank, start, end, ect = _slot_data(packets, slot, slots, n_slots)
    none = np.zeros(len(rows), dtype=np.int64)
    if len(rows) == 0 or ect.all():
        return rows, none
    # slot by slot, in capture order (rows are in capture order already)
    order = np.argsort(rank, kind="stable")
    rows, rank, start, end, ect = rows[order], rank[order], start[order], end[order], ect[order]
    base = rank << SLOT_SHIFT_BITS
    segment_bytes = np.maximum(np.asarray(mss, dtype=np.int64)[slots], 1)[rank]
    first = base + (start - base) // segment_bytes
    last = base + (end - 1 - base) // segment_bytes
    # the highest segment seen so far (slot ranks keep the running maximum within each slot)
    highest = np.maximum.accumulate(last)
    # every segment's first copy: its position in this order
    count = last - first + 1
    position = np.repeat(np.arange(len(rows)), count)
    segment = np.repeat(first, count) + (np.arange(int(count.sum())) - np.repeat(np.cumsum(count) - count, count))
    segment, first_at = np.unique(segment, return_index=True)
    first_at = position[first_at]
    # where its hole opened: the first copy of anything above it
    opened_at = np.searchsorted(highest, segment, side="right")
    hole = opened_at < first_at
    segment, first_at, opened_at = segment[hole], first_at[hole], opened_at[hole]
    if len(segment) == 0:
        return rows, none
    # the highest first segment of a resend that came while it was missing
    resend_first = np.where(ect, -1, first)
    bounds = np.empty(2 * len(segment), dtype=np.int64)
    bounds[0::2], bounds[1::2] = opened_at, first_at
    reach = np.maximum.reduceat(resend_first, bounds)[0::2]
    lost_again = reach > segment
    return rows, np.bincount(first_at[lost_again], minlength=len(rows)).astype(np.int64)
