"""The sending kernel's own view beside a capture: `probe.csv` from the tcp:tcp_probe tracepoint.

`capture/record.sh --probe` and `spline-testbed run` (each run's sender) write it beside
the capture, one row per ACK the sender processed: snd_cwnd and ssthresh (segments), srtt
(us), snd_nxt and snd_una (so the kernel's bytes in flight, snd_nxt - snd_una). It is read
like meta.json and iperf3.json: found by its name, never required. With it, each sender-
vantage direction gets the kernel's cwnd, ssthresh and srtt over time, and a measure of how
well the capture's bytes-in-flight estimate tracks the kernel's count.

Timestamps: the trace instance uses the `tai` clock (wall-clock seconds, as the capture's),
so events line up with packets. A probe.csv recorded with another trace clock (seconds since
boot) does not; then the summary says `clock_aligned: false` and no tracking is computed.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional

import numpy as np

PROBE_FILE_NAME = "probe.csv"
SSTHRESH_INFINITE = 0x7FFFFFFF  # the kernel's "no threshold yet" (TCP_INFINITE_SSTHRESH)
CLOCK_SLACK_NS = 5 * 10**9  # probe events this far outside the capture: another clock
SEQUENCE_SPACE = 1 << 32


@dataclass
class KernelProbe:
    """tcp_probe events, one array element per event, in file order."""

    path: Path
    time_ns: np.ndarray  # int64, the trace clock's nanoseconds
    src: np.ndarray  # object: "10.0.0.1"
    sport: np.ndarray  # int64
    dst: np.ndarray
    dport: np.ndarray
    cwnd_segments: np.ndarray  # int64
    ssthresh_segments: np.ndarray  # int64, SSTHRESH_INFINITE before the first reduction
    srtt_us: np.ndarray  # int64, smoothed RTT
    in_flight_bytes: np.ndarray  # int64, snd_nxt - snd_una

    def __len__(self) -> int:
        return len(self.time_ns)


def find_probe(capture_path: Path) -> Optional[Path]:
    """probe.csv in the capture's folder, if there is one."""
    candidate = Path(capture_path).parent / PROBE_FILE_NAME
    return candidate if candidate.is_file() else None


def _split_endpoint(text: str):
    """`10.0.0.1:5201` -> ("10.0.0.1", 5201); `[2001:db8::1]:5201` -> ("2001:db8::1", 5201)."""
    host, _, port = text.rpartition(":")
    return host.strip("[]"), int(port) if port.isdigit() else -1


def _seconds_to_ns(text: str) -> int:
    whole, _, fraction = text.partition(".")
    return int(whole) * 10**9 + int((fraction + "000000000")[:9])


def read_probe(path: Path) -> KernelProbe:
    """Read probe.csv (the columns record.sh writes); malformed rows are skipped."""
    columns: Dict[str, List[Any]] = {
        name: [] for name in ("time_ns", "src", "sport", "dst", "dport", "cwnd", "ssthresh", "srtt", "in_flight")
    }
    with open(path, newline="", encoding="utf-8", errors="replace") as handle:
        for row in csv.DictReader(handle):
            try:
                src, sport = _split_endpoint(row["src"])
                dst, dport = _split_endpoint(row["dst"])
                in_flight = (int(row["snd_nxt"], 16) - int(row["snd_una"], 16)) % SEQUENCE_SPACE
                values = (
                    _seconds_to_ns(row["time_s"]),
                    src,
                    sport,
                    dst,
                    dport,
                    int(row["snd_cwnd_segments"]),
                    int(row["ssthresh_segments"]),
                    int(row["srtt_us"]),
                    in_flight,
                )
            except (KeyError, ValueError, TypeError, AttributeError):
                continue
            for name, value in zip(columns, values):
                columns[name].append(value)
    as_int = lambda name: np.asarray(columns[name], dtype=np.int64)  # noqa: E731
    return KernelProbe(
        path=Path(path),
        time_ns=as_int("time_ns"),
        src=np.asarray(columns["src"], dtype=object),
        sport=as_int("sport"),
        dst=np.asarray(columns["dst"], dtype=object),
        dport=as_int("dport"),
        cwnd_segments=as_int("cwnd"),
        ssthresh_segments=as_int("ssthresh"),
        srtt_us=as_int("srtt"),
        in_flight_bytes=as_int("in_flight"),
    )


def events_of(probe: KernelProbe, src: str, sport: int, dst: str, dport: int) -> np.ndarray:
    """Indices of the events of the socket that sends src:sport -> dst:dport."""
    return np.flatnonzero((probe.src == src) & (probe.sport == sport) & (probe.dst == dst) & (probe.dport == dport))


def _stats(values: np.ndarray) -> Optional[Dict[str, float]]:
    if len(values) == 0:
        return None
    return {"min": float(values.min()), "median": float(np.median(values)), "max": float(values.max())}


