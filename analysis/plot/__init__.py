"""Figures from the analysis stages' outputs: one pure function per plot.

Every function takes what the library already computed (the packet table,
`Flows`, `Directions`, a `timeseries.series` DataFrame, `summary.run_summary`
dicts, a testbed results DataFrame) and returns a `matplotlib.figure.Figure`;
nothing here reads a capture or prints. Figures are built without pyplot, so
they need no display and leave no global state behind: save one with
`fig.savefig(path)`, or show it in a notebook by evaluating it.

    >>> fig = plot_timeseries(series_df, title="cubic, 2% loss")
    >>> fig.savefig("cubic.timeseries.png")

Units on every axis: Mbit/s (10^6 bit/s), ms, KB (10^3 bytes, as the
summary's MB is 10^6 bytes), seconds since the capture's first packet.
matplotlib is imported inside the functions, so importing this package is free.

Figures by what they show: `capture` (one capture), `compare` (runs side by side),
`testbed` (a testbed results table); `figure` holds what they share.
"""

from __future__ import annotations

from .capture import (
    SEQUENCE_MAX_POINTS,
    TIMESERIES_PANELS,
    choose_interval_s,
    plot_kernel_window,
    plot_rtt_cdf,
    plot_sequence,
    plot_timeseries,
    rtt_samples_ms,
    save_report_plots,
)
from .compare import plot_compare
from .figure import flow_label, flow_labels, save_figure_atomically, with_warning_codes
from .testbed import jain_index, plot_fairness, plot_throughput_vs_loss

__all__ = [
    "plot_timeseries",
    "plot_kernel_window",
    "plot_sequence",
    "plot_rtt_cdf",
    "plot_compare",
    "plot_throughput_vs_loss",
    "plot_fairness",
    "save_report_plots",
    "flow_label",
    "flow_labels",
    "rtt_samples_ms",
    "choose_interval_s",
    "jain_index",
    "with_warning_codes",
    "save_figure_atomically",
    "SEQUENCE_MAX_POINTS",
    "TIMESERIES_PANELS",
]
