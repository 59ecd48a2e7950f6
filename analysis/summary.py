"""The run summary the Spline report shows, and runs side by side."""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence

from .truth import Directions, main_direction

BYTES_PER_MB = 1e6     # the seed reports' MB is decimal megabytes
BITS_PER_MBIT = 1e6


def run_summary(directions: Directions, *, name: str = "",
                capture_drops: Optional[Dict[str, Any]] = None,
                total_packets: Optional[int] = None) -> Dict[str, Any]:
    """Figures of the main data direction (the one with the most payload):
    speed in MB/s and Mbit/s (goodput: unique bytes over the data-carrying
    time), time, packet loss % (N), retransmissions % (N), kernel drops
    (N and % of packets; None when the capture does not say)."""
    drops = capture_drops if capture_drops is not None else directions.capture_drops
    summary: Dict[str, Any] = {
        "name": name, "vantage": None, "flow": None, "speed_MBps": None, "speed_Mbps": None,
        "time_s": None, "packet_loss_pct": None, "lost_segments": None,
        "retransmissions_pct": None, "retransmissions": None,
        "kernel_drops": None, "kernel_drops_pct": None, "rtt_median_ms": None,
    }
    row = main_direction(directions)
    if row is not None:
        t = directions.table
        goodput = float(t["goodput_bps"][row]) if t["goodput_bps"][row] == t["goodput_bps"][row] else None
        summary.update({
            "vantage": str(t["vantage"][row]),
            "flow": f"{t['src'][row]}:{int(t['sport'][row])} -> {t['dst'][row]}:{int(t['dport'][row])}",
            "speed_MBps": goodput / 8 / BYTES_PER_MB if goodput is not None else None,
            "speed_Mbps": goodput / BITS_PER_MBIT if goodput is not None else None,
            "time_s": float(t["duration_s"][row]),
            "lost_segments": int(t["lost_segments"][row]),
            "packet_loss_pct": _pct(t["loss_rate"][row]),
            "retransmissions": int(t["retransmissions"][row]),
            "retransmissions_pct": _pct(t["retransmission_rate"][row]),
            "rtt_median_ms": (directions.rtt_ms[row] or {}).get("median"),
        })
    kernel = (drops or {}).get("kernel")
    if kernel is not None:
        summary["kernel_drops"] = int(kernel)
        if total_packets:
            summary["kernel_drops_pct"] = 100.0 * int(kernel) / (int(total_packets) + int(kernel))
    return summary


def _pct(rate: float) -> Optional[float]:
    rate = float(rate)
    return None if rate != rate else 100.0 * rate


def _cell_count(pct: Optional[float], count: Optional[int]) -> str:
    if count is None:
        return "-"
    if pct is None:
        return f"({count:,})"
    return f"{pct:.2f}% ({count:,})"


ROWS = (
    ("Flow", lambda s: s["flow"] or "-"),
    ("Vantage", lambda s: s["vantage"] or "-"),
    ("Speed (MB/s)", lambda s: "-" if s["speed_MBps"] is None else f"{s['speed_MBps']:.3f}"),
    ("Speed (Mbit/s)", lambda s: "-" if s["speed_Mbps"] is None else f"{s['speed_Mbps']:.2f}"),
    ("Time (s)", lambda s: "-" if s["time_s"] is None else f"{s['time_s']:.3f}"),
    ("Packet loss", lambda s: _cell_count(s["packet_loss_pct"], s["lost_segments"])),
    ("Retransmissions", lambda s: _cell_count(s["retransmissions_pct"], s["retransmissions"])),
    ("Kernel drops", lambda s: "unknown" if s["kernel_drops"] is None
     else _cell_count(s["kernel_drops_pct"], s["kernel_drops"])),
    ("RTT median (ms)", lambda s: "-" if s["rtt_median_ms"] is None else f"{s['rtt_median_ms']:.3f}"),
    ("Warnings", lambda s: " ".join(s.get("warning_codes") or []) or "-"),
)


def format_side_by_side(summaries: Sequence[Dict[str, Any]]) -> str:
    """A text table with one column per run and one row per figure."""
    header = [""] + [s.get("name") or f"run {i + 1}" for i, s in enumerate(summaries)]
    lines: List[List[str]] = [header]
    for label, render in ROWS:
        lines.append([label] + [render(s) for s in summaries])
    widths = [max(len(line[c]) for line in lines) for c in range(len(header))]
    out = []
    for n, line in enumerate(lines):
        cells = [line[0].ljust(widths[0])] + [line[c].rjust(widths[c]) for c in range(1, len(line))]
        out.append("  ".join(cells).rstrip())
        if n == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out) + "\n"
