"""The tidy results table: one row per run x flow, written as CSV and Parquet."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .analyse import analyse_capture, find_direction
from .fairness import jain_index
from .run import SENDER_ADDRESS, RunRecord

COLUMNS = [
    "run_id",
    "cca",
    "flow_cca",
    "rate",
    "rate_bps",
    "delay",
    "delay_ms",
    "jitter",
    "jitter_ms",
    "delay_applied",
    "loss",
    "loss_probability",
    "flows",
    "flow",
    "client_port",
    "duration_s",
    "throughput_bps",
    "throughput_source",
    "iperf3_sender_bps",
    "iperf3_receiver_bps",
    "retransmissions",
    "retransmissions_analysed",
    "lost_segments",
    "lost_segments_receiver",
    "router_drops",
    "router_random_drops",
    "router_queue_drops",
    "router_forwarded",
    "receiver_arrived",
    "qdisc_drops_run",
    "jain_index",
    "start_s",
    "throughput_overlap_bps",
    "overlap_share",
    "cca_reported",
    "capture_kernel_drops_sender",
    "capture_kernel_drops_receiver",
    "sender_pcap",
    "receiver_pcap",
    "iperf3_json",
    "analysis_note",
]


def overlap_throughput_bps(
    intervals: Sequence[Tuple[float, float, int]], flow_start_s: float, window_s: Tuple[float, float]
) -> Optional[float]:
    """bit/s a flow's receiver got while every flow of its run was sending: the iperf3 intervals
    (times from the flow's own start) whose middle falls in `window_s` (times in the run)."""
    begin_s, end_s = window_s
    inside = [(b - a, size) for a, b, size in intervals if begin_s <= flow_start_s + (a + b) / 2 <= end_s]
    seconds = sum(length for length, _ in inside)
    return 8.0 * sum(size for _, size in inside) / seconds if seconds > 0 else None


def shares(values: Sequence[Optional[float]]) -> List[Optional[float]]:
    """Each value's fraction of their sum (None throughout when one is missing or the sum is 0)."""
    known = [v for v in values if v is not None]
    if len(known) != len(values) or not sum(known):
        return [None] * len(values)
    return [v / sum(known) for v in known]


def _number(direction: Optional[Dict[str, Any]], key: str) -> Optional[float]:
    if direction is None:
        return None
    value = direction.get(key)
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def rows_for_run(record: RunRecord, out_dir: Path) -> List[Dict[str, Any]]:
    """Analyse a run's two captures and return its rows (one per flow)."""
    sender_directions, sender_note = analyse_capture(record.sender_pcap)
    receiver_directions, receiver_note = analyse_capture(record.receiver_pcap)
    notes = "; ".join(dict.fromkeys(n for n in (sender_note, receiver_note) if n))
    spec = record.spec
    overlap_s = (max((flow.start_s for flow in record.flows), default=0.0), spec.duration_s)
    rows: List[Dict[str, Any]] = []
    for flow in record.flows:
        at_sender = find_direction(sender_directions, SENDER_ADDRESS, flow.client_port)
        at_receiver = find_direction(receiver_directions, SENDER_ADDRESS, flow.client_port)
        throughput_bps = _number(at_receiver, "throughput_bps")
        source = "capture:receiver"
        if throughput_bps is None:
            throughput_bps, source = flow.iperf3_receiver_bps, "iperf3:receiver"
        rows.append(
            {
                "run_id": spec.run_id,
                "cca": spec.cca,
                "flow_cca": flow.cca,
                "rate": spec.rate.text,
                "rate_bps": spec.rate.value,
                "delay": spec.delay.text,
                "delay_ms": spec.delay.value,
                "jitter": spec.jitter.text,
                "jitter_ms": spec.jitter.value,
                "delay_applied": record.netem_applied,
                "loss": spec.loss.text,
                "loss_probability": spec.loss.value,
                "flows": spec.flows,
                "flow": flow.flow,
                "client_port": flow.client_port,
                "duration_s": spec.duration_s,
                "throughput_bps": throughput_bps,
                "throughput_source": source,
                "iperf3_sender_bps": flow.iperf3_sender_bps,
                "iperf3_receiver_bps": flow.iperf3_receiver_bps,
                "retransmissions": flow.tcpinfo_retransmissions,
                "retransmissions_analysed": _number(at_sender, "retransmissions"),
                "lost_segments": _number(at_sender, "lost_segments"),
                "lost_segments_receiver": _number(at_receiver, "lost_segments"),
                "router_drops": flow.router_drops,
                "router_random_drops": flow.router_random_drops,
                "router_queue_drops": flow.router_queue_drops,
                "router_forwarded": flow.router_forwarded,
                "receiver_arrived": flow.receiver_arrived,
                "qdisc_drops_run": record.qdisc_drops,
                "jain_index": None,
                "cca_reported": flow.cca_reported,
                "start_s": flow.start_s,
                "throughput_overlap_bps": overlap_throughput_bps(flow.receiver_intervals, flow.start_s, overlap_s),
                "capture_kernel_drops_sender": record.sender_capture.get("kernel_drops"),
                "capture_kernel_drops_receiver": record.receiver_capture.get("kernel_drops"),
                "sender_pcap": str(record.sender_pcap.relative_to(out_dir)),
                "receiver_pcap": str(record.receiver_pcap.relative_to(out_dir)),
                "iperf3_json": str(flow.iperf3_json.relative_to(out_dir)),
                "analysis_note": notes or None,
            }
        )
    fairness = jain_index([row["throughput_bps"] for row in rows])
    for row, share in zip(rows, shares([row["throughput_overlap_bps"] for row in rows])):
        row["jain_index"] = fairness
        row["overlap_share"] = share
    return rows


def write_csv(rows: Sequence[Dict[str, Any]], path: Path) -> None:
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS)
        writer.writeheader()
        for row in rows:
            writer.writerow({key: ("" if row.get(key) is None else row.get(key)) for key in COLUMNS})


