"""Cross-check against tshark 4.0 itself, frame by frame, on files we write (every link type,
editcap conversions, gzip) and on a real tcpdump capture taken in a network namespace."""

from __future__ import annotations

import gzip
import os
import shutil
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

import spline_analysis as sa

import pcapbuild as pb
from spline_analysis._core.decode import read
from spline_analysis.report import tcp_packet_mask

TSHARK = shutil.which("tshark")
pytestmark = pytest.mark.skipif(TSHARK is None, reason="tshark not installed")


def tshark_frames(path: Path):
    """(time_epoch_ns, tcp.len or -1) per frame, as tshark 4.0 dissects it (-1 = no TCP / in ICMP error)."""
    out = subprocess.run(
        [
            TSHARK,
            "-n",
            "-r",
            str(path),
            "-T",
            "fields",
            "-E",
            "occurrence=f",
            "-e",
            "frame.time_epoch",
            "-e",
            "tcp.stream",
            "-e",
            "tcp.len",
            "-e",
            "icmp.type",
            "-e",
            "icmpv6.type",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    times, lengths = [], []
    for line in out.splitlines():
        t, stream, length, icmp, icmp6 = line.split("\t")
        seconds, _, fraction = t.partition(".")
        times.append(int(seconds) * 10**9 + int((fraction + "000000000")[:9]))
        lengths.append((int(length) if length else 0) if stream and not icmp and not icmp6 else -1)
    return np.array(times), np.array(lengths)


def assert_same_as_tshark(path: Path):
    times, lengths = tshark_frames(path)
    packets = read(path).packets
    ours = np.where(tcp_packet_mask(packets), packets["tcp_payload_len"].astype(np.int64), -1)
    assert len(packets) == len(times)
    assert np.array_equal(ours, lengths)
    assert np.array_equal(packets["ts_ns"], times)


def mixed_frames():
    flow4 = pb.tcp_flow_frames(3, mss=1000)
    flow6 = pb.tcp_flow_frames(3, mss=1000, src="2001:db8::1", dst="2001:db8::2", ip_version=6)
    return flow4, flow6


LINKS = {
    "ethernet-qinq": (1, lambda p, et: pb.ethernet(p, ethertype=et, vlans=[0x88A8, 0x8100])),
    "ethernet-pppoe": (
        1,
        lambda p, et: pb.ethernet(pb.pppoe_session(p, ppp_protocol=0x21 if et == 0x800 else 0x57), ethertype=0x8864),
    ),
    "sll": (113, lambda p, et: pb.sll(p, protocol=et)),
    "sll2": (276, lambda p, et: pb.sll2(p, protocol=et)),
    "raw": (101, lambda p, et: p),
    "null": (0, lambda p, et: pb.null_loopback(p, family=2 if et == 0x800 else 30)),
    "loop": (108, lambda p, et: pb.openbsd_loop(p, family=2 if et == 0x800 else 24)),
    "ppp": (9, lambda p, et: pb.ppp(p, protocol=0x21 if et == 0x800 else 0x57)),
    "ipv4": (228, None),
    "ipv6": (229, None),
}


@pytest.mark.parametrize("name", sorted(LINKS))
def test_each_link_type_matches_tshark_frame_by_frame(tmp_path, name):
    link_type, wrap = LINKS[name]
    flow4, flow6 = mixed_frames()
    if name == "ipv4":
        frames = flow4
    elif name == "ipv6":
        frames = flow6
    else:
        frames = [(t, wrap(p, 0x800)) for t, p in flow4] + [(t + 10**8, wrap(p, 0x86DD)) for t, p in flow6]
    path = tmp_path / f"{name}.pcap"
    path.write_bytes(pb.pcap_file(frames, link_type=link_type, snaplen=80, nanosecond=True))
    assert_same_as_tshark(path)


def test_special_ip_cases_match_tshark(tmp_path):
    seg = pb.tcp(seq=1, flags="PA", payload=b"x" * 40, options=pb.tcp_options(sack=[(10, 20)]))
    quoted = pb.ipv4("10.0.0.1", "10.0.0.2", seg)[:48]
    frames = [
        pb.ipv4("10.0.0.1", "10.0.0.2", seg, options=b"\x94\x04\x00\x00"),
        pb.ipv4("10.0.0.9", "10.0.0.1", pb.icmp_error(quoted), proto=1),
        pb.ipv6("2001:db8::1", "2001:db8::2", seg, extensions=[(0, pb.ipv6_extension(0)), (60, pb.ipv6_extension(0))]),
        pb.ipv4("10.0.0.1", "10.0.0.2", seg, total_length=0),
        pb.ipv4("198.51.100.1", "198.51.100.2", pb.ipv4("10.0.0.1", "10.0.0.2", seg), proto=4),
        pb.ipv4("10.0.0.1", "10.0.0.2", pb.tcp(flags="A", data_offset_words=15)),  # offset past segment
        pb.ipv4("10.0.0.1", "10.0.0.2", pb.tcp(flags="A", data_offset_words=3)),  # offset < 20 bytes
        pb.ipv4("10.0.0.1", "10.0.0.2", pb.tcp(flags="A", data_offset_words=6, payload=b"xy")),
        pb.ipv4("10.0.0.1", "10.0.0.2", pb.tcp(flags="A")[:16], checksum_payload=False),  # IP length: 16 TCP bytes
    ]
    path = tmp_path / "special.pcap"
    path.write_bytes(pb.pcap_file([(10**18 + k * 1000, pb.ethernet(f)) for k, f in enumerate(frames)]))
    assert_same_as_tshark(path)


@pytest.mark.parametrize("conversion", ["pcapng", "nsecpcap", "gzip"])
def test_conversions_of_a_file_give_the_same_numbers(tmp_path, conversion):
    flow4, flow6 = mixed_frames()
    original = tmp_path / "orig.pcap"
    original.write_bytes(pb.pcap_file([(t, pb.ethernet(p)) for t, p in flow4], snaplen=96))
    converted = tmp_path / f"conv.{conversion}"
    if conversion == "gzip":
        converted.write_bytes(gzip.compress(original.read_bytes()))
    else:
        subprocess.run(
            ["editcap", "-F", conversion, str(original), str(converted)], check=True, timeout=60, capture_output=True
        )
    a, b = sa.analyze(original).to_json(), sa.analyze(converted).to_json()
    for key in ("packets", "tcp_packets", "tcp_streams", "tcp_payload_bytes", "duration_s", "link_types"):
        assert a[key] == b[key]
    if conversion != "gzip":
        assert_same_as_tshark(converted)


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("tcpdump") is None, reason="needs root and tcpdump")
def test_real_tcpdump_capture_in_a_namespace_matches_tshark(tmp_path):
    namespace = f"splinedec{os.getpid()}"
    path = tmp_path / "real.pcap"
    subprocess.run(["ip", "netns", "add", namespace], check=True, timeout=30)
    try:
        subprocess.run(["ip", "-n", namespace, "link", "set", "lo", "up"], check=True, timeout=30)
        dump = subprocess.Popen(
            ["ip", "netns", "exec", namespace, "tcpdump", "-i", "lo", "-s", "96", "-U", "-w", str(path), "tcp"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        time.sleep(1.0)
        transfer = (
            "import socket,threading\n"
            "s=socket.socket(); s.bind(('127.0.0.1',0)); s.listen(); port=s.getsockname()[1]\n"
            "def serve():\n c,_=s.accept()\n while c.recv(65536): pass\n c.close()\n"
            "t=threading.Thread(target=serve); t.start()\n"
            "c=socket.create_connection(('127.0.0.1',port)); c.sendall(b'x'*3000000); c.close(); t.join()\n"
        )
        subprocess.run(["ip", "netns", "exec", namespace, "python3", "-c", transfer], check=True, timeout=60)
        time.sleep(1.0)
        dump.terminate()
        dump.wait(timeout=30)
    finally:
        subprocess.run(["ip", "netns", "del", namespace], timeout=30)
    assert_same_as_tshark(path)
    doc = sa.analyze(path).to_json()
    # A loaded host may retransmit on loopback (zero-window recovery): every payload byte
    # counts in tcp_payload_bytes, each byte of the stream once in unique_bytes.
    assert doc["tcp_streams"] == 1 and doc["tcp_payload_bytes"] >= 3_000_000
    assert sum(d["unique_bytes"] for d in doc["directions"]) == 3_000_000
