"""Figures of a testbed results table: throughput against loss, and fairness per run."""

from __future__ import annotations

from typing import Any, List, Sequence

import numpy as np

from ..testbed.fairness import jain_index as testbed_jain_index
from .figure import BITS_PER_MBIT, _colors, _figure


def jain_index(throughputs: Sequence[float]) -> float:
    """Jain's fairness index of `throughputs` (testbed.fairness.jain_index, the one definition),
    NaN where that has none (no values, a NaN, all zero): a bar that is not drawn."""
    index = testbed_jain_index(list(throughputs))
    return float("nan") if index is None else float(index)


def plot_throughput_vs_loss(results_df: Any, title: str = ""):
    """Throughput (Mbit/s) against the configured random loss (%), one line per
    CCA: the mean over runs and flows, with each flow's value as a faint point,
    and the fair share (rate / flows) as a dotted line when all runs share it.
    `results_df`: a testbed results table (`cca`, `loss_probability`,
    `throughput_bps`, optionally `rate_bps` and `flows`; rows without a
    throughput are skipped). Lines are per `cca`, the run's mix ('cubic+bbr'
    for a mixed run)."""
    fig = _figure(8.0, 5.0)
    ax = fig.subplots()
    colors = _colors()
    frame = results_df.dropna(subset=["throughput_bps"])
    for k, (cca, rows) in enumerate(frame.groupby("cca", sort=True)):
        color = colors[k % len(colors)]
        loss_pct = rows["loss_probability"].astype(float) * 100.0
        mbit = rows["throughput_bps"].astype(float) / BITS_PER_MBIT
        ax.plot(loss_pct, mbit, linestyle="none", marker="o", markersize=4, alpha=0.35, color=color)
        mean = mbit.groupby(loss_pct).mean()
        ax.plot(mean.index, mean.values, marker="o", color=color, linewidth=1.5, label=f"{cca} (mean)")
    shares = _fair_shares_bps(frame)
    if len(shares) == 1:
        ax.axhline(
            shares[0] / BITS_PER_MBIT,
            color="0.5",
            linestyle=":",
            linewidth=1.0,
            label="fair share (bottleneck rate / flows)",
        )
    ax.set_xlabel("Configured random loss (%)")
    ax.set_ylabel("Throughput per flow (Mbit/s)")
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    if len(frame):
        ax.legend(fontsize="small")
    else:
        ax.text(0.5, 0.5, "no rows with a throughput", transform=ax.transAxes, ha="center", va="center")
    fig.suptitle(title or "Throughput vs loss per CCA (faint points: single flows)")
    return fig


def _fair_shares_bps(frame: Any) -> List[float]:
    """The distinct bottleneck rate / flows of the runs (empty without those columns)."""
    if "rate_bps" not in frame.columns or "flows" not in frame.columns or len(frame) == 0:
        return []
    shares = (frame["rate_bps"].astype(float) / frame["flows"].astype(float)).dropna().unique()
    return [float(x) for x in shares]


def plot_fairness(results_df: Any, title: str = ""):
    """Jain's fairness index of each run (flows sharing the bottleneck), one bar
    per run coloured by the run's CCA mix (`cca`), with a dotted mark at 1/n
    (one flow takes all). Computed from `throughput_bps` per `run_id`; runs of a
    single flow are skipped."""
    fig = _figure(9.0, 4.8)
    ax = fig.subplots()
    frame = results_df.dropna(subset=["throughput_bps"])
    rows = []
    for run_id, run in frame.groupby("run_id", sort=False):
        if len(run) < 2:
            continue
        cca = str(run["cca"].iloc[0]) if "cca" in run.columns else ""
        rows.append((str(run_id), jain_index(run["throughput_bps"].astype(float).to_numpy()), len(run), cca))
    if rows:
        colors = _colors()
        ccas = list(dict.fromkeys(r[3] for r in rows))
        positions = np.arange(len(rows))
        bars = ax.bar(
            positions, [r[1] for r in rows], width=0.6, color=[colors[ccas.index(r[3]) % len(colors)] for r in rows]
        )
        ax.bar_label(bars, labels=[f"{r[1]:.2f}" for r in rows], padding=2, fontsize="small")
        ax.hlines(
            [1.0 / r[2] for r in rows],
            positions - 0.3,
            positions + 0.3,
            colors="black",
            linestyles=":",
            linewidth=1.2,
            zorder=3,
        )
        ax.set_xticks(positions, [r[0] for r in rows], rotation=30, ha="right", fontsize="small")
        from matplotlib.lines import Line2D
        from matplotlib.patches import Patch

        handles: List[Any] = [Patch(color=colors[k % len(colors)]) for k in range(len(ccas))]
        handles.append(Line2D([], [], color="black", linestyle=":", linewidth=1.2))
        fig.legend(
            handles, ccas + ["1/n: one flow\ntakes all"], loc="outside right upper", fontsize="small", frameon=False
        )
    else:
        ax.text(
            0.5, 0.5, "no run with two or more flows", transform=ax.transAxes, ha="center", va="center", color="0.4"
        )
    ax.set_ylim(0, 1.12)
    ax.set_ylabel("Jain's fairness index")
    ax.grid(True, axis="y", alpha=0.3)
    ax.set_axisbelow(True)
    fig.suptitle(title or "Fairness between flows sharing the bottleneck (1 = equal shares)")
    return fig
