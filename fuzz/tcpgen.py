"""tcpgen.py -- seeded random TCP conversations for differential testing against tshark.

A conversation is plain data (`Conversation`: addresses, ports, ISNs, encapsulation and a list
of `Segment`s with sequence numbers relative to each side's ISN), so a shrunk difference can be
stored as JSON and rebuilt byte for byte. `generate(seed, index)` draws one from the seed alone:

    conv = generate(7, 123)                 # the 124th conversation of seed 7
    frames = link_frames(conv)              # [(ts_ns, frame bytes, original length)]
    link_type = LINK_TYPES[conv.link]       # one link type per file: group by it

What it draws from: a sender/receiver model with loss before and after the capture point,
ACK loss, reordering, duplication, retransmissions of every kind (RTO, fast after dup-ACKs,
TLP-like tail, spurious), gaps placed around tshark's thresholds (3 ms out-of-order, 20 ms
fast retransmission, the handshake RTT), window changes, zero windows with probes, keep-alives,
SACK and D-SACK blocks, timestamps, window scaling with and without a captured handshake, MSS,
MPTCP and unknown options, SYN/FIN/RST variants, retransmitted SYNs, port reuse, captures
starting mid-connection, sequence wrap, simultaneous open, clocks stepping back; carried over
Ethernet (VLAN, QinQ, PPPoE, PPPoE over QinQ, MPLS, GRE, trailers), SLL, SLL2 or raw IP, IPv4
or IPv6 with extension headers, with snaplen truncation.
"""

from __future__ import annotations

import random
import struct
import zlib
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import pcapbuild as pb  # noqa: E402

LINK_TYPES: Dict[str, int] = {
    "ethernet": pb.LINKTYPE_ETHERNET,
    "sll": pb.LINKTYPE_LINUX_SLL,
    "sll2": pb.LINKTYPE_LINUX_SLL2,
    "raw": pb.LINKTYPE_RAW,
}
ETHERNET_ENCAPSULATIONS = ("plain", "vlan", "qinq", "pppoe", "pppoe_qinq", "mpls", "gre")
T0_NS = 1_700_000_000 * 1_000_000_000
CONVERSATION_SPACING_NS = 1_000 * 1_000_000_000  # conversations of one file never overlap in time
MS = 1_000_000
MAX_OPTION_BYTES = 40


# One MPTCP option (kind 30) per subtype: MP_CAPABLE (SYN form), MP_JOIN (SYN form), DSS with a
# data ACK, ADD_ADDR (IPv4, no HMAC), REMOVE_ADDR, MP_PRIO, MP_FAIL, MP_FASTCLOSE.
MPTCP_OPTIONS: Dict[int, bytes] = {
    0: struct.pack("!BBBBQ", 30, 12, 0x01, 0x81, 0x1122334455667788),
    1: struct.pack("!BBBBII", 30, 12, 0x10, 0x01, 0x01020304, 0x05060708),
    2: struct.pack("!BBBBI", 30, 8, 0x20, 0x01, 0x01020304),
    3: struct.pack("!BBBB4s", 30, 8, 0x30, 0x01, bytes([192, 0, 2, 9])),
    4: struct.pack("!BBBB", 30, 4, 0x40, 0x01),
    5: struct.pack("!BBB", 30, 3, 0x50),
    6: struct.pack("!BBHQ", 30, 12, 0x6000, 1),
    7: struct.pack("!BBHQ", 30, 12, 0x7000, 0x1122334455667788),
}


@dataclass
class Segment:
    """One captured TCP frame. seq is relative to the sender's ISN (SYN = 0); ack relative to
    the peer's ISN (None = no ACK flag); sack blocks relative to the receiver's peer ISN."""

    t_ns: int
    client: bool
    seq: int
    ack: Optional[int]
    flags: str
    length: int = 0
    window: int = 65535
    mss: Optional[int] = None
    wscale: Optional[int] = None
    sack_permitted: bool = False
    ts: Optional[Tuple[int, int]] = None
    sack: List[Tuple[int, int]] = field(default_factory=list)
    mptcp: object = False  # True: MP_CAPABLE on SYNs, DSS otherwise; an int: that subtype
    unknown_option: bool = False


