"""Copies the receiver's tcpdump saw that its TCP never took, segment by segment.

The receiver's capture taps each frame before IP; its TCP may still lose the frame after that
(the socket's backlog, its queues, the per-CPU input queues between the tap and the socket)
without any counter the kernel keeps per namespace (`stack_drops`) moving. TCP tells by what it
answers: a copy of bytes it already holds is answered with a D-SACK block (RFC 2883; Linux
sends one for every duplicate it processes, in order or out of order). So a later copy of a
segment the capture had already seen, which no D-SACK block of the receiver ever covers, found
the receiver without its earlier copy: that copy was lost inside the receiver, after the
capture point, and the sender had to resend it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Dict, Optional, Sequence, Tuple

import numpy as np

from .realhost_retransmissions import SEQ_SPACE, HALF_SEQ_SPACE, sender_data_rows, unwrap

Ranges = Tuple[np.ndarray, np.ndarray]  # starts, ends (unwrapped, int64)


def segment_starts(lo: np.ndarray, hi: np.ndarray, mss: int) -> Ranges:
    """Each copy [lo, hi) cut into MSS segments (a GRO or TSO packet of k segments gives k)."""
    counts = np.maximum(1, -(-(hi - lo) // mss))
    first = np.repeat(lo, counts)
    offset = np.arange(int(counts.sum()), dtype=np.int64) - np.repeat(np.cumsum(counts) - counts, counts)
    starts = first + offset * mss
    return starts, np.minimum(starts + mss, np.repeat(hi, counts))


def later_copies(starts: np.ndarray, ends: np.ndarray) -> Ranges:
    """The segments (in capture order) whose start an earlier segment already had."""
    _, first = np.unique(starts, return_index=True)
    later = np.ones(len(starts), dtype=bool)
    later[first] = False
    return starts[later], ends[later]


def merged(starts: np.ndarray, ends: np.ndarray) -> Ranges:
    """The union of ranges [starts, ends) as sorted, disjoint ranges."""
    if len(starts) == 0:
        return starts, ends
    order = np.argsort(starts, kind="stable")
    s, e = starts[order], ends[order]
    reach = np.maximum.accumulate(e)
    new = np.ones(len(s), dtype=bool)
    new[1:] = s[1:] > reach[:-1]
    group_starts = np.flatnonzero(new)
    return s[group_starts], np.maximum.reduceat(e, group_starts)


def covered(starts: np.ndarray, ends: np.ndarray, union: Ranges) -> np.ndarray:
    """Whether each [start, end) lies inside one range of `union` (sorted, disjoint)."""
    union_starts, union_ends = union
    where = np.searchsorted(union_starts, starts, side="right") - 1
    inside = where >= 0
    inside[inside] = ends[inside] <= union_ends[where[inside]]
    return inside


def signed_offset(values: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """`values - reference` in sequence space, as signed 64-bit."""
    delta = (values.astype(np.int64) - reference.astype(np.int64)) % SEQ_SPACE
    return np.where(delta >= HALF_SEQ_SPACE, delta - SEQ_SPACE, delta)


def dsack_blocks(
    ack: np.ndarray, left: np.ndarray, right: np.ndarray, count: np.ndarray, ack_unwrapped: np.ndarray
) -> Ranges:
    """The D-SACK blocks of a receiver's ACKs (unwrapped like `ack_unwrapped`): a first SACK
    block below the cumulative ACK, or inside the second block (RFC 2883 section 4)."""
    has = count >= 1
    left0 = ack_unwrapped + signed_offset(left[:, 0], ack)
    right0 = ack_unwrapped + signed_offset(right[:, 0], ack)
    left1 = ack_unwrapped + signed_offset(left[:, 1], ack)
    right1 = ack_unwrapped + signed_offset(right[:, 1], ack)
    below = right0 <= ack_unwrapped
    inside_second = (count >= 2) & (left0 >= left1) & (right0 <= right1)
    is_dsack = has & (below | inside_second)
    return left0[is_dsack], right0[is_dsack]


def resends_not_dsacked(packets, sender_address: str, client_ports: Sequence[int], mss: int) -> Dict[int, int]:
    """Per client port, the segments of later copies no D-SACK of the receiver covered."""
    rows = sender_data_rows(packets, sender_address, client_ports)
    sport, dport = np.asarray(packets["sport"]), np.asarray(packets["dport"])
    sack_count = np.asarray(packets["sack_count"])
    seq_all, ack_all = np.asarray(packets["seq"]).astype(np.int64), np.asarray(packets["ack"]).astype(np.int64)
    lengths = np.asarray(packets["tcp_payload_len"]).astype(np.int64)
    out: Dict[int, int] = {}
    for port in client_ports:
        data = np.flatnonzero(rows & (sport == port))
        if len(data) == 0:
            continue
        base = int(seq_all[data[0]])
        lo = unwrap(seq_all[data], base)
        starts, ends = later_copies(*segment_starts(lo, lo + lengths[data], mss))
        answers = np.flatnonzero((dport == port) & ~rows & (sack_count > 0))
        ack = ack_all[answers]
        blocks = dsack_blocks(
            ack,
            np.asarray(packets["sack_left"])[answers].astype(np.int64),
            np.asarray(packets["sack_right"])[answers].astype(np.int64),
            sack_count[answers],
            signed_offset(ack, np.full(len(ack), base)),
        )
        out[int(port)] = int(np.count_nonzero(~covered(starts, ends, merged(*blocks))))
    return out


def receiver_resends_not_dsacked(
    pcap: Path, sender_address: str, client_ports: Sequence[int], mss: int
) -> Optional[int]:
    """`resends_not_dsacked` summed over the connections of the receiver's capture `pcap`."""
    from .. import read

    return sum(resends_not_dsacked(read(pcap).packets, sender_address, client_ports, mss).values())
