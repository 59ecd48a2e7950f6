"""The report: one `Analysis` in, the JSON document, the per-direction CSV rows and the text out.

Every key it writes is declared in `schema.py` (name, unit, meaning, family); this module
only fills them from the stages' outputs, each once:
- `document(analysis)`: the `--json` document of one capture (`SCHEMA_VERSION`);
- `direction_rows(document)`: its `--csv` rows, columns `schema.DIRECTION_CSV_COLUMNS`;
- `text(documents)`: the terminal report of one or several captures.

iperf3's test window is applied here and only here: a direction an iperf3 result beside the
capture describes reports the retransmissions inside that window, and the summary repeats
its direction's figures, so the CLI, the testbed and the notebooks read one number.
Library code: returns data, never prints.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Sequence

import numpy as np

from ._core.columns import DECODE_IN_ICMP_ERROR, DECODE_TRUNCATED
from ._core.integrity import codes_by_direction
from ._core.transfer import transfer_of
from .schema import DIRECTION_CSV, DIRECTION_TABLE_KEYS, SCHEMA_VERSION

if TYPE_CHECKING:
    from ._core.decode import Capture
    from ._core.flows import Flows
    from ._core.iperf3 import TestWindow
    from ._core.packets import PacketTable
    from ._core.pipeline import Analysis
    from ._core.truth import Directions

__all__ = [
    "SCHEMA_VERSION",
    "document",
    "several",
    "direction_rows",
    "text",
    "side_by_side",
    "main_row",
    "capture_keys",
    "summary_of",
]

BYTES_PER_MB = 1e6  # the seed reports' MB is decimal megabytes
BITS_PER_MBIT = 1e6
NO_RTT = {"min": None, "median": None, "p95": None, "max": None, "jitter": None}


def tcp_packet_mask(packets: "PacketTable") -> np.ndarray:
    """Frames with a TCP header that is not quoted inside an ICMP error."""
    return (packets["tcp_header_len"] > 0) & ((packets["decode_flags"] & DECODE_IN_ICMP_ERROR) == 0)


def duration_s(packets: "PacketTable") -> float:
    """Last minus first timestamp over all frames that carry one, seconds."""
    ts_ns = packets["ts_ns"][packets["ts_valid"]]
    if len(ts_ns) == 0:
        return 0.0
    return round(int(ts_ns.max() - ts_ns.min()) / 1e9, 9)


def capture_keys(capture: "Capture", flows: "Flows") -> Dict[str, Any]:
    """The document's keys about the file itself (decode's output and the streams' count)."""
    packets = capture.packets
    tcp = tcp_packet_mask(packets)
    drops = capture.capture_drops
    return {
        "schema": SCHEMA_VERSION,
        "file": str(capture.path),
        "format": capture.format,
        "compressed": capture.compressed,
        "packets": len(packets) + capture.nonpacket_records,
        "tcp_packets": int(tcp.sum()),
        "tcp_streams": int(flows.count),
        "tcp_payload_bytes": int(packets["tcp_payload_len"][tcp].sum(dtype=np.int64)),
        "duration_s": duration_s(packets),
        "link_types": list(capture.link_types),
        "capture_drops": {"kernel": drops["kernel"], "interface": drops["interface"], "source": drops["source"]},
        "isb_drops": {
            key: drops.get(key)
            for key in ("isb_ifdrop", "isb_osdrop", "isb_ifdrop_per_interface", "isb_osdrop_per_interface")
        },
        "truncated_at": capture.truncated_at,
        "warnings": [],
    }


def _plain(value: Any) -> Any:
    """A numpy scalar as the JSON value it stands for (NaN: null)."""
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, (np.floating, float)):
        v = float(value)
        return None if np.isnan(v) else v
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, np.str_):
        return str(value)
    return value


def _iperf3_view(record: Dict[str, Any], window: "TestWindow") -> None:
    """The direction seen through the iperf3 test it carried: `retransmissions` becomes the
    in-test count (what iperf3's Retr column and TCP_INFO report) and
    `retransmissions_in_capture` keeps the whole capture's."""
    test = window.test
    record["retransmissions_in_capture"] = record.get("retransmissions")
    record["retransmissions"] = window.retransmissions_in_test
    record["iperf3"] = {
        "file": test.path.name,
        "test_window_s": [window.start_s, window.start_s + test.sender_seconds],
        "retransmissions_in_test": window.retransmissions_in_test,
        "retransmissions_after_test": window.retransmissions_after_test,
        "sender_retransmits_reported": test.sender_retransmits,
        "receiver_bps_reported": test.receiver_bps,
        "sender_cca": test.sender_cca,
    }