@dataclass
class Conversation:
    """A TCP conversation plus how it is carried; everything JSON-serialisable."""

    ip_version: int
    client_addr: str
    server_addr: str
    client_port: int
    server_port: int
    client_isn: int
    server_isn: int
    link: str = "ethernet"  # key of LINK_TYPES
    encapsulation: str = "plain"  # ETHERNET_ENCAPSULATIONS, for link == "ethernet"
    ipv6_extensions: int = 0  # hop-by-hop / destination options headers before TCP
    trailer: int = 0  # Ethernet trailer bytes after the IP packet
    snaplen: int = 0  # captured bytes per frame (0 = all)
    ip_length_zero: bool = False  # IPv4 total length 0, as TSO leaves it on the capturing host
    segments: List[Segment] = field(default_factory=list)

    def to_json(self) -> Dict:
        return asdict(self)

    @staticmethod
    def from_json(doc: Dict) -> "Conversation":
        doc = dict(doc)
        segs = [
            Segment(
                **{**s, "ts": tuple(s["ts"]) if s.get("ts") else None, "sack": [tuple(b) for b in s.get("sack", [])]}
            )
            for s in doc.pop("segments")
        ]
        return Conversation(**doc, segments=segs)


# ------------------------------------------------------------------ bytes


def _options(seg: Segment, conv: Conversation) -> bytes:
    own_isn, peer_isn = (conv.client_isn, conv.server_isn) if seg.client else (conv.server_isn, conv.client_isn)
    sack = [((peer_isn + l) & 0xFFFFFFFF, (peer_isn + r) & 0xFFFFFFFF) for l, r in seg.sack]
    raw = b""
    if seg.mptcp is not False and seg.mptcp is not None:
        subtype = seg.mptcp if seg.mptcp is not True else (0 if "S" in seg.flags else 2)
        option = MPTCP_OPTIONS[subtype]
        if subtype == 0:  # a key of this connection's own, or tshark joins connections by token
            key = (
                own_isn << 32 | (conv.client_port if seg.client else conv.server_port) << 16 | conv.server_port
            ) ^ zlib.crc32(conv.client_addr.encode())
            option = option[:4] + struct.pack("!Q", key & 0xFFFFFFFFFFFFFFFF)
        raw += option
    if seg.unknown_option:
        raw += b"\xfd\x06\x00\x00\x00\x00"  # experimental kind 253
    options = pb.tcp_options(
        mss=seg.mss, wscale=seg.wscale, sack_permitted=seg.sack_permitted, sack=sack, ts=seg.ts, raw=raw
    )
    while len(options) > MAX_OPTION_BYTES:  # the data offset field ends at 60 header bytes
        if raw:
            raw = b""
        else:
            sack = sack[:-1]
        options = pb.tcp_options(
            mss=seg.mss, wscale=seg.wscale, sack_permitted=seg.sack_permitted, sack=sack, ts=seg.ts, raw=raw
        )
    return options


def ip_packet(seg: Segment, conv: Conversation) -> bytes:
    own_isn, peer_isn = (conv.client_isn, conv.server_isn) if seg.client else (conv.server_isn, conv.client_isn)
    sport, dport = (conv.client_port, conv.server_port) if seg.client else (conv.server_port, conv.client_port)
    src, dst = (conv.client_addr, conv.server_addr) if seg.client else (conv.server_addr, conv.client_addr)
    payload = bytes((seg.seq + k) & 0xFF for k in range(seg.length))
    segment = pb.tcp(
        sport=sport,
        dport=dport,
        seq=(own_isn + seg.seq) & 0xFFFFFFFF,
        ack=((peer_isn + seg.ack) & 0xFFFFFFFF) if seg.ack is not None else 0,
        flags=seg.flags,
        window=seg.window,
        options=_options(seg, conv),
        payload=payload,
    )
    if conv.ip_version == 6:
        next_headers = [0, 60][: conv.ipv6_extensions]
        extensions = [
            (nh, pb.ipv6_extension(60 if k + 1 < len(next_headers) else 6)) for k, nh in enumerate(next_headers)
        ]
        return pb.ipv6(src, dst, segment, extensions=extensions) if extensions else pb.ipv6(src, dst, segment)
    packet = pb.ipv4(src, dst, segment)
    if conv.ip_length_zero:
        packet = packet[:2] + b"\x00\x00" + packet[4:]
    return packet


def _gre(packet: bytes, ethertype: int) -> bytes:
    return pb.ipv4("192.0.2.1", "192.0.2.2", struct.pack("!HH", 0, ethertype) + packet, proto=47)


