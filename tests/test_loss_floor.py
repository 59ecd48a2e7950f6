"""`loss_floor`: below the sender, where no IP IDs count loss (IPv6; IPv4 with unusable IDs),
loss is counted from sequence holes, and a burst's tail dropped and repaired in order leaves
none: the report says the count is a floor wherever the holes found loss, and nowhere else.

The real captures are the shared ground truth's (IPv4, a Linux sender, known router drops)
carried over to IPv6: each IPv4 header becomes an IPv6 header with the same addresses' bytes,
TTL and payload. The drops (the truth) do not change; only the IP IDs are gone.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest
from tcpcraft import Conversation

from spline_analysis._core.pipeline import analyze
from spline_analysis._core.render import file_report, format_side_by_side

GROUNDTRUTH = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "groundtruth"
NAMES = sorted(p.name.split(".")[0] for p in GROUNDTRUTH.glob("*.rcv.pcap")) if GROUNDTRUTH.is_dir() else []
RECEIVER_TOLERANCE = 0.03
ETHERNET_HEADER_BYTES = 14
PCAP_RECORD_HEADER_BYTES = 16
IPV6_PREFIX = bytes.fromhex("fd00") + bytes(10)  # fd00::a.b.c.d: 12 bytes, then the IPv4 address


def as_ipv6(source: Path, target: Path) -> int:
    """Copy an Ethernet pcap with every IPv4 packet carried as IPv6 (fd00::<IPv4 address>,
    hop limit = TTL, the IPv4 options dropped); returns how many packets were carried over.
    The decoder reads TCP without checking its checksum, so the TCP bytes are kept as they are."""
    raw = source.read_bytes()
    magic = struct.unpack_from("<I", raw, 0)[0]
    assert magic in (0xA1B2C3D4, 0xA1B23C4D) and struct.unpack_from("<I", raw, 20)[0] == 1  # Ethernet
    out, offset, carried = [raw[:24]], 24, 0
    while offset + PCAP_RECORD_HEADER_BYTES <= len(raw):
        seconds, fraction, captured, original = struct.unpack_from("<IIII", raw, offset)
        frame = raw[offset + PCAP_RECORD_HEADER_BYTES : offset + PCAP_RECORD_HEADER_BYTES + captured]
        offset += PCAP_RECORD_HEADER_BYTES + captured
        ip = ETHERNET_HEADER_BYTES
        if frame[ip - 2 : ip] == b"\x08\x00" and len(frame) >= ip + 20:
            header_bytes = (frame[ip] & 0x0F) * 4
            total_bytes, ttl, protocol = struct.unpack_from("!H", frame, ip + 2)[0], frame[ip + 8], frame[ip + 9]
            ipv6 = struct.pack("!IHBB", 6 << 28, total_bytes - header_bytes, protocol, ttl)
            ipv6 += IPV6_PREFIX + frame[ip + 12 : ip + 16] + IPV6_PREFIX + frame[ip + 16 : ip + 20]
            frame = frame[: ip - 2] + b"\x86\xdd" + ipv6 + frame[ip + header_bytes :]
            grown = len(ipv6) - header_bytes
            captured, original = captured + grown, original + grown
            carried += 1
        out.append(struct.pack("<IIII", seconds, fraction, captured, original) + frame)
    target.write_bytes(b"".join(out))
    return carried


def data_direction(document: dict) -> dict:
    return max(document["directions"], key=lambda d: d["data_segments"])


def ipv6_transfer(name: str, side: str, tmp_path: Path):
    """The ground truth's router drops of transfer `name`, and the report and data direction of
    its `side` ("rcv" or "snd") capture carried over to IPv6."""
    truth = json.loads((GROUNDTRUTH / f"{name}.truth.json").read_text())
    capture = tmp_path / f"{name}.{side}.pcap"
    assert as_ipv6(GROUNDTRUTH / f"{name}.{side}.pcap", capture) > 1000
    document = analyze(capture).to_json()
    return truth["data_direction_drops"], document, data_direction(document)


@pytest.mark.skipif(not NAMES, reason="shared ground-truth captures absent")
@pytest.mark.parametrize("name", NAMES)
def test_lossy_ipv6_receiver_capture_warns_that_its_loss_count_is_a_floor(name, tmp_path):
    drops, document, direction = ipv6_transfer(name, "rcv", tmp_path)

    assert direction["vantage"] == "receiver" and ":" in direction["src"]
    assert direction["loss_method"] == "holes"
    assert abs(direction["lost_segments"] - drops) <= RECEIVER_TOLERANCE * drops, (direction["lost_segments"], drops)
    floors = [w for w in document["warnings"] if w["code"] == "loss_floor"]
    assert [w["code"] for w in document["warnings"]] == ["loss_floor"], document["warnings"]
    assert (floors[0]["stream"], floors[0]["direction"]) == (direction["stream"], direction["direction"])
    assert floors[0]["lost_segments"] == direction["lost_segments"]
    assert f"at least {direction['lost_segments']:,} segments lost (IPv6 has no IP IDs)" in floors[0]["message"]


@pytest.mark.skipif(not NAMES, reason="shared ground-truth captures absent")
@pytest.mark.parametrize("name", NAMES)
def test_sender_capture_of_the_same_ipv6_transfer_counts_loss_exactly_and_raises_no_floor(name, tmp_path):
    drops, document, direction = ipv6_transfer(name, "snd", tmp_path)

    assert direction["vantage"] == "sender" and direction["loss_method"] == "retransmissions"
    assert direction["lost_segments"] >= drops * (1 - RECEIVER_TOLERANCE) > 0
    assert "loss_floor" not in [w["code"] for w in document["warnings"]], document["warnings"]


def receiver_capture(client: str, server: str, lost_segment: int = -1) -> Conversation:
    """A download captured at the client (the receiver): the server's 40 segments arrive 1 ms
    apart and each is ACKed at once; `lost_segment` (if any) never arrives and its repair
    comes a round trip (10 ms) after the first segment above it. Both ends send TCP timestamps
    (a 1 ms clock), as Linux does (without them `no_timestamps` is raised as well); the MSS
    announced is 1012 so that a segment with its 12-byte option carries 1000 bytes."""
    conv = Conversation(client_addr=client, server_addr=server)
    conv.client(0, flags="S", at_ms=0.0, mss=1012, wscale=7, sack_permitted=True, timestamps=(1, 0))
    conv.server(0, ack=1, flags="S", at_ms=10.0, mss=1012, wscale=7, sack_permitted=True, timestamps=(10, 1))
    conv.client(1, ack=1, at_ms=10.05, timestamps=(10, 10))
    t, received = 20.0, 0
    for k in range(40):
        t += 1.0
        if k == lost_segment:
            continue
        conv.server(1 + 1000 * k, ack=1, length=1000, at_ms=t, timestamps=(int(t), 10))
        if lost_segment < 0 or k < lost_segment:
            received = k + 1
            conv.client(1, ack=1 + 1000 * received, at_ms=t + 0.05, timestamps=(int(t), int(t)))
        else:
            above = (conv.server_isn + 1 + 1000 * (lost_segment + 1), conv.server_isn + 1 + 1000 * (k + 1))
            conv.client(1, ack=1 + 1000 * received, at_ms=t + 0.05, sack=[above], timestamps=(int(t), int(t)))
            if k == lost_segment + 1:
                repair_at = t + 10.0
    if lost_segment >= 0:
        repair_ms = max(repair_at, t + 1.0)
        conv.server(1 + 1000 * lost_segment, ack=1, length=1000, at_ms=repair_ms, timestamps=(int(repair_ms), int(t)))
        conv.client(1, ack=1 + 40_000, at_ms=repair_ms + 0.05, timestamps=(int(repair_ms), int(repair_ms)))
    return conv


@pytest.mark.parametrize("lost_segment", [5, -1], ids=["one-segment-lost", "lossless"])
def test_crafted_ipv6_receiver_capture_is_a_floor_only_when_its_holes_found_loss(lost_segment, tmp_path):
    capture = tmp_path / "download.pcap"
    capture.write_bytes(receiver_capture("fd00::1", "fd00::2", lost_segment).pcap())
    document = analyze(capture).to_json()
    direction = data_direction(document)

    assert direction["vantage"] == "receiver" and direction["loss_method"] == "holes"
    assert direction["lost_segments"] == (1 if lost_segment >= 0 else 0)
    codes = [w["code"] for w in document["warnings"]]
    assert codes == (["loss_floor"] if lost_segment >= 0 else []), document["warnings"]


@pytest.mark.parametrize("lost_segment", [5, -1], ids=["one-segment-lost", "lossless"])
def test_run_summary_reads_a_floor_loss_as_at_least_and_an_exact_one_as_is(lost_segment, tmp_path):
    capture = tmp_path / "download.pcap"
    capture.write_bytes(receiver_capture("fd00::1", "fd00::2", lost_segment).pcap())
    report = analyze(capture).to_json()

    assert report["summary"]["lost_segments_is_floor"] is (lost_segment >= 0)
    packet_loss = next(line for line in file_report(report).splitlines() if "Packet loss" in line)
    assert ("at least" in packet_loss) is (lost_segment >= 0), packet_loss
    side_by_side = format_side_by_side([report["summary"]])
    assert ("at least" in side_by_side) is (lost_segment >= 0), side_by_side


def with_snaplen(pcap: bytes, snaplen_bytes: int) -> bytes:
    """The classic pcap `pcap` as tcpdump -s `snaplen_bytes` would have written it: every frame
    cut to that many bytes (its original length kept), the header's snaplen set."""
    out, offset = [pcap[:16] + struct.pack("<I", snaplen_bytes) + pcap[20:24]], 24
    while offset + PCAP_RECORD_HEADER_BYTES <= len(pcap):
        seconds, fraction, captured, original = struct.unpack_from("<IIII", pcap, offset)
        frame = pcap[offset + PCAP_RECORD_HEADER_BYTES : offset + PCAP_RECORD_HEADER_BYTES + captured]
        offset += PCAP_RECORD_HEADER_BYTES + captured
        kept = frame[:snaplen_bytes]
        out.append(struct.pack("<IIII", seconds, fraction, len(kept), original) + kept)
    return b"".join(out)


def test_ipv6_capture_whose_snaplen_cut_the_timestamps_says_so_instead_of_a_floor(tmp_path):
    """tcpdump -s 80 keeps Ethernet, IPv6 and 26 bytes of TCP: the timestamps option (bytes 20-32
    of a Linux data segment's header) is cut, so the holes' count has no TSecr to find repairs
    lost again; the warning names the snaplen as the cause, not the sender's stack."""
    capture = tmp_path / "download-s80.pcap"
    capture.write_bytes(with_snaplen(receiver_capture("fd00::1", "fd00::2", lost_segment=5).pcap(), 80))
    document = analyze(capture).to_json()
    direction = data_direction(document)

    assert direction["loss_method"] == "holes" and direction["lost_segments"] == 1
    by_code = {w["code"]: w for w in document["warnings"]}
    assert sorted(by_code) == ["no_timestamps", "snaplen_short"], document["warnings"]
    cut = by_code["no_timestamps"]
    assert cut["cut_data_frames"] == direction["data_packets"] == 40
    assert "snaplen cut the options of 40 data frames" in cut["message"], cut["message"]
