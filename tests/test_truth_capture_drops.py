"""Loss at the receiver when tcpdump itself drops packets (a small -B at a high rate).

The capture's own drops leave IP-ID gaps as lost packets do. Those of data it never saw the
receiver ACKed (capture gaps); those of a copy of data it holds in another copy (a repeat the
sender sent, or its first copy) leave an ID gap and no sequence gap, and used to count as
lost. tcpdump's kernel-drop counter counts every packet it dropped, and at the receiver its
own packets (ACKs) cannot be lost before the capture: their ID gaps are exactly its drops of
them, so the counter tells how many incoming copies it dropped.

These captures are the bundled receiver sample (samples/cubic-2pct-15mbit: 80 segments
dropped by the router) with packets taken out as a full capture ring drops them, in bursts
from both directions, and with the sender's IDs moved on where the ring dropped a copy of
data the file holds elsewhere; its meta.json carries the count as tcpdump would. The router's
drops (the truth) do not change.
"""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path
from typing import List, Sequence, Tuple

from spline_analysis._core.pipeline import analyze

SAMPLE = Path(__file__).resolve().parents[1] / "samples" / "cubic-2pct-15mbit"
ROUTER_DROPS = 80  # truth.json: router_random_drops
PCAP_HEADER_BYTES = 24
RECORD_HEADER_BYTES = 16
ETHERNET_HEADER_BYTES = 14
DATA_SENDER = bytes([10, 204, 1, 1])  # iperf3 -R: the server sends the data
TCP_FIN, TCP_RST = 0x01, 0x04

Record = Tuple[bytes, bytes]  # (record header, frame)


def read_records(pcap: Path) -> Tuple[bytes, List[Record]]:
    raw = pcap.read_bytes()
    offset, records = PCAP_HEADER_BYTES, []
    while offset + RECORD_HEADER_BYTES <= len(raw):
        captured = struct.unpack_from("<I", raw, offset + 8)[0]
        end = offset + RECORD_HEADER_BYTES + captured
        records.append((raw[offset : offset + RECORD_HEADER_BYTES], raw[offset + RECORD_HEADER_BYTES : end]))
        offset = end
    return raw[:PCAP_HEADER_BYTES], records


def from_data_sender(frame: bytes) -> bool:
    return frame[ETHERNET_HEADER_BYTES + 12 : ETHERNET_HEADER_BYTES + 16] == DATA_SENDER


def tcp_flags(frame: bytes) -> int:
    ip = ETHERNET_HEADER_BYTES
    return frame[ip + (frame[ip] & 0x0F) * 4 + 13]


def payload_bytes(frame: bytes) -> int:
    ip = ETHERNET_HEADER_BYTES
    total = struct.unpack_from("!H", frame, ip + 2)[0]
    tcp = (frame[ip] & 0x0F) * 4
    return total - tcp - (frame[ip + tcp + 12] >> 4) * 4


def with_ip_id(frame: bytes, ip_id: int) -> bytes:
    """The frame with another IPv4 ID and its header checksum recomputed."""
    out = bytearray(frame)
    ip = ETHERNET_HEADER_BYTES
    header_bytes = (out[ip] & 0x0F) * 4
    struct.pack_into("!H", out, ip + 4, ip_id & 0xFFFF)
    struct.pack_into("!H", out, ip + 10, 0)
    total = sum(struct.unpack_from(f"!{header_bytes // 2}H", out, ip))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    struct.pack_into("!H", out, ip + 10, ~total & 0xFFFF)
    return bytes(out)


def ring_drops(
    records: Sequence[Record], bursts: Sequence[Tuple[int, int]], copies_dropped_after: Sequence[int]
) -> Tuple[List[Record], int]:
    """The records a full ring leaves: the frames of each [first, last) burst gone (both
    directions), and after each listed frame one more packet of the data sender's that the
    ring dropped, a copy of data the file holds (its later IDs move on by one). Returns the
    records left and tcpdump's kernel-drop count."""
    gone = set(i for first, last in bursts for i in range(first, last))
    kept: List[Record] = []
    shift = 0
    for i, (header, frame) in enumerate(records):
        if i in gone:
            continue
        if from_data_sender(frame) and shift:
            ip_id = struct.unpack_from("!H", frame, ETHERNET_HEADER_BYTES + 4)[0]
            frame = with_ip_id(frame, ip_id + shift)
        kept.append((header, frame))
        if i in copies_dropped_after:
            shift += 1
    return kept, len(gone) + len(copies_dropped_after)