def link_frame(packet: bytes, conv: Conversation) -> bytes:
    et = pb.ETHERTYPE_IPV6 if conv.ip_version == 6 else pb.ETHERTYPE_IPV4
    if conv.link == "sll":
        return pb.sll(packet, protocol=et)
    if conv.link == "sll2":
        return pb.sll2(packet, protocol=et)
    if conv.link == "raw":
        return packet
    ppp = 0x57 if conv.ip_version == 6 else 0x21
    enc = conv.encapsulation
    if enc == "vlan":
        frame = pb.ethernet(packet, ethertype=et, vlans=[0x8100])
    elif enc == "qinq":
        frame = pb.ethernet(packet, ethertype=et, vlans=[0x88A8, 0x8100])
    elif enc == "pppoe":
        frame = pb.ethernet(pb.pppoe_session(packet, ppp_protocol=ppp), ethertype=pb.ETHERTYPE_PPPOE_SESSION)
    elif enc == "pppoe_qinq":
        frame = pb.ethernet(
            pb.pppoe_session(packet, ppp_protocol=ppp), ethertype=pb.ETHERTYPE_PPPOE_SESSION, vlans=[0x88A8, 0x8100]
        )
    elif enc == "mpls":
        frame = pb.ethernet(pb.mpls(packet, labels=[16, 17]), ethertype=pb.ETHERTYPE_MPLS)
    elif enc == "gre":
        frame = pb.ethernet(_gre(packet, et))
    else:
        frame = pb.ethernet(packet, ethertype=et)
    return frame + bytes(conv.trailer)


def link_frames(conv: Conversation) -> List[Tuple[int, bytes, int]]:
    """(ts_ns, captured bytes, original length) per segment, in capture order."""
    out = []
    for seg in conv.segments:
        frame = link_frame(ip_packet(seg, conv), conv)
        captured = frame[: conv.snaplen] if conv.snaplen else frame
        out.append((seg.t_ns, captured, len(frame)))
    return out


def pcap_bytes(convs: List[Conversation], nanosecond: bool = True) -> bytes:
    """Conversations of one link type in one pcap, each shifted to its own time slot."""
    records = []
    for k, conv in enumerate(convs):
        for ts, data, orig in link_frames(conv):
            records.append((ts + k * CONVERSATION_SPACING_NS, data, orig))
    return pb.pcap_file(records, link_type=LINK_TYPES[convs[0].link], nanosecond=nanosecond)


# ------------------------------------------------------------------ the generator


class _Side:
    """One endpoint's sending state (relative sequence numbers)."""

    def __init__(self, client: bool, mss: int):
        self.client = client
        self.mss = mss
        self.snd_nxt = 1  # next new byte (after the SYN)
        self.sent: List[Tuple[int, int]] = []  # (seq, length) of data sent, in order
        self.received: List[Tuple[int, int]] = []  # ranges of the peer's data that arrived
        self.rcv_nxt = 1  # cumulative ACK for the peer's data
        self.window = 65535
        self.fin_sent = False
        self.tsval = 0

    def receive(self, seq: int, length: int) -> None:
        if length <= 0:
            return
        self.received.append((seq, seq + length))
        self.received.sort()
        merged: List[Tuple[int, int]] = []
        for l, r in self.received:
            if merged and l <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(merged[-1][1], r))
            else:
                merged.append((l, r))
        self.received = merged
        for l, r in merged:
            if l <= self.rcv_nxt < r or l == self.rcv_nxt:
                self.rcv_nxt = max(self.rcv_nxt, r)

    def sack_blocks(self, dsack: Optional[Tuple[int, int]] = None) -> List[Tuple[int, int]]:
        blocks = [(l, r) for l, r in self.received if l > self.rcv_nxt][-3:]
        if dsack:
            blocks = [dsack] + blocks[:2]
        return blocks


def _gap_ns(rng: random.Random, rtt_ns: int) -> int:
    """Inter-frame gaps: mostly short, often right at one of tshark's thresholds."""
    choice = rng.random()
    if choice < 0.35:
        return rng.randint(1_000, 400_000)
    if choice < 0.55:
        return rng.choice([3 * MS, 20 * MS, rtt_ns]) + rng.choice([-1000, -1, 0, 1, 1000])
    if choice < 0.75:
        return rng.randint(0, 3 * rtt_ns + MS)
    if choice < 0.9:
        return rng.choice([0, 1, 1000])
    return rng.randint(20 * MS, 400 * MS)


