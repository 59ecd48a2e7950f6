"""The per-file report: a short composition of stage calls into one JSON-able dict.

`summarize_capture` gives the capture keys (issue 2); `analyze_file(path)` runs every
stage through `pipeline.analyze` and adds the tshark-compatible flags, the
truth-seeking directions and the run summary. Library code: never prints.
"""
from __future__ import annotations

import os
from typing import Any, Dict, Optional, Union

import numpy as np

from .columns import DECODE_IN_ICMP_ERROR
from .decode import Capture, ProgressCallback
from .packets import PacketTable

SCHEMA_VERSION = 2


def tcp_packet_mask(packets: PacketTable) -> np.ndarray:
    """Frames with a TCP header that is not quoted inside an ICMP error."""
    return (packets["tcp_header_len"] > 0) & ((packets["decode_flags"] & DECODE_IN_ICMP_ERROR) == 0)


def duration_s(packets: PacketTable) -> float:
    """Last minus first timestamp over all frames that carry one, seconds."""
    ts_ns = packets["ts_ns"][packets["ts_valid"]]
    if len(ts_ns) == 0:
        return 0.0
    return round(int(ts_ns.max() - ts_ns.min()) / 1e9, 9)


def summarize_capture(capture: Capture, streams: Any = None) -> Dict[str, Any]:
    """The schema-1 document of one decoded capture; `streams` is its `flows.Flows`
    (computed when not given), of which only `.count` is read."""
    packets = capture.packets
    tcp = tcp_packet_mask(packets)
    if streams is None:
        from .flows import assign_streams
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