FLOAT_COLUMNS = {
    "throughput_bps",
    "iperf3_sender_bps",
    "iperf3_receiver_bps",
    "retransmissions_analysed",
    "lost_segments",
    "lost_segments_receiver",
    "jain_index",
    "rate_bps",
    "delay_ms",
    "jitter_ms",
    "loss_probability",
    "duration_s",
    "start_s",
    "throughput_overlap_bps",
    "overlap_share",
}
INTEGER_COLUMNS = {
    "flows",
    "flow",
    "client_port",
    "retransmissions",
    "router_drops",
    "router_random_drops",
    "router_queue_drops",
    "router_forwarded",
    "receiver_arrived",
    "qdisc_drops_run",
    "capture_kernel_drops_sender",
    "capture_kernel_drops_receiver",
}
BOOLEAN_COLUMNS = {"delay_applied"}


def typed_value(column: str, text: str) -> Any:
    """A results.csv cell back as the row held it ("" is None)."""
    if text == "":
        return None
    if column in FLOAT_COLUMNS:
        return float(text)
    if column in INTEGER_COLUMNS:
        return int(text)
    if column in BOOLEAN_COLUMNS:
        return text == "True"
    return text


def read_csv(path: Path) -> List[Dict[str, Any]]:
    """results.csv as rows with the types rows_for_run gives them."""
    with open(path, newline="", encoding="utf-8") as handle:
        return [{key: typed_value(key, row.get(key) or "") for key in COLUMNS} for row in csv.DictReader(handle)]


def write_parquet(rows: Sequence[Dict[str, Any]], path: Path) -> Optional[str]:
    """Write Parquet with pyarrow; return why not when pyarrow is missing."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        return "pyarrow is not installed; results.parquet not written (pip install pyarrow)"
    columns = {key: [row.get(key) for row in rows] for key in COLUMNS}
    arrays = {
        key: pa.array(values, type=pa.float64() if key in FLOAT_COLUMNS else None) for key, values in columns.items()
    }
    pq.write_table(pa.table(arrays), path)
    return None