def generate(seed: int, index: int) -> Conversation:
    """The `index`-th conversation of `seed` (reproducible from the two alone)."""
    rng = random.Random(f"tcpgen:{seed}:{index}")
    v6 = rng.random() < 0.3
    slot = index % 60000
    client_addr = f"2001:db8:{slot >> 8:x}:{slot & 0xFF:x}::1" if v6 else f"10.{slot >> 8 & 0xFF}.{slot & 0xFF}.1"
    server_addr = "2001:db8:ffff::2" if v6 else "10.255.0.2"
    isn_choice = lambda: rng.choice([rng.randint(0, 0xFFFFFFFF), 0xFFFFFFFF - rng.randint(0, 20000), 0, 1])  # noqa: E731
    link = rng.choices(list(LINK_TYPES), weights=[70, 10, 10, 10])[0]
    conv = Conversation(
        ip_version=6 if v6 else 4,
        client_addr=client_addr,
        server_addr=server_addr,
        client_port=rng.randint(1024, 65535),
        server_port=rng.choice([80, 443, 5201, 2049, 22, rng.randint(1, 65535)]),
        client_isn=isn_choice(),
        server_isn=isn_choice(),
        link=link,
        encapsulation=rng.choice(ETHERNET_ENCAPSULATIONS) if link == "ethernet" else "plain",
        ipv6_extensions=rng.choice([0, 0, 1, 2]) if v6 else 0,
        trailer=rng.choice([0, 0, 0, 4, 36]) if link == "ethernet" else 0,
        snaplen=rng.choice([0] * 6 + [54, 60, 64, 68, 74, 80, 96, 128]),
    )
    conv.ip_length_zero = not v6 and rng.random() < 0.1
    _Builder(rng, conv).run()
    return conv


