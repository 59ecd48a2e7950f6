"""Byte-level builder of capture files for tests: frames and pcap/pcapng containers.

Shared by every test suite (import it as `from pcapbuild import ...`; tests/
is on sys.path via conftest.py). Everything returns `bytes`; nothing
touches the network. Layers compose inside out:

    seg = tcp(sport=40000, dport=80, seq=1, flags="S", options=tcp_options(mss=1460, wscale=7))
    pkt = ipv4("10.0.0.1", "10.0.0.2", seg)                  # or ipv6(...)
    frame = ethernet(pkt, vlans=[0x8100, 0x88a8])           # or sll(pkt), sll2(pkt), null(pkt), ppp(pkt), raw
    data = pcap_file([(ts_ns, frame)], link_type=LINKTYPE_ETHERNET, nanosecond=True, big_endian=True)
    data = pcapng_file([Section(interfaces=[Interface(LINKTYPE_ETHERNET, tsresol=9)],
                                packets=[Packet(0, ts_ns, frame)], statistics=[Statistics(0, ts_ns, ifdrop=3)])])

Checksums are computed (IPv4 header, TCP/UDP over the pseudo-header) so
tshark and scapy see clean packets.
"""

from __future__ import annotations

import ipaddress
import struct
from dataclasses import dataclass, field
from typing import Iterable, List, Optional, Sequence, Tuple, Union

LINKTYPE_NULL = 0
LINKTYPE_ETHERNET = 1
LINKTYPE_PPP = 9
LINKTYPE_RAW_12 = 12
LINKTYPE_RAW_14 = 14
LINKTYPE_PPP_HDLC = 50
LINKTYPE_RAW = 101
LINKTYPE_C_HDLC = 104
LINKTYPE_LOOP = 108
LINKTYPE_LINUX_SLL = 113
LINKTYPE_IPV4 = 228
LINKTYPE_IPV6 = 229
LINKTYPE_LINUX_SLL2 = 276

ETHERTYPE_IPV4 = 0x0800
ETHERTYPE_IPV6 = 0x86DD
ETHERTYPE_VLAN = 0x8100
ETHERTYPE_QINQ = 0x88A8
ETHERTYPE_PPPOE_SESSION = 0x8864
ETHERTYPE_MPLS = 0x8847

TCP_FLAG_BITS = {"F": 0x01, "S": 0x02, "R": 0x04, "P": 0x08, "A": 0x10, "U": 0x20, "E": 0x40, "C": 0x80, "N": 0x100}


# ------------------------------------------------------------------ checksums and addresses


def internet_checksum(data: bytes) -> int:
    """RFC 1071 ones'-complement sum of 16-bit words."""
    if len(data) % 2:
        data += b"\x00"
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def _addr(text: str) -> bytes:
    return ipaddress.ip_address(text).packed


# ------------------------------------------------------------------ transport


def tcp_options(
    *,
    mss: Optional[int] = None,
    wscale: Optional[int] = None,
    sack_permitted: bool = False,
    sack: Sequence[Tuple[int, int]] = (),
    ts: Optional[Tuple[int, int]] = None,
    raw: bytes = b"",
) -> bytes:
    """TCP options in the usual Linux order, NOP-padded to a multiple of 4 bytes."""
    out = b""
    if mss is not None:
        out += struct.pack("!BBH", 2, 4, mss)
    if sack_permitted:
        out += b"\x01\x01\x04\x02"
    if ts is not None:
        out += (b"\x01\x01" if not sack_permitted else b"") + struct.pack("!BBII", 8, 10, ts[0], ts[1])
    if wscale is not None:
        out += struct.pack("!BBBB", 1, 3, 3, wscale)
    if sack:
        out += (
            b"\x01\x01" + struct.pack("!BB", 5, 2 + 8 * len(sack)) + b"".join(struct.pack("!II", l, r) for l, r in sack)
        )
    out += raw
    return out + b"\x01" * (-len(out) % 4)


