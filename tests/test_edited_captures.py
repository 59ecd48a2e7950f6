"""Captures as users bring them: cut in time, or two hosts' captures merged into one file.

Each test edits a real capture record by record (classic pcap, Ethernet) and holds the
analyzer to what the edit leaves knowable: a file that starts in the middle of a recovery
misses nothing it should warn of, and a merged file counts the path's drops exactly.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Iterator, List

import numpy as np
import pytest

from pcapbuild import internet_checksum
from spline_analysis import analyze
from spline_analysis._core.decode import read

REPO = Path(__file__).resolve().parents[1]
PCAP_HEADER_BYTES = 24
RECORD_HEADER_BYTES = 16
ETHERNET_HEADER_BYTES = 14
IPV4_TTL_OFFSET = 8
IPV4_CHECKSUM_OFFSET = 10
# the bundled samples captured at the receiver (samples/README.md)
RECEIVER_SAMPLES = ("cubic-2pct-15mbit", "bbr-2pct-15mbit", "spline-2pct-15mbit")


def records(capture: bytes) -> Iterator[bytes]:
    """A classic pcap's records (header and data), in file order."""
    offset = PCAP_HEADER_BYTES
    while offset + RECORD_HEADER_BYTES <= len(capture):
        captured = struct.unpack_from("<I", capture, offset + 8)[0]
        yield capture[offset : offset + RECORD_HEADER_BYTES + captured]
        offset += RECORD_HEADER_BYTES + captured


def record_time_ns(record: bytes) -> int:
    seconds, micros = struct.unpack_from("<II", record, 0)
    return seconds * 1_000_000_000 + micros * 1000


def shifted(record: bytes, shift_ns: int) -> bytes:
    """The record stamped `shift_ns` later (whole microseconds)."""
    micros_total = record_time_ns(record) // 1000 + shift_ns // 1000
    return struct.pack("<II", micros_total // 1_000_000, micros_total % 1_000_000) + record[8:]


def ttl_lowered(record: bytes, hops: int) -> bytes:
    """The record's IPv4 packet as it would arrive `hops` routers further on (TTL and checksum)."""
    ip = RECORD_HEADER_BYTES + ETHERNET_HEADER_BYTES
    header_bytes = (record[ip] & 0x0F) * 4
    out = bytearray(record)
    out[ip + IPV4_TTL_OFFSET] -= hops
    out[ip + IPV4_CHECKSUM_OFFSET : ip + IPV4_CHECKSUM_OFFSET + 2] = b"\0\0"
    checksum = internet_checksum(bytes(out[ip : ip + header_bytes]))
    out[ip + IPV4_CHECKSUM_OFFSET : ip + IPV4_CHECKSUM_OFFSET + 2] = struct.pack(">H", checksum)
    return bytes(out)


def first_repair_index(path: Path) -> int:
    """Index of the first data packet below data seen before it, in the direction that carries
    the most payload: where a capture started there would open in a recovery."""
    packets = read(path).packets
    payload = np.asarray(packets["tcp_payload_len"]).astype(np.int64)
    sport = np.asarray(packets["sport"])
    ports, port_index = np.unique(sport, return_inverse=True)
    data_port = ports[np.argmax(np.bincount(port_index.ravel(), weights=payload))]
    highest = None
    for row in np.flatnonzero((payload > 0) & (sport == data_port)):
        start = int(packets["seq"][row])
        if highest is not None and (start - highest) % 2**32 > 2**31:
            return int(row)
        end = start + int(payload[row])
        if highest is None or (end - highest) % 2**32 < 2**31:
            highest = end
    raise AssertionError(f"{path}: no repair")


@pytest.mark.parametrize("sample", RECEIVER_SAMPLES)
def test_receiver_capture_cut_to_start_at_a_repair_warns_no_capture_gap(sample, tmp_path):
    """The data above the first repair reached the receiver before the file starts: its first
    ACKs acknowledge it, and that is not data the capture missed."""
    source = REPO / "samples" / sample / "trace.pcap"
    capture = source.read_bytes()
    kept: List[bytes] = list(records(capture))[first_repair_index(source) :]
    cut = tmp_path / "cut.pcap"
    cut.write_bytes(capture[:PCAP_HEADER_BYTES] + b"".join(kept))
    document = analyze(cut).to_json()
    codes = {w["code"] for w in document["warnings"]}
    assert "no_handshake" in codes and "capture_gaps" not in codes
    assert all(d["capture_gaps"] == 0 for d in document["directions"])


def test_sender_and_receiver_captures_merged_hops_and_milliseconds_apart_count_the_paths_drops(shared_dir, tmp_path):
    """The ground-truth corpus's two captures of one transfer, as if the receiver were 3 more
    hops away and its clock 5 ms behind the sender's (more than the path's delay), merged by
    time as mergecap does: each packet is in the file twice, and the data that left the
    sender and never reached the receiver is the router's drops."""
    corpus = shared_dir / "corpus" / "groundtruth"
    name = "dev_cubic_1pct"
    truth = json.loads((corpus / f"{name}.truth.json").read_text())
    sender = (corpus / f"{name}.snd.pcap").read_bytes()
    receiver = (corpus / f"{name}.rcv.pcap").read_bytes()
    far_end = [shifted(ttl_lowered(r, 3), -5_000_000) for r in records(receiver)]
    merged = sorted(list(records(sender)) + far_end, key=record_time_ns)
    path = tmp_path / "merged.pcap"
    path.write_bytes(sender[:PCAP_HEADER_BYTES] + b"".join(merged))
    document = analyze(path).to_json()
    data = max(document["directions"], key=lambda d: d["payload_bytes"])
    assert data["lost_segments"] == truth["data_direction_drops"]
    assert data["forwarded_drops"] == truth["data_direction_drops"]
    assert data["vantage"] == "in-path"
    assert {"duplicate_frames", "forwarding_drops"} <= {w["code"] for w in document["warnings"]}