def table_records(directions: "Directions") -> List[Dict[str, Any]]:
    """The truth stage's figures of each direction as plain JSON values, with its RTT
    statistics and bytes in flight."""
    table = directions.table
    records = []
    for row in range(len(directions)):
        record = {key.name: _plain(table[key.name][row]) for key in DIRECTION_TABLE_KEYS}
        record["rtt_ms"] = directions.rtt_ms[row] or dict(NO_RTT)
        record["bytes_in_flight"] = directions.bytes_in_flight_stats[row]
        records.append(record)
    return records


def direction_records(analysis: "Analysis") -> List[Dict[str, Any]]:
    """The `directions` list: each data-carrying direction's truth-seeking figures, its
    tshark-compatible counts, the iperf3 test it carried and the kernel's view of it."""
    from ._core.iperf3 import window_counts

    per_stream = analysis.wireshark.stream_counts()
    windows = (
        window_counts(analysis.packets, analysis.directions, analysis.iperf3_tests) if analysis.iperf3_tests else {}
    )
    kernel = analysis.kernel_views() if analysis.probe is not None else None
    records = table_records(analysis.directions)
    for row, record in enumerate(records):
        stream, suffix = int(record["stream"]), ("_a2b", "_b2a")[int(record["direction"])]
        record["wireshark"] = {
            name[: -len(suffix)]: int(values[stream]) for name, values in per_stream.items() if name.endswith(suffix)
        }
        if row in windows:
            _iperf3_view(record, windows[row])
        if kernel is not None:
            record["kernel"] = kernel[row]
    return records


def main_row(records: Sequence[Mapping[str, Any]]) -> Optional[int]:
    """Index of the direction that carried the most payload (None when none carried data)."""
    if not records:
        return None
    return int(np.argmax([r["payload_bytes"] for r in records]))


def summary_of(
    records: Sequence[Mapping[str, Any]], *, name: str, capture_drops: Optional[Mapping[str, Any]], total_packets: int
) -> Dict[str, Any]:
    """The Spline report's figures of the main data direction, read from its record: speed
    (goodput) in MB/s and Mbit/s, time, packet loss % (N; whether it is a floor is set
    by `document` from the warnings), retransmissions % (N), kernel
    drops (N and % of packets; None when the capture does not say); and the transfer the main
    direction belongs to (its hosts' flows the same way, measured as a whole: transfer.py)."""
    summary: Dict[str, Any] = {
        "name": name,
        "vantage": None,
        "flow": None,
        "speed_MBps": None,
        "speed_Mbps": None,
        "time_s": None,
        "packet_loss_pct": None,
        "lost_segments": None,
        "lost_segments_is_floor": False,
        "retransmissions_pct": None,
        "retransmissions": None,
        "kernel_drops": None,
        "kernel_drops_pct": None,
        "rtt_median_ms": None,
        "transfer": None,
    }
    row = main_row(records)
    if row is not None:
        d = records[row]
        goodput = d["goodput_bps"]
        loss_rate = d["loss_rate"]
        summary.update(
            {
                "vantage": d["vantage"],
                "flow": f"{d['src']}:{d['sport']} -> {d['dst']}:{d['dport']}",
                "speed_MBps": goodput / 8 / BYTES_PER_MB if goodput is not None else None,
                "speed_Mbps": goodput / BITS_PER_MBIT if goodput is not None else None,
                "time_s": d["duration_s"],
                "lost_segments": d["lost_segments"],
                "packet_loss_pct": None if loss_rate is None else 100.0 * loss_rate,
                "retransmissions": d["retransmissions"],
                "retransmissions_pct": (
                    100.0 * d["retransmissions"] / d["data_segments"] if d["data_segments"] else None
                ),
                "rtt_median_ms": (d["rtt_ms"] or {}).get("median"),
            }
        )
    summary["transfer"] = transfer_of(records, row)
    kernel = (capture_drops or {}).get("kernel")
    if kernel is not None:
        summary["kernel_drops"] = int(kernel)
        if total_packets:
            summary["kernel_drops_pct"] = 100.0 * int(kernel) / (int(total_packets) + int(kernel))
    return summary


def _capture_dropped_packets(capture_drops: Optional[Mapping[str, Any]]) -> int:
    """The packets the capture's own counters say it dropped (kernel and interface; 0 unknown)."""
    drops = capture_drops or {}
    return int(drops.get("kernel") or 0) + int(drops.get("interface") or 0)