def tcp(
    *,
    sport: int = 40000,
    dport: int = 80,
    seq: int = 0,
    ack: int = 0,
    flags: Union[str, int] = "A",
    window: int = 65535,
    options: bytes = b"",
    payload: bytes = b"",
    urgent: int = 0,
    data_offset_words: Optional[int] = None,
) -> bytes:
    """A TCP header + payload (checksum 0; `ipv4`/`ipv6` fill it in). `flags` like "SA" or an int."""
    bits = flags if isinstance(flags, int) else sum(TCP_FLAG_BITS[c] for c in flags)
    if len(options) % 4:
        options += b"\x00" * (-len(options) % 4)
    words = data_offset_words if data_offset_words is not None else 5 + len(options) // 4
    header = struct.pack(
        "!HHIIBBHHH",
        sport,
        dport,
        seq & 0xFFFFFFFF,
        ack & 0xFFFFFFFF,
        (words << 4) | (bits >> 8),
        bits & 0xFF,
        window,
        0,
        urgent,
    )
    return header + options + payload


def udp(*, sport: int = 5353, dport: int = 5353, payload: bytes = b"") -> bytes:
    return struct.pack("!HHHH", sport, dport, 8 + len(payload), 0) + payload


def icmp_error(quoted: bytes, *, icmp_type: int = 3, code: int = 3) -> bytes:
    """ICMP (v4) error quoting the start of an IP packet (destination unreachable by default)."""
    body = struct.pack("!BBHI", icmp_type, code, 0, 0) + quoted
    return body[:2] + struct.pack("!H", internet_checksum(body)) + body[4:]


def icmpv6_error(quoted: bytes, *, icmp_type: int = 1, code: int = 4) -> bytes:
    """ICMPv6 error (checksum left 0) quoting an IPv6 packet."""
    return struct.pack("!BBHI", icmp_type, code, 0, 0) + quoted


def _fill_transport_checksum(proto: int, pseudo: bytes, segment: bytes) -> bytes:
    offset = {6: 16, 17: 6}.get(proto)
    if offset is None or len(segment) < offset + 2:
        return segment
    checksum = internet_checksum(pseudo + segment)
    return segment[:offset] + struct.pack("!H", checksum) + segment[offset + 2 :]


# ------------------------------------------------------------------ network


