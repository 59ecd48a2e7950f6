"""The packet table: one row per captured frame, one numpy column per field.

This is the contract between the decode stage and every stage after it
(flows, tcp, report). Columns are declared here as data, with their numpy
dtype and unit; the C decoder fills exactly these, in this order. A field a
frame does not carry holds the stated "absent" value, never garbage.

Addresses are 16 bytes: IPv6 as is, IPv4 as the IPv4-mapped IPv6 address
(::ffff:a.b.c.d), so one comparison serves both families.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Tuple


@dataclass(frozen=True)
class Column:
    name: str
    dtype: str  # numpy dtype string
    shape: Tuple[int, ...]  # per-row shape; () for a scalar
    meaning: str


# Bits of `decode_flags`.
DECODE_TRUNCATED = 1 << 0  # captured length ends before the headers we parse
DECODE_IP_FRAGMENT = 1 << 1  # IPv4/IPv6 fragment (offset != 0 or more-fragments set)
DECODE_IN_ICMP_ERROR = 1 << 2  # an ICMP/ICMPv6 error quoting a packet: address columns are the outer
# (ICMP) packet's, transport columns stay absent (tcp_header_len 0), so no
# later stage treats the quoted TCP header as a TCP packet
DECODE_IP_OPTIONS = 1 << 3  # IPv4 header longer than 20 bytes
DECODE_MALFORMED = 1 << 4  # a header field is impossible (bad IHL, TCP offset < 5, ...)
DECODE_UNSUPPORTED_LINK = 1 << 5  # link type we do not decode; only frame columns are valid
DECODE_IP_ID_VALID = 1 << 6  # ip_id holds an IPv4 identification
DECODE_IP_MORE_FRAGMENTS = 1 << 7  # IPv4 MF / IPv6 M bit set: more fragments of this datagram follow

# Bits of `tcp_flags` (the TCP header's flag byte plus NS as bit 8).
TCP_FIN = 0x001
TCP_SYN = 0x002
TCP_RST = 0x004
TCP_PSH = 0x008
TCP_ACK = 0x010
TCP_URG = 0x020
TCP_ECE = 0x040
TCP_CWR = 0x080
TCP_NS = 0x100

# The IP ECN codepoint (RFC 3168): ECT(0)/ECT(1) on packets of an ECN-capable transport, CE
# where a router marked one (a segment's first copy; a Linux sender clears ECT on resends).
ECN_NOT_ECT = 0
ECN_ECT1 = 1
ECN_ECT0 = 2
ECN_CE = 3

# Linux cooked link types (`-i any`): v1 names no interface, only in or out (Wireshark's dumpcap
# writes it); v2 names the interface index (tcpdump's choice).
LINKTYPE_LINUX_SLL = 113
LINKTYPE_LINUX_SLL2 = 276

MAX_SACK_BLOCKS = 4

PACKET_COLUMNS: Tuple[Column, ...] = (
    Column("ts_ns", "int64", (), "capture timestamp, nanoseconds since the Unix epoch"),
    Column("frame_len", "uint32", (), "original length on the wire, bytes"),
    Column("cap_len", "uint32", (), "captured length, bytes (<= frame_len)"),
    Column(
        "interface",
        "uint16",
        (),
        "interface the frame was seen on: pcapng interface index (global "
        "over sections), else 0; Linux cooked frames: the ifindex (v2), or 0xFF00 + 1 if outgoing (v1)",
    ),
    Column("link_type", "uint16", (), "DLT/LINKTYPE of the frame's interface"),
    Column("decode_flags", "uint8", (), "DECODE_* bits"),
    Column("ip_version", "uint8", (), "4, 6, or 0 when the frame carries no IP"),
    Column("src_addr", "uint8", (16,), "source address, IPv4-mapped for IPv4"),
    Column("dst_addr", "uint8", (16,), "destination address, IPv4-mapped for IPv4"),
    Column("ip_id", "uint32", (), "IPv4 identification (DECODE_IP_ID_VALID), else IPv6 fragment id or 0"),
    Column("ttl", "uint8", (), "IPv4 TTL / IPv6 hop limit"),
    Column("ip_proto", "uint8", (), "transport protocol number (after IPv6 extension headers); 0 none"),
    Column("ip_payload_len", "uint32", (), "bytes after the IP header(s), from the IP length field"),
    Column("sport", "uint16", (), "transport source port (TCP/UDP), 0 otherwise"),
    Column("dport", "uint16", (), "transport destination port (TCP/UDP), 0 otherwise"),
    Column("seq", "uint32", (), "TCP sequence number as on the wire"),
    Column("ack", "uint32", (), "TCP acknowledgment number as on the wire"),
    Column("tcp_flags", "uint16", (), "TCP_* bits"),
    Column("window", "uint16", (), "TCP window field, unscaled"),
    Column(
        "tcp_header_len",
        "uint8",
        (),
        "TCP header length incl. options (data offset x 4), bytes; 0 when no "
        "TCP header. Like tshark, a frame is TCP once the 16 bytes up to the "
        "window are readable; with DECODE_MALFORMED the offset may be < 20 or "
        "exceed the segment (tshark skips such frames in its analysis)",
    ),
    Column(
        "tcp_payload_len",
        "uint32",
        (),
        "TCP payload bytes = IP length - IP headers - TCP header (never the captured length)",
    ),
    Column("opt_mss", "uint16", (), "MSS option, bytes; 0 absent"),
    Column("opt_wscale", "int8", (), "window scale shift option; -1 absent"),
    Column("opt_sack_permitted", "bool", (), "SACK-permitted option present"),
    Column("opt_has_ts", "bool", (), "timestamps option present"),
    Column("opt_tsval", "uint32", (), "timestamps option TSval (0 when absent)"),
    Column("opt_tsecr", "uint32", (), "timestamps option TSecr (0 when absent)"),
    Column("sack_count", "uint8", (), "number of SACK blocks present (0..4)"),
    Column("sack_left", "uint32", (MAX_SACK_BLOCKS,), "SACK block left edges (raw sequence numbers)"),
    Column("sack_right", "uint32", (MAX_SACK_BLOCKS,), "SACK block right edges (raw sequence numbers)"),
    Column("ip_frag_offset", "uint16", (), "IP fragment offset, bytes (0 for unfragmented and first fragments)"),
    Column(
        "ts_valid",
        "bool",
        (),
        "the record carries a timestamp (False for pcapng Simple Packet Blocks, "
        "whose ts_ns repeats the previous record's, or 0)",
    ),
    Column("opt_mptcp", "uint16", (), "MPTCP option subtypes present (bit 1 << subtype, RFC 8684); 0 none"),
    Column(
        "ip_ecn",
        "uint8",
        (),
        "IP ECN codepoint (ECN_*: low 2 bits of the IPv4 TOS / IPv6 traffic class); 0 (not-ECT) without IP",
    ),
)

COLUMN_NAMES: Tuple[str, ...] = tuple(c.name for c in PACKET_COLUMNS)
