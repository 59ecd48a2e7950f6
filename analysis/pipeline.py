"""Every stage over one capture, run once: decode -> flows -> tcp -> report parts.

    >>> from spline_analysis.pipeline import analyze
    >>> a = analyze("trace.pcap")
    >>> a.to_json()["directions"][0]["lost_segments"]
    >>> a.timeseries(0.1)                    # pandas DataFrame, one row per 100 ms per direction

`Analysis` keeps each stage's output (the packet table, flows, Wireshark
flags, truth-seeking directions, iperf3 results found beside the file) so the
CLI, the notebooks and the testbed all read the same numbers. Library code:
returns data, never prints.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Union

from . import flows as flows_stage
from . import iperf3 as iperf3_sidecar
from . import truth as truth_stage
from . import wireshark as wireshark_stage
from .background import Background
from .decode import Capture, ProgressCallback, read


@dataclass
class Analysis:
    """All stage outputs of one capture."""
    capture: Capture
    flows: Any
    wireshark: Any
    directions: truth_stage.Directions
    iperf3_tests: List[iperf3_sidecar.Iperf3Test] = field(default_factory=list)
    name: str = ""          # how to label this run (defaults to the file's name)

    # the names plot.save_report_plots and notebooks look for
    @property
    def packets(self):
        return self.capture.packets

    @property
    def title(self) -> str:
        return self.name or Path(str(self.capture.path)).name

    def directions_json(self) -> List[Dict[str, Any]]:
        """The `directions` list: truth-seeking figures per data-carrying flow direction,
        with tshark-compatible counts of the same direction under `wireshark` and, when an
        iperf3 result sits beside the capture, retransmissions over iperf3's test window."""
        records = truth_stage.directions_json(self.directions)
        per_stream = self.wireshark.stream_counts()
        for record in records:
            stream, suffix = int(record["stream"]), ("_a2b", "_b2a")[int(record["direction"])]
            record["wireshark"] = {name[:-len(suffix)]: int(values[stream])
                                   for name, values in per_stream.items() if name.endswith(suffix)}
        if self.iperf3_tests:
            windows = iperf3_sidecar.window_counts(self.packets, self.directions, self.iperf3_tests)
            records = iperf3_sidecar.annotate_directions(records, windows)
        return records

    def summary(self, directions_records: Optional[List[Dict[str, Any]]] = None) -> Dict[str, Any]:
        """The Spline report's figures for the main data direction."""
        from .summary import run_summary
        result = run_summary(self.directions, name=self.title, capture_drops=self.capture.capture_drops,
                             total_packets=len(self.packets))
        row = truth_stage.main_direction(self.directions)
        if row is not None and directions_records is not None:
            # the summary reports the same retransmission count as the directions list
            # (iperf3's test window when an iperf3 result sits beside the capture)
            record = directions_records[row]
            result["retransmissions"] = record["retransmissions"]
            if record.get("data_segments"):
                result["retransmissions_pct"] = 100.0 * record["retransmissions"] / record["data_segments"]
        return result

    def to_json(self) -> Dict[str, Any]:
        """The per-file JSON document (schema 2: `warnings` are coded objects)."""
        from .report import summarize_capture
        document = summarize_capture(self.capture, self.flows)
        document["wireshark"] = self.wireshark.counts()
        records = self.directions_json()
        document["directions"] = records
        document["summary"] = self.summary(records)
        document["warnings"] = self.warnings(records)
        document["summary"]["warning_codes"] = sorted({w["code"] for w in document["warnings"]})
        document["iperf3"] = [{"file": t.path.name, "sender_cca": t.sender_cca,
                               "sender_retransmits": t.sender_retransmits,
                               "receiver_bps": t.receiver_bps, "sender_seconds": t.sender_seconds}
                              for t in self.iperf3_tests]
        return document

    def warnings(self, directions_records: Optional[List[Dict[str, Any]]] = None) -> List[Dict[str, Any]]:
        """Capture-integrity warnings (integrity.py): the decoder's, the file's, each direction's."""
        import numpy as np
        from . import integrity
        records = directions_records if directions_records is not None else self.directions_json()
        slots = self.directions.packet_slot
        counts = np.bincount(slots[slots >= 0]) if len(slots) else np.zeros(0, np.int64)
        slot_packets = {int(k): int(v) for k, v in enumerate(counts)}
        return (integrity.decode_warnings(self.capture.warnings)
                + integrity.file_warnings(self.packets, self.capture.capture_drops)
                + integrity.direction_warnings(records, slot_packets))

    def timeseries(self, interval_s: float):
        """Per-interval throughput, goodput, retransmissions, RTT and in flight (DataFrame)."""
        from .timeseries import series
        return series(self.packets, self.flows, self.directions, interval_s)


def analyze_capture(capture: Capture) -> Analysis:
    """Run every stage after decoding. The tshark-compatible pass and the truth-seeking
    pass read the same inputs and release the GIL in their C loops, so they run side by
    side (1M packets: 30 ms of the former hidden under the latter on 2 cores)."""
    packets = capture.packets
    flows = flows_stage.assign_streams(packets)
    wireshark_pass = Background(wireshark_stage.analyze, packets, flows)
    wireshark_pass.start()
    directions = truth_stage.analyze_directions(packets, flows, capture_drops=capture.capture_drops)
    wireshark = wireshark_pass.result()
    tests = iperf3_sidecar.find_tests(Path(str(capture.path))) if capture.path else []
    return Analysis(capture=capture, flows=flows, wireshark=wireshark, directions=directions,
                    iperf3_tests=tests)


def analyze(path: Union[str, os.PathLike], *, strict: bool = False,
            progress: Optional[ProgressCallback] = None) -> Analysis:
    """Decode `path` and run every stage (raises errors.CaptureError on unreadable input)."""
    from .memory import ANALYSIS_BYTES_PER_FRAME
    return analyze_capture(read(path, strict=strict, progress=progress, frame_bytes=ANALYSIS_BYTES_PER_FRAME))
