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
from . import kernel_probe
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
    probe: Optional[kernel_probe.KernelProbe] = None   # probe.csv beside the capture
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
        if self.probe is not None:
            for record, view in zip(records, self.kernel_views()):
                record["kernel"] = view
        return document

    def direction_packets(self, row: int):
        """Timestamps and capture bytes-in-flight of the packets of direction `row`."""
        import numpy as np
        d = self.directions
        slot = d.packet_slot
        of_row = np.where(slot >= 0, d.row_of_slot[np.maximum(slot, 0)], -1) == row
        return np.asarray(self.packets["ts_ns"], dtype=np.int64)[of_row], d.bytes_in_flight[of_row]

    def kernel_views(self) -> List[Optional[Dict[str, Any]]]:
        """Per direction (in `directions` order): the sending kernel's cwnd, ssthresh and srtt
        from probe.csv, and how the capture's in-flight estimate tracks it (sender vantage
        only); None for directions the probe did not see."""
        import numpy as np
        table = self.directions.table
        views: List[Optional[Dict[str, Any]]] = []
        if self.probe is None:
            return [None] * len(self.directions)
        ts = np.asarray(self.packets["ts_ns"], dtype=np.int64)
        aligned_any = len(ts) > 0 and kernel_probe.clock_aligned(self.probe.time_ns, int(ts.min()), int(ts.max()))
        for row in range(len(self.directions)):
            events = kernel_probe.events_of(self.probe, str(table["src"][row]), int(table["sport"][row]),
                                            str(table["dst"][row]), int(table["dport"][row]))
            if len(events) == 0:
                views.append(None)
                continue
            packet_ns = capture_flight = None
            if table["vantage"][row] == "sender":
                packet_ns, capture_flight = self.direction_packets(row)
            views.append(kernel_probe.direction_summary(self.probe, events, int(table["mss"][row]), aligned_any,
                                                        packet_ns, capture_flight))
        return views

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
        frame = series(self.packets, self.flows, self.directions, interval_s)
        if self.probe is not None and len(frame):
            frame = self._with_kernel_columns(frame, interval_s)
        return frame

    def _with_kernel_columns(self, frame, interval_s: float):
        """The kernel's last cwnd, ssthresh and srtt per interval beside the capture's figures."""
        import numpy as np
        probe = self.probe
        assert probe is not None   # timeseries() calls this only with a probe
        table = self.directions.table
        ts = np.asarray(self.packets["ts_ns"], dtype=np.int64)
        start_ns = int(ts.min())
        if not kernel_probe.clock_aligned(probe.time_ns, start_ns, int(ts.max())):
            return frame
        added = {name: np.full(len(frame), np.nan) for name in ("cwnd_segments", "ssthresh_segments", "srtt_ms")}
        bins = np.rint(frame["time_s"].to_numpy() / interval_s).astype(np.int64)
        streams, directions = frame["stream"].to_numpy(), frame["direction"].to_numpy()
        for row in range(len(self.directions)):
            mine = np.flatnonzero((streams == table["stream"][row]) & (directions == table["direction"][row]))
            events = kernel_probe.events_of(probe, str(table["src"][row]), int(table["sport"][row]),
                                            str(table["dst"][row]), int(table["dport"][row]))
            values = kernel_probe.interval_values(probe, events, start_ns, interval_s * 1e9, bins[mine])
            for name, column in values.items():
                added[name][mine] = column
        for name, column in added.items():
            frame[name] = column
        return frame


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
    probe_path = kernel_probe.find_probe(Path(str(capture.path))) if capture.path else None
    probe = kernel_probe.read_probe(probe_path) if probe_path is not None else None
    return Analysis(capture=capture, flows=flows, wireshark=wireshark, directions=directions,
                    iperf3_tests=tests, probe=probe if probe is not None and len(probe) else None)


def analyze(path: Union[str, os.PathLike], *, strict: bool = False,
            progress: Optional[ProgressCallback] = None) -> Analysis:
    """Decode `path` and run every stage (raises errors.CaptureError on unreadable input)."""
    from .memory import ANALYSIS_BYTES_PER_FRAME
    return analyze_capture(read(path, strict=strict, progress=progress, frame_bytes=ANALYSIS_BYTES_PER_FRAME))
