"""Write the small seed corpus fuzz/seeds/ (valid files of each format and link type, and damaged ones).

Run from the repository root: `.venv/bin/python fuzz/make_seeds.py`. Uses tests/pcapbuild.py.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

import pcapbuild as pb  # noqa: E402


def main() -> None:
    out = HERE / "seeds"
    out.mkdir(exist_ok=True)
    flow4 = pb.tcp_flow_frames(2, mss=100)
    flow6 = pb.tcp_flow_frames(2, mss=100, src="2001:db8::1", dst="2001:db8::2", ip_version=6)
    links = {
        "eth": (pb.LINKTYPE_ETHERNET, lambda p, v: pb.ethernet(p, ethertype=0x0800 if v == 4 else 0x86DD)),
        "qinq": (
            pb.LINKTYPE_ETHERNET,
            lambda p, v: pb.ethernet(p, ethertype=0x0800 if v == 4 else 0x86DD, vlans=[0x88A8, 0x8100]),
        ),
        "pppoe": (
            pb.LINKTYPE_ETHERNET,
            lambda p, v: pb.ethernet(
                pb.pppoe_session(p, ppp_protocol=0x21 if v == 4 else 0x57), ethertype=pb.ETHERTYPE_PPPOE_SESSION
            ),
        ),
        "sll": (pb.LINKTYPE_LINUX_SLL, lambda p, v: pb.sll(p, protocol=0x0800 if v == 4 else 0x86DD)),
        "sll2": (pb.LINKTYPE_LINUX_SLL2, lambda p, v: pb.sll2(p, protocol=0x0800 if v == 4 else 0x86DD)),
        "raw": (pb.LINKTYPE_RAW, lambda p, v: p),
        "null": (pb.LINKTYPE_NULL, lambda p, v: pb.null_loopback(p, family=2 if v == 4 else 24)),
        "loop": (pb.LINKTYPE_LOOP, lambda p, v: pb.openbsd_loop(p, family=2 if v == 4 else 24)),
        "ppp": (pb.LINKTYPE_PPP, lambda p, v: pb.ppp(p, protocol=0x21 if v == 4 else 0x57)),
    }
    for name, (link_type, wrap) in links.items():
        for version, flow in ((4, flow4), (6, flow6)):
            frames = [(t, wrap(p, version)) for t, p in flow]
            (out / f"{name}_v{version}.pcap").write_bytes(pb.pcap_file(frames, link_type=link_type))
    frames = [(t, pb.ethernet(p)) for t, p in flow4]
    (out / "eth_ns_be.pcap").write_bytes(pb.pcap_file(frames, nanosecond=True, big_endian=True, snaplen=60))
    ng = pb.pcapng_file(
        [
            pb.Section(
                [
                    pb.Interface(pb.LINKTYPE_ETHERNET, tsresol=9, name="eth0"),
                    pb.Interface(pb.LINKTYPE_RAW, tsresol=0x94),
                ],
                [
                    pb.Packet(k % 2, t, pb.ethernet(p) if k % 2 == 0 else p, block="epb" if k % 3 else "pb")
                    for k, (t, p) in enumerate(flow4)
                ],
                [pb.Statistics(0, flow4[-1][0], ifdrop=3, osdrop=1)],
                extra_blocks=[pb.pcapng_custom()],
            ),
            pb.Section(
                [pb.Interface(pb.LINKTYPE_LINUX_SLL, snaplen=80)],
                [pb.Packet(0, t, pb.sll(p, protocol=0x86DD), block="spb") for t, p in flow6],
                big_endian=True,
            ),
        ]
    )
    (out / "mixed.pcapng").write_bytes(ng)
    # fragments, ICMP errors, IPv6 extension headers
    seg = pb.tcp(seq=1, payload=b"x" * 40, options=pb.tcp_options(sack=[(10, 20), (30, 40)]))
    special = [
        pb.ipv4(
            "10.0.0.1", "10.0.0.2", seg[:24], more_fragments=True, dont_fragment=False, ident=7, checksum_payload=False
        ),
        pb.ipv4("10.0.0.1", "10.0.0.2", seg[24:], frag_offset_bytes=24, dont_fragment=False, ident=7),
        pb.ipv4("10.0.0.9", "10.0.0.1", pb.icmp_error(pb.ipv4("10.0.0.1", "10.0.0.2", seg)[:48]), proto=1),
        pb.ipv6(
            "2001:db8::1",
            "2001:db8::2",
            seg,
            extensions=[
                (0, pb.ipv6_extension(0)),
                (43, pb.ipv6_extension(0)),
                (51, pb.ipv6_ah(0)),
                (60, pb.ipv6_extension(0)),
            ],
        ),
        pb.ipv4("10.0.0.1", "10.0.0.2", seg, options=b"\x01\x01\x01\x00"),
    ]
    (out / "special_raw.pcap").write_bytes(
        pb.pcap_file([(k, p) for k, p in enumerate(special)], link_type=pb.LINKTYPE_RAW)
    )
    # damaged
    good = pb.pcap_file(frames)
    (out / "cut_mid_record.pcap").write_bytes(good[:-7])
    (out / "bad_version.pcap").write_bytes(pb.pcap_file(frames[:1], version=(2, 5)))
    damaged_ng = bytearray(ng)
    damaged_ng[ng.index(b"\x06\x00\x00\x00") + 4] ^= 0x01  # an EPB length no longer multiple of 4
    (out / "damaged_block.pcapng").write_bytes(bytes(damaged_ng))
    (out / "cut.pcapng").write_bytes(ng[:-10])


if __name__ == "__main__":
    main()
