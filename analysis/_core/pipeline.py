"""Every stage over one capture, run once: sidecars and decode -> flows -> tcp.

    >>> import spline_analysis as sa
    >>> a = sa.analyze("trace.pcap")
    >>> a.to_json()["directions"][0]["lost_segments"]
    >>> a.timeseries(0.1)                    # pandas DataFrame, one row per 100 ms per direction

`Analysis` keeps each stage's output (the packet table, flows, Wireshark flags,
truth-seeking directions, the files found beside the capture); `report.py` turns it into
the JSON document, the CSV rows and the text, so the CLI, the notebooks and the testbed
all read the same numbers. Library code: returns data, never prints.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple, Union

from . import flows as flows_stage
from . import kernel_probe
from . import truth as truth_stage
from . import wireshark as wireshark_stage
from .background import Background
from .decode import Capture, ProgressCallback, read
from .sidecar import Sidecars, read_sidecars


@dataclass
class Analysis:
    """All stage outputs of one capture, and the report made from them (`to_json`)."""

    capture: Capture
    flows: flows_stage.Flows
    wireshark: wireshark_stage.WiresharkAnalysis
    directions: truth_stage.Directions
    sidecars: Sidecars = field(default_factory=Sidecars)
    name: str = ""  # how to label this run (defaults to the file's name)

    # the names plot.save_report_plots and notebooks look for
    @property
    def packets(self):
        return self.capture.packets

    @property
    def title(self) -> str:
        return self.name or Path(str(self.capture.path)).name

    @property
    def iperf3_tests(self) -> Tuple[Any, ...]:
        """iperf3 results beside the capture (`iperf3.Iperf3Test`)."""
        return self.sidecars.iperf3_tests

    @property
    def probe(self) -> Optional[kernel_probe.KernelProbe]:
        """probe.csv beside the capture, when it holds events."""
        return self.sidecars.probe

    def to_json(self) -> Dict[str, Any]:
        """The `--json` document (report.document): made once, then the same object.
        Its `summary` carries `name`: set `name` before the first call."""
        return self._document

    @cached_property
    def _document(self) -> Dict[str, Any]:
        from ..report import document

        return document(self)

    @property
    def summary(self) -> Dict[str, Any]:
        """The Spline report's figures of the main data direction (the document's `summary`)."""
        return self.to_json()["summary"]

    @property
    def warnings(self) -> List[Dict[str, Any]]:
        """The capture-integrity warnings of the report (integrity.py codes)."""
        return self.to_json()["warnings"]

    @property
    def main_row(self) -> Optional[int]:
        """Index in `directions` of the direction that carried the most payload (None: none)."""
        from ..report import main_row

        return main_row(self.to_json()["directions"])

    def to_dataframe(self):
        """The report's directions as a DataFrame, one row per direction, the `--csv` columns."""
        import pandas as pd

        from ..schema import DIRECTION_CSV_COLUMNS

        return pd.DataFrame(self.csv_rows(), columns=list(DIRECTION_CSV_COLUMNS))

    def csv_rows(self) -> List[Dict[str, Any]]:
        """The `--csv` rows of this capture, one per data-carrying direction."""
        from ..report import direction_rows

        return direction_rows(self.to_json())

    def text(self) -> str:
        """The terminal report of this capture."""
        from ..report import text

        return text([self.to_json()])

    def direction_packets(self, row: int):
        """Timestamps and capture bytes-in-flight of the packets of direction `row`."""
        import numpy as np

        d = self.directions
        slot = d.packet_slot
        of_row = np.where(slot >= 0, d.row_of_slot[np.maximum(slot, 0)], -1) == row
        return np.asarray(self.packets["ts_ns"], dtype=np.int64)[of_row], d.bytes_in_flight[of_row]

    def kernel_events(self, row: int):
        """Indices into `probe` of the tcp_probe events of direction `row` (empty: none)."""
        import numpy as np

        if self.probe is None:
            return np.zeros(0, dtype=np.int64)
        table = self.directions.table
        return kernel_probe.events_of(
            self.probe,
            str(table["src"][row]),
            int(table["sport"][row]),
            str(table["dst"][row]),
            int(table["dport"][row]),
        )

    def kernel_views(self) -> List[Optional[Dict[str, Any]]]:
        """Per direction (in `directions` order): the sending kernel's cwnd, ssthresh and srtt
        from probe.csv, and how the capture's in-flight estimate tracks it (sender vantage
        only); None for directions the probe did not see."""
        import numpy as np

        table = self.directions.table
        views: List[Optional[Dict[str, Any]]] = []
        probe = self.probe
        if probe is None:
            return [None] * len(self.directions)
        ts = np.asarray(self.packets["ts_ns"], dtype=np.int64)
        aligned_any = len(ts) > 0 and kernel_probe.clock_aligned(probe.time_ns, int(ts.min()), int(ts.max()))
        for row in range(len(self.directions)):
            events = self.kernel_events(row)
            if len(events) == 0:
                views.append(None)
                continue
            packet_ns = capture_flight = None
            if table["vantage"][row] == "sender":
                packet_ns, capture_flight = self.direction_packets(row)
            views.append(
                kernel_probe.direction_summary(
                    probe, events, int(table["mss"][row]), aligned_any, packet_ns, capture_flight
                )
            )
        return views

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
        assert probe is not None
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
            values = kernel_probe.interval_values(
                probe, self.kernel_events(row), start_ns, interval_s * 1e9, bins[mine]
            )
            for name, column in values.items():
                added[name][mine] = column
        for name, column in added.items():
            frame[name] = column
        return frame


def analyze_capture(capture: Capture, sidecars: Optional[Sidecars] = None) -> Analysis:
    """Run every stage after decoding. The tshark-compatible pass and the truth-seeking
    pass read the same inputs and release the GIL in their C loops, so they run side by
    side (1M packets: 30 ms of the former hidden under the latter on 2 cores).
    `sidecars`: the files beside the capture (read here when not given)."""
    if sidecars is None:
        sidecars = read_sidecars(Path(str(capture.path)) if capture.path else None)
    packets = capture.packets
    flows = flows_stage.assign_streams(packets)
    wireshark_pass = Background(wireshark_stage.analyze, packets, flows)
    wireshark_pass.start()
    directions = truth_stage.analyze_directions(packets, flows, capture_drops=capture.capture_drops)
    wireshark = wireshark_pass.result()
    return Analysis(capture=capture, flows=flows, wireshark=wireshark, directions=directions, sidecars=sidecars)


def analyze(
    path: Union[str, os.PathLike], *, strict: bool = False, progress: Optional[ProgressCallback] = None, name: str = ""
) -> Analysis:
    """Read the files beside `path` and decode it, then run every stage: the one way in for
    the CLI, the testbed and the notebooks (raises errors.CaptureError on unreadable input).
    `name` labels the run in its summary (default: the file's name)."""
    from .memory import ANALYSIS_BYTES_PER_FRAME

    sidecars = read_sidecars(Path(path))
    capture = read(path, strict=strict, progress=progress, frame_bytes=ANALYSIS_BYTES_PER_FRAME, meta=sidecars.meta)
    analysis = analyze_capture(capture, sidecars)
    analysis.name = name
    return analysis
