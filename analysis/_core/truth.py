"""Truth-seeking TCP numbers per flow direction (docs/metrics.md section 2).

`analyze_directions(packets, flows)` runs the C pass `spline_analysis._truth`
twice: once to gather vantage evidence (handshake timing, TTLs, holes), once
to classify every data segment with the vantage known. Everything else here
is vectorised numpy over the per-packet and per-direction arrays it returns.

A "slot" is one flow direction: stream * 2 + direction.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Dict, List, Mapping, Optional, Tuple

import numpy as np

from .. import _truth
from .columns import LINKTYPE_LINUX_SLL, LINKTYPE_LINUX_SLL2, TCP_ACK, TCP_FIN, TCP_RST, TCP_SYN
from . import ecn as ecn_evidence
from .integrity import REORDERING_PATH_MIN_SEGMENTS
from .copies import ForwardedCopies, find_forwarded_copies, find_interface_copies, forwarding_slots, unwrapped_seq
from .rtt import rtt_stats

# Per-packet segment kinds (mirror of the C enum).
KIND_NONE = 0
KIND_ORIGINAL = 1
KIND_RETRANS_FAST = 2
KIND_RETRANS_RTO = 3
KIND_RETRANS_TLP = 4
KIND_RETRANS_OTHER = 5
KIND_SPURIOUS = 6
KIND_REORDERED = 7
KIND_WINDOW_PROBE = 8
KIND_NAMES = (
    "none",
    "original",
    "retransmission_fast",
    "retransmission_rto",
    "retransmission_tlp",
    "retransmission_other",
    "spurious",
    "reordered",
    "window_probe",
)
RETRANSMISSION_KINDS = (KIND_RETRANS_FAST, KIND_RETRANS_RTO, KIND_RETRANS_TLP, KIND_RETRANS_OTHER, KIND_SPURIOUS)
NEEDED_KINDS = (KIND_RETRANS_FAST, KIND_RETRANS_RTO, KIND_RETRANS_TLP, KIND_RETRANS_OTHER)

# Per-slot statistics from the C pass, in its order.
STAT_FIELDS = (
    "packets",
    "data_packets",
    "data_segments",
    "payload_bytes",
    "unique_bytes",
    "retransmissions",
    "retrans_fast",
    "retrans_rto",
    "retrans_tlp",
    "retrans_other",
    "retransmitted_bytes",
    "spurious_retransmissions",
    "reordered_segments",
    "hole_fill_retransmissions",
    "capture_gaps",
    "capture_gap_bytes",
    "dup_acks",
    "sack_blocks",
    "dsack_blocks",
    "zero_window_events",
    "window_probes",
    "first_data_ts_ns",
    "last_data_ts_ns",
    "forward_jumps",
    "syn_ts_ns",
    "synack_ts_ns",
    "first_ack_ts_ns",
    "ttl_min",
    "ttl_max",
    "ip_id_steps_of_one",
    "ip_id_steps",
    "unfilled_hole_bytes",
    "max_payload_bytes",
    "super_segment_frames",
    "downstream_retransmissions",
    "ip_id_forward_steps",
    "ip_id_zero",
    "lost_repairs",
    "acked_bytes",
    "spurious_without_dsack",
    "discard_dupacks",
    "lost_inferred_milli",
    "lost_inferred_sd_milli",
    "idle_ns",
    "first_acked_ts_ns",
    "last_acked_ts_ns",
    "paws_discards",
    "path_min_rtt_ns",
    "lost_unrepaired",
    "unreported_at_end",
    "unreported_lost_milli",
    "unreported_lost_sd_milli",
    "tail_copies_at_close",
    "tail_lost_at_close",
    "tail_needed_since_close",
    "unreported_at_risk",
)
STAT_INDEX = {name: i for i, name in enumerate(STAT_FIELDS)}

MODE_SENDER = 0  # classification as seen next to the sender
MODE_RECEIVER = 1  # classification with holes (at the receiver)
MODE_IN_PATH = 2  # holes for loss upstream, repeats of data that passed for loss downstream
# IP-ID gap counting uses a bitmap of each slot's ID span while the spans total at most
# this many IDs per packet (plus a floor); sparser IDs fall back to sorting.
ID_BITMAP_MAX_FACTOR = 8
ID_BITMAP_MIN_BITS = 1 << 20
# A connection's use of SACK, from its handshake (truth_core.h enum truth_sack)
SACK_OFF, SACK_ON, SACK_UNKNOWN = 0, 1, 2
MODE_EVIDENCE = -1  # first pass: vantage evidence only (TTLs, handshake, IP IDs, jumps, repeats)

INITIAL_TTLS = (64, 128, 255)  # TTLs a locally sent packet carries (Linux/BSD, Windows, others)
# A direction whose consecutive IP IDs step by exactly one this often numbers packets per flow.
IP_ID_PER_PACKET_FRACTION = 0.8
# IP-ID policies: a shared counter still rises (other flows take IDs in between) at least
# this often; zero IDs on at least this share of data packets; fewer steps tell nothing.
IP_ID_SHARED_FORWARD_FRACTION = 0.9
IP_ID_ZERO_FRACTION = 0.9
IP_ID_MIN_STEPS = 16
# IP-ID gaps stand for lost data only in directions where at least this share of packets is data.
IP_ID_DATA_FRACTION = 0.5
# The IP-ID loss count contradicts the holes (a floor of the loss) when it is below this share
# of them by more than the slack; above this multiple of them (more than repairs lost again
# explain) it must show that its gaps are losses (IP_ID_EVENT_WINDOW_PACKETS).
IP_ID_BELOW_HOLES_FRACTION = 0.98
IP_ID_ABOVE_HOLES_FACTOR = 1.5
IP_ID_SLACK_SEGMENTS = 5
# A per-connection count above the holes stands where its gaps fall beside loss events the
# sequence numbers show (a segment out of sequence order, or delivery resuming after a
# silence: IP_ID_STALL_*) within this many packets of the direction. A counter shared with
# other flows skips their IDs wherever they fall: it is contradicted when the stretches with
# no event hold more than this share of the gap IDs their share of the packets would.
IP_ID_EVENT_WINDOW_PACKETS = 8
IP_ID_QUIET_SHARE_FRACTION = 0.15
# A silence in delivery that shows the sender's recovery timers at work: at least Linux's
# shortest loss probe (two round trips of the empty path, the handshake's, plus 2 ms) and
# at least this share of the connection's median round trip as seen here (its recent-ACK
# timer waits a round trip; a window-limited flow delivers within each round trip).
IP_ID_STALL_ROUND_TRIPS = 2
IP_ID_STALL_MIN_NS = 2_000_000
IP_ID_STALL_MEDIAN_RTT_FRACTION = 0.5
# Handshake legs closer than this ratio mean the capture sat between the endpoints.
IN_PATH_HANDSHAKE_RATIO = 0.25
# Timestamps-option bytes in each segment, subtracted from the announced MSS.
TIMESTAMPS_OPTION_BYTES = 12
# Without a handshake the segment size is read from the payload lengths: the most frequent
# length (or its smallest frequent divisor: GRO/TSO frames are whole multiples of it) of at
# least the smallest MSS in use (IPv4's default, 536 bytes), seen on at least this share of
# the direction's frames, and of which most longer frames are exact multiples.
MIN_SEGMENT_BYTES = 536
MSS_CANDIDATE_SHARE = 0.01
MSS_MULTIPLE_SHARE = 0.5
MSS_MAX_DIVISOR = 64
# A sender uses the smaller of the MSS its peer announced and its own MTU's (a VPN or PPPoE
# uplink, a 1280-byte IPv6 tunnel): a slot with at least this many segment-sized frames none of
# which is the announced size has its segment size read from its payloads instead, where that
# shows one at least MSS_BELOW_ANNOUNCED_MIN of the announced (smaller, it is an application's
# message size, not a segment size).
MSS_CHECK_MIN_FRAMES = 100
MSS_BELOW_ANNOUNCED_MIN = 0.75
# ... "none" up to this share of those frames: a sender that learns a smaller path MTU from ICMP
# (a tunnel in the path) has sent its first flight at the announced size, and a repair cut in
# two for the new size leaves pieces a receiver's GRO joins again to the announced size.
MSS_ANNOUNCED_MAX_SHARE = 0.01
# ... and where hardly a frame has any one size below it, the segment size is one that all its
# frames but a flight's odd ends (this share of them) are whole multiples of.
MSS_DIVIDES_SHARE = 0.95


@dataclass
class Directions:
    """Per flow direction that carries data (rows), plus per-packet arrays.

    `table` maps field name -> numpy array with one entry per row. Per-packet
    arrays have one entry per packet of the input table: `segment_kind` (KIND_*),
    `rtt_sample_us` (NaN where the packet gives no sample), `rtt_slot` (slot the
    sample belongs to, -1), `bytes_in_flight` (-1 unknown), `packet_slot`
    (stream * 2 + direction, -1 non-TCP), `row_of_slot` (slot -> row, -1).
    """

    table: Dict[str, np.ndarray]
    rtt_ms: List[Optional[Dict[str, float]]]
    bytes_in_flight_stats: List[Optional[Dict[str, float]]]
    segment_kind: np.ndarray
    rtt_sample_us: np.ndarray
    rtt_slot: np.ndarray
    bytes_in_flight: np.ndarray
    packet_slot: np.ndarray
    row_of_slot: np.ndarray
    capture_drops: Optional[Dict[str, Any]] = None
    extra: Dict[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.table["stream"])

    @property
    def is_retransmission(self) -> np.ndarray:
        """Per packet: a retransmission of any kind (spurious ones included)."""
        return np.isin(self.segment_kind, RETRANSMISSION_KINDS)

    def to_records(self) -> List[Dict[str, Any]]:
        """One plain dict per row: the truth-seeking keys of the report's `directions`
        (schema.DIRECTION_TABLE_KEYS), with `rtt_ms` and `bytes_in_flight`."""
        from ..report import table_records

        return table_records(self)

    def to_dataframe(self):
        import pandas as pd

        records = self.to_records()
        for record in records:
            for key in ("rtt_ms", "bytes_in_flight"):
                stats = record.pop(key, None) or {}
                for name, value in stats.items():
                    record[f"{key}_{name}"] = value
        return pd.DataFrame.from_records(records)


def _slot_first_packet_addresses(packets: Mapping[str, np.ndarray], slot: np.ndarray, n_slots: int) -> np.ndarray:
    """Index of the first packet of each slot (-1 when the slot has none)."""
    none = len(slot)
    first = np.full(n_slots, none, dtype=np.int64)
    valid = np.flatnonzero(slot >= 0)
    if len(valid):
        # a minimum per slot, not np.unique: no sort of every packet (3 ms instead of 30 per 1M)
        np.minimum.at(first, slot[valid], valid)
    first[first == none] = -1
    return first


def _split_by_row(values: np.ndarray, owner: np.ndarray, n_rows: int) -> List[np.ndarray]:
    """`values` grouped by their owning row (0..n_rows-1; -1 = none), arrival order kept."""
    keep = owner >= 0
    order = _group_order(owner[keep])
    grouped = values[keep][order]
    bounds = np.searchsorted(owner[keep][order], np.arange(n_rows + 1))
    return [grouped[bounds[r] : bounds[r + 1]] for r in range(n_rows)]


def _group_order(owner: np.ndarray) -> np.ndarray:
    """Stable order that groups equal owners (small non-negative ints); numpy's stable
    sort is a linear radix sort for 16-bit keys, so narrow the key when it fits."""
    if len(owner) and owner.max() < np.iinfo(np.int16).max:
        owner = owner.astype(np.int16)
    return np.argsort(owner, kind="stable")


def _mss_from_payloads(payload: np.ndarray, slot: np.ndarray, n_slots: int) -> np.ndarray:
    """Per slot: the segment size its payload lengths show (0 where they do not show one;
    MIN_SEGMENT_BYTES and the shares above). GRO at a receiver and TSO at a sender make
    frames of several segments, so the largest payload is no segment size."""
    mss = np.zeros(n_slots, dtype=np.int64)
    used = (slot >= 0) & (payload >= MIN_SEGMENT_BYTES)
    if not used.any():
        return mss
    keys, counts = np.unique((slot[used].astype(np.int64) << 32) | payload[used].astype(np.int64), return_counts=True)
    key_slot, key_len = keys >> 32, keys & 0xFFFFFFFF
    frames = np.bincount(key_slot, weights=counts, minlength=n_slots)
    common = counts >= np.maximum(2, MSS_CANDIDATE_SHARE * frames[key_slot])
    # the most frequent length of each slot
    order = np.lexsort((-counts, key_slot))
    first = order[np.r_[True, key_slot[order][1:] != key_slot[order][:-1]]]
    mode_slot, mode_len = key_slot[first], key_len[first]
    best = mode_len.copy()
    common_keys = keys[common]
    for divisor in range(2, MSS_MAX_DIVISOR + 1):
        candidate = mode_len // divisor
        fits = (mode_len % divisor == 0) & (candidate >= MIN_SEGMENT_BYTES)
        fits &= np.isin((mode_slot << 32) | candidate, common_keys)
        best = np.where(fits, np.minimum(best, candidate), best)
    # most frames longer than it must be whole multiples of it
    candidate_of = np.zeros(n_slots, dtype=np.int64)
    candidate_of[mode_slot] = best
    c = candidate_of[key_slot]
    longer = key_len > c
    longer_frames = np.bincount(key_slot, weights=counts * longer, minlength=n_slots)
    multiple_frames = np.bincount(
        key_slot, weights=counts * (longer & (key_len % np.maximum(c, 1) == 0)), minlength=n_slots
    )
    holds = multiple_frames >= MSS_MULTIPLE_SHARE * longer_frames
    mss[holds] = candidate_of[holds]
    return mss


def _mss_per_slot(
    packets: Mapping[str, np.ndarray], slot: np.ndarray, n_slots: int, first_syn_index: np.ndarray
) -> np.ndarray:
    """Segment size each slot sends with: the peer's announced MSS less the timestamps
    option when used, else the one its payload lengths show, else the largest payload
    seen (0 unknown)."""
    mss = np.zeros(n_slots, dtype=np.int64)
    payload = np.asarray(packets["tcp_payload_len"])
    valid = slot >= 0
    if valid.any():
        np.maximum.at(mss, slot[valid], payload[valid].astype(np.int64))
    largest = mss.copy()
    announced = np.zeros(n_slots, dtype=np.int64)
    has_syn = first_syn_index >= 0
    announced[has_syn] = packets["opt_mss"][first_syn_index[has_syn]]
    uses_ts = np.zeros(n_slots, dtype=bool)
    uses_ts[has_syn] = packets["opt_has_ts"][first_syn_index[has_syn]]
    peer = np.arange(n_slots) ^ 1
    peer_mss = announced[peer] - np.where(uses_ts[peer] & uses_ts, TIMESTAMPS_OPTION_BYTES, 0)
    use_peer = (announced[peer] > 0) & (peer_mss > 0)
    mss[use_peer] = peer_mss[use_peer]
    # the payloads of slots without an announced MSS (most captures have none)
    unknown = np.append(~use_peer, False)
    rows = np.flatnonzero(unknown[np.where(valid, slot, n_slots)])
    if len(rows):
        shown = _mss_from_payloads(payload[rows], slot[rows], n_slots)
        mss = np.where(shown > 0, shown, mss)
    below = _segments_below_announced(payload, slot, n_slots, np.where(use_peer, mss, 0), largest)
    return np.where(below > 0, below, mss)


def _sack_negotiated(packets: Mapping[str, np.ndarray], first_syn_index: np.ndarray) -> np.ndarray:
    """Per slot: SACK_ON when both of its connection's SYNs carried SACK-permitted, SACK_OFF when
    one did not, SACK_UNKNOWN when either SYN is not in the capture."""
    n_slots = len(first_syn_index)
    seen = first_syn_index >= 0
    permitted = np.zeros(n_slots, dtype=bool)
    permitted[seen] = np.asarray(packets["opt_sack_permitted"])[first_syn_index[seen]]
    peer = np.arange(n_slots) ^ 1
    both_seen, both_permitted = seen & seen[peer], permitted & permitted[peer]
    return np.where(both_seen, np.where(both_permitted, SACK_ON, SACK_OFF), SACK_UNKNOWN).astype(np.uint8)


def _segments_below_announced(
    payload: np.ndarray, slot: np.ndarray, n_slots: int, announced: np.ndarray, largest: np.ndarray
) -> np.ndarray:
    """Per slot with an announced segment size (`announced` > 0): the smaller one its payloads
    show where hardly any of its many segment-sized frames has the announced size (at most
    MSS_ANNOUNCED_MAX_SHARE of them; 0 elsewhere).
    Only slots whose largest payload is the announced size (a first flight sent before the path
    MTU was learnt, no super-segments) or no whole number of announced segments can be such (a
    frame of k segments of a smaller size is one only past 64 KiB), so super-segment captures
    of the announced size skip the rows."""
    below = np.zeros(n_slots, dtype=np.int64)
    maybe = (announced > 0) & (largest >= MIN_SEGMENT_BYTES)
    maybe &= (largest % np.maximum(announced, 1) != 0) | (largest == announced)
    if not maybe.any():
        return below
    # a row's slot's announced size (the extra last entry: rows of no slot)
    where = np.where(slot >= 0, slot, n_slots)
    own = np.append(np.where(maybe, announced, 0), 0).take(where)
    at_announced = payload == own
    segment_sized = payload >= MIN_SEGMENT_BYTES
    # one count per slot, segment-sized or not, of the announced size or not (one pass over the rows)
    counts = np.bincount(
        (where * 2 + at_announced) + segment_sized * (2 * n_slots + 2), minlength=4 * n_slots + 4
    ).reshape(2, n_slots + 1, 2)[:, :n_slots]
    full = counts[:, :, 1].sum(axis=0)
    sized = counts[1].sum(axis=1)
    maybe &= full <= MSS_ANNOUNCED_MAX_SHARE * sized
    if not maybe.any():
        return below
    # the frames of the announced size (a first flight) are not of the size the payloads show
    rows = np.flatnonzero(np.append(maybe, False).take(where) & segment_sized & ~at_announced)
    suspect = np.bincount(slot[rows], minlength=n_slots) >= MSS_CHECK_MIN_FRAMES
    if not suspect.any():
        return below
    rows = rows[suspect[slot[rows]]]
    shown = _mss_from_payloads(payload[rows], slot[rows], n_slots)
    plausible = (shown < announced) & (shown >= MSS_BELOW_ANNOUNCED_MIN * announced)
    # a TSO sender sends few frames of one segment: the size most of its frames are multiples of
    for s in np.flatnonzero(suspect & ~plausible):
        shown[s] = _size_most_frames_divide_by(payload[rows[slot[rows] == s]], int(announced[s]))
        plausible[s] = shown[s] > 0  # in that range, or none
    keep = suspect & plausible
    below[keep] = shown[keep]
    return below


def _size_most_frames_divide_by(lengths: np.ndarray, announced: int) -> int:
    """Of the frame lengths below `announced` and at least MSS_BELOW_ANNOUNCED_MIN of it, the
    most frequent of which at least MSS_DIVIDES_SHARE of the frames `lengths` are whole multiples
    (0: none). A sender with TSO whose MTU is below its peer's sends a segment on its own only now
    and then (a repair, a flight's end): 20 of 2,355 frames in one flow, too few for the most
    frequent lengths (MSS_CANDIDATE_SHARE), while every frame is a multiple of it. Small
    application messages coalesced in pairs are no such size: only the pairs divide by it."""
    values, counts = np.unique(lengths, return_counts=True)
    near = (values < announced) & (values >= MSS_BELOW_ANNOUNCED_MIN * announced)
    for size in values[near][np.argsort(-counts[near], kind="stable")]:
        if np.mean(lengths % size == 0) >= MSS_DIVIDES_SHARE:
            return int(size)
    return 0


def _run_pass(
    packets: Mapping[str, np.ndarray],
    slot: np.ndarray,
    n_slots: int,
    mode: np.ndarray,
    mss: np.ndarray,
    id_per_packet: np.ndarray,
    sack_negotiated: np.ndarray,
):
    c = np.ascontiguousarray
    n = len(slot)
    out = _truth.analyze(
        n_slots,
        c(slot, np.int32),
        c(packets["ts_ns"], np.int64),
        c(packets["seq"], np.uint32),
        c(packets["ack"], np.uint32),
        c(packets["tcp_flags"], np.uint16),
        c(packets["tcp_payload_len"], np.uint32),
        c(packets["window"], np.uint16),
        c(packets["ip_id"], np.uint32),
        c(packets["decode_flags"], np.uint8),
        c(packets["ttl"], np.uint8),
        c(packets["opt_has_ts"], np.uint8),
        c(packets["opt_tsval"], np.uint32),
        c(packets["opt_tsecr"], np.uint32),
        c(packets["sack_count"], np.uint8),
        c(packets["sack_left"], np.uint32),
        c(packets["sack_right"], np.uint32),
        c(mode, np.int8),
        c(mss, np.int64),
        c(id_per_packet, np.uint8),
        c(sack_negotiated, np.uint8),
    )
    kind = np.frombuffer(out[0], dtype=np.uint8)
    rtt_us = np.frombuffer(out[1], dtype=np.float64)
    rtt_slot = np.frombuffer(out[2], dtype=np.int32)
    in_flight = np.frombuffer(out[3], dtype=np.int64)
    id64 = np.frombuffer(out[4], dtype=np.int64)
    hole_age_ns = np.frombuffer(out[5], dtype=np.int64)
    stats = np.frombuffer(out[6], dtype=np.int64).reshape(n_slots, len(STAT_FIELDS))
    lost_repairs_at = np.frombuffer(out[7], dtype=np.int32)
    assert len(kind) == n
    return kind, rtt_us, rtt_slot, in_flight, id64, hole_age_ns, stats, lost_repairs_at


def _vantage(stats: np.ndarray, n_slots: int) -> np.ndarray:
    """Vantage of each slot as its data sender's side: 'sender', 'receiver',
    'in-path' or 'unknown' (docs/metrics.md: handshake timing, TTLs, holes)."""
    col = STAT_INDEX
    ttl_min, ttl_max = stats[:, col["ttl_min"]], stats[:, col["ttl_max"]]
    local = np.isin(ttl_max, INITIAL_TTLS) & (ttl_min == ttl_max)
    vantage = np.full(n_slots, "unknown", dtype=object)
    for k in range(n_slots):
        p = k ^ 1
        if p >= n_slots or stats[k, col["packets"]] == 0:
            continue
        src_local = bool(local[k])
        dst_local = bool(local[p]) and stats[p, col["packets"]] > 0
        # handshake: endpoint a (slot even) sent the SYN
        a, b = k & ~1, (k & ~1) | 1
        syn, synack, ack = stats[a, col["syn_ts_ns"]], stats[b, col["synack_ts_ns"]], stats[a, col["first_ack_ts_ns"]]
        handshake = None
        if syn >= 0 and synack >= syn and ack >= synack:
            leg_client, leg_server = synack - syn, ack - synack  # RTT seen at the client / server leg
            big = max(leg_client, leg_server)
            if big > 0 and min(leg_client, leg_server) / big > IN_PATH_HANDSHAKE_RATIO:
                handshake = "in-path"
            else:
                local_end = a if leg_client > leg_server else b
                handshake = "sender" if local_end == k else "receiver"
        if src_local and not dst_local:
            vantage[k] = "sender"
        elif dst_local and not src_local:
            vantage[k] = "receiver"
        elif handshake is not None:
            vantage[k] = handshake
        elif src_local and dst_local:
            vantage[k] = "sender"  # both ends on this host (loopback)
        elif stats[k, col["forward_jumps"]] > 0:
            vantage[k] = "receiver"  # holes appear only downstream of loss
        elif stats[k, col["retransmissions"]] > 0:
            vantage[k] = "sender"  # repeats without holes: the sender's side
    return vantage


def _ids_per_packet(packets: Mapping[str, np.ndarray], slot: np.ndarray, mss: np.ndarray) -> np.ndarray:
    """IP IDs each packet stands for: a super-segment of k segments (TSO/GSO at the sender,
    GRO/LRO at the receiver) carries the first of k consecutive IDs; other packets one."""
    payload = np.asarray(packets["tcp_payload_len"]).astype(np.int64)
    slot_mss = np.where(slot >= 0, mss[np.maximum(slot, 0)] if len(mss) else 0, 0)
    count = np.ones(len(slot), dtype=np.int64)
    big = (slot_mss > 0) & (payload > slot_mss)
    count[big] = (payload[big] + slot_mss[big] - 1) // slot_mss[big]
    return count


def _ip_id_gaps(
    id64: np.ndarray, id_count: Optional[np.ndarray], slot: np.ndarray, slots_wanted: np.ndarray, n_slots: int
) -> np.ndarray:
    """Per slot: IDs missing between the lowest and highest seen (packets lost
    before the capture point when the sender numbers its packets one by one).
    `id_count`: IDs each packet stands for (`_ids_per_packet`; None: one each)."""
    gaps = np.zeros(n_slots, dtype=np.int64)
    wanted = np.zeros(n_slots + 1, dtype=bool)
    wanted[slots_wanted] = True
    rows = np.flatnonzero((id64 >= 0) & wanted[np.where(slot >= 0, slot, n_slots)])
    if len(rows) == 0:
        return gaps
    extra = id_count[rows] - 1 if id_count is not None else None
    if extra is not None and extra.any():
        # the further IDs of each super-segment, as if each had been a packet of its own
        many = np.flatnonzero(extra > 0)
        repeat = extra[many]
        offsets = np.arange(int(repeat.sum())) - np.repeat(np.cumsum(repeat) - repeat, repeat) + 1
        more_rows = np.repeat(rows[many], repeat)
        rows = np.concatenate([rows, more_rows])
        ids_all = np.concatenate([id64[rows[: len(rows) - len(more_rows)]], id64[more_rows] + offsets])
    else:
        ids_all = id64[rows]
    row_slot = slot[rows].astype(np.int64)
    ids = ids_all
    lowest = np.full(n_slots, np.iinfo(np.int64).max, dtype=np.int64)
    highest = np.full(n_slots, -1, dtype=np.int64)
    np.minimum.at(lowest, row_slot, ids)
    np.maximum.at(highest, row_slot, ids)
    has = highest >= 0
    span = np.where(has, highest - lowest + 1, 0)
    total_span = int(span.sum())
    if total_span <= ID_BITMAP_MAX_FACTOR * len(rows) + ID_BITMAP_MIN_BITS:
        # one flag per possible ID of each slot: distinct IDs without sorting every packet
        base = np.concatenate(([0], np.cumsum(span)[:-1]))
        seen = np.zeros(total_span, dtype=bool)
        seen[base[row_slot] + ids - lowest[row_slot]] = True
        distinct = np.add.reduceat(seen, base[has], dtype=np.int64) if total_span else np.zeros(0, np.int64)
        gaps[has] = span[has] - distinct
        return gaps
    id_bits = 44
    key = np.sort(row_slot * (1 << id_bits) + ids)
    distinct_mask = np.empty(len(key), dtype=bool)
    distinct_mask[0] = True
    np.not_equal(key[1:], key[:-1], out=distinct_mask[1:])
    distinct = np.bincount(key[distinct_mask] >> id_bits, minlength=n_slots)
    gaps[has] = span[has] - distinct[has]
    return gaps


def _ids_per_packet_reordered(
    packets: Mapping[str, np.ndarray],
    slot: np.ndarray,
    n_slots: int,
    mss: np.ndarray,
    id64: np.ndarray,
    stats1: np.ndarray,
    id_per_packet: np.ndarray,
) -> np.ndarray:
    """Per slot: a sender that numbers packets one by one, seen after reordering. Reordering
    breaks the steps of one in capture order, but not the count: the IDs present cover the
    span between the lowest and highest as densely as consecutive steps would (the same
    IP_ID_PER_PACKET_FRACTION; the rest are packets lost before the capture point)."""
    col = STAT_INDEX
    steps = stats1[:, col["ip_id_steps"]]
    candidates = ~id_per_packet & (steps >= IP_ID_MIN_STEPS) & (stats1[:, col["ip_id_forward_steps"]] < steps)
    if not candidates.any():
        return np.zeros(n_slots, dtype=bool)
    payload = np.asarray(packets["tcp_payload_len"])
    slot_mss = np.where(slot >= 0, mss[np.maximum(slot, 0)] if len(mss) else 0, 0)
    id_count = _ids_per_packet(packets, slot, mss) if ((slot_mss > 0) & (payload > slot_mss)).any() else None
    slots = np.flatnonzero(candidates)
    gaps = _ip_id_gaps(id64, id_count, slot, slots, n_slots)
    valid = (id64 >= 0) & (slot >= 0)
    lowest = np.full(n_slots, np.iinfo(np.int64).max, dtype=np.int64)
    highest = np.full(n_slots, -1, dtype=np.int64)
    np.minimum.at(lowest, slot[valid], id64[valid])
    np.maximum.at(highest, slot[valid], id64[valid])
    span = np.maximum(highest - lowest + 1, 0)
    # distinct IDs (the span less its gaps) fill the span; repeated IDs (zero) do not count
    distinct = span - gaps
    return candidates & (span >= IP_ID_MIN_STEPS) & (distinct >= IP_ID_PER_PACKET_FRACTION * np.maximum(span, 1))


# Frames of several capture handles (one pcapng interface block each) written to one file this
# far out of time order are read in time order: dumpcap on two interfaces writes each one's
# frames in blocks, up to 96 ms behind the other's (s29-hx2).
INTERLEAVED_OUT_OF_ORDER_NS = 1_000_000
LINKTYPES_LINUX_COOKED = (LINKTYPE_LINUX_SLL, LINKTYPE_LINUX_SLL2)


def interleaved_time_order(packets: Mapping[str, np.ndarray]) -> Optional[np.ndarray]:
    """The packets' time order (stable) where the file interleaves several capture handles out
    of time order (pcapng interfaces, not one `-i any` handle: Linux cooked frames name the
    interface they saw, one ring wrote them); None where file order is to be kept."""
    interface = np.asarray(packets["interface"])
    if len(interface) < 2 or np.all(interface == interface[0]):
        return None
    if np.isin(np.asarray(packets["link_type"]), LINKTYPES_LINUX_COOKED).any():
        return None
    ts = np.asarray(packets["ts_ns"]).astype(np.int64)
    if not (np.diff(ts) < -INTERLEAVED_OUT_OF_ORDER_NS).any():
        return None
    return np.argsort(ts, kind="stable")


@dataclass
class _FlowsInOrder:
    """`flows`' per-packet stream and direction, permuted with the packets."""

    stream: np.ndarray
    direction: np.ndarray


def analyze_directions(
    packets: Mapping[str, np.ndarray], flows: Any, *, capture_drops: Optional[Dict[str, Any]] = None
) -> Directions:
    """Truth-seeking numbers for every flow direction that carries data.

    `packets`: the packet table (columns.py); `flows`: an object with
    `.stream` (int32, -1 non-TCP) and `.direction` (uint8) per packet. A file whose capture
    handles wrote their frames out of time order (`interleaved_time_order`) is read in time
    order; the per-packet arrays come back in file order.
    """
    order = interleaved_time_order(packets)
    if order is None:
        return _analyze_directions_in_file_order(packets, flows, capture_drops=capture_drops)
    in_time = {name: np.asarray(column)[order] for name, column in packets.items()}
    flows_in_time = _FlowsInOrder(np.asarray(flows.stream)[order], np.asarray(flows.direction)[order])
    found = _analyze_directions_in_file_order(in_time, flows_in_time, capture_drops=capture_drops)
    back = np.empty_like(order)
    back[order] = np.arange(len(order))
    return replace(
        found,
        segment_kind=found.segment_kind[back],
        rtt_sample_us=found.rtt_sample_us[back],
        rtt_slot=found.rtt_slot[back],
        bytes_in_flight=found.bytes_in_flight[back],
        packet_slot=found.packet_slot[back],
    )


def _analyze_directions_in_file_order(
    packets: Mapping[str, np.ndarray], flows: Any, *, capture_drops: Optional[Dict[str, Any]] = None
) -> Directions:
    """analyze_directions over the packets in the order given."""
    stream = np.asarray(flows.stream, dtype=np.int32)
    n = len(stream)
    is_tcp = (stream >= 0) & (np.asarray(packets["ip_proto"]) == 6) & (np.asarray(packets["tcp_header_len"]) > 0)
    # int32 throughout: a slot fits, and int64 temporaries cost 4 ms per million packets
    slot = stream * 2
    slot += np.asarray(flows.direction)
    slot[~is_tcp] = -1
    n_streams = int(stream.max()) + 1 if n and stream.max() >= 0 else 0
    n_slots = n_streams * 2

    syn = is_tcp & ((np.asarray(packets["tcp_flags"]) & TCP_SYN) != 0)
    first_syn = _slot_first_packet_addresses(packets, np.where(syn, slot, -1), n_slots)
    mss = _mss_per_slot(packets, slot, n_slots, first_syn)

    # pass 1: evidence, sender-style everywhere
    evidence_only = np.full(n_slots, MODE_EVIDENCE, dtype=np.int8)
    # the evidence passes read TTLs, IP IDs and the handshake: whether SACK was negotiated they leave unknown
    sack_unread = np.full(n_slots, SACK_UNKNOWN, dtype=np.uint8)
    _, _, _, _, id64, _, stats1, _ = _run_pass(
        packets, slot, n_slots, evidence_only, mss, np.zeros(n_slots, np.uint8), sack_unread
    )
    col = STAT_INDEX
    # a forwarding host capturing on every interface: analyse what left it, count its drops
    copies = None
    candidates = forwarding_slots(stats1[:, col["ttl_min"]], stats1[:, col["ttl_max"]], stats1[:, col["packets"]])
    forwarded_through = np.zeros(n_slots, dtype=bool)
    # the capture's own counters say it missed packets: either copy of a forwarded packet may be gone
    capture_dropped = bool((capture_drops or {}).get("kernel") or (capture_drops or {}).get("interface"))
    if candidates.any():
        copies = find_forwarded_copies(
            packets, slot, n_slots, candidates, stats1[:, col["ttl_max"]], mss, capture_dropped
        )
        forwarded_through = copies.duplicate_frames > 0
    # the same packet on two interfaces with one TTL (bridges, bonds): set the copies aside
    same_ttl = find_interface_copies(packets, slot, n_slots, ~candidates & (stats1[:, col["packets"]] > 1))
    if same_ttl.hidden.any():
        copies = (
            same_ttl
            if copies is None
            else ForwardedCopies(
                copies.hidden | same_ttl.hidden,
                copies.duplicate_frames + same_ttl.duplicate_frames,
                copies.forwarded_drops,
                copies.forwarded_data_drops,
            )
        )
    if copies is not None:
        if copies.hidden.any():
            slot = np.where(copies.hidden, -1, slot).astype(np.int32)
            _, _, _, _, id64, _, stats1, _ = _run_pass(
                packets, slot, n_slots, evidence_only, mss, np.zeros(n_slots, np.uint8), sack_unread
            )
    steps = stats1[:, col["ip_id_steps"]]
    id_per_packet = (steps > 0) & (
        stats1[:, col["ip_id_steps_of_one"]] >= IP_ID_PER_PACKET_FRACTION * np.maximum(steps, 1)
    )
    id_per_packet |= _ids_per_packet_reordered(packets, slot, n_slots, mss, id64, stats1, id_per_packet)
    vantage = _vantage(stats1, n_slots)
    # what is left of a direction captured on both sides of a forwarding point is its far side:
    # never the sender's own (its near side was set aside), whatever the handshake's legs say
    # (read across two hosts' clocks where two captures were merged)
    vantage = np.where(forwarded_through & (vantage == "sender"), "in-path", vantage)
    mode = np.select([vantage == "receiver", vantage == "in-path"], [MODE_RECEIVER, MODE_IN_PATH], MODE_SENDER).astype(
        np.int8
    )

    # pass 2: classification with the vantage known
    sack = _sack_negotiated(packets, first_syn)
    kind, rtt_us, rtt_slot, in_flight, id64, hole_age_ns, stats, lost_repairs_at = _run_pass(
        packets, slot, n_slots, mode, mss, id_per_packet.astype(np.uint8), sack
    )

    data_slots = np.flatnonzero(stats[:, col["data_packets"]] > 0) if n_slots else np.zeros(0, int)
    # super-segments stand for several IDs; most captures have none and skip the work
    id_count = _ids_per_packet(packets, slot, mss) if stats[:, col["super_segment_frames"]].any() else None
    id_gaps = _ip_id_gaps(id64, id_count, slot, data_slots, n_slots)

    row_of_slot = np.full(n_slots, -1, dtype=np.int64)
    row_of_slot[data_slots] = np.arange(len(data_slots))
    table: Dict[str, np.ndarray] = {
        "stream": (data_slots // 2).astype(np.int64),
        "direction": (data_slots % 2).astype(np.int64),
        "slot": data_slots.astype(np.int64),
    }
    for name in STAT_FIELDS:
        table[name] = stats[data_slots, col[name]]
    table["mss"] = mss[data_slots]
    table["vantage"] = vantage[data_slots]
    table["ip_id_per_packet"] = id_per_packet[data_slots]
    table["ip_id_gaps"] = id_gaps[data_slots]
    zeros = np.zeros(len(data_slots), dtype=np.int64)
    table["duplicate_frames"] = copies.duplicate_frames[data_slots] if copies else zeros
    table["forwarded_drops"] = copies.forwarded_drops[data_slots] if copies else zeros
    forwarded_data_drops = copies.forwarded_data_drops[data_slots] if copies else zeros

    # addresses of each slot's sender, from the slot's first packet
    first = _slot_first_packet_addresses(packets, slot, n_slots)[data_slots]
    from .packets import addresses_to_strings

    ipv = np.asarray(packets["ip_version"])[first] if len(first) else np.zeros(0, np.uint8)
    table["src"] = addresses_to_strings(np.asarray(packets["src_addr"])[first], ipv)
    table["dst"] = addresses_to_strings(np.asarray(packets["dst_addr"])[first], ipv)
    table["sport"] = np.asarray(packets["sport"])[first].astype(np.int64)
    # both SYNs seen: window scaling and the announced segment size are known
    peer_slots = data_slots ^ 1
    syn_seen = (stats[:, col["syn_ts_ns"]] >= 0) | (stats[:, col["synack_ts_ns"]] >= 0)
    table["handshake_seen"] = syn_seen[data_slots] & syn_seen[peer_slots]
    table["handshake_retransmissions"] = _handshake_repeats(packets, slot, n_slots)[data_slots]
    table["ip_id_per_packet"] = table["ip_id_per_packet"] | _per_connection_below_loss(
        table, id_gaps[data_slots], ipv, mode[data_slots] == MODE_SENDER
    )
    table["ip_id_policy"] = _ip_id_policy(table, ipv)
    table["dport"] = np.asarray(packets["dport"])[first].astype(np.int64)

    # lost segments: sender vantage = retransmissions that were needed;
    # downstream = IP ID gaps when the sender numbers per packet, else holes
    retrans = table["retransmissions"]
    spurious = table["spurious_retransmissions"]
    is_sender_mode = mode[data_slots] == MODE_SENDER
    # every hole is a loss, and so is each repair that shows an earlier one was lost: it came
    # after a repair above it (senders repair in sequence order), after new data the sender sent
    # once it knew of the hole, or later than a retransmission timeout
    holes_seen, hole_based = _hole_counts(table)
    table["hole_lost_segments"] = hole_based.astype(np.int64)
    # with ECN, the segments whose first copy never came (not-ECT copies only) stand for the hole
    # fills (a tail resent in order is one too, a late original is none); the holes still open
    # and the repairs that show an earlier one lost count as before
    ecn_lost = _ecn_evidence(table, packets, slot, n_slots, kind, first_syn, mss, data_slots, is_sender_mode)
    use_ecn = ecn_lost >= 0
    if use_ecn.any():
        kind = _kinds_by_ecn(kind, table, row_of_slot, packets, slot, n_slots, data_slots[use_ecn], mode, mss)
        retrans, spurious = table["retransmissions"], table["spurious_retransmissions"]
        table["lost_repairs"] = _lost_repairs_with_ecn(
            table, row_of_slot, packets, slot, n_slots, data_slots[use_ecn], mss, lost_repairs_at
        )
    holes_seen = np.where(use_ecn, ecn_lost + _unfilled_segments(table), holes_seen)
    hole_based = np.where(use_ecn, holes_seen + table["lost_repairs"], hole_based)
    # IDs missing from the capture, less those the peer ACKed, less the capture's other drops
    # its own counter shows (copies of data it holds in another copy: _capture_drops_elsewhere)
    elsewhere = _capture_drops_elsewhere(
        capture_drops, packets, slot, id64, vantage, id_per_packet, stats, id_count, data_slots, mss
    )
    table["capture_drops_elsewhere"] = elsewhere[data_slots]
    id_based = np.maximum(id_gaps[data_slots] - table["capture_gaps"] - elsewhere[data_slots], 0)
    # IDs number every packet, pure ACKs too: they count data loss where data dominates
    ids_count_data = table["ip_id_per_packet"] & (table["data_packets"] >= IP_ID_DATA_FRACTION * table["packets"])
    table["ip_id_lost_segments"] = np.where(ids_count_data, id_based, -1).astype(np.int64)
    # The ID count is used where the sender numbers each connection's packets and the holes
    # do not contradict it: the holes seen are a floor (every hole is a loss), and with the
    # lost repairs they miss little.
    # Far above the holes (which miss tails resent in order and repairs lost again), each gap
    # must sit beside a loss event; a shared counter's foreign IDs fall in steady delivery too.
    # Counts up to IP_ID_ABOVE_HOLES_FACTOR times the holes stand as they are (lost repairs
    # explain them), which spares the work where loss is random and light.
    above_holes = (
        ids_count_data & ~is_sender_mode & (id_based > IP_ID_ABOVE_HOLES_FACTOR * hole_based + IP_ID_SLACK_SEGMENTS)
    )
    unexplained = np.zeros(len(data_slots), dtype=np.int64)
    quiet_share = np.zeros(len(data_slots), dtype=np.float64)
    if above_holes.any():
        unexplained, quiet_share = _ip_id_gaps_without_loss_event(
            packets,
            slot,
            data_slots[above_holes],
            n_slots,
            id64,
            id_count,
            _stall_ns(stats, rtt_us, rtt_slot, data_slots[above_holes]),
            mss,
        )
        unexplained, quiet_share = unexplained[data_slots], quiet_share[data_slots]
    contradicted = (
        ids_count_data
        & ~is_sender_mode
        & (
            (id_based < IP_ID_BELOW_HOLES_FRACTION * holes_seen - IP_ID_SLACK_SEGMENTS)
            | (above_holes & (unexplained > IP_ID_QUIET_SHARE_FRACTION * quiet_share * id_based + IP_ID_SLACK_SEGMENTS))
        )
    )
    table["ip_id_contradicted"] = contradicted
    use_ids = ids_count_data & ~contradicted
    # a warning only where the policy is known and is not per connection (too few packets: no)
    table["ip_id_unusable"] = np.isin(table["ip_id_policy"], ("shared", "random", "zero")) & ~is_sender_mode
    upstream = np.where(use_ids, id_based, hole_based)
    # A file holding both sides of a forwarding host counts that host's drops exactly; the
    # holes seen (a floor: they miss a repair lost again) or the IDs may add loss before it,
    # so the larger of those and the drops stands for loss up to here (no estimate needed)
    # (data segments only: a SYN or a FIN without payload it dropped is sent again, no data lost)
    forwarded = forwarded_data_drops
    # Where the capture itself dropped packets, the copies that left miss some the host did send
    # on: their IDs and holes read those as loss, and only the drops counted from copies that
    # came in again (find_forwarded_copies) stand (loss before the host then goes uncounted;
    # `capture_drops` says the capture is incomplete)
    before_host = np.where(use_ids, id_based, holes_seen) if not capture_dropped else 0
    upstream = np.where(forwarded > 0, np.maximum(before_host, forwarded), upstream)
    # in path, a repeat of data that passed here and was not yet ACKed was lost downstream
    # at the sender: retransmissions needed, plus the inferred part (first copies whose fate
    # no ACK told, by their loss probability, and copies not needed lost on the way), plus the
    # first copies the ACKs showed lost that the connection ended before repairing
    table["lost_inferred"] = np.where(is_sender_mode, np.rint(table["lost_inferred_milli"] / 1000.0), 0).astype(
        np.int64
    )
    table["lost_inferred_sd"] = np.where(is_sender_mode, table["lost_inferred_sd_milli"] / 1000.0, 0.0)
    # of the estimate, the first copies of the flight the capture's end left unreported
    table["unreported_at_end"] = np.where(is_sender_mode, table["unreported_at_end"], 0)
    table["unreported_lost_estimated"] = np.where(is_sender_mode, table["unreported_lost_milli"] / 1000.0, 0.0)
    # and its own standard deviation (part of lost_inferred_sd: the rest's is what is left of it)
    table["unreported_lost_sd"] = np.where(is_sender_mode, table["unreported_lost_sd_milli"] / 1000.0, 0.0)
    # the flight, where it went into a queue that was dropping (a loss episode under repair, the
    # flight faster than the delivery): its fate open, whatever the estimate
    table["unreported_at_risk"] = np.where(is_sender_mode, table["unreported_at_risk"], 0)
    # a sender without SACK whose connection closed with a hole open (the pass's tails_at_close:
    # not where it hands over super-segments): the copies sent since and the answers' estimate
    # of those lost, of which `lost_segments` takes only what nothing else counted (the estimate
    # of a window with its labels in place of theirs, or at its rate for segments sent once,
    # over-counted: part of the tail is in `lost_inferred`)
    tail_rows = np.flatnonzero(table["tail_copies_at_close"] > 0)
    if len(tail_rows):
        # what neither the repairs sent since nor any estimate (lost_inferred, wherever its
        # copies were sent) already counts: the answers' estimate joins lost_inferred
        added = tail_losses_uncounted(
            table["tail_lost_at_close"][tail_rows],
            table["tail_needed_since_close"][tail_rows],
            table["lost_inferred"][tail_rows],
        )
        table["lost_inferred"][tail_rows] += added
        table["lost_inferred_sd"][tail_rows] = np.sqrt(table["lost_inferred_sd"][tail_rows] ** 2 + added)
    # below the sender, where holes count the loss: the repairs expected lost and sent again,
    # less those the holes' signs already counted, estimated (lost_inferred, its spread that of
    # the expected count). Not where a capture of both sides of a forwarding host counts its
    # drops, nor where late originals or the capture's own drops make the holes' count no floor
    # (loss_not_floor). Nor without SACK: such a sender finds a repair lost only when its timer
    # expires (no SACK, no RACK), and the holes' age counts that silence already (nosack-v6
    # captures at a full queue read their router's drops exactly, and 1% high with the estimate)
    repaired_rows = np.flatnonzero(
        ~is_sender_mode
        & ~use_ids
        & ~use_ecn
        & (forwarded == 0)
        & (holes_seen > 0)
        & (table["reordered_segments"] < REORDERING_PATH_MIN_SEGMENTS)
        & (sack[data_slots] != SACK_OFF)
    )
    if len(repaired_rows) and not capture_dropped:
        expected = repairs_lost_expected(packets, slot, data_slots[repaired_rows], mss, kind, holes_seen[repaired_rows])
        added = repairs_lost_uncounted(expected, table["lost_repairs"][repaired_rows])
        table["lost_inferred"][repaired_rows] = added
        table["lost_inferred_sd"][repaired_rows] = np.where(added > 0, np.sqrt(expected), 0.0)
    # at the sender, where the capture itself dropped packets (its counters say so): the
    # retransmissions among the segments it missed (capture_gaps) are estimated, not dropped
    # from the count (the sender's side of a capture whose host also receives, iperf3 --bidir)
    missed_rows = np.flatnonzero(is_sender_mode & (forwarded == 0) & (table["capture_gaps"] > 0))
    if len(missed_rows) and capture_dropped:
        missed = needed_repairs_missed_by_capture(
            (retrans - spurious)[missed_rows], table["capture_gaps"][missed_rows], table["data_segments"][missed_rows]
        )
        table["lost_inferred"][missed_rows] += np.rint(missed).astype(np.int64)
        table["lost_inferred_sd"][missed_rows] = np.sqrt(table["lost_inferred_sd"][missed_rows] ** 2 + missed)
    lost = np.where(
        is_sender_mode,
        retrans - spurious + table["lost_inferred"] + table["lost_unrepaired"],
        upstream + table["downstream_retransmissions"] + table["lost_inferred"],
    )
    lost = np.maximum(lost, 0)
    table["lost_segments"] = lost.astype(np.int64)
    table["loss_method"] = np.where(
        is_sender_mode, "retransmissions", np.where(use_ids, "ip_id_gaps", np.where(use_ecn, "ecn", "holes"))
    )

    originals = np.maximum(table["data_segments"] - retrans, 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        table["loss_rate"] = np.where(originals > 0, lost / np.maximum(originals, 1), np.nan)
        table["retransmission_rate"] = np.where(
            table["data_segments"] > 0, retrans / np.maximum(table["data_segments"], 1), np.nan
        )
        # the transfer starts past the application's wait after its first message (nothing
        # unacknowledged; idle_ns runs from the first data to the data after the wait: iperf3's
        # cookie, its repairs if it was lost, and the wait for the test to start). At
        # the sender, data lost before any was delivered (waiting out a timeout) is not the
        # transfer yet either: it starts with the data the first ACK covered, sent about a round
        # trip (the handshake's) before that ACK came, as the receiver sees it. The later of the
        # two: a first message ACKed before the wait puts that ACK before the transfer's data
        # (adding the wait to it started the transfer up to 2.2 s late: +2.3% on a 60 ms path)
        handshake_us = _handshake_rtt_us(stats, n_slots)
        handshake_ns = np.round(handshake_us[data_slots] * 1000.0).astype(np.int64)
        first_acked = table["first_acked_ts_ns"]
        after_wait_ns = table["first_data_ts_ns"] + table["idle_ns"]
        start_ns = np.where(
            is_sender_mode & (first_acked >= 0),
            np.maximum(after_wait_ns, first_acked - handshake_ns),
            after_wait_ns,
        )
        # first to last data segment
        duration_s = (table["last_data_ts_ns"] - start_ns) / 1e9
        table["duration_s"] = duration_s
        table["throughput_bps"] = np.where(duration_s > 0, table["payload_bytes"] * 8 / duration_s, np.nan)
        # data the receiver acknowledged was delivered, also where the capture missed it; data
        # seen but never acknowledged (the last window before a reset) was not
        seen = table["unique_bytes"] + table["capture_gap_bytes"]
        acked = table["acked_bytes"]
        table["delivered_bytes"] = np.where(acked > 0, np.minimum(seen, acked), seen)
        # downstream of the sender, delivery ends with the last data, or with the receiver's
        # last new ACK where data kept coming after it: the window in flight when the receiver
        # reset the connection, which arrives up to a one-way delay and a queue later and is
        # never delivered. (At the sender the times are sending times: the last data stays.)
        last_acked = table["last_acked_ts_ns"]
        # at the sender, the last data delivered reached the receiver at least the ACK's way
        # back before its ACK came; data sent after that is the window in flight when the
        # receiver reset, never delivered. The way back is bounded by a round trip of small
        # packets: the handshake's, as the start above takes it off the first ACK, or the data's
        # shortest (path_min_rtt_ns) where shorter
        round_trip_ns = _ack_way_back_bound_ns(table["path_min_rtt_ns"], handshake_ns)
        end_of_acked_ns = np.where(
            is_sender_mode,
            np.where(round_trip_ns > 0, last_acked - np.minimum(round_trip_ns, last_acked), -1),
            last_acked,
        )
        delivery_end_ns = np.where(
            (last_acked >= 0) & (end_of_acked_ns >= start_ns) & (end_of_acked_ns < table["last_data_ts_ns"]),
            end_of_acked_ns,
            table["last_data_ts_ns"],
        )
        delivery_end_ns = np.where(
            _delivered_after_last_send(is_sender_mode, acked, seen, end_of_acked_ns, table["last_data_ts_ns"]),
            end_of_acked_ns,
            delivery_end_ns,
        )
        # the span the receiver was receiving, on the capture's clock (a transfer of several
        # flows runs over the union of its flows' spans: transfer.py)
        table["delivery_start_ns"] = start_ns
        table["delivery_end_ns"] = delivery_end_ns
        ts = np.asarray(packets["ts_ns"], dtype=np.int64)
        capture_start_ns = int(ts.min()) if len(ts) else 0
        table["delivery_start_s"] = (start_ns - capture_start_ns) / 1e9
        table["delivery_end_s"] = (delivery_end_ns - capture_start_ns) / 1e9
        delivery_s = (delivery_end_ns - start_ns) / 1e9
        table["goodput_bps"] = np.where(delivery_s > 0, table["delivered_bytes"] * 8 / delivery_s, np.nan)

    # RTT statistics per row
    rtt_rows: List[Optional[Dict[str, float]]] = [None] * len(data_slots)
    flight_rows: List[Optional[Dict[str, float]]] = [None] * len(data_slots)
    if len(data_slots):
        sample_rows = np.flatnonzero(rtt_slot >= 0)
        for r, s in enumerate(_split_by_row(rtt_us[sample_rows], row_of_slot[rtt_slot[sample_rows]], len(data_slots))):
            if mode[data_slots[r]] == MODE_RECEIVER and handshake_us[data_slots[r]] > 0:
                s = np.concatenate([[handshake_us[data_slots[r]]], s])
            rtt_rows[r] = rtt_stats(s / 1000.0)
        flight_packets = np.flatnonzero((in_flight >= 0) & (slot >= 0))
        for r, v in enumerate(
            _split_by_row(in_flight[flight_packets], row_of_slot[slot[flight_packets]], len(data_slots))
        ):
            if table["vantage"][r] == "sender" and len(v):
                flight_rows[r] = {"max": int(v.max()), "median": float(np.median(v))}

    return Directions(
        table=table,
        rtt_ms=rtt_rows,
        bytes_in_flight_stats=flight_rows,
        segment_kind=kind,
        rtt_sample_us=rtt_us,
        rtt_slot=rtt_slot,
        bytes_in_flight=in_flight,
        packet_slot=slot,
        row_of_slot=row_of_slot,
        capture_drops=capture_drops,
    )


def _capture_drops_elsewhere(
    capture_drops: Optional[Dict[str, Any]],
    packets: Mapping[str, np.ndarray],
    slot: np.ndarray,
    id64: np.ndarray,
    vantage: np.ndarray,
    id_per_packet: np.ndarray,
    stats: np.ndarray,
    id_count: Optional[np.ndarray],
    data_slots: np.ndarray,
    mss: np.ndarray,
) -> np.ndarray:
    """Per slot: the packets the capture itself dropped whose data it holds in another copy
    (a repeat of data that arrived twice, or its first copy), by the capture's own counter.

    tcpdump counts every packet it failed to store (the kernel-drop counter). Of the capture
    host's own packets (ACKs at a receiver) none is lost before the capture: their IP-ID gaps
    are exactly the capture's drops of them. The rest of the counter are packets coming in
    that the capture dropped: of a data direction, those of data it never saw (the capture
    gaps the peer ACKed, and the segments the peer ACKed past the last data captured, whose
    IDs lie past the last one seen) and those of data it holds in another copy. The latter
    leave an IP-ID gap that no sequence gap shows; they are what remains of the counter,
    shared among the incoming data directions by their capture gaps (one direction: exact).
    Zeros where the counter cannot be read so (_counter_readable)."""
    n_slots = len(id_per_packet)
    none = np.zeros(n_slots, dtype=np.int64)
    kernel = (capture_drops or {}).get("kernel")
    if not kernel or n_slots == 0:
        return none
    col = STAT_INDEX
    present = np.flatnonzero(stats[:, col["packets"]] > 0)
    own = (vantage[present] == "sender") | (vantage[present ^ 1] == "receiver")
    incoming = (vantage[present] == "receiver") | (vantage[present ^ 1] == "sender")
    is_data = np.zeros(n_slots, dtype=bool)
    is_data[data_slots] = True
    in_data = present[incoming & is_data[present]]
    if len(in_data) == 0 or not _counter_readable(packets, slot, present, own, incoming, in_data, id_per_packet, stats):
        return none
    gaps = _ip_id_gaps(id64, id_count, slot, present, n_slots)
    incoming_drops = int(kernel) - int(gaps[present[own]].sum())
    unseen = stats[in_data, col["capture_gaps"]]
    explained = unseen.sum() + _acked_past_capture(packets, slot, in_data, mss).sum()
    remainder = incoming_drops - int(explained) - int(gaps[present[incoming & ~is_data[present]]].sum())
    if incoming_drops < 0 or remainder <= 0:
        return none
    # shared by the capture gaps (the capture's drops of each direction), whole packets
    weights = unseen.astype(np.float64) if unseen.sum() > 0 else np.ones(len(in_data))
    share = np.floor(remainder * weights / weights.sum()).astype(np.int64)
    share[int(np.argmax(weights))] += remainder - int(share.sum())
    out = none.copy()
    out[in_data] = np.minimum(share, np.maximum(gaps[in_data] - unseen, 0))
    return out


def _counter_readable(
    packets: Mapping[str, np.ndarray],
    slot: np.ndarray,
    present: np.ndarray,
    own: np.ndarray,
    incoming: np.ndarray,
    in_data: np.ndarray,
    id_per_packet: np.ndarray,
    stats: np.ndarray,
) -> bool:
    """Whether the kernel-drop counter counts only drops that IP-ID gaps or the receiver's ACKs
    place: every packet of the file belongs to a direction whose sender numbers its packets
    one by one, each direction is the host's own (`own`) or incoming, no incoming frame holds
    several segments (a dropped GRO frame is one count and several IDs), and every connection
    opens (SYN) and ends (_ends_in_file) in the file: drops before a direction's first ID seen
    or after its last leave no gap (an incoming data direction's last data is read from the
    ACKs: _acked_past_capture)."""
    n_slots = len(id_per_packet)
    if (slot < 0).any() or not (id_per_packet[present].all() and (own ^ incoming).all()):
        return False
    if stats[present[incoming], STAT_INDEX["super_segment_frames"]].any():
        return False
    syn = (np.asarray(packets["tcp_flags"]) & TCP_SYN) != 0
    opened = np.bincount(slot[syn] >> 1, minlength=n_slots // 2) > 0
    ends = _ends_in_file(packets, slot, n_slots)
    ends[in_data] = True
    return bool(opened[present >> 1].all() and ends[present].all())


def _ends_in_file(packets: Mapping[str, np.ndarray], slot: np.ndarray, n_slots: int) -> np.ndarray:
    """Per slot: its last packet in the file is its last of the connection: its FIN or RST, or
    a bare ACK sent once the peer's FIN or RST was captured (the close's last ACK). Anything
    else, and what it sent after may be among a capture's counted drops with no ID gap."""
    flags = np.asarray(packets["tcp_flags"])
    ts = np.asarray(packets["ts_ns"], dtype=np.int64)
    payload = np.asarray(packets["tcp_payload_len"])
    valid = np.flatnonzero(slot >= 0)
    last = np.full(n_slots, -1, dtype=np.int64)
    np.maximum.at(last, slot[valid], valid)
    closing = valid[(flags[valid] & (TCP_FIN | TCP_RST)) != 0]
    first_close_ns = np.full(n_slots, np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(first_close_ns, slot[closing], ts[closing])
    has = last >= 0
    at = np.maximum(last, 0)
    own_close = has & ((flags[at] & (TCP_FIN | TCP_RST)) != 0)
    peer_closed_before = first_close_ns[np.arange(n_slots) ^ 1] <= ts[at]
    last_ack = has & (payload[at] == 0) & ((flags[at] & TCP_ACK) != 0) & ((flags[at] & TCP_SYN) == 0)
    return own_close | (last_ack & peer_closed_before)


# the newest data packets of a direction among which its highest sequence end is looked for
TAIL_DATA_PACKETS = 1024


def _acked_past_capture(
    packets: Mapping[str, np.ndarray], slot: np.ndarray, slots: np.ndarray, mss: np.ndarray
) -> np.ndarray:
    """Per slot of `slots`: segments its peer's last ACK covered past the highest data the
    capture holds (the tail the capture dropped, ACKed by the receiver; 0 when none). All
    slots at once: one sort of the data packets by slot, no pass over the file per slot."""
    out = np.zeros(len(slots), dtype=np.int64)
    if len(slots) == 0:
        return out
    n_slots = int(max(int(slots.max()), int(slot.max(initial=-1))) + 2)
    payload = np.asarray(packets["tcp_payload_len"]).astype(np.int64)
    seq = np.asarray(packets["seq"]).astype(np.int64)
    ack = np.asarray(packets["ack"]).astype(np.int64)
    flags = np.asarray(packets["tcp_flags"])
    data = np.flatnonzero((slot >= 0) & (payload > 0))
    data = data[np.argsort(slot[data], kind="stable")]  # by slot, file order within each
    data_slot = slot[data]
    # the newest TAIL_DATA_PACKETS data packets of each slot, and the newest one
    group_end = np.searchsorted(data_slot, data_slot, side="right")
    tail = data[(group_end - np.arange(len(data))) <= TAIL_DATA_PACKETS]
    tail_slot = slot[tail]
    last_data = np.full(n_slots, -1, dtype=np.int64)
    np.maximum.at(last_data, tail_slot, tail)
    ends = seq[tail] + payload[tail]
    last_end = seq[last_data[tail_slot]] + payload[last_data[tail_slot]]
    # sequence ends relative to the newest one, as signed 32-bit distances
    ahead = ((ends - last_end + (1 << 31)) % (1 << 32)) - (1 << 31)
    most_ahead = np.full(n_slots, np.iinfo(np.int64).min, dtype=np.int64)
    np.maximum.at(most_ahead, tail_slot, ahead)
    acks = np.flatnonzero((slot >= 0) & ((flags & TCP_ACK) != 0))
    last_ack = np.full(n_slots, -1, dtype=np.int64)
    np.maximum.at(last_ack, slot[acks], acks)
    peer = slots ^ 1
    have = (last_data[slots] >= 0) & (last_ack[peer] >= 0) & (mss[slots] > 0)
    rows = np.flatnonzero(have)
    s_have = slots[rows]
    newest = last_data[s_have]
    highest = seq[newest] + payload[newest] + most_ahead[s_have]
    past = ((ack[last_ack[peer[rows]]] - highest + (1 << 31)) % (1 << 32)) - (1 << 31)
    # less the FIN's one sequence number, when the ACK covers one
    seg = mss[s_have].astype(np.int64)
    out[rows] = np.where(past > 1, (past - 1 + seg - 1) // np.maximum(seg, 1), 0)
    return out


# Below the sender, a repair lost and sent again leaves no hole of its own: where the path
# drops packets at random, a repair crossing it is lost about as often as the packets around it.
# The rate is read locally, over this many data packets of the flow either side of the repair
# (loss comes and goes: in the testbed's 4 s transfers at 5% the random drops ran for the first
# 1.4-2.5 s only, and the whole transfer's rate read 588 of 969 lost repairs at random loss), and
# from the loss events there (holes opened: a full queue's burst of drops is one event, and the
# repair that follows it meets a queue the sender's backoff has drained). In 125 IPv6 receiver
# captures whose lost repairs are known per copy: at random loss 618 expected for 969 (cubic 127
# for 163, BBR 339 for 413, Reno 152 for 393: TSO senders, whose drops at the testbed's router
# take several segments at once, one event); at a full queue BBR 6,778 for 18,712 and cubic 226
# for 125. Windows of 128 and 512 packets took more captures farther from the truth.
LOST_REPAIR_WINDOW_PACKETS = 2048
# ... and never above this rate (two events per three packets is no random loss to read)
LOST_REPAIR_MAX_RATE = 0.5


def repairs_lost_expected(
    packets: Mapping[str, np.ndarray],
    slot: np.ndarray,
    slots: np.ndarray,
    mss: np.ndarray,
    kind: np.ndarray,
    holes_seen: np.ndarray,
) -> np.ndarray:
    """Per slot of `slots` (below the sender, loss counted from holes): the repairs expected
    lost and sent again, each repair of a hole weighted by q / (1 - q), the expected count of
    lost copies before one arrives (a geometric series) at the loss-event rate q of the flow's
    data around it (LOST_REPAIR_WINDOW_PACKETS either side: holes opened, less the one the repair
    fills, per segment), scaled to the holes seen (`holes_seen`: one repair arrives per hole,
    while the capture also shows the repairs of repairs)."""
    expected = np.zeros(len(slots), dtype=np.float64)
    if len(slots) == 0:
        return expected
    payload = np.asarray(packets["tcp_payload_len"]).astype(np.int64)
    row_of = np.full(int(max(int(slots.max()), int(slot.max(initial=-1)))) + 1, -1, dtype=np.int64)
    row_of[slots] = np.arange(len(slots))
    owner = np.where((slot >= 0) & (payload > 0), row_of[np.maximum(slot, 0)], -1)
    data = np.flatnonzero(owner >= 0)
    data = data[_group_order(owner[data])]
    if len(data) == 0:
        return expected
    row = owner[data]
    first = np.r_[True, row[1:] != row[:-1]]
    size = np.maximum(mss[slots][row], 1)
    segments = np.maximum((payload[data] + size - 1) // size, 1)
    # a loss event: a packet that arrives above everything before it with a gap below
    rel = unwrapped_seq(np.asarray(packets["seq"])[data], row) + (1 << 40)
    reach = _grouped_running_max(np.cumsum(first) - 1, rel + payload[data])
    event = ~first & (rel > np.r_[0, reach[:-1]])
    repair = np.isin(kind[data], NEEDED_KINDS)
    starts = np.flatnonzero(first)
    group_lo = np.repeat(starts, np.diff(np.append(starts, len(data))))
    group_hi = np.repeat(np.append(starts[1:], len(data)), np.diff(np.append(starts, len(data))))
    at = np.flatnonzero(repair)
    lo = np.maximum(at - LOST_REPAIR_WINDOW_PACKETS, group_lo[at])
    hi = np.minimum(at + LOST_REPAIR_WINDOW_PACKETS + 1, group_hi[at])
    events = np.r_[0, np.cumsum(event)]
    sent = np.r_[0, np.cumsum(segments)]
    others = np.maximum(sent[hi] - sent[lo] - segments[at], 1)
    rate = np.minimum(np.maximum(events[hi] - events[lo] - 1, 0) / others, LOST_REPAIR_MAX_RATE)
    lost_again = np.bincount(row[at], weights=segments[at] * rate / (1.0 - rate), minlength=len(slots))
    repairs = np.bincount(row[at], weights=segments[at], minlength=len(slots))
    # without TCP timestamps a late original reads as a repair and a repair lost again is not
    # told (no_timestamps): the holes' count is no floor, and nothing is added to it
    stamped = np.bincount(row, weights=np.asarray(packets["opt_has_ts"])[data], minlength=len(slots)) > 0
    return np.where((repairs > 0) & stamped, lost_again * holes_seen / np.maximum(repairs, 1), 0.0)


def needed_repairs_missed_by_capture(needed: np.ndarray, missed: np.ndarray, seen: np.ndarray) -> np.ndarray:
    """At the sender, where the capture dropped packets: the needed retransmissions among the
    segments it missed (`missed`: capture_gaps, acknowledged and never seen), at their share
    among the segments it saw (`needed` of `seen`): a capture's kernel ring drops what comes
    when it is full, whatever the packet carries (a receiver's capture at 600 Mbit/s that also
    held its own sending: 16,486 of its 221,548 segments missed, 1,310 needed retransmissions
    seen for the 1,409 the router dropped)."""
    return np.where(seen > 0, np.maximum(needed, 0) * missed / np.maximum(seen, 1), 0.0)


def repairs_lost_uncounted(expected: np.ndarray, counted: np.ndarray) -> np.ndarray:
    """Repairs lost again that the holes' signs did not count (`counted`: lost_repairs) of those
    expected lost (`expected`), rounded, never below 0."""
    return np.maximum(np.rint(expected - counted), 0).astype(np.int64)


def tail_losses_uncounted(lost_at_close: np.ndarray, needed_since: np.ndarray, inferred: np.ndarray) -> np.ndarray:
    """Segments of a close's tail (`lost_at_close`, the answers' estimate) that nothing counts
    yet: less the retransmissions sent since that count a loss each (`needed_since`) and all the
    direction's estimate (`inferred`, lost_inferred: where its copies were sent is not kept), and
    never below 0."""
    return np.maximum(lost_at_close - needed_since - np.maximum(inferred, 0), 0)


def _unfilled_segments(table: Mapping[str, np.ndarray]) -> np.ndarray:
    """Per direction: segments of the sequence holes still open at the end."""
    mss_rows = np.maximum(table["mss"], 1)
    return (table["unfilled_hole_bytes"] + mss_rows - 1) // mss_rows


def _hole_counts(table: Mapping[str, np.ndarray]) -> Tuple[np.ndarray, np.ndarray]:
    """Per direction: the segments the sequence holes showed lost (filled or left open), and
    those plus the repairs that show an earlier one was lost (each a floor of the loss)."""
    holes_seen = table["hole_fill_retransmissions"] + _unfilled_segments(table)
    return holes_seen, holes_seen + table["lost_repairs"]


def _kinds_by_ecn(
    kind: np.ndarray,
    table: Dict[str, np.ndarray],
    row_of_slot: np.ndarray,
    packets: Mapping[str, np.ndarray],
    slot: np.ndarray,
    n_slots: int,
    slots: np.ndarray,
    mode: np.ndarray,
    mss: np.ndarray,
) -> np.ndarray:
    """The segment kinds of `slots` (below the sender, ECN evidence `on`) by their copies'
    codepoints (ecn.py), and the table's retransmission counts from them: a first copy (ECT)
    is never a retransmission (one that filled a hole, or came after its resend, came late:
    reordered); a resend (not-ECT) is one, also where it came in order (a tail resent, a
    timeout's resend: kind other when the sequence showed none); at the receiver a resend of
    data whose first copy came too was not needed (spurious). In path a repeat of data that
    passed keeps its kind: it may have been lost further on (`row_of_slot`: the table's row of
    each slot, -1 none). Returns the new per-packet kinds."""
    rows, first_copy, needless = ecn_evidence.copies_by_codepoint(packets, slot, slots, n_slots)
    was = kind[rows]
    now = was.copy()
    now[first_copy & np.isin(was, RETRANSMISSION_KINDS)] = KIND_REORDERED
    now[~first_copy & np.isin(was, (KIND_ORIGINAL, KIND_REORDERED))] = KIND_RETRANS_OTHER
    now[needless & (mode[slot[rows]] == MODE_RECEIVER)] = KIND_SPURIOUS
    kind = kind.copy()
    kind[rows] = now
    # the counts per slot, in segments, from the kinds
    payload = np.asarray(packets["tcp_payload_len"])[rows].astype(np.int64)
    segment_bytes = np.maximum(mss[slot[rows]], 1)
    segments = np.maximum((payload + segment_bytes - 1) // segment_bytes, 1)
    owner = row_of_slot[slot[rows]]
    n_rows = len(table["slot"])
    mine = np.zeros(n_rows, dtype=bool)
    mine[row_of_slot[slots]] = True

    def total(which: np.ndarray, weights: np.ndarray) -> np.ndarray:
        return np.bincount(owner[which], weights=weights[which], minlength=n_rows).astype(np.int64)

    resent = np.isin(now, RETRANSMISSION_KINDS)
    for name, which in (
        ("retransmissions", resent),
        ("retrans_fast", now == KIND_RETRANS_FAST),
        ("retrans_rto", now == KIND_RETRANS_RTO),
        ("retrans_tlp", now == KIND_RETRANS_TLP),
        ("retrans_other", now == KIND_RETRANS_OTHER),
        ("spurious_retransmissions", now == KIND_SPURIOUS),
        ("reordered_segments", now == KIND_REORDERED),
    ):
        table[name] = np.where(mine, total(which, segments), table[name])
    table["retransmitted_bytes"] = np.where(mine, total(resent, payload), table["retransmitted_bytes"])
    return kind


def _lost_repairs_with_ecn(
    table: Dict[str, np.ndarray],
    row_of_slot: np.ndarray,
    packets: Mapping[str, np.ndarray],
    slot: np.ndarray,
    n_slots: int,
    slots: np.ndarray,
    mss: np.ndarray,
    lost_repairs_at: np.ndarray,
) -> np.ndarray:
    """Per direction: the repairs lost, where `slots` (ECN evidence `on`) also count the hole
    segments a higher resend overtook (ecn.repairs_lost_below_resends). Both are read at the
    copy that filled the segment: per packet the larger of the two stands (`lost_repairs_at`:
    what the hole rules showed at each packet), so a repair both show counts once; `row_of_slot`:
    the table's row of each slot, -1 none)."""
    rows, shown = ecn_evidence.repairs_lost_below_resends(packets, slot, slots, n_slots, mss)
    by_holes = lost_repairs_at[rows].astype(np.int64)
    more = np.bincount(row_of_slot[slot[rows]], weights=np.maximum(shown - by_holes, 0), minlength=len(table["slot"]))
    return table["lost_repairs"] + more.astype(np.int64)


def _ecn_evidence(
    table: Dict[str, np.ndarray],
    packets: Mapping[str, np.ndarray],
    slot: np.ndarray,
    n_slots: int,
    kind: np.ndarray,
    first_syn: np.ndarray,
    mss: np.ndarray,
    data_slots: np.ndarray,
    is_sender_mode: np.ndarray,
) -> np.ndarray:
    """Per direction: the segments whose first transmission never came past the capture point,
    by the ECN codepoint (ecn.py), below the sender where the evidence holds (-1 elsewhere).
    Adds the table's `ecn` (what the codepoints tell) and `ecn_lost_originals`."""
    codepoint = packets.get("ip_ecn")
    payload = np.asarray(packets["tcp_payload_len"])
    if codepoint is None:
        codepoint = np.zeros(len(payload), dtype=np.uint8)
    codepoint = np.asarray(codepoint)
    handshake = ecn_evidence.handshake_ecn(np.asarray(packets["tcp_flags"]), first_syn)
    if codepoint.any():
        is_fill = np.isin(kind, (KIND_RETRANS_FAST, KIND_RETRANS_RTO, KIND_RETRANS_TLP, KIND_RETRANS_OTHER))
        ect, data, fills, not_ect_fills = ecn_evidence.codepoint_counts(codepoint, payload, slot, is_fill, n_slots)
    else:  # no ECT anywhere (most captures): the handshakes alone tell
        ect = data = fills = not_ect_fills = np.zeros(n_slots, dtype=np.int64)
    state = ecn_evidence.ecn_states(
        handshake[data_slots], ect[data_slots], data[data_slots], fills[data_slots], not_ect_fills[data_slots]
    )
    table["ecn"] = state
    used = (state == ecn_evidence.ECN_ON) & ~is_sender_mode
    lost = np.full(len(data_slots), -1, dtype=np.int64)
    if used.any():
        lost[used] = ecn_evidence.originals_never_seen(packets, slot, data_slots[used], n_slots, mss)
    table["ecn_lost_originals"] = lost
    return lost


def _handshake_legs_ns(stats: np.ndarray, slots: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """Per slot in `slots`: its connection's handshake legs as this capture point saw them, the
    client's (SYN -> SYN/ACK) and the server's (SYN/ACK -> ACK); -1 where unknown."""
    col = STAT_INDEX
    syn = stats[slots & ~1, col["syn_ts_ns"]]
    synack = stats[slots | 1, col["synack_ts_ns"]]
    ack = stats[slots & ~1, col["first_ack_ts_ns"]]
    known = (syn >= 0) & (synack >= syn) & (ack >= synack)
    return np.where(known, synack - syn, -1).astype(np.int64), np.where(known, ack - synack, -1).astype(np.int64)


def _handshake_round_trip_ns(stats: np.ndarray, slots: np.ndarray) -> np.ndarray:
    """Per slot in `slots`: the whole round trip the handshake shows at any capture point (SYN
    to the ACK of the SYN/ACK: both legs, wherever the capture sat), 0 unknown."""
    client_ns, server_ns = _handshake_legs_ns(stats, slots)
    return np.where(client_ns >= 0, client_ns + server_ns, 0)


def _stall_ns(stats: np.ndarray, rtt_us: np.ndarray, rtt_slot: np.ndarray, slots: np.ndarray) -> np.ndarray:
    """Per slot in `slots`: the shortest silence in delivery that reads as a recovery timer
    (IP_ID_STALL_*), from the handshake's round trip and the median of the RTT samples."""
    floor_ns = IP_ID_STALL_ROUND_TRIPS * _handshake_round_trip_ns(stats, slots) + IP_ID_STALL_MIN_NS
    sampled = np.flatnonzero(np.isin(rtt_slot, slots))
    median_ns = np.zeros(len(slots), dtype=np.int64)
    if len(sampled):
        by_slot = sampled[np.argsort(rtt_slot[sampled], kind="stable")]
        bounds = (
            np.searchsorted(rtt_slot[by_slot], slots, side="left"),
            np.searchsorted(rtt_slot[by_slot], slots, side="right"),
        )
        for k, (lo, hi) in enumerate(zip(*bounds)):
            if hi > lo:
                median_ns[k] = int(np.median(rtt_us[by_slot[lo:hi]]) * 1000)
    return np.maximum(floor_ns, (IP_ID_STALL_MEDIAN_RTT_FRACTION * median_ns).astype(np.int64))


def _grouped_running_max(group_rank: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Running maximum of non-negative `values` restarting at each group (ranks ascending)."""
    offset = group_rank << 42
    return np.maximum.accumulate(values + offset) - offset


def _ip_id_gaps_without_loss_event(
    packets: Mapping[str, np.ndarray],
    slot: np.ndarray,
    slots_wanted: np.ndarray,
    n_slots: int,
    id64: np.ndarray,
    id_count: Optional[np.ndarray],
    stall_ns: np.ndarray,
    mss: np.ndarray,
) -> Tuple[np.ndarray, np.ndarray]:
    """Per slot: IDs skipped (the counter's advance past one step, in capture order) where no
    loss event is within IP_ID_EVENT_WINDOW_PACKETS packets of the direction. With a counter per
    connection each missing ID is a packet of this connection that did not arrive: the next
    that did is out of sequence order (a hole opens, a repair or resend arrives), or, where a
    lost tail was resent in order after a probe or timeout, comes after a silence of at least
    `stall_ns` (one per slot of `slots_wanted`, in its order). A counter shared with other
    flows also skips their IDs in steady, in-order delivery. Beside an event, a gap larger
    than the segments a hole opening there skipped plus a window of packets counts beyond
    that (`mss`: segment bytes per slot). Also per slot: the share of its packets with no
    event that near (where such IDs stand out)."""
    out = np.zeros(n_slots, dtype=np.int64)
    quiet_share = np.zeros(n_slots, dtype=np.float64)
    rank_of_slot = np.full(n_slots + 1, -1, dtype=np.int64)
    rank_of_slot[slots_wanted] = np.arange(len(slots_wanted))
    packet_rank = rank_of_slot[np.where(slot >= 0, slot, n_slots)]
    rows = np.flatnonzero((packet_rank >= 0) & (id64 >= 0))
    if len(rows) < 2:
        return out, quiet_share
    # the wanted slots' packets, slot by slot, in capture order (a radix sort on few slots)
    key = packet_rank[rows].astype(np.uint16 if len(slots_wanted) <= 1 << 16 else np.int64)
    rows = rows[np.argsort(key, kind="stable")]
    rank = packet_rank[rows]
    starts = np.empty(len(rows), dtype=bool)
    starts[0] = True
    np.not_equal(rank[1:], rank[:-1], out=starts[1:])
    first = rows[starts]
    # IDs: how far each packet's first ID lies past the highest ID before it
    ids = id64[rows] - id64[first][rank]
    last_id = ids + (id_count[rows] - 1 if id_count is not None else 0)
    highest_id = _grouped_running_max(rank, last_id)
    skipped = np.zeros(len(rows), dtype=np.int64)
    np.maximum(ids[1:] - highest_id[:-1] - 1, 0, out=skipped[1:])
    skipped[starts] = 0
    # sequence: relative to the slot's first packet, unwrapped step by step
    seq = unwrapped_seq(np.asarray(packets["seq"])[rows], rank)
    rel_seq = seq - seq[starts][rank] + (1 << 33)
    payload = np.asarray(packets["tcp_payload_len"])[rows].astype(np.int64)
    flags = np.asarray(packets["tcp_flags"])[rows]
    end = rel_seq + payload + ((flags & TCP_SYN) != 0) + ((flags & TCP_FIN) != 0)
    highest_end = _grouped_running_max(rank, end)
    ts = np.asarray(packets["ts_ns"])[rows].astype(np.int64)
    threshold = np.asarray(stall_ns, dtype=np.int64)[rank]
    event = np.zeros(len(rows), dtype=bool)
    event[1:] = (payload[1:] > 0) & (rel_seq[1:] != highest_end[:-1])
    event[1:] |= ts[1:] - ts[:-1] >= threshold[1:]
    event[starts] = False
    # an event within the window either side (a running count of events)
    w = IP_ID_EVENT_WINDOW_PACKETS
    count = np.concatenate(([0], np.cumsum(event, dtype=np.int64)))
    index = np.arange(len(rows))
    near = count[np.minimum(index + w + 1, len(rows))] > count[np.maximum(index - w, 0)]
    quiet = ~near
    # beside an event a gap stands for at most the segments a hole opened there skipped, and
    # a window's worth of packets more (resends and tails): a jump of thousands of IDs
    # across a silence in a connection of a few packets is other flows' traffic
    segment_bytes = np.maximum(np.asarray(mss, dtype=np.int64)[slots_wanted], 1)[rank]
    jump = np.zeros(len(rows), dtype=np.int64)
    jump[1:] = np.maximum(rel_seq[1:] - highest_end[:-1], 0)
    jump[starts] = 0
    most = (jump + segment_bytes - 1) // segment_bytes + 2 * w + 1
    beyond = np.where(quiet, skipped, np.maximum(skipped - most, 0))
    k = len(slots_wanted)
    out[slots_wanted] = np.rint(np.bincount(rank, weights=beyond, minlength=k)).astype(np.int64)
    quiet_share[slots_wanted] = np.bincount(rank[quiet], minlength=k) / np.maximum(np.bincount(rank, minlength=k), 1)
    return out, quiet_share


def _per_connection_below_loss(
    table: Mapping[str, np.ndarray], id_gaps: np.ndarray, ip_version: np.ndarray, at_sender: np.ndarray
) -> np.ndarray:
    """Per direction: IPv4 IDs numbered per connection, seen below heavy loss. Each packet lost
    before the capture point lengthens one step, so from about 20% loss fewer than
    IP_ID_PER_PACKET_FRACTION of the steps are of one (79.6% of 1,940 steps in a BBR flow that
    lost 27% at a 2 ms queue, one of three: its IDs then read as a shared counter and the
    loss from holes 24% low). Such a counter still rises at every step, and the IDs it skipped
    are the packets lost, which the sequence holes confirm within the bounds that test any
    per-connection count (IP_ID_BELOW_HOLES_FRACTION, IP_ID_ABOVE_HOLES_FACTOR); a counter
    shared with other flows skips their packets too, far more than the holes show."""
    steps = table["ip_id_steps"]
    skipped = np.maximum(id_gaps - table["capture_gaps"], 0)
    holes_seen, hole_based = _hole_counts(table)
    rising = table["ip_id_forward_steps"] >= IP_ID_SHARED_FORWARD_FRACTION * steps
    agree = (skipped >= IP_ID_BELOW_HOLES_FRACTION * holes_seen - IP_ID_SLACK_SEGMENTS) & (
        skipped <= IP_ID_ABOVE_HOLES_FACTOR * hole_based + IP_ID_SLACK_SEGMENTS
    )
    return (ip_version == 4) & ~at_sender & (steps >= IP_ID_MIN_STEPS) & rising & (hole_based > 0) & agree


def _ip_id_policy(table: Mapping[str, np.ndarray], ip_version: np.ndarray) -> np.ndarray:
    """How each direction's sender numbers its IPv4 packets: "per_connection" (a counter per
    connection, as Linux), "shared" (one counter for all flows: IDs rise by more than one),
    "random", "zero", or "none" (IPv6, or too few packets to tell)."""
    steps = table["ip_id_steps"]
    policy = np.full(len(steps), "random", dtype=object)
    policy[table["ip_id_forward_steps"] >= IP_ID_SHARED_FORWARD_FRACTION * steps] = "shared"
    policy[table["ip_id_per_packet"]] = "per_connection"
    policy[table["ip_id_zero"] >= IP_ID_ZERO_FRACTION * (steps + 1)] = "zero"
    policy[(ip_version != 4) | (steps < IP_ID_MIN_STEPS)] = "none"
    return policy.astype(str)


# A SYN (or SYN/ACK) sent again comes a timeout after the one before: Linux's first is 1 s
# (TCP_TIMEOUT_INIT), no RTO is shorter than 200 ms. Copies of one captured twice (`-i any` on
# a forwarding host, a bridge and its port) are microseconds apart.
HANDSHAKE_REPEAT_MIN_NS = 100_000_000


def _handshake_repeats(packets: Mapping[str, np.ndarray], slot: np.ndarray, n_slots: int) -> np.ndarray:
    """Per slot: the SYNs (SYN/ACKs) it sent again, with the sequence number of the one before
    and at least HANDSHAKE_REPEAT_MIN_NS after it. TCP_INFO's total_retrans counts them; the
    data's retransmissions cannot (the first SYN of an IPv6 connection lost to the router's
    neighbour discovery: 63 data retransmissions for total_retrans 64)."""
    counts = np.zeros(n_slots, dtype=np.int64)
    rows = np.flatnonzero((slot >= 0) & ((np.asarray(packets["tcp_flags"]) & TCP_SYN) != 0))
    if len(rows) < 2:
        return counts
    slots, ts, seq = slot[rows], np.asarray(packets["ts_ns"], dtype=np.int64)[rows], np.asarray(packets["seq"])[rows]
    order = np.lexsort((ts, slots))
    slots, ts, seq = slots[order], ts[order], seq[order]
    again = (slots[1:] == slots[:-1]) & (seq[1:] == seq[:-1]) & (ts[1:] - ts[:-1] >= HANDSHAKE_REPEAT_MIN_NS)
    return counts + np.bincount(slots[1:][again], minlength=n_slots)


def _delivered_after_last_send(
    is_sender_mode: np.ndarray,
    acked_bytes: np.ndarray,
    seen_bytes: np.ndarray,
    end_of_acked_ns: np.ndarray,
    last_data_ns: np.ndarray,
) -> np.ndarray:
    """Per row: at the sender, whether delivery ended after the last data left: the receiver
    acknowledged all of it (a connection closed after its data: nothing left in flight), and
    its last ACK of data, less the path's shortest round trip, comes after the last data was
    sent. The last data waited that long in the bottleneck's queue: a short connection's span
    read from sending times alone (first to last data sent) missed it, 8% of a 16 ms connection
    at 100 Mbit/s (1.2 ms of queue), against the receiver's own span."""
    return is_sender_mode & (acked_bytes > 0) & (acked_bytes >= seen_bytes) & (end_of_acked_ns > last_data_ns)


def _ack_way_back_bound_ns(path_min_rtt_ns: np.ndarray, handshake_ns: np.ndarray) -> np.ndarray:
    """Per row: how long an ACK took at most from the receiver back to the sender, 0 unknown:
    the shorter of the data's shortest round trip and the handshake's. A data segment's round
    trip also holds its own way out (its serialization at the bottleneck, a TSO burst split
    there: 0.3 ms of a 0.32 ms floor at 100 Mbit/s, against 0.02 ms for the handshake), which
    the ACK's way back does not."""
    both = (path_min_rtt_ns > 0) & (handshake_ns > 0)
    return np.where(both, np.minimum(path_min_rtt_ns, handshake_ns), path_min_rtt_ns)


def _handshake_rtt_us(stats: np.ndarray, n_slots: int) -> np.ndarray:
    """Per slot: the RTT the handshake shows at this capture point (the longer
    leg: SYN -> SYN/ACK at the client, SYN/ACK -> ACK at the server), 0 unknown."""
    client_ns, server_ns = _handshake_legs_ns(stats, np.arange(n_slots))
    return np.where(client_ns >= 0, np.maximum(client_ns, server_ns) / 1000.0, 0.0)


def main_direction(directions: Directions) -> Optional[int]:
    """Row of the direction that carried the most payload (None when no data)."""
    if len(directions) == 0:
        return None
    return int(np.argmax(directions.table["payload_bytes"]))
