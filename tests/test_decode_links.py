"""Frame decoding: every link type, IPv4 options/fragments, IPv6 extension headers, TCP options,
ICMP errors and tunnels. Files are written byte by byte with pcapbuild."""

from __future__ import annotations

import ipaddress

import numpy as np
import pytest

import pcapbuild as pb
from spline_analysis._core.columns import (
    DECODE_IN_ICMP_ERROR,
    DECODE_IP_FRAGMENT,
    DECODE_IP_MORE_FRAGMENTS,
    DECODE_IP_OPTIONS,
    DECODE_MALFORMED,
    DECODE_TRUNCATED,
    DECODE_UNSUPPORTED_LINK,
    TCP_ACK,
    TCP_NS,
    TCP_PSH,
    TCP_SYN,
)
from spline_analysis._core.decode import read

V4 = ("10.1.2.3", "10.4.5.6")
V6 = ("2001:db8::1", "2001:db8::2")


def decode_frames(tmp_path, frames, link_type=pb.LINKTYPE_ETHERNET, **kwargs):
    path = tmp_path / "f.pcap"
    """Frames are bytes, or (bytes, original length) for frames cut by a snaplen."""
    records = [(1_700_000_000_000_000_000 + k,) + (f if isinstance(f, tuple) else (f,)) for k, f in enumerate(frames)]
    path.write_bytes(pb.pcap_file(records, link_type=link_type, **kwargs))
    return read(path).packets


def v4_segment(**kwargs):
    return pb.ipv4(*V4, pb.tcp(sport=1234, dport=80, seq=77, ack=88, flags="PA", payload=b"p" * 100, **kwargs))


def v6_segment():
    return pb.ipv6(*V6, pb.tcp(sport=1234, dport=80, seq=77, ack=88, flags="PA", payload=b"p" * 100))


def _snap(ethertype: int) -> bytes:
    return b"\xaa\xaa\x03\x00\x00\x00" + ethertype.to_bytes(2, "big")


def _wifi_qos_data(ip: bytes, ethertype: int) -> bytes:
    """802.11 QoS data frame to the DS: 24-byte header + 2-byte QoS control, then LLC/SNAP."""
    return b"\x88\x01\x00\x00" + b"\x02" * 18 + b"\x00\x00" + b"\x00\x00" + _snap(ethertype) + ip


LINKS = {
    "ethernet": (pb.LINKTYPE_ETHERNET, lambda ip, et: pb.ethernet(ip, ethertype=et)),
    "vlan": (pb.LINKTYPE_ETHERNET, lambda ip, et: pb.ethernet(ip, ethertype=et, vlans=[0x8100])),
    "802.1ad": (pb.LINKTYPE_ETHERNET, lambda ip, et: pb.ethernet(ip, ethertype=et, vlans=[0x88A8])),
    "qinq": (pb.LINKTYPE_ETHERNET, lambda ip, et: pb.ethernet(ip, ethertype=et, vlans=[0x88A8, 0x8100])),
    "qinq-9100": (pb.LINKTYPE_ETHERNET, lambda ip, et: pb.ethernet(ip, ethertype=et, vlans=[0x9100, 0x8100])),
    "pppoe": (
        pb.LINKTYPE_ETHERNET,
        lambda ip, et: pb.ethernet(
            pb.pppoe_session(ip, ppp_protocol=0x21 if et == 0x800 else 0x57), ethertype=pb.ETHERTYPE_PPPOE_SESSION
        ),
    ),
    "vlan-pppoe": (
        pb.LINKTYPE_ETHERNET,
        lambda ip, et: pb.ethernet(
            pb.pppoe_session(ip, ppp_protocol=0x21 if et == 0x800 else 0x57),
            ethertype=pb.ETHERTYPE_PPPOE_SESSION,
            vlans=[0x8100],
        ),
    ),
    "mpls": (pb.LINKTYPE_ETHERNET, lambda ip, et: pb.ethernet(pb.mpls(ip, [100, 200]), ethertype=pb.ETHERTYPE_MPLS)),
    "sll": (pb.LINKTYPE_LINUX_SLL, lambda ip, et: pb.sll(ip, protocol=et)),
    "sll2": (pb.LINKTYPE_LINUX_SLL2, lambda ip, et: pb.sll2(ip, protocol=et)),
    "raw-101": (pb.LINKTYPE_RAW, lambda ip, et: ip),
    "raw-12": (pb.LINKTYPE_RAW_12, lambda ip, et: ip),
    "raw-14": (pb.LINKTYPE_RAW_14, lambda ip, et: ip),
    "null-le": (pb.LINKTYPE_NULL, lambda ip, et: pb.null_loopback(ip, family=2 if et == 0x800 else 30)),
    "null-be": (
        pb.LINKTYPE_NULL,
        lambda ip, et: pb.null_loopback(ip, family=2 if et == 0x800 else 24, big_endian=True),
    ),
    "loop": (pb.LINKTYPE_LOOP, lambda ip, et: pb.openbsd_loop(ip, family=2 if et == 0x800 else 24)),
    "ppp": (pb.LINKTYPE_PPP, lambda ip, et: pb.ppp(ip, protocol=0x21 if et == 0x800 else 0x57)),
    "ppp-compressed": (
        pb.LINKTYPE_PPP,
        lambda ip, et: pb.ppp(
            ip, protocol=0x21 if et == 0x800 else 0x57, address_control=False, compress_protocol=True
        ),
    ),
    "ppp-hdlc": (pb.LINKTYPE_PPP_HDLC, lambda ip, et: pb.ppp(ip, protocol=0x21 if et == 0x800 else 0x57)),
    "cisco-hdlc": (pb.LINKTYPE_C_HDLC, lambda ip, et: pb.cisco_hdlc(ip, ethertype=et)),
    "fddi": (10, lambda ip, et: b"\x50" + b"\x01" * 12 + _snap(et) + ip),
    "802.11-qos-data": (105, lambda ip, et: _wifi_qos_data(ip, et)),
    "radiotap": (127, lambda ip, et: b"\x00\x00\x08\x00\x00\x00\x00\x00" + _wifi_qos_data(ip, et)),
}


