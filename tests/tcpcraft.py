"""Craft TCP conversations as packet tables (and as pcap files, for tshark) in tests.

    conv = Conversation()                       # client 10.0.0.1:40000 <-> server 10.0.0.2:80
    conv.handshake(wscale=(7, 7))               # SYN, SYN/ACK, ACK at 0, 1, 2 ms
    conv.client(seq=1, length=1000, at_ms=10)   # relative sequence numbers (ISN + n)
    conv.server(ack=1001, at_ms=20)
    table = conv.packets()                      # {column: numpy array}, columns.py's contract
    data = conv.pcap()                          # the same frames as a classic pcap (needs tests/pcapbuild.py)

Sequence and ACK numbers passed to `client`/`server` are relative to each side's ISN (the
SYN's seq is relative 0), so wraparound is tested by choosing an ISN near 2^32. Each call
returns the 0-based frame index. Times are milliseconds after `t0_ns` unless `at_ns` is given.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

FLAG_BITS = {"F": 0x01, "S": 0x02, "R": 0x04, "P": 0x08, "A": 0x10, "U": 0x20, "E": 0x40, "C": 0x80}
DECODE_IP_FRAGMENT = 1 << 1
DECODE_IN_ICMP_ERROR = 1 << 2
T0_NS = 1_700_000_000 * 1_000_000_000


def mapped_address(text: str) -> np.ndarray:
    """16-byte address as the packet table stores it (IPv4-mapped for IPv4)."""
    ip = ipaddress.ip_address(text)
    if ip.version == 4:
        ip = ipaddress.IPv6Address("::ffff:" + text)
    return np.frombuffer(ip.packed, dtype=np.uint8)


@dataclass
class Frame:
    """One crafted TCP frame (raw 32-bit seq/ack)."""

    ts_ns: int
    src: str
    sport: int
    dst: str
    dport: int
    seq: int
    ack: int
    flags: str
    length: int = 0
    window: int = 65535
    mss: int = 0
    wscale: int = -1
    sack_permitted: bool = False
    timestamps: Optional[Tuple[int, int]] = None
    sack: Sequence[Tuple[int, int]] = ()
    decode_flags: int = 0
    snaplen: Optional[int] = None  # captured bytes of the IP packet (None = all)

    @property
    def flag_bits(self) -> int:
        return sum(FLAG_BITS[c] for c in self.flags)


def packet_table(frames: Sequence[Frame]) -> Dict[str, np.ndarray]:
    """The frames as a packet table with every column of `spline_analysis._core.columns`."""
    n = len(frames)

    options_len = [
        (4 if f.mss else 0)
        + (4 if f.wscale >= 0 else 0)
        + (4 if f.sack_permitted else 0)
        + (12 if f.timestamps else 0)
        + ((2 + 8 * len(f.sack) + 2) if f.sack else 0)
        for f in frames
    ]
    header_len = [20 + ((x + 3) // 4) * 4 for x in options_len]
    ip_version = [6 if ":" in f.src else 4 for f in frames]
    ip_header = [40 if v == 6 else 20 for v in ip_version]
    table: Dict[str, np.ndarray] = {
        "ts_ns": np.array([f.ts_ns for f in frames], dtype=np.int64),
        "frame_len": np.array(
            [14 + ih + hl + f.length for f, ih, hl in zip(frames, ip_header, header_len)], dtype=np.uint32
        ),
        "interface": np.zeros(n, dtype=np.uint16),
        "link_type": np.ones(n, dtype=np.uint16),
        "decode_flags": np.array([f.decode_flags for f in frames], dtype=np.uint8),
        "ip_version": np.array(ip_version, dtype=np.uint8),
        "src_addr": np.array([mapped_address(f.src) for f in frames], dtype=np.uint8).reshape(n, 16),
        "dst_addr": np.array([mapped_address(f.dst) for f in frames], dtype=np.uint8).reshape(n, 16),
        "ip_id": np.arange(n, dtype=np.uint32),
        "ttl": np.full(n, 64, dtype=np.uint8),
        "ip_proto": np.full(n, 6, dtype=np.uint8),
        "ip_payload_len": np.array([hl + f.length for f, hl in zip(frames, header_len)], dtype=np.uint32),
        "sport": np.array([f.sport for f in frames], dtype=np.uint16),
        "dport": np.array([f.dport for f in frames], dtype=np.uint16),
        "seq": np.array([f.seq & 0xFFFFFFFF for f in frames], dtype=np.uint32),
        "ack": np.array([f.ack & 0xFFFFFFFF for f in frames], dtype=np.uint32),
        "tcp_flags": np.array([f.flag_bits for f in frames], dtype=np.uint16),
        "window": np.array([f.window for f in frames], dtype=np.uint16),
        "tcp_header_len": np.array(header_len, dtype=np.uint8),
        "tcp_payload_len": np.array([f.length for f in frames], dtype=np.uint32),
        "opt_mss": np.array([f.mss for f in frames], dtype=np.uint16),
        "opt_wscale": np.array([f.wscale for f in frames], dtype=np.int8),
        "opt_sack_permitted": np.array([f.sack_permitted for f in frames], dtype=bool),
        "opt_has_ts": np.array([f.timestamps is not None for f in frames], dtype=bool),
        "opt_tsval": np.array([(f.timestamps or (0, 0))[0] for f in frames], dtype=np.uint32),
        "opt_tsecr": np.array([(f.timestamps or (0, 0))[1] for f in frames], dtype=np.uint32),
        "sack_count": np.array([len(f.sack) for f in frames], dtype=np.uint8),
        "sack_left": np.zeros((n, 4), dtype=np.uint32),
        "sack_right": np.zeros((n, 4), dtype=np.uint32),
    }
    for i, f in enumerate(frames):
        for k, (left, right) in enumerate(f.sack[:4]):
            table["sack_left"][i, k] = left & 0xFFFFFFFF
            table["sack_right"][i, k] = right & 0xFFFFFFFF
    cap = [
        len_ if f.snaplen is None else min(len_, 14 + f.snaplen) for f, len_ in zip(frames, table["frame_len"].tolist())
    ]
    table["cap_len"] = np.array(cap, dtype=np.uint32)
    return table


def pcap_bytes(frames: Sequence[Frame]) -> bytes:
    """The frames as an Ethernet pcap (microsecond timestamps), built with tests/pcapbuild.py."""
    import pcapbuild as pb

    records = []
    for f in frames:
        options = pb.tcp_options(
            mss=f.mss or None,
            wscale=f.wscale if f.wscale >= 0 else None,
            sack_permitted=f.sack_permitted,
            sack=[(l & 0xFFFFFFFF, r & 0xFFFFFFFF) for l, r in f.sack],
            ts=f.timestamps,
        )
        segment = pb.tcp(
            sport=f.sport,
            dport=f.dport,
            seq=f.seq,
            ack=f.ack,
            flags=f.flags,
            window=f.window,
            options=options,
            payload=b"\x00" * f.length,
        )
        if ":" in f.src:
            packet = pb.ipv6(f.src, f.dst, segment)
            frame = pb.ethernet(packet, ethertype=pb.ETHERTYPE_IPV6)
        else:
            packet = pb.ipv4(f.src, f.dst, segment)
            frame = pb.ethernet(packet)
        if f.snaplen is not None:
            records.append((f.ts_ns, frame[: 14 + f.snaplen], len(frame)))
        else:
            records.append((f.ts_ns, frame))
    return pb.pcap_file(records)


@dataclass
class Conversation:
    """Builder of one TCP connection's frames with relative sequence numbers."""

    client_addr: str = "10.0.0.1"
    client_port: int = 40000
    server_addr: str = "10.0.0.2"
    server_port: int = 80
    client_isn: int = 1000
    server_isn: int = 5000
    t0_ns: int = T0_NS
    frames: List[Frame] = field(default_factory=list)

    def _add(
        self,
        from_client: bool,
        seq: int,
        ack: Optional[int],
        flags: str,
        length: int,
        at_ms: Optional[float],
        at_ns: Optional[int],
        **kw,
    ) -> int:
        if at_ns is None:
            if at_ms is None:
                at_ns = (self.frames[-1].ts_ns + 1_000_000) if self.frames else self.t0_ns
            else:
                at_ns = self.t0_ns + int(round(at_ms * 1_000_000))
        own_isn, peer_isn = (self.client_isn, self.server_isn) if from_client else (self.server_isn, self.client_isn)
        if ack is None:
            raw_ack = 0
        else:
            raw_ack = peer_isn + ack
            if "A" not in flags:
                flags += "A"
        src, sport, dst, dport = (
            (self.client_addr, self.client_port, self.server_addr, self.server_port)
            if from_client
            else (self.server_addr, self.server_port, self.client_addr, self.client_port)
        )
        self.frames.append(
            Frame(
                ts_ns=at_ns,
                src=src,
                sport=sport,
                dst=dst,
                dport=dport,
                seq=(own_isn + seq) & 0xFFFFFFFF,
                ack=raw_ack & 0xFFFFFFFF,
                flags=flags,
                length=length,
                **kw,
            )
        )
        return len(self.frames) - 1

    def client(
        self,
        seq: int,
        ack: Optional[int] = None,
        flags: str = "",
        length: int = 0,
        at_ms: Optional[float] = None,
        at_ns: Optional[int] = None,
        **kw,
    ) -> int:
        """A frame from the client; seq/ack relative to the client's/server's ISN."""
        return self._add(True, seq, ack, flags, length, at_ms, at_ns, **kw)

    def server(
        self,
        seq: int,
        ack: Optional[int] = None,
        flags: str = "",
        length: int = 0,
        at_ms: Optional[float] = None,
        at_ns: Optional[int] = None,
        **kw,
    ) -> int:
        """A frame from the server; seq/ack relative to the server's/client's ISN."""
        return self._add(False, seq, ack, flags, length, at_ms, at_ns, **kw)

    def handshake(
        self,
        wscale: Tuple[int, int] = (-1, -1),
        mss: int = 1460,
        window: int = 65535,
        start_ms: float = 0.0,
        rtt_ms: float = 1.0,
        sack_permitted: bool = True,
    ) -> None:
        """SYN, SYN/ACK, ACK: client then server window-scale shifts (-1 = option absent)."""
        self.client(
            0, flags="S", at_ms=start_ms, mss=mss, wscale=wscale[0], sack_permitted=sack_permitted, window=window
        )
        self.server(
            0,
            ack=1,
            flags="S",
            at_ms=start_ms + rtt_ms / 2,
            mss=mss,
            wscale=wscale[1],
            sack_permitted=sack_permitted,
            window=window,
        )
        self.client(1, ack=1, at_ms=start_ms + rtt_ms, window=window)

    def packets(self) -> Dict[str, np.ndarray]:
        return packet_table(self.frames)

    def pcap(self) -> bytes:
        return pcap_bytes(self.frames)


def merge(*conversations: Conversation) -> List[Frame]:
    """Frames of several conversations in time order (stable)."""
    frames = [f for c in conversations for f in c.frames]
    return sorted(frames, key=lambda f: f.ts_ns)