def warnings_of(analysis: "Analysis", records: Sequence[Mapping[str, Any]]) -> List[Dict[str, Any]]:
    """Capture-integrity warnings (integrity.py): the decoder's, the file's, each direction's."""
    from ._core import integrity

    slots = analysis.directions.packet_slot
    counts = np.bincount(slots[slots >= 0]) if len(slots) else np.zeros(0, np.int64)
    slot_packets = {int(k): int(v) for k, v in enumerate(counts)}
    stamped = (slots >= 0) & (np.asarray(analysis.packets["tcp_payload_len"]) > 0)
    stamped &= np.asarray(analysis.packets["opt_has_ts"]).astype(bool)
    stamped_counts = np.bincount(slots[stamped]) if stamped.any() else np.zeros(0, np.int64)
    slot_stamped_data = {int(k): int(v) for k, v in enumerate(stamped_counts)}
    cut = (slots >= 0) & (np.asarray(analysis.packets["tcp_payload_len"]) > 0)
    cut &= (np.asarray(analysis.packets["decode_flags"]) & DECODE_TRUNCATED) != 0
    cut_counts = np.bincount(slots[cut]) if cut.any() else np.zeros(0, np.int64)
    slot_cut_data = {int(k): int(v) for k, v in enumerate(cut_counts)}
    return (
        integrity.decode_warnings(analysis.capture.warnings)
        + integrity.file_warnings(analysis.packets, analysis.capture.capture_drops)
        + integrity.direction_warnings(records, slot_packets)
        + integrity.hole_count_warnings(
            records,
            slot_stamped_data,
            slot_cut_data,
            capture_dropped_packets=_capture_dropped_packets(analysis.capture.capture_drops),
        )
    )


def document(analysis: "Analysis") -> Dict[str, Any]:
    """The `--json` document of one capture (keys and meanings: schema.DOCUMENT_KEYS)."""
    doc = capture_keys(analysis.capture, analysis.flows)
    doc["wireshark"] = analysis.wireshark.counts()
    records = direction_records(analysis)
    doc["directions"] = records
    doc["summary"] = summary_of(
        records, name=analysis.title, capture_drops=analysis.capture.capture_drops, total_packets=len(analysis.packets)
    )
    doc["warnings"] = warnings_of(analysis, records)
    doc["summary"]["warning_codes"] = sorted({w["code"] for w in doc["warnings"]})
    main = main_row(records)
    if main is not None:
        # the run summary reads "at least" where the loss_floor warning says so
        main_key = (records[main]["stream"], records[main]["direction"])
        doc["summary"]["lost_segments_is_floor"] = "loss_floor" in codes_by_direction(doc["warnings"]).get(main_key, [])
    doc["iperf3"] = [
        {
            "file": t.path.name,
            "sender_cca": t.sender_cca,
            "sender_retransmits": t.sender_retransmits,
            "receiver_bps": t.receiver_bps,
            "sender_seconds": t.sender_seconds,
            "bidir_reverse": t.reverse_half,
        }
        for t in analysis.iperf3_tests
    ]
    return doc


def several(documents: Sequence[Dict[str, Any]]) -> Dict[str, Any]:
    """The document of several captures: `{"schema", "files": [documents]}`."""
    return {"schema": SCHEMA_VERSION, "files": list(documents)}


# ---------------------------------------------------------------- CSV


def _value_at(record: Mapping[str, Any], path: str) -> Any:
    value: Any = record
    for part in path.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return None
        value = value[part]
    return value


def direction_rows(doc: Mapping[str, Any]) -> List[Dict[str, Any]]:
    """One CSV row per direction of a document, columns schema.DIRECTION_CSV_COLUMNS: the
    direction's own values, its RTT and Wireshark counts as columns, the file, and the
    warning codes of the file and of the direction."""
    warnings = doc.get("warnings") or []
    codes = codes_by_direction(warnings)
    file_codes = [w["code"] for w in warnings if "stream" not in w]
    rows = []
    for d in doc.get("directions", []):
        row: Dict[str, Any] = {}
        for column, path in DIRECTION_CSV:
            if path == "/file":
                row[column] = doc["file"]
            elif path == "/warnings":
                row[column] = " ".join(file_codes + codes.get((d["stream"], d["direction"]), []))
            elif column == "retransmissions_in_capture":  # the whole capture's, iperf3 window or not
                row[column] = d.get(column, d["retransmissions"])
            else:
                row[column] = _value_at(d, path)
        rows.append(row)
    return rows


# ---------------------------------------------------------------- text


def side_by_side(summaries: Sequence[Dict[str, Any]]) -> str:
    """The runs' summaries as a text table, one column per run."""
    from ._core.render import format_side_by_side

    return format_side_by_side(summaries)


def text(documents: Sequence[Dict[str, Any]]) -> str:
    """The terminal report: each file's, then (several files) the runs side by side."""
    from ._core.render import file_report

    out = "\n\n".join(file_report(d) for d in documents)
    if len(documents) > 1:
        out += "\n\nRuns side by side (main data direction of each file)\n"
        out += side_by_side([d["summary"] for d in documents])
    return out
