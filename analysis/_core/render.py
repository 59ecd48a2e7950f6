"""Text layout of report documents (report.document): pure functions returning strings.

`report.text` is the way in; nothing here computes a metric: it only lays out what the
document already holds.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence

WIRESHARK_SHORT_NAMES = (
    ("retransmission", "retrans"),
    ("fast_retransmission", "fast"),
    ("spurious_retransmission", "spurious"),
    ("out_of_order", "out-of-order"),
    ("lost_segment", "lost segment"),
    ("ack_lost_segment", "ACKed unseen"),
    ("duplicate_ack", "dup ACK"),
    ("zero_window", "zero window"),
    ("keep_alive", "keep-alive"),
    ("window_update", "window update"),
    ("window_full", "window full"),
)


def _count(value: Optional[int]) -> str:
    return "unknown" if value is None else f"{value:,}"


def _num(value: Optional[float], fmt: str, unit: str = "") -> str:
    return "-" if value is None else f"{value:{fmt}}{unit}"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]], right: Sequence[bool]) -> str:
    widths = [max(len(str(c)) for c in col) for col in zip(header, *rows)]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(f"{c:>{w}}" if r else f"{c:<{w}}" for c, w, r in zip(cells, widths, right)).rstrip()

    return "\n".join([line(header)] + [line(r) for r in rows])


def _plural(count: int, word: str) -> str:
    return f"{count:,} {word}" + ("" if count == 1 else "s")


def capture_line(report: Dict[str, Any]) -> str:
    """One line on the file itself: format, link types, packets, duration, capture drops."""
    drops = report["capture_drops"]
    fmt = report["format"] + (" (gzip)" if report.get("compressed") else "")
    if drops["kernel"] is None and drops["interface"] is None:
        drop_text = "capture drops unknown"
    else:
        drop_text = (
            f"capture drops: kernel {_count(drops['kernel'])}, interface {_count(drops['interface'])}"
            f" (from {drops['source']})"
        )
    return (
        f"{report['file']}: {fmt}, {', '.join(report['link_types']) or 'no link type'}, "
        f"{_plural(report['packets'], 'packet')} ({report['tcp_packets']:,} TCP in "
        f"{_plural(report['tcp_streams'], 'stream')}, {report['tcp_payload_bytes']:,} payload bytes), "
        f"{report['duration_s']:.3f} s, {drop_text}"
    )


def _at_least(summary: Dict[str, Any], loss_text: str) -> str:
    """The loss figure, read as a floor where it is one (the `loss_floor` warning)."""
    return f"at least {loss_text}" if summary.get("lost_segments_is_floor") else loss_text


def summary_block(summary: Dict[str, Any]) -> str:
    """The Spline report's figures for the main data direction, and for all flows of its
    transfer where there are several."""
    if summary.get("flow") is None:
        return "No TCP direction carried data."
    loss = summary.get("packet_loss_pct")
    retr = summary.get("retransmissions_pct")
    kernel = summary.get("kernel_drops")
    rows = [
        ("Flow", f"{summary['flow']} ({summary['vantage']} vantage)"),
        ("Speed", f"{_num(summary['speed_MBps'], '.3f', ' MB/s')} ({_num(summary['speed_Mbps'], '.2f', ' Mbit/s')})"),
        ("Time", _num(summary["time_s"], ".3f", " s")),
        ("Packet loss", _at_least(summary, f"{_num(loss, '.2f', '%')} ({_count(summary['lost_segments'])})")),
        ("Retransmissions", f"{_num(retr, '.2f', '%')} ({_count(summary['retransmissions'])})"),
        (
            "Kernel drops",
            "unknown" if kernel is None else f"{kernel:,} ({_num(summary.get('kernel_drops_pct'), '.2f', '%')})",
        ),
        ("RTT median", _num(summary.get("rtt_median_ms"), ".3f", " ms")),
    ]
    transfer = summary.get("transfer")
    if transfer and transfer["flows"] > 1:
        goodput = transfer["goodput_bps"]
        rows.append(
            (
                "All flows",
                f"{transfer['flows']} flows {transfer['src']} -> {transfer['dst']}: "
                f"{_num(None if goodput is None else goodput / 8e6, '.3f', ' MB/s')} "
                f"({_num(None if goodput is None else goodput / 1e6, '.2f', ' Mbit/s')}) "
                f"over {_num(transfer['time_s'], '.3f', ' s')}, lost {_count(transfer['lost_segments'])}, "
                f"retransmissions {_count(transfer['retransmissions'])} "
                "(their bytes over the time any of them was delivering, not their speeds added)",
            )
        )
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"  {k:<{width}}  {v}" for k, v in rows)


def directions_table(directions: Sequence[Dict[str, Any]]) -> str:
    """One row per data-carrying flow direction: truth-seeking figures."""
    header = (
        "flow",
        "vantage",
        "data pkts",
        "payload B",
        "retrans",
        "spurious",
        "lost",
        "gaps",
        "loss %",
        "Mbit/s",
        "goodput",
        "RTT ms min/med/p95",
    )
    rows = []
    for d in directions:
        rtt = d.get("rtt_ms") or {}
        rtt_text = "/".join(_num(rtt.get(k), ".1f") for k in ("min", "median", "p95"))
        rows.append(
            (
                f"{d['src']}:{d['sport']} -> {d['dst']}:{d['dport']}",
                str(d["vantage"]),
                f"{d['data_packets']:,}",
                f"{d['payload_bytes']:,}",
                f"{d['retransmissions']:,}",
                f"{d['spurious_retransmissions']:,}",
                f"{d['lost_segments']:,}",
                f"{d['capture_gaps']:,}",
                _num(None if d.get("loss_rate") is None else 100 * d["loss_rate"], ".2f"),
                _num(None if d.get("throughput_bps") is None else d["throughput_bps"] / 1e6, ".2f"),
                _num(None if d.get("goodput_bps") is None else d["goodput_bps"] / 1e6, ".2f"),
                rtt_text,
            )
        )
    return _table(header, rows, (False, False) + (True,) * 10)


def wireshark_line(counts: Dict[str, int]) -> str:
    """tshark-compatible expert-flag counts over the whole file."""
    return ", ".join(f"{short} {counts.get(name, 0):,}" for name, short in WIRESHARK_SHORT_NAMES)


def iperf3_lines(report: Dict[str, Any]) -> List[str]:
    lines = []
    for test in report.get("iperf3") or []:
        lines.append(
            f"iperf3 result beside the capture: {test['file']} (sender CCA {test['sender_cca'] or '?'}, "
            f"{_count(test['sender_retransmits'])} retransmits over its {test['sender_seconds']:.3f} s test"
            f"{', the way back of --bidir' if test.get('bidir_reverse') else ''})"
        )
    for d in report.get("directions", []):
        window = d.get("iperf3")
        if window and window.get("retransmissions_after_test"):
            lines.append(
                f"  {d['src']}:{d['sport']} -> {d['dst']}:{d['dport']}: retransmissions "
                f"{window['retransmissions_in_test']:,} during the iperf3 test, "
                f"{window['retransmissions_after_test']:,} more during teardown"
            )
    return lines


def warnings_block(warnings: Sequence[Dict[str, Any]]) -> str:
    """Capture-integrity warnings, one per line with its code (README: what to do next time)."""
    return "\n".join(f"  [{w['code']}] {w['message']}" for w in warnings)


def file_report(report: Dict[str, Any]) -> str:
    """Everything about one file, for a terminal."""
    parts = [capture_line(report)]
    if report.get("warnings"):
        parts += [
            "",
            "Capture integrity: read these before the figures (codes explained in the README)",
            warnings_block(report["warnings"]),
        ]
    parts.extend(iperf3_lines(report))
    if "summary" in report:
        parts += ["", "Run summary (main data direction, truth-seeking)", summary_block(report["summary"])]
    if report.get("directions"):
        parts += ["", "Flow directions carrying data", directions_table(report["directions"])]
    if "wireshark" in report:
        parts += ["", "Wireshark-compatible flags (tshark 4.0 rules, frames): " + wireshark_line(report["wireshark"])]
    return "\n".join(parts)


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
    ("Packet loss", lambda s: _at_least(s, _cell_count(s["packet_loss_pct"], s["lost_segments"]))),
    ("Retransmissions", lambda s: _cell_count(s["retransmissions_pct"], s["retransmissions"])),
    (
        "Kernel drops",
        lambda s: "unknown" if s["kernel_drops"] is None else _cell_count(s["kernel_drops_pct"], s["kernel_drops"]),
    ),
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