def write_capture(directory: Path, pcap_header: bytes, records: Sequence[Record], kernel_drops: int) -> Path:
    directory.mkdir()
    pcap = directory / "trace.pcap"
    pcap.write_bytes(pcap_header + b"".join(h + f for h, f in records))
    meta = json.loads((SAMPLE / "meta.json").read_text())
    meta["capture"]["captured"] = len(records)
    meta["capture"]["kernel_drops"] = kernel_drops
    meta["capture"]["received_by_filter"] = len(records) + kernel_drops
    (directory / "meta.json").write_text(json.dumps(meta))
    shutil.copy(SAMPLE / "iperf3.json", directory / "iperf3.json")
    return pcap


def data_direction(pcap: Path) -> dict:
    return max(analyze(pcap).to_json()["directions"], key=lambda d: d["data_segments"])


def destination_port(frame: bytes) -> int:
    ip = ETHERNET_HEADER_BYTES
    return struct.unpack_from("!H", frame, ip + (frame[ip] & 0x0F) * 4 + 2)[0]


def sample_layout() -> Tuple[bytes, List[Record], List[int]]:
    """The sample's records and the indices of the data connection's data frames (not
    iperf3's control connection's)."""
    header, records = read_records(SAMPLE / "trace.pcap")
    sent = [i for i, (_, f) in enumerate(records) if from_data_sender(f) and payload_bytes(f) > 0]
    ports = [destination_port(records[i][1]) for i in sent]
    data_port = max(set(ports), key=ports.count)
    return header, records, [i for i, port in zip(sent, ports) if port == data_port]


def test_the_sample_counts_the_router_drops_exactly():
    assert data_direction(SAMPLE / "trace.pcap")["lost_segments"] == ROUTER_DROPS


def test_copies_the_capture_dropped_of_data_it_holds_elsewhere_are_not_counted_lost(tmp_path):
    header, records, data = sample_layout()
    # three bursts of 60 frames inside the transfer, both directions, and five copies
    bursts = [(data[n], data[n] + 60) for n in (600, 1700, 2900)]
    copies = [data[n] for n in (300, 1200, 2000, 2500, 3300)]
    kept, kernel_drops = ring_drops(records, bursts, copies)
    direction = data_direction(write_capture(tmp_path / "ring", header, kept, kernel_drops))

    assert direction["capture_gaps"] > 0  # the bursts' data, which the receiver ACKed
    assert direction["loss_method"] == "ip_id_gaps"
    assert direction["lost_segments"] == ROUTER_DROPS
    # without tcpdump's counter the copies' ID gaps, which no sequence gap shows, count as lost
    (tmp_path / "ring" / "meta.json").unlink()
    assert data_direction(tmp_path / "ring" / "trace.pcap")["lost_segments"] == ROUTER_DROPS + len(copies)


def test_data_the_capture_dropped_at_the_end_of_a_transfer_is_counted_from_the_last_ack(tmp_path):
    """The ring dropped the sender's last data and its FIN: their IDs lie past the last one
    seen (no gap), the counter counts them, the receiver's last ACK covers them."""
    header, records, data = sample_layout()
    data_port = destination_port(records[data[0]][1])
    fin = next(
        i
        for i, (_, f) in enumerate(records)
        if from_data_sender(f) and destination_port(f) == data_port and tcp_flags(f) & TCP_FIN
    )
    tail = [(data[-40], data[-1] + 1), (fin, fin + 1)]
    kept, kernel_drops = ring_drops(records, tail + [(data[1000], data[1000] + 50)], [data[2200]])
    direction = data_direction(write_capture(tmp_path / "tail", header, kept, kernel_drops))

    assert direction["lost_segments"] == ROUTER_DROPS


def test_the_counter_is_not_used_when_the_capture_lost_the_connections_ends(tmp_path):
    """The ring dropped the file's last frames, the connections' closes among them: the
    receiver's last ACKs are among the counted drops and leave no ID gap, so the counter
    cannot tell copies apart and the plain ID count stands (the copy dropped counts as lost)."""
    header, records, data = sample_layout()
    last_frames = (data[-1] - 5, len(records))
    kept, kernel_drops = ring_drops(records, [last_frames, (data[1000], data[1000] + 50)], [data[2200]])
    direction = data_direction(write_capture(tmp_path / "open", header, kept, kernel_drops))

    assert direction["lost_segments"] == ROUTER_DROPS + 1