def ipv4(
    src: str,
    dst: str,
    payload: bytes,
    *,
    proto: int = 6,
    ttl: int = 64,
    ident: int = 0,
    dont_fragment: bool = True,
    more_fragments: bool = False,
    frag_offset_bytes: int = 0,
    options: bytes = b"",
    total_length: Optional[int] = None,
    tos: int = 0,
    checksum_payload: bool = True,
) -> bytes:
    """An IPv4 packet. `total_length` overrides the length field (0 = TSO-style)."""
    if len(options) % 4:
        options += b"\x00" * (-len(options) % 4)
    ihl = 5 + len(options) // 4
    length = ihl * 4 + len(payload) if total_length is None else total_length
    flags = (0x4000 if dont_fragment else 0) | (0x2000 if more_fragments else 0) | (frag_offset_bytes // 8)
    s, d = _addr(src), _addr(dst)
    if checksum_payload and frag_offset_bytes == 0 and not more_fragments:
        pseudo = s + d + struct.pack("!BBH", 0, proto, len(payload))
        payload = _fill_transport_checksum(proto, pseudo, payload)
    header = struct.pack("!BBHHHBBH4s4s", 0x40 | ihl, tos, length, ident, flags, ttl, proto, 0, s, d) + options
    header = header[:10] + struct.pack("!H", internet_checksum(header)) + header[12:]
    return header + payload


def ipv6_extension(next_header: int, body: bytes = b"\x00" * 6) -> bytes:
    """A generic extension header (hop-by-hop, routing, destination options): body padded to 8n-2."""
    body += b"\x00" * (-(len(body) + 2) % 8)
    return struct.pack("!BB", next_header, (len(body) + 2) // 8 - 1) + body


def ipv6_fragment_header(next_header: int, *, offset_bytes: int = 0, more: bool = False, ident: int = 1) -> bytes:
    return struct.pack("!BBHI", next_header, 0, (offset_bytes & 0xFFF8) | (1 if more else 0), ident)


def ipv6_ah(next_header: int, icv: bytes = b"\x00" * 12) -> bytes:
    """IPsec AH: payload length in 4-byte words minus 2."""
    body = struct.pack("!HII", 0, 0x100, 1) + icv
    return struct.pack("!BB", next_header, (len(body) + 2) // 4 - 2) + body


def ipv6(
    src: str,
    dst: str,
    payload: bytes,
    *,
    next_header: int = 6,
    hop_limit: int = 64,
    extensions: Sequence[Tuple[int, bytes]] = (),
    payload_length: Optional[int] = None,
) -> bytes:
    """An IPv6 packet. `extensions` = [(header type, encoded header)], outermost first; each encoded
    header's first byte is overwritten with the correct next-header value."""
    s, d = _addr(src), _addr(dst)
    pseudo = s + d + struct.pack("!IxxxB", len(payload), next_header)
    payload = _fill_transport_checksum(next_header, pseudo, payload)
    chain = b""
    types = [t for t, _ in extensions] + [next_header]
    for k, (_, encoded) in enumerate(extensions):
        chain += bytes([types[k + 1]]) + encoded[1:]
    first = types[0]
    body = chain + payload
    length = len(body) if payload_length is None else payload_length
    return struct.pack("!IHBB16s16s", 0x60000000, length, first, hop_limit, s, d) + body


# ------------------------------------------------------------------ link layers


def ethernet(
    payload: bytes,
    *,
    ethertype: int = ETHERTYPE_IPV4,
    vlans: Sequence[int] = (),
    vlan_ids: Sequence[int] = (),
    src_mac: bytes = b"\x02\x00\x00\x00\x00\x01",
    dst_mac: bytes = b"\x02\x00\x00\x00\x00\x02",
    pad_to_minimum: bool = True,
) -> bytes:
    """Ethernet II; `vlans` = TPIDs outermost first (0x8100, 0x88a8, 0x9100), padded to 60 bytes."""
    tags = b""
    for k, tpid in enumerate(vlans):
        vid = vlan_ids[k] if k < len(vlan_ids) else 100 + k
        tags += struct.pack("!HH", tpid, vid)
    frame = dst_mac + src_mac + tags + struct.pack("!H", ethertype) + payload
    if pad_to_minimum and len(frame) < 60:
        frame += b"\x00" * (60 - len(frame))
    return frame


def pppoe_session(ip_packet: bytes, *, ppp_protocol: int = 0x0021, session_id: int = 0x1234) -> bytes:
    """PPPoE session payload (goes after EtherType 0x8864)."""
    return struct.pack("!BBHHH", 0x11, 0x00, session_id, len(ip_packet) + 2, ppp_protocol) + ip_packet


def mpls(ip_packet: bytes, labels: Sequence[int] = (16,)) -> bytes:
    out = b""
    for k, label in enumerate(labels):
        bottom = 1 if k == len(labels) - 1 else 0
        out += struct.pack("!I", (label << 12) | (bottom << 8) | 64)
    return out + ip_packet


def sll(payload: bytes, *, protocol: int = ETHERTYPE_IPV4, packet_type: int = 0, arphrd: int = 1) -> bytes:
    """Linux cooked capture v1 header (16 bytes)."""
    return struct.pack("!HHH8sH", packet_type, arphrd, 6, b"\x02\x00\x00\x00\x00\x01\x00\x00", protocol) + payload


def sll2(
    payload: bytes, *, protocol: int = ETHERTYPE_IPV4, ifindex: int = 2, packet_type: int = 0, arphrd: int = 1
) -> bytes:
    """Linux cooked capture v2 header (20 bytes)."""
    return (
        struct.pack("!HHIHBB8s", protocol, 0, ifindex, arphrd, packet_type, 6, b"\x02\x00\x00\x00\x00\x01\x00\x00")
        + payload
    )


def null_loopback(payload: bytes, *, family: int = 2, big_endian: bool = False) -> bytes:
    """BSD NULL (LINKTYPE 0): AF_ value in the capturing host's byte order. AF_INET6 is 24/28/30 on BSDs."""
    return struct.pack(">I" if big_endian else "<I", family) + payload


def openbsd_loop(payload: bytes, *, family: int = 2) -> bytes:
    """LINKTYPE_LOOP (108): AF_ value in network byte order."""
    return struct.pack(">I", family) + payload


def ppp(
    payload: bytes, *, protocol: int = 0x0021, address_control: bool = True, compress_protocol: bool = False
) -> bytes:
    """PPP frame (LINKTYPE 9/50): optional ff 03, protocol in 1 (compressed) or 2 bytes."""
    head = b"\xff\x03" if address_control else b""
    proto = bytes([protocol]) if compress_protocol else struct.pack("!H", protocol)
    return head + proto + payload


def cisco_hdlc(payload: bytes, *, ethertype: int = ETHERTYPE_IPV4) -> bytes:
    return struct.pack("!BBH", 0x0F, 0x00, ethertype) + payload


# ------------------------------------------------------------------ classic pcap

PCAP_MAGIC_US = 0xA1B2C3D4
PCAP_MAGIC_NS = 0xA1B23C4D

RecordLike = Union[Tuple[int, bytes], Tuple[int, bytes, int]]


def pcap_header(
    *,
    link_type: int = LINKTYPE_ETHERNET,
    nanosecond: bool = False,
    big_endian: bool = False,
    snaplen: int = 262144,
    version: Tuple[int, int] = (2, 4),
) -> bytes:
    e = ">" if big_endian else "<"
    magic = PCAP_MAGIC_NS if nanosecond else PCAP_MAGIC_US
    return struct.pack(e + "IHHiIII", magic, version[0], version[1], 0, 0, snaplen, link_type)


def pcap_record(
    ts_ns: int, data: bytes, orig_len: Optional[int] = None, *, nanosecond: bool = False, big_endian: bool = False
) -> bytes:
    e = ">" if big_endian else "<"
    seconds, rest_ns = divmod(ts_ns, 1_000_000_000)
    fraction = rest_ns if nanosecond else rest_ns // 1000
    return struct.pack(e + "IIII", seconds, fraction, len(data), len(data) if orig_len is None else orig_len) + data


def pcap_file(
    records: Iterable[RecordLike],
    *,
    link_type: int = LINKTYPE_ETHERNET,
    nanosecond: bool = False,
    big_endian: bool = False,
    snaplen: int = 262144,
    version: Tuple[int, int] = (2, 4),
) -> bytes:
    """A classic pcap file. Records are (ts_ns, frame) or (ts_ns, frame, orig_len); frames longer than
    `snaplen` are cut to it with orig_len = their full length (as tcpdump -s does)."""
    out = [
        pcap_header(link_type=link_type, nanosecond=nanosecond, big_endian=big_endian, snaplen=snaplen, version=version)
    ]
    for record in records:
        ts_ns, data = record[0], record[1]
        orig_len = record[2] if len(record) > 2 else len(data)  # type: ignore[misc]
        out.append(pcap_record(ts_ns, data[:snaplen], orig_len, nanosecond=nanosecond, big_endian=big_endian))
    return b"".join(out)


# ------------------------------------------------------------------ pcapng


def _option(e: str, code: int, value: bytes) -> bytes:
    return struct.pack(e + "HH", code, len(value)) + value + b"\x00" * (-len(value) % 4)


def _options(e: str, options: Sequence[Tuple[int, bytes]]) -> bytes:
    if not options:
        return b""
    return b"".join(_option(e, c, v) for c, v in options) + struct.pack(e + "HH", 0, 0)


def pcapng_block(block_type: int, body: bytes, *, big_endian: bool = False) -> bytes:
    e = ">" if big_endian else "<"
    body += b"\x00" * (-len(body) % 4)
    total = 12 + len(body)
    return struct.pack(e + "II", block_type, total) + body + struct.pack(e + "I", total)


def pcapng_shb(
    *, big_endian: bool = False, version: Tuple[int, int] = (1, 0), options: Sequence[Tuple[int, bytes]] = ()
) -> bytes:
    e = ">" if big_endian else "<"
    body = struct.pack(e + "IHHq", 0x1A2B3C4D, version[0], version[1], -1) + _options(e, options)
    return pcapng_block(0x0A0D0D0A, body, big_endian=big_endian)


def pcapng_idb(
    link_type: int,
    *,
    snaplen: int = 0,
    name: Optional[str] = None,
    tsresol: Optional[int] = None,
    tsoffset_s: Optional[int] = None,
    big_endian: bool = False,
) -> bytes:
    e = ">" if big_endian else "<"
    options: List[Tuple[int, bytes]] = []
    if name is not None:
        options.append((2, name.encode()))
    if tsresol is not None:
        options.append((9, bytes([tsresol])))
    if tsoffset_s is not None:
        options.append((14, struct.pack(e + "q", tsoffset_s)))
    return pcapng_block(1, struct.pack(e + "HHI", link_type, 0, snaplen) + _options(e, options), big_endian=big_endian)


def ticks_for(ts_ns: int, tsresol: Optional[int], tsoffset_s: int = 0) -> int:
    """Timestamp ticks for an interface's if_tsresol code (default 6 = microseconds)."""
    code = 6 if tsresol is None else tsresol
    ns = ts_ns - tsoffset_s * 1_000_000_000
    if code & 0x80:
        return (ns << (code & 0x7F)) // 1_000_000_000
    return ns * 10**code // 1_000_000_000


def pcapng_epb(
    interface_id: int,
    ticks: int,
    data: bytes,
    orig_len: Optional[int] = None,
    *,
    big_endian: bool = False,
    options: Sequence[Tuple[int, bytes]] = (),
) -> bytes:
    e = ">" if big_endian else "<"
    body = struct.pack(
        e + "IIIII",
        interface_id,
        ticks >> 32,
        ticks & 0xFFFFFFFF,
        len(data),
        len(data) if orig_len is None else orig_len,
    )
    body += data + b"\x00" * (-len(data) % 4) + _options(e, options)
    return pcapng_block(6, body, big_endian=big_endian)


def pcapng_pb(
    interface_id: int,
    ticks: int,
    data: bytes,
    orig_len: Optional[int] = None,
    *,
    drops: int = 0,
    big_endian: bool = False,
) -> bytes:
    """Obsolete Packet Block (type 2)."""
    e = ">" if big_endian else "<"
    body = struct.pack(
        e + "HHIIII",
        interface_id,
        drops,
        ticks >> 32,
        ticks & 0xFFFFFFFF,
        len(data),
        len(data) if orig_len is None else orig_len,
    )
    return pcapng_block(2, body + data, big_endian=big_endian)


def pcapng_spb(data: bytes, orig_len: Optional[int] = None, *, big_endian: bool = False) -> bytes:
    """Simple Packet Block: interface 0, no timestamp."""
    e = ">" if big_endian else "<"
    return pcapng_block(
        3, struct.pack(e + "I", len(data) if orig_len is None else orig_len) + data, big_endian=big_endian
    )


def pcapng_isb(
    interface_id: int,
    ticks: int,
    *,
    ifdrop: Optional[int] = None,
    osdrop: Optional[int] = None,
    ifrecv: Optional[int] = None,
    big_endian: bool = False,
) -> bytes:
    e = ">" if big_endian else "<"
    options: List[Tuple[int, bytes]] = []
    if ifrecv is not None:
        options.append((4, struct.pack(e + "Q", ifrecv)))
    if ifdrop is not None:
        options.append((5, struct.pack(e + "Q", ifdrop)))
    if osdrop is not None:
        options.append((7, struct.pack(e + "Q", osdrop)))
    body = struct.pack(e + "III", interface_id, ticks >> 32, ticks & 0xFFFFFFFF) + _options(e, options)
    return pcapng_block(5, body, big_endian=big_endian)


def pcapng_custom(
    data: bytes = b"custom", *, pen: int = 32473, copyable: bool = True, big_endian: bool = False
) -> bytes:
    e = ">" if big_endian else "<"
    return pcapng_block(0x00000BAD if copyable else 0x40000BAD, struct.pack(e + "I", pen) + data, big_endian=big_endian)


@dataclass
class Interface:
    link_type: int
    snaplen: int = 0
    name: Optional[str] = None
    tsresol: Optional[int] = None
    tsoffset_s: Optional[int] = None


@dataclass
class Packet:
    interface: int  # section-local interface id
    ts_ns: int
    data: bytes
    orig_len: Optional[int] = None
    block: str = "epb"  # "epb", "pb" or "spb"


@dataclass
class Statistics:
    interface: int
    ts_ns: int
    ifdrop: Optional[int] = None
    osdrop: Optional[int] = None


@dataclass
class Section:
    interfaces: List[Interface]
    packets: List[Packet] = field(default_factory=list)
    statistics: List[Statistics] = field(default_factory=list)
    big_endian: bool = False
    extra_blocks: List[bytes] = field(default_factory=list)  # raw blocks appended after the packets


def pcapng_section(section: Section) -> bytes:
    be = section.big_endian
    out = [pcapng_shb(big_endian=be)]
    for ifc in section.interfaces:
        out.append(
            pcapng_idb(
                ifc.link_type,
                snaplen=ifc.snaplen,
                name=ifc.name,
                tsresol=ifc.tsresol,
                tsoffset_s=ifc.tsoffset_s,
                big_endian=be,
            )
        )
    for pkt in section.packets:
        ifc = section.interfaces[pkt.interface] if pkt.interface < len(section.interfaces) else Interface(1)
        data = pkt.data[: ifc.snaplen] if ifc.snaplen else pkt.data
        orig_len = pkt.orig_len if pkt.orig_len is not None else len(pkt.data)
        ticks = ticks_for(pkt.ts_ns, ifc.tsresol, ifc.tsoffset_s or 0)
        if pkt.block == "spb":
            out.append(pcapng_spb(data, orig_len, big_endian=be))
        elif pkt.block == "pb":
            out.append(pcapng_pb(pkt.interface, ticks, data, orig_len, big_endian=be))
        else:
            out.append(pcapng_epb(pkt.interface, ticks, data, orig_len, big_endian=be))
    for stat in section.statistics:
        ifc = section.interfaces[stat.interface]
        out.append(
            pcapng_isb(
                stat.interface,
                ticks_for(stat.ts_ns, ifc.tsresol, ifc.tsoffset_s or 0),
                ifdrop=stat.ifdrop,
                osdrop=stat.osdrop,
                big_endian=be,
            )
        )
    out.extend(section.extra_blocks)
    return b"".join(out)


def pcapng_file(sections: Sequence[Section]) -> bytes:
    return b"".join(pcapng_section(s) for s in sections)


# ------------------------------------------------------------------ convenience


def tcp_flow_frames(
    n_segments: int = 5,
    *,
    src: str = "10.0.0.1",
    dst: str = "10.0.0.2",
    sport: int = 40000,
    dport: int = 5201,
    mss: int = 1448,
    start_ns: int = 1_700_000_000_000_000_000,
    step_ns: int = 1_000_000,
    ip_version: int = 4,
) -> List[Tuple[int, bytes]]:
    """A small TCP transfer as (ts_ns, IP packet): handshake, `n_segments` data segments with
    timestamps, and an ACK per segment. Wrap the packets with a link layer of your choice."""
    ip = ipv4 if ip_version == 4 else ipv6
    out: List[Tuple[int, bytes]] = []
    t = start_ns
    isn_a, isn_b = 1000, 5000

    def add(a_to_b: bool, segment: bytes) -> None:
        nonlocal t
        packet = ip(src, dst, segment) if a_to_b else ip(dst, src, segment)
        out.append((t, packet))
        t += step_ns

    add(
        True,
        tcp(
            sport=sport,
            dport=dport,
            seq=isn_a,
            flags="S",
            options=tcp_options(mss=mss + 12, sack_permitted=True, ts=(1, 0), wscale=7),
        ),
    )
    add(
        False,
        tcp(
            sport=dport,
            dport=sport,
            seq=isn_b,
            ack=isn_a + 1,
            flags="SA",
            options=tcp_options(mss=mss + 12, sack_permitted=True, ts=(100, 1), wscale=9),
        ),
    )
    add(True, tcp(sport=sport, dport=dport, seq=isn_a + 1, ack=isn_b + 1, flags="A", options=tcp_options(ts=(2, 100))))
    seq = isn_a + 1
    for k in range(n_segments):
        add(
            True,
            tcp(
                sport=sport,
                dport=dport,
                seq=seq,
                ack=isn_b + 1,
                flags="PA",
                options=tcp_options(ts=(3 + k, 100 + k)),
                payload=bytes([k & 0xFF]) * mss,
            ),
        )
        seq += mss
        add(
            False,
            tcp(sport=dport, dport=sport, seq=isn_b + 1, ack=seq, flags="A", options=tcp_options(ts=(101 + k, 3 + k))),
        )
    return out
