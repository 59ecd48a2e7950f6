"""Which retransmissions were needed: each copy of the data followed through the router.

The router sees every copy of the data twice: on its way in (the interface from the
sender: every copy that left the sender) and on its way out (the interface to the
receiver, after the random drops and the queue: every copy that passed). A retransmitted
segment was needed when no earlier copy of its bytes passed the router; otherwise it was
spurious (the receiver already had those bytes or had them on the way, and answers the
repeat with a D-SACK). Each segment is an MSS of the copy's payload (what TCP_INFO counts:
a GSO packet of k segments is k), so for every byte range, copies c1..cn of which ck passed
first give k-1 needed retransmissions and n-k spurious ones, and the copies lost are the
needed retransmissions plus the spurious copies dropped. Both identities tie this truth to
the hosts' own counters (`TransferTruth`): the sender's TCP_INFO total_retrans and the
segments that left the sender and never arrived.

Copies are taken in the order the sender sent them (TSval), which may differ from the order
they entered the router. A copy seen on the way out is matched to the copy on the way in that carried its bytes:
same TSval and (IPv4) an IP ID within the copy's run of IDs (GSO numbers its segments one
by one), seen in before it was seen out; of several, the latest not yet matched (the router
keeps the order of a connection's copies). The router may cut a GSO packet into segments
(its qdisc), so bytes are matched, not packets.
"""

from __future__ import annotations

import bisect
import ipaddress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

SEQ_SPACE = 1 << 32
HALF_SEQ_SPACE = 1 << 31
IP_ID_SPACE = 1 << 16
TCP_PROTOCOL = 6
TCP_SYN, TCP_RST = 0x002, 0x004
DECODE_IP_ID_VALID = 0x40  # decode.h: the IPv4 ID field is there
# Ingress and egress copies of one packet come from one clock; a forwarded copy is stamped
# out after it was stamped in. Slack for two capture sockets stamping the same instant.
STAMP_SLACK_NS = 1_000


@dataclass
class Copies:
    """The data copies of one connection seen at one point, in capture order.

    lo/hi: sequence range unwrapped to 64 bits against one base per connection (the same
    base at every point, so ranges compare across points); ip_id -1 where there is none."""

    ts_ns: np.ndarray
    seq: np.ndarray  # as on the wire
    lo: np.ndarray
    hi: np.ndarray
    tsval: np.ndarray
    ip_id: np.ndarray

    def __len__(self) -> int:
        return len(self.ts_ns)


@dataclass
class RetransmittedCopy:
    """One copy that repeated bytes sent before, as it left the sender (its headers identify
    it in any capture on the way), and what its segments were."""

    port: int
    seq: int  # as on the wire
    payload_bytes: int
    tsval: int
    ip_id: int  # -1: none (IPv6)
    ts_ns: int  # seen entering the router
    segments: int
    needed_segments: int  # some byte no earlier copy had carried past the router
    passed: bool  # this copy passed the router (whole)


@dataclass
class ConnectionRetransmissions:
    """The fate of one connection's copies, in segments."""

    port: int
    sent_segments: int = 0  # every copy that entered the router
    retransmitted_segments: int = 0
    needed: int = 0
    spurious: int = 0
    spurious_dropped: int = 0  # spurious copies the router dropped too (lost, not needed)
    lost_segments: int = 0  # copies that entered the router and did not pass it
    undelivered_segments: int = 0  # bytes no copy carried past the router (at the end)
    copies: List[RetransmittedCopy] = field(default_factory=list)


def unwrap(seq: np.ndarray, base: int) -> np.ndarray:
    """Sequence numbers as 64-bit offsets from `base`, each against the highest before it."""
    out = np.empty(len(seq), dtype=np.int64)
    high = 0
    for j, value in enumerate(seq.tolist()):
        delta = (value - (base + high)) % SEQ_SPACE
        if delta >= HALF_SEQ_SPACE:
            delta -= SEQ_SPACE
        out[j] = high + delta
        high = max(high, out[j])
    return out