@pytest.mark.parametrize("name", sorted(LINKS))
@pytest.mark.parametrize("version", [4, 6])
def test_link_type_yields_ip_and_tcp_fields(tmp_path, name, version):
    link_type, wrap = LINKS[name]
    packet, ethertype, (src, dst) = (v4_segment(), 0x0800, V4) if version == 4 else (v6_segment(), 0x86DD, V6)
    p = decode_frames(tmp_path, [wrap(packet, ethertype)], link_type=link_type)
    assert p["ip_version"][0] == version
    assert ipaddress.ip_address(
        bytes(p["src_addr"][0][12:] if version == 4 else p["src_addr"][0])
    ) == ipaddress.ip_address(src)
    assert ipaddress.ip_address(
        bytes(p["dst_addr"][0][12:] if version == 4 else p["dst_addr"][0])
    ) == ipaddress.ip_address(dst)
    assert (p["sport"][0], p["dport"][0], p["seq"][0], p["ack"][0]) == (1234, 80, 77, 88)
    assert p["tcp_flags"][0] == TCP_PSH | TCP_ACK
    assert (p["tcp_header_len"][0], p["tcp_payload_len"][0], p["ip_payload_len"][0]) == (20, 100, 120)
    assert p["decode_flags"][0] & (DECODE_TRUNCATED | DECODE_MALFORMED | DECODE_UNSUPPORTED_LINK) == 0


def test_unknown_link_type_is_flagged_and_keeps_frame_columns(tmp_path):
    p = decode_frames(tmp_path, [b"\x00" * 50], link_type=147)
    assert p["decode_flags"][0] & DECODE_UNSUPPORTED_LINK and p["frame_len"][0] == 50 and p["ip_version"][0] == 0


def test_ethernet_trailer_padding_is_not_payload(tmp_path):
    ack = pb.ipv4(*V4, pb.tcp(flags="A"))  # 40 bytes: Ethernet pads to 60
    p = decode_frames(tmp_path, [pb.ethernet(ack)])
    assert p["frame_len"][0] == 60 and p["tcp_payload_len"][0] == 0


def test_tcp_options_are_decoded(tmp_path):
    opts = pb.tcp_options(mss=1460, wscale=7, sack_permitted=True, ts=(123456, 654321))
    syn = pb.ipv4(*V4, pb.tcp(flags="S", options=opts))
    sack = pb.ipv4(*V4, pb.tcp(flags="A", options=pb.tcp_options(ts=(7, 8), sack=[(100, 200), (300, 400), (500, 600)])))
    p = decode_frames(tmp_path, [pb.ethernet(syn), pb.ethernet(sack)])
    assert (p["opt_mss"][0], p["opt_wscale"][0], bool(p["opt_sack_permitted"][0])) == (1460, 7, True)
    assert (bool(p["opt_has_ts"][0]), p["opt_tsval"][0], p["opt_tsecr"][0]) == (True, 123456, 654321)
    assert p["tcp_flags"][0] == TCP_SYN
    assert (p["opt_mss"][1], p["opt_wscale"][1], p["sack_count"][1]) == (0, -1, 3)
    assert list(p["sack_left"][1]) == [100, 300, 500, 0] and list(p["sack_right"][1]) == [200, 400, 600, 0]
    assert p["tcp_header_len"][1] == 20 + len(pb.tcp_options(ts=(7, 8), sack=[(1, 2)] * 3))