def clock_aligned(probe_ns: np.ndarray, first_packet_ns: int, last_packet_ns: int) -> bool:
    return (
        bool(len(probe_ns))
        and bool(probe_ns.min() >= first_packet_ns - CLOCK_SLACK_NS)
        and bool(probe_ns.max() <= last_packet_ns + CLOCK_SLACK_NS)
    )


def tracking(
    probe_ns: np.ndarray,
    kernel_in_flight: np.ndarray,
    kernel_cwnd_bytes: np.ndarray,
    packet_ns: np.ndarray,
    capture_in_flight: np.ndarray,
    mss_bytes: int,
) -> Optional[Dict[str, Any]]:
    """How the capture's bytes in flight (the estimate after each packet of the direction)
    compares with the kernel's, at each probe event: the latest estimate at or before it.

    `kernel_in_flight_error_segments`: |capture - (snd_nxt - snd_una)| in segments (median,
    p95) and the share of events within one segment; `of_cwnd`: capture estimate / cwnd
    bytes (median): how full the window was by the capture's count."""
    known = capture_in_flight >= 0
    packet_ns, capture_in_flight = packet_ns[known], capture_in_flight[known]
    if len(packet_ns) == 0 or len(probe_ns) == 0:
        return None
    order = np.argsort(packet_ns, kind="stable")
    packet_ns, capture_in_flight = packet_ns[order], capture_in_flight[order]
    at = np.searchsorted(packet_ns, probe_ns, side="right") - 1
    usable = at >= 0
    if not usable.any():
        return None
    estimate = capture_in_flight[at[usable]].astype(np.float64)
    error_segments = np.abs(estimate - kernel_in_flight[usable]) / max(mss_bytes, 1)
    cwnd_bytes = kernel_cwnd_bytes[usable].astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        of_cwnd = np.where(cwnd_bytes > 0, estimate / cwnd_bytes, np.nan)
    return {
        "events": int(usable.sum()),
        "kernel_in_flight_error_segments": {
            "median": float(np.median(error_segments)),
            "p95": float(np.percentile(error_segments, 95)),
        },
        "within_one_segment": float(np.mean(error_segments <= 1.0)),
        "of_cwnd_median": float(np.nanmedian(of_cwnd)) if np.isfinite(of_cwnd).any() else None,
    }


def direction_summary(
    probe: KernelProbe,
    events: np.ndarray,
    mss_bytes: int,
    aligned: bool,
    packet_ns: Optional[np.ndarray] = None,
    capture_in_flight: Optional[np.ndarray] = None,
) -> Dict[str, Any]:
    """The JSON of one direction's kernel view: cwnd, ssthresh, srtt statistics and tracking."""
    cwnd = probe.cwnd_segments[events]
    ssthresh = probe.ssthresh_segments[events]
    finite = ssthresh[ssthresh < SSTHRESH_INFINITE]
    summary: Dict[str, Any] = {
        "file": probe.path.name,
        "events": int(len(events)),
        "clock_aligned": aligned,
        "cwnd_segments": _stats(cwnd),
        "ssthresh_segments": _stats(finite),
        "srtt_ms": _stats(probe.srtt_us[events] / 1000.0),
        "cwnd_reductions": int(np.sum(np.diff(cwnd) < 0)) if len(cwnd) > 1 else 0,
        "capture_tracking": None,
    }
    if aligned and packet_ns is not None and capture_in_flight is not None:
        summary["capture_tracking"] = tracking(
            probe.time_ns[events],
            probe.in_flight_bytes[events],
            cwnd * mss_bytes,
            packet_ns,
            capture_in_flight,
            mss_bytes,
        )
    return summary


def interval_values(
    probe: KernelProbe, events: np.ndarray, start_ns: int, interval_ns: float, bins: np.ndarray
) -> Dict[str, np.ndarray]:
    """Per listed interval (`bins`, counted from `start_ns`): the kernel's last cwnd, ssthresh
    and srtt in it (NaN where no event fell in it; ssthresh NaN while infinite)."""
    out = {name: np.full(len(bins), np.nan) for name in ("cwnd_segments", "ssthresh_segments", "srtt_ms")}
    if len(events) == 0 or len(bins) == 0:
        return out
    event_bin = ((probe.time_ns[events] - start_ns) // interval_ns).astype(np.int64)
    # the last event of each bin: bins are sorted per direction, events in time order
    order = np.argsort(event_bin, kind="stable")
    event_bin, ordered = event_bin[order], events[order]
    last = np.searchsorted(event_bin, bins, side="right") - 1
    hit = (last >= 0) & (event_bin[np.maximum(last, 0)] == bins)
    chosen = ordered[last[hit]]
    out["cwnd_segments"][hit] = probe.cwnd_segments[chosen]
    ssthresh = probe.ssthresh_segments[chosen].astype(np.float64)
    out["ssthresh_segments"][hit] = np.where(ssthresh < SSTHRESH_INFINITE, ssthresh, np.nan)
    out["srtt_ms"][hit] = probe.srtt_us[chosen] / 1000.0
    return out
