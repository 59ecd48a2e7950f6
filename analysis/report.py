"""The per-file report: a short composition of stage calls into one JSON-able dict.

`analyze_file(path)` = decode -> streams -> summary numbers. Each stage is
one call here, so adding a stage's keys (wireshark flags, directions) is a
few lines. Library code: returns data, never prints.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Union

import numpy as np

from .columns import DECODE_IN_ICMP_ERROR
from .decode import Capture, ProgressCallback
from .packets import PacketTable, addresses_to_strings

SCHEMA_VERSION = 1


def tcp_packet_mask(packets: PacketTable) -> np.ndarray:
    """Frames with a TCP header that is not quoted inside an ICMP error."""
    return (packets["tcp_header_len"] > 0) & ((packets["decode_flags"] & DECODE_IN_ICMP_ERROR) == 0)


@dataclass
class StreamNumbers:
    """TCP stream number per packet (-1 for non-TCP rows) and the number of streams."""

    stream: np.ndarray
    count: int


def _temporary_assign_streams(packets: PacketTable) -> StreamNumbers:
    """TEMPORARY until `spline_analysis.flows.assign_streams` exists: one stream per
    unordered (address, port) pair, numbered by first appearance like tshark. Unlike
    tshark it does not start a new stream when a port pair is reused after FIN/RST.
    """
    tcp = tcp_packet_mask(packets)
    stream = np.full(len(packets), -1, dtype=np.int64)
    rows = np.flatnonzero(tcp)
    if len(rows) == 0:
        return StreamNumbers(stream, 0)
    endpoint_a = np.concatenate([packets["src_addr"][rows], packets["sport"][rows].astype(">u2").view(np.uint8).reshape(-1, 2)], axis=1)
    endpoint_b = np.concatenate([packets["dst_addr"][rows], packets["dport"][rows].astype(">u2").view(np.uint8).reshape(-1, 2)], axis=1)
    directed = np.ascontiguousarray(np.concatenate([endpoint_a, endpoint_b], axis=1)).view(np.dtype((np.void, 36))).ravel()
    unique, first_index, inverse = np.unique(directed, return_index=True, return_inverse=True)
    canonical_of_unique: Dict[bytes, int] = {}
    canonical_ids = np.empty(len(unique), dtype=np.int64)
    for k, key in enumerate(unique):
        raw = bytes(key)
        canonical = min(raw, raw[18:] + raw[:18])
        canonical_ids[k] = canonical_of_unique.setdefault(canonical, len(canonical_of_unique))
    first_seen = np.full(len(canonical_of_unique), np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(first_seen, canonical_ids, first_index)
    order = np.argsort(first_seen, kind="stable")
    number = np.empty_like(order)
    number[order] = np.arange(len(order))
    stream[rows] = number[canonical_ids[inverse.ravel()]]
    return StreamNumbers(stream, len(order))


def assign_streams(packets: PacketTable) -> StreamNumbers:
    """tshark's tcp.stream numbering: from the flows stage when present, else the temporary count."""
    try:
        from .flows import assign_streams as flows_assign_streams  # type: ignore[attr-defined]
    except ImportError:
        return _temporary_assign_streams(packets)
    result = flows_assign_streams(packets)
    for name in ("stream", "stream_id", "streams", "ids"):
        per_packet = getattr(result, name, None)
        if isinstance(per_packet, np.ndarray) and len(per_packet) == len(packets):
            return StreamNumbers(per_packet.astype(np.int64, copy=False), int(result.count))
    fallback = _temporary_assign_streams(packets)
    return StreamNumbers(fallback.stream, int(result.count))


def duration_s(packets: PacketTable) -> float:
    """Last minus first timestamp over all frames that carry one, seconds."""
    ts_ns = packets["ts_ns"][packets["ts_valid"]]
    if len(ts_ns) == 0:
        return 0.0
    return round(int(ts_ns.max() - ts_ns.min()) / 1e9, 9)