class _Builder:
    """Writes one conversation's segments into conv.segments."""

    def __init__(self, rng: random.Random, conv: Conversation):
        self.rng = rng
        self.conv = conv
        self.t = T0_NS + rng.randint(0, 10**9)
        self.rtt_ns = int(rng.choice([0.05, 0.3, 1, 2.9, 3, 3.1, 10, 19, 21, 40, 120]) * MS) + rng.randint(0, 1000)
        self.use_ts = rng.random() < 0.6
        self.use_sack = rng.random() < 0.6
        self.mptcp = rng.random() < 0.15
        self.unknown = rng.random() < 0.1
        mss = rng.choice([536, 1000, 1448, 1460, rng.randint(1, 1460)])
        self.c = _Side(True, mss)
        self.s = _Side(False, rng.choice([mss, 1460]))
        self.wscale = (rng.choice([None, 0, 2, 7, 14, 15]), rng.choice([None, 0, 7, 9, 14]))
        self.pending: List[Segment] = []  # data frames "in the network" towards the receiver

    # -- emitting
    def tick(self) -> int:
        self.t += _gap_ns(self.rng, self.rtt_ns)
        if self.rng.random() < 0.01:
            self.t -= self.rng.randint(1, 5 * MS)  # a clock stepping back
        return self.t

    def emit(self, side: _Side, seq: int, ack: Optional[int], flags: str, length: int = 0, **kw) -> Segment:
        peer = self.s if side.client else self.c
        if self.use_ts and "ts" not in kw:
            side.tsval += self.rng.choice([0, 1, 1, 2])
            kw["ts"] = (side.tsval & 0xFFFFFFFF, peer.tsval & 0xFFFFFFFF)
        if self.mptcp and self.rng.random() < 0.7:
            kw["mptcp"] = True
        if self.unknown and self.rng.random() < 0.3:
            kw["unknown_option"] = True
        kw.setdefault("window", side.window)
        seg = Segment(t_ns=self.tick(), client=side.client, seq=seq, ack=ack, flags=flags, length=length, **kw)
        self.conv.segments.append(seg)
        return seg

    # -- phases
    def handshake(self) -> None:
        rng = self.rng
        syn_kw = dict(
            mss=self.c.mss if rng.random() < 0.9 else None, wscale=self.wscale[0], sack_permitted=self.use_sack
        )
        if rng.random() < 0.05:  # simultaneous open
            self.emit(self.c, 0, None, "S", **syn_kw)
            self.emit(self.s, 0, None, "S", mss=self.s.mss, wscale=self.wscale[1], sack_permitted=self.use_sack)
            self.emit(self.c, 0, 1, "SA", **syn_kw)
            self.emit(self.s, 0, 1, "SA", mss=self.s.mss, wscale=self.wscale[1], sack_permitted=self.use_sack)
            return
        for _ in range(rng.choice([1, 1, 1, 2, 3])):  # retransmitted SYNs
            self.emit(self.c, 0, None, "S" + ("EC" if rng.random() < 0.1 else ""), **syn_kw)
            self.t += rng.choice([0, MS, 1000 * MS])
        if rng.random() < 0.05:
            self.emit(self.s, 0, 1, "RA")  # refused, then tried again
            self.emit(self.c, 0, None, "S", **syn_kw)
        for _ in range(rng.choice([1, 1, 1, 2])):
            self.emit(
                self.s,
                0,
                1,
                "SA",
                mss=self.s.mss if rng.random() < 0.9 else None,
                wscale=self.wscale[1],
                sack_permitted=self.use_sack,
            )
        if rng.random() < 0.9:
            self.emit(self.c, 1, 1, "A")

    def deliver(self, seg: Segment, receiver: _Side) -> None:
        receiver.receive(seg.seq, seg.length + (1 if "F" in seg.flags else 0))

    def send_data(
        self,
        side: _Side,
        seq: Optional[int] = None,
        length: Optional[int] = None,
        lose_before: bool = False,
        lose_after: bool = False,
    ) -> None:
        peer = self.s if side.client else self.c
        new = seq is None
        if new:
            seq = side.snd_nxt
            length = self.rng.choice([side.mss, side.mss, side.mss, self.rng.randint(1, side.mss), 1])
            side.snd_nxt += length
            side.sent.append((seq, length))
        seg_kw = {}
        if lose_before:
            # sent but not captured: the receiver may still get it
            if not lose_after:
                peer.receive(seq, length)
            return
        seg = self.emit(side, seq, side.rcv_nxt, "PA" if self.rng.random() < 0.5 else "A", length, **seg_kw)
        if not lose_after:
            self.deliver(seg, peer)

    def send_ack(self, side: _Side, dsack: Optional[Tuple[int, int]] = None, lost: bool = False) -> None:
        sack = side.sack_blocks(dsack) if self.use_sack else []
        if lost:
            return
        self.emit(side, side.snd_nxt, side.rcv_nxt, "A", sack=sack)

    def data_phase(self, steps: int) -> None:
        rng = self.rng
        bidir = rng.random() < 0.3
        for _ in range(steps):
            sender = self.s if (bidir and rng.random() < 0.3) else self.c
            receiver = self.s if sender is self.c else self.c
            r = rng.random()
            if r < 0.35:
                loss = rng.random()
                self.send_data(sender, lose_before=loss < 0.04, lose_after=0.04 <= loss < 0.12)
            elif r < 0.55:
                self.send_ack(receiver, lost=rng.random() < 0.08)
            elif r < 0.62:  # retransmission of the first unacked, a tail or an acked segment
                cands = sender.sent
                if cands:
                    kind = rng.random()
                    if kind < 0.5:
                        una = [s for s in cands if s[0] + s[1] > receiver.rcv_nxt] or cands
                        seq, length = una[0]
                    elif kind < 0.75:
                        seq, length = cands[-1]
                    else:
                        seq, length = rng.choice(cands)
                    if rng.random() < 0.2 and length > 1:  # repacketised
                        length = rng.randint(1, length)
                    dup = receiver.rcv_nxt >= seq + length
                    self.send_data(sender, seq=seq, length=length, lose_after=rng.random() < 0.1)
                    if dup and self.use_sack and rng.random() < 0.7:
                        self.send_ack(receiver, dsack=(seq, seq + length))
            elif r < 0.67:  # dup ACKs burst
                for _ in range(rng.choice([1, 2, 3, 4])):
                    self.send_ack(receiver)
            elif r < 0.71 and self.conv.segments:  # duplicated frame in the capture
                last = self.conv.segments[-1]
                copy = Segment(**{**asdict(last), "ts": last.ts, "sack": list(last.sack)})
                copy.t_ns = last.t_ns + rng.choice([0, 1000, 50_000])
                self.conv.segments.append(copy)
                self.t = max(self.t, copy.t_ns)
            elif r < 0.76 and len(self.conv.segments) >= 2:  # reordered in the capture
                a, b = self.conv.segments[-2], self.conv.segments[-1]
                self.conv.segments[-2], self.conv.segments[-1] = b, a
                if rng.random() < 0.7:
                    a.t_ns, b.t_ns = b.t_ns, a.t_ns
            elif r < 0.81:  # window change / zero window and probes
                w = rng.random()
                if w < 0.5:
                    receiver.window = 0
                    self.send_ack(receiver)
                    for _ in range(rng.choice([0, 1, 2])):
                        self.emit(sender, sender.snd_nxt, sender.rcv_nxt, "A", 1)
                        if rng.random() < 0.8:
                            self.send_ack(receiver)
                    receiver.window = rng.choice([1000, 65535, 512])
                    if rng.random() < 0.8:
                        self.send_ack(receiver)
                else:
                    receiver.window = rng.choice([0, 1, 100, 4096, 30000, 65535])
                    self.send_ack(receiver)
            elif r < 0.85:  # keep-alive and its ACK
                self.t += rng.choice([0, 1000 * MS])
                self.emit(sender, sender.snd_nxt - 1, sender.rcv_nxt, "A", rng.choice([0, 1]))
                if rng.random() < 0.8:
                    self.send_ack(receiver)
            elif r < 0.88:  # a window-full burst: exactly fill the receiver's window
                if receiver.window > 0 and receiver.rcv_nxt == sender.snd_nxt:
                    room = receiver.window << (self.wscale[1 if receiver is self.s else 0] or 0)
                    if 0 < room <= 20 * sender.mss:
                        while room > 0:
                            n = min(room, sender.mss)
                            sender.sent.append((sender.snd_nxt, n))
                            seg = self.emit(sender, sender.snd_nxt, sender.rcv_nxt, "A", n)
                            self.deliver(seg, receiver)
                            sender.snd_nxt += n
                            room -= n
            else:
                self.t += rng.choice([3 * MS, 20 * MS, self.rtt_ns, 200 * MS])

    def close(self) -> None:
        rng = self.rng
        r = rng.random()
        if r < 0.45:
            for side in [self.c, self.s] if rng.random() < 0.7 else [self.s, self.c]:
                peer = self.s if side is self.c else self.c
                length = rng.choice([0, 0, 0, 10])
                seg = self.emit(side, side.snd_nxt, side.rcv_nxt, "FA" if not length else "FPA", length)
                side.snd_nxt += length + 1
                self.deliver(seg, peer)
                if rng.random() < 0.2:
                    self.emit(side, seg.seq, seg.ack, seg.flags, length)  # retransmitted FIN
                self.send_ack(peer)
        elif r < 0.65:
            side = rng.choice([self.c, self.s])
            self.emit(
                side, side.snd_nxt, side.rcv_nxt if rng.random() < 0.7 else None, "RA" if rng.random() < 0.7 else "R"
            )

    def run(self) -> None:
        rng = self.rng
        mid_start = rng.random() < 0.15
        if not mid_start:
            self.handshake()
        else:
            for side in (self.c, self.s):
                side.snd_nxt = side.rcv_nxt = rng.randint(1, 10**6)
            self.c.rcv_nxt, self.s.rcv_nxt = self.s.snd_nxt, self.c.snd_nxt
        self.data_phase(rng.randint(3, 60))
        self.close()
        if rng.random() < 0.1:  # port reuse: a new connection on the same 4-tuple
            self.t += rng.choice([MS, 2000 * MS])
            shift = rng.randint(1, 2**31)
            self.conv.segments.extend(self._reused(shift))

    def _reused(self, shift: int) -> List[Segment]:
        """A short second connection whose ISNs are `shift` past the first's (same tuple)."""
        rng = self.rng
        t = self.t
        out = []
        for client, seq, ack, flags, length in [
            (True, 0, None, "S", 0),
            (False, 0, 1, "SA", 0),
            (True, 1, 1, "A", 0),
            (True, 1, 1, "PA", 100),
            (False, 1, 101, "A", 0),
            (True, 101, 1, "FA", 0),
            (False, 1, 102, "FA", 0),
            (True, 102, 2, "A", 0),
        ][: rng.randint(2, 8)]:
            t += rng.randint(1000, 2 * MS)
            out.append(
                Segment(
                    t_ns=t,
                    client=client,
                    seq=seq + shift,
                    ack=None if ack is None else ack + shift,
                    flags=flags,
                    length=length,
                    mss=1460 if "S" in flags else None,
                )
            )
        return out
