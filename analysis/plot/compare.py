"""Runs side by side: one bar per run for each summary figure."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from .figure import _colors, _figure

COMPARE_PANELS = (
    ("speed_Mbps", "Speed (Mbit/s)", "{:.3g}"),
    ("packet_loss_pct", "Packet loss (%)", "{:.2f}"),
    ("retransmissions_pct", "Retransmissions (%)", "{:.2f}"),
)


def plot_compare(summaries: Sequence[Mapping[str, Any]], title: str = ""):
    """Bar charts of speed (Mbit/s, goodput), packet loss % and retransmissions %
    across runs, as the Spline report compares Spline with BBR. `summaries`:
    `summary.run_summary` dicts (their `name` labels the bars). Values are
    written on the bars; a run without a figure shows 'n/a'."""
    fig = _figure(4.0 + 1.2 * max(len(summaries), 1) * 1.5, 4.5)
    axes = fig.subplots(1, len(COMPARE_PANELS), squeeze=False)[0]
    names = [str(s.get("name") or f"run {k + 1}") for k, s in enumerate(summaries)]
    colors = _colors()
    positions = np.arange(len(summaries))
    long_names = max((len(n) for n in names), default=0) > 8
    for ax, (key, label, fmt) in zip(axes, COMPARE_PANELS):
        values = [s.get(key) for s in summaries]
        heights = [float(v) if v is not None else 0.0 for v in values]
        bars = ax.bar(positions, heights, color=[colors[k % len(colors)] for k in range(len(summaries))], width=0.6)
        texts = [fmt.format(v) if v is not None else "n/a" for v in values]
        ax.bar_label(bars, labels=texts, padding=2, fontsize="small")
        ax.set_title(label, fontsize="medium")
        ax.set_xticks(positions, names, rotation=30 if long_names else 0, ha="right" if long_names else "center")
        top = max(heights, default=0.0)
        ax.set_ylim(0, top * 1.18 if top > 0 else 1.0)
        ax.grid(True, axis="y", alpha=0.3)
        ax.set_axisbelow(True)
    if not summaries:
        axes[0].text(0.5, 0.5, "no runs", transform=axes[0].transAxes, ha="center", va="center")
    fig.suptitle(title or "Runs compared (main data direction of each capture)")
    return fig