def summarize_capture(capture: Capture, streams: Optional[StreamNumbers] = None) -> Dict[str, Any]:
    """The schema-1 document of one decoded capture."""
    packets = capture.packets
    tcp = tcp_packet_mask(packets)
    if streams is None:
        streams = assign_streams(packets)
    drops = capture.capture_drops
    return {
        "schema": SCHEMA_VERSION,
        "file": str(capture.path),
        "format": capture.format,
        "compressed": capture.compressed,
        "packets": len(packets) + capture.nonpacket_records,
        "tcp_packets": int(tcp.sum()),
        "tcp_streams": int(streams.count),
        "tcp_payload_bytes": int(packets["tcp_payload_len"][tcp].sum(dtype=np.int64)),
        "duration_s": duration_s(packets),
        "link_types": list(capture.link_types),
        "capture_drops": {"kernel": drops["kernel"], "interface": drops["interface"], "source": drops["source"]},
        "isb_drops": {key: drops.get(key) for key in ("isb_ifdrop", "isb_osdrop", "isb_ifdrop_per_interface",
                                                       "isb_osdrop_per_interface")},
        "truncated_at": capture.truncated_at,
        "warnings": list(capture.warnings),
    }


def analyze_file(path: Union[str, os.PathLike], *, strict: bool = False,
                 progress: Optional[ProgressCallback] = None) -> Dict[str, Any]:
    """Decode `path`, run every stage and return its schema-1 report dict (raises
    errors.CaptureError): the capture keys, `wireshark` (tshark-compatible flag
    counts), `directions` (truth-seeking figures per flow direction) and `summary`."""
    from .pipeline import analyze
    return analyze(path, strict=strict, progress=progress).to_json()


STREAM_TABLE_COLUMNS = ("file", "tcp_stream", "src", "sport", "dst", "dport", "packets_a2b", "packets_b2a",
                        "payload_bytes_a2b", "payload_bytes_b2a", "first_time_s", "last_time_s")


def stream_table(capture: Capture, streams: Optional[StreamNumbers] = None) -> List[Dict[str, Any]]:
    """One row per TCP stream: endpoints (a = the first packet's source), packets and payload bytes per direction."""
    packets = capture.packets
    if streams is None:
        streams = assign_streams(packets)
    rows = np.flatnonzero(streams.stream >= 0)
    if len(rows) == 0:
        return []
    ids = streams.stream[rows]
    order = np.argsort(ids, kind="stable")
    rows, ids = rows[order], ids[order]
    starts = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]])
    first_rows = rows[starts]
    src_text = addresses_to_strings(packets["src_addr"][first_rows], packets["ip_version"][first_rows])
    dst_text = addresses_to_strings(packets["dst_addr"][first_rows], packets["ip_version"][first_rows])
    # a->b: same source address and port as the stream's first packet
    first_of_row = np.repeat(first_rows, np.diff(np.r_[starts, len(rows)]))
    a2b = (np.all(packets["src_addr"][rows] == packets["src_addr"][first_of_row], axis=1)
           & (packets["sport"][rows] == packets["sport"][first_of_row]))
    payload = packets["tcp_payload_len"][rows].astype(np.int64)
    ts_s = packets["ts_ns"][rows] / 1e9
    table = []
    bounds = np.r_[starts, len(rows)]
    for k in range(len(starts)):
        span = slice(bounds[k], bounds[k + 1])
        forward = a2b[span]
        table.append({
            "file": str(capture.path), "tcp_stream": int(ids[bounds[k]]),
            "src": src_text[k], "sport": int(packets["sport"][first_rows[k]]),
            "dst": dst_text[k], "dport": int(packets["dport"][first_rows[k]]),
            "packets_a2b": int(forward.sum()), "packets_b2a": int((~forward).sum()),
            "payload_bytes_a2b": int(payload[span][forward].sum()), "payload_bytes_b2a": int(payload[span][~forward].sum()),
            "first_time_s": float(ts_s[span].min()), "last_time_s": float(ts_s[span].max()),
        })
    return table