def test_ns_flag_and_malformed_data_offset(tmp_path):
    ns = pb.ipv4(*V4, pb.tcp(flags=TCP_NS | TCP_ACK))
    bad = pb.ipv4(*V4, pb.tcp(flags="A", data_offset_words=3))
    p = decode_frames(tmp_path, [pb.ethernet(ns), pb.ethernet(bad)])
    assert p["tcp_flags"][0] == TCP_NS | TCP_ACK
    # tshark still counts it as TCP ("bogus header length") with tcp.len = segment - 12
    assert p["tcp_header_len"][1] == 12 and p["decode_flags"][1] & DECODE_MALFORMED
    assert p["tcp_payload_len"][1] == 20 - 12


def test_ipv4_options_are_skipped_and_flagged(tmp_path):
    packet = pb.ipv4(*V4, pb.tcp(payload=b"z" * 10), options=b"\x94\x04\x00\x00" + b"\x01" * 4)  # router alert + NOPs
    p = decode_frames(tmp_path, [pb.ethernet(packet)])
    assert p["decode_flags"][0] & DECODE_IP_OPTIONS and p["tcp_payload_len"][0] == 10 and p["sport"][0] == 40000


def test_ipv4_fragments_are_flagged_and_joined_like_tshark_reassembly(tmp_path):
    segment = pb.tcp(sport=5, dport=6, seq=1, flags="PA", payload=b"f" * 100)
    whole = pb.ipv4(*V4, segment)[20:]  # TCP with checksum
    first = pb.ipv4(*V4, whole[:64], ident=9, dont_fragment=False, more_fragments=True, checksum_payload=False)
    second = pb.ipv4(*V4, whole[64:], ident=9, dont_fragment=False, frag_offset_bytes=64)
    p = decode_frames(tmp_path, [pb.ethernet(first), pb.ethernet(second)])
    assert p["decode_flags"][0] & DECODE_IP_FRAGMENT and p["decode_flags"][0] & DECODE_IP_MORE_FRAGMENTS
    assert p["decode_flags"][1] & DECODE_IP_FRAGMENT and not p["decode_flags"][1] & DECODE_IP_MORE_FRAGMENTS
    assert (p["tcp_header_len"][0], p["tcp_header_len"][1]) == (20, 0)
    assert p["ip_frag_offset"][1] == 64
    assert p["tcp_payload_len"][0] == 100  # the whole datagram's payload, on the first fragment's row
    assert p["ip_id"][0] == 9


def test_ipv6_extension_headers_are_walked(tmp_path):
    segment = pb.tcp(sport=7, dport=8, payload=b"e" * 30)
    extensions = [
        (0, pb.ipv6_extension(0)),
        (43, pb.ipv6_extension(0, b"\x00" * 14)),
        (51, pb.ipv6_ah(0)),
        (60, pb.ipv6_extension(0)),
    ]
    packet = pb.ipv6(*V6, segment, extensions=extensions)
    ext_bytes = sum(len(e) for _, e in extensions)
    p = decode_frames(tmp_path, [pb.ethernet(packet, ethertype=0x86DD)])
    assert (p["ip_proto"][0], p["sport"][0], p["tcp_payload_len"][0]) == (6, 7, 30)
    assert p["ip_payload_len"][0] == len(packet) - 40 - ext_bytes


def test_ipv6_fragment_header(tmp_path):
    segment = pb.tcp(sport=7, dport=8, payload=b"e" * 30)
    first = pb.ipv6(*V6, segment[:24], extensions=[(44, pb.ipv6_fragment_header(0, more=True, ident=0xABCDEF))])
    later = pb.ipv6(*V6, segment[24:], extensions=[(44, pb.ipv6_fragment_header(0, offset_bytes=24, ident=0xABCDEF))])
    p = decode_frames(tmp_path, [pb.ethernet(first, ethertype=0x86DD), pb.ethernet(later, ethertype=0x86DD)])
    assert p["ip_id"][0] == 0xABCDEF and p["decode_flags"][0] & DECODE_IP_FRAGMENT
    assert p["tcp_header_len"][0] == 20 and p["tcp_header_len"][1] == 0 and p["ip_frag_offset"][1] == 24
    assert p["tcp_payload_len"][0] == 30