def address_bytes(address: str) -> bytes:
    """The packet table's 16-byte form of `address` (IPv4-mapped for IPv4)."""
    parsed = ipaddress.ip_address(address)
    if parsed.version == 4:
        return b"\x00" * 10 + b"\xff\xff" + parsed.packed
    return parsed.packed


def client_side_ports(packets, client_ports: Sequence[int]) -> np.ndarray:
    """Each row's port at the client's end of its connection: its source port where that is one of
    `client_ports` (the client's data), else its destination port (the server's data to the
    client, the way back of iperf3 --bidir)."""
    sport, dport = np.asarray(packets["sport"]), np.asarray(packets["dport"])
    return np.where(np.isin(sport, np.asarray(list(client_ports), dtype=np.int64)), sport, dport)


def sender_data_rows(packets, sender_address: str, client_ports: Sequence[int]) -> np.ndarray:
    """Rows of the sender's data on the data connections: from the sender, a client port at either
    end (the sender is the client, or the server of the way back), payload, no SYN or RST."""
    src = np.ascontiguousarray(packets["src_addr"]).view(np.dtype((np.void, 16))).ravel()
    from_sender = src == np.frombuffer(address_bytes(sender_address), dtype=np.dtype((np.void, 16)))[0]
    ports = np.isin(client_side_ports(packets, client_ports), np.asarray(list(client_ports), dtype=np.int64))
    flags = np.asarray(packets["tcp_flags"])
    return (
        from_sender
        & ports
        & (np.asarray(packets["ip_proto"]) == TCP_PROTOCOL)
        & (np.asarray(packets["tcp_payload_len"]) > 0)
        & ((flags & (TCP_SYN | TCP_RST)) == 0)
    )


def data_copies(
    packets, rows: np.ndarray, bases: Optional[Dict[int, int]] = None, client_ports: Sequence[int] = ()
) -> Dict[int, Copies]:
    """`{client port: Copies}` of the rows `rows` (a mask of `sender_data_rows`).

    `bases`: each port's sequence base (the first data copy's sequence number on the way
    in); a port missing from it gets its first copy here, and `bases` is updated.
    `client_ports`: where the data is the server's (the way back of iperf3 --bidir), its
    connections are told apart by the client's port (`client_side_ports`)."""
    bases = {} if bases is None else bases
    sport = client_side_ports(packets, client_ports) if client_ports else np.asarray(packets["sport"])
    out: Dict[int, Copies] = {}
    for port in np.unique(sport[rows]).tolist():
        index = np.flatnonzero(rows & (sport == port))
        seq = np.asarray(packets["seq"])[index].astype(np.int64)
        base = bases.setdefault(int(port), int(seq[0]))
        lo = unwrap(seq, base)
        length = np.asarray(packets["tcp_payload_len"])[index].astype(np.int64)
        id_valid = (np.asarray(packets["decode_flags"])[index] & DECODE_IP_ID_VALID) != 0
        out[int(port)] = Copies(
            ts_ns=np.asarray(packets["ts_ns"])[index].astype(np.int64),
            seq=seq,
            lo=lo,
            hi=lo + length,
            tsval=np.asarray(packets["opt_tsval"])[index].astype(np.int64),
            ip_id=np.where(id_valid, np.asarray(packets["ip_id"])[index].astype(np.int64), -1),
        )
    return out


class ByteRanges:
    """A set of byte ranges [lo, hi), kept merged and sorted."""

    def __init__(self) -> None:
        self.starts: List[int] = []
        self.ends: List[int] = []

    def add(self, lo: int, hi: int) -> None:
        if hi <= lo:
            return
        # every range touching [lo, hi) merges into it
        first = bisect.bisect_left(self.ends, lo)
        last = bisect.bisect_right(self.starts, hi)
        if first < last:
            lo = min(lo, self.starts[first])
            hi = max(hi, self.ends[last - 1])
        self.starts[first:last] = [lo]
        self.ends[first:last] = [hi]

    def covers(self, lo: int, hi: int) -> bool:
        k = bisect.bisect_right(self.starts, lo) - 1
        return k >= 0 and self.ends[k] >= hi

    def overlaps(self, lo: int, hi: int) -> bool:
        k = bisect.bisect_right(self.ends, lo)
        return k < len(self.starts) and self.starts[k] < hi

    def total(self) -> int:
        return sum(e - s for s, e in zip(self.starts, self.ends))