def test_icmp_errors_quoting_tcp_are_not_tcp_packets(tmp_path):
    quoted = v4_segment()[:48]
    icmp = pb.ipv4("192.0.2.9", V4[0], pb.icmp_error(quoted), proto=1)
    quoted6 = v6_segment()[:80]
    icmp6 = pb.ipv6("2001:db8::9", V6[0], pb.icmpv6_error(quoted6), next_header=58)
    p = decode_frames(tmp_path, [pb.ethernet(icmp), pb.ethernet(icmp6, ethertype=0x86DD)])
    assert list(p["decode_flags"] & DECODE_IN_ICMP_ERROR) == [DECODE_IN_ICMP_ERROR] * 2
    assert list(p["tcp_header_len"]) == [0, 0] and list(p["ip_proto"]) == [1, 58]


@pytest.mark.parametrize("tunnel", ["ipip", "6in4", "gre"])
def test_tunnelled_tcp_is_decoded_from_the_inner_packet(tmp_path, tunnel):
    inner = v4_segment() if tunnel != "6in4" else v6_segment()
    if tunnel == "gre":
        outer = pb.ipv4("198.51.100.1", "198.51.100.2", b"\x00\x00\x08\x00" + inner, proto=47)
    else:
        outer = pb.ipv4("198.51.100.1", "198.51.100.2", inner, proto=4 if tunnel == "ipip" else 41)
    p = decode_frames(tmp_path, [pb.ethernet(outer)])
    assert p["ip_version"][0] == (6 if tunnel == "6in4" else 4)
    assert (p["sport"][0], p["tcp_payload_len"][0]) == (1234, 100)


def test_truncated_headers_are_flagged_never_misread(tmp_path):
    full = pb.ethernet(v4_segment())
    frames = [full[:k] for k in (10, 14, 20, 34, 40, 49)]  # 14 + 20 + 16 bytes would count as TCP, as in tshark
    p = decode_frames(tmp_path, [(f, len(full)) for f in frames])
    assert np.all(p["decode_flags"] & DECODE_TRUNCATED)
    assert np.all(p["tcp_header_len"] == 0)


def test_tcp_length_uses_ip_length_clipped_to_wire_length(tmp_path):
    # IP total length claims more than the frame carried on the wire: tshark clips to the frame.
    packet = bytearray(v4_segment())
    packet[2:4] = (len(packet) + 500).to_bytes(2, "big")
    tso = pb.ipv4(*V4, pb.tcp(payload=b"t" * 50), total_length=0)  # length 0: TSO, use the frame
    p = decode_frames(tmp_path, [pb.ethernet(bytes(packet)), pb.ethernet(tso)])
    assert list(p["tcp_payload_len"]) == [100, 50]


def test_tcp_counts_once_sixteen_header_bytes_are_captured_like_tshark(tmp_path):
    packet = pb.ipv4(*V4, pb.tcp(flags="PA", payload=b"x" * 100, options=pb.tcp_options(ts=(1, 2))))
    frames = [(packet[: 20 + k], len(packet)) for k in (15, 16, 19, 32)]
    p = decode_frames(tmp_path, frames, link_type=pb.LINKTYPE_RAW)
    assert list(p["tcp_header_len"]) == [0, 32, 32, 32]
    assert list(p["tcp_payload_len"]) == [0, 100, 100, 100]
    assert list(p["opt_has_ts"]) == [False, False, False, True]


def test_ipv6_under_the_ipv4_ethertype_is_decoded_as_ipv6_like_tshark(tmp_path):
    p = decode_frames(tmp_path, [pb.ethernet(v6_segment(), ethertype=0x0800)])
    assert p["ip_version"][0] == 6 and p["tcp_payload_len"][0] == 100


def test_linux_cooked_frames_say_which_interface_or_direction_in_the_interface_column(tmp_path):
    from pcapbuild import LINKTYPE_LINUX_SLL, LINKTYPE_LINUX_SLL2, ipv4, pcap_file, sll, sll2, tcp

    packet = ipv4("10.0.0.1", "10.0.0.2", tcp(sport=1, dport=2, flags="S"))
    v2 = tmp_path / "v2.pcap"
    v2.write_bytes(
        pcap_file([(1, sll2(packet, ifindex=7)), (2, sll2(packet, ifindex=300))], link_type=LINKTYPE_LINUX_SLL2)
    )
    v1 = tmp_path / "v1.pcap"
    v1.write_bytes(
        pcap_file([(1, sll(packet, packet_type=0)), (2, sll(packet, packet_type=4))], link_type=LINKTYPE_LINUX_SLL)
    )
    assert list(read(v2).packets["interface"]) == [7, 300]
    assert list(read(v1).packets["interface"]) == [0xFF00, 0xFF01]