def segments_in(lo: int, hi: int, mss: int) -> List[Tuple[int, int]]:
    """A copy's segments: its payload cut every `mss` bytes from its first byte."""
    return [(s, min(hi, s + mss)) for s in range(lo, hi, mss)]


def passed_ranges(way_in: Copies, way_out: Copies, mss: int) -> Tuple[List[ByteRanges], int]:
    """Per copy on the way in, the bytes of it seen on the way out; and how many copies on
    the way out matched none (a capture that missed the copy on the way in)."""
    passed = [ByteRanges() for _ in range(len(way_in))]
    by_tsval: Dict[int, List[int]] = {}
    for j, value in enumerate(way_in.tsval.tolist()):
        by_tsval.setdefault(value, []).append(j)
    in_ts, in_lo, in_hi, in_id = (way_in.ts_ns.tolist(), way_in.lo.tolist(), way_in.hi.tolist(), way_in.ip_id.tolist())
    # each TSval's copies' times, once: a sender without timestamps puts every copy under one key
    times_of = {value: [in_ts[j] for j in candidates] for value, candidates in by_tsval.items()}
    unmatched = 0
    for ts, lo, hi, tsval, ip_id in zip(
        way_out.ts_ns.tolist(), way_out.lo.tolist(), way_out.hi.tolist(), way_out.tsval.tolist(), way_out.ip_id.tolist()
    ):
        candidates = by_tsval.get(tsval, [])
        # the latest copy in, in before this one came out, carrying its bytes and not yet matched
        k = bisect.bisect_right(times_of.get(tsval, []), ts + STAMP_SLACK_NS)
        for j in (candidates[n] for n in range(k - 1, -1, -1)):  # no copy of the list: it may hold every copy
            if not (in_lo[j] <= lo and hi <= in_hi[j]):
                continue
            if ip_id >= 0 and in_id[j] >= 0:
                run = max(1, -(-(in_hi[j] - in_lo[j]) // mss))
                if (ip_id - in_id[j]) % IP_ID_SPACE >= run:
                    continue
            if passed[j].overlaps(lo, hi):
                continue
            passed[j].add(lo, hi)
            break
        else:
            unmatched += 1
    return passed, unmatched


def sending_order(way_in: Copies) -> np.ndarray:
    """The copies' indices in the order the sender sent them: by TSval (unwrapped against the
    first), ties in the order they entered the router. The two orders differ when the path to
    the router reorders (a veth hands packets to per-CPU backlogs: on a busy 2-core host a
    sender's original reached the router 0.3 ms after its repeat, sent 4 ticks later)."""
    if len(way_in) == 0:
        return np.zeros(0, dtype=np.int64)
    tsval = way_in.tsval.astype(np.int64)
    tsval_rel = (tsval - tsval[0] + HALF_SEQ_SPACE) % SEQ_SPACE - HALF_SEQ_SPACE
    return np.argsort(tsval_rel, kind="stable")


def connection_retransmissions(
    port: int, way_in: Copies, passed: List[ByteRanges], mss: int
) -> ConnectionRetransmissions:
    """Every copy's segments in the order the sender sent them: first copies, needed
    retransmissions, spurious ones (some of them dropped as well), and what was lost."""
    fate = ConnectionRetransmissions(port)
    seen, delivered = ByteRanges(), ByteRanges()
    for j in sending_order(way_in).tolist():
        lo, hi = int(way_in.lo[j]), int(way_in.hi[j])
        segments = needed = 0
        copy_passed = passed[j].covers(lo, hi)
        for s, e in segments_in(lo, hi, mss):
            fate.sent_segments += 1
            segment_passed = passed[j].covers(s, e)
            if not segment_passed:
                fate.lost_segments += 1
            if not seen.overlaps(s, e):
                continue
            segments += 1
            if delivered.covers(s, e):
                fate.spurious += 1
                fate.spurious_dropped += not segment_passed
            else:
                needed += 1
                fate.needed += 1
        fate.retransmitted_segments += segments
        if segments:
            fate.copies.append(
                RetransmittedCopy(
                    port=port,
                    seq=int(way_in.seq[j]),
                    payload_bytes=hi - lo,
                    tsval=int(way_in.tsval[j]),
                    ip_id=int(way_in.ip_id[j]),
                    ts_ns=int(way_in.ts_ns[j]),
                    segments=segments,
                    needed_segments=needed,
                    passed=copy_passed,
                )
            )
        seen.add(lo, hi)
        for s, e in zip(passed[j].starts, passed[j].ends):
            delivered.add(s, e)
    fate.undelivered_segments = -(-(seen.total() - delivered.total()) // mss)
    return fate


@dataclass
class RetransmissionTruth:
    """Every connection's retransmissions, needed or spurious, from the router's two sides."""

    source: str  # which captures: "router-in+router-out" or "router-any"
    mss_bytes: int
    connections: List[ConnectionRetransmissions]
    unmatched_out_copies: int  # copies seen out and never in: the truth is incomplete

    def total(self, name: str) -> int:
        return sum(getattr(c, name) for c in self.connections)

    def summary(self) -> Dict[str, int]:
        """Totals over the connections, in segments."""
        names = (
            "sent_segments",
            "retransmitted_segments",
            "needed",
            "spurious",
            "spurious_dropped",
            "lost_segments",
            "undelivered_segments",
        )
        totals = {name: self.total(name) for name in names}
        totals["unmatched_out_copies"] = self.unmatched_out_copies
        return totals


def interfaces_of_router_any(packets, rows: np.ndarray) -> Tuple[int, int]:
    """(way in, way out) interface of a router's `-i any` capture: the first copy of the
    sender's data is seen coming in before it is seen going out."""
    interface = np.asarray(packets["interface"])[rows]
    if len(interface) == 0:
        return -1, -1
    way_in = int(interface[0])
    others = np.unique(interface[interface != way_in])
    return way_in, int(others[0]) if len(others) else -1


def retransmission_truth(
    captures: Dict[str, Path], sender_address: str, client_ports: Sequence[int], mss: int
) -> Optional[RetransmissionTruth]:
    """The truth from `router-in` and `router-out` (`{vantage: pcap}`), else `router-any`;
    None when neither is there."""
    from .. import read

    if "router-in" in captures and "router-out" in captures:
        source = "router-in+router-out"
        packets_in = read(captures["router-in"]).packets
        packets_out = read(captures["router-out"]).packets
        rows_in = sender_data_rows(packets_in, sender_address, client_ports)
        rows_out = sender_data_rows(packets_out, sender_address, client_ports)
    elif "router-any" in captures:
        source = "router-any"
        packets_in = packets_out = read(captures["router-any"]).packets
        rows = sender_data_rows(packets_in, sender_address, client_ports)
        way_in, way_out = interfaces_of_router_any(packets_in, rows)
        interface = np.asarray(packets_in["interface"])
        rows_in, rows_out = rows & (interface == way_in), rows & (interface == way_out)
    else:
        return None
    bases: Dict[int, int] = {}
    copies_in = data_copies(packets_in, rows_in, bases, client_ports)
    copies_out = data_copies(packets_out, rows_out, bases, client_ports)
    connections, unmatched = [], 0
    for port, way_in_copies in sorted(copies_in.items()):
        empty = Copies(*(np.zeros(0, dtype=np.int64) for _ in range(6)))
        passed, missed = passed_ranges(way_in_copies, copies_out.get(port, empty), mss)
        unmatched += missed
        connections.append(connection_retransmissions(port, way_in_copies, passed, mss))
    unmatched += sum(len(c) for port, c in copies_out.items() if port not in copies_in)
    return RetransmissionTruth(source, mss, connections, unmatched)
