"""Figures of one capture: throughput/retransmission/RTT/in-flight time series, the sequence
graph, the RTT distribution, the kernel's congestion window, and the PNGs of a report."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from .figure import (
    BITS_PER_MBIT,
    BYTES_PER_KB,
    NS_PER_S,
    US_PER_MS,
    FlowKey,
    _colors,
    _figure,
    flow_label,
    flow_labels,
    save_figure_atomically,
    with_warning_codes,
)

# Beyond this many markers the sequence graph thins original segments and ACKs
# (every k-th one); retransmissions are always drawn, they are what one looks for.
SEQUENCE_MAX_POINTS = 200_000
# The time-series plot leaves out directions that carried less than this share of
# the busiest direction's bytes (an iperf3 control connection, a stray DNS-over-TCP).
TIMESERIES_MIN_SHARE = 0.01
# A report's series aims at about this many intervals: fine enough to see
# congestion-window sawtooth, coarse enough that each interval holds several RTTs
# of data on a fast link.
TARGET_INTERVALS = 200
TIMESERIES_PANELS = ("throughput", "retransmissions", "rtt", "bytes_in_flight")


def choose_interval_s(duration_s: float, target_intervals: int = TARGET_INTERVALS) -> float:
    """An interval of 1, 2 or 5 x 10^k seconds giving about `target_intervals`
    intervals over `duration_s` (at least 1 ms; 1 s for an empty capture)."""
    if not duration_s > 0:
        return 1.0
    raw = duration_s / max(target_intervals, 1)
    exponent = math.floor(math.log10(raw))
    for step in (1.0, 2.0, 5.0, 10.0):
        candidate = step * 10.0**exponent
        if candidate >= raw * 0.75:
            return max(round(candidate, 9), 1e-3)
    return max(10.0 ** (exponent + 1), 1e-3)


def _interval_text(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:g} s"
    return f"{seconds * 1e3:g} ms"


def _series_interval_s(series_df: Any) -> Optional[float]:
    times = np.unique(np.asarray(series_df["time_s"], dtype=float))
    if len(times) < 2:
        return None
    return float(np.min(np.diff(times)))


# ----------------------------------------------------------------------------- time series


def _series_groups(
    series_df: Any, labels: Optional[Mapping[FlowKey, str]], min_share: float
) -> Tuple[List[Tuple[str, Any]], int]:
    """[(legend label, rows)] ordered by bytes carried, and how many groups were left out."""
    if "label" in series_df.columns:
        keys = list(dict.fromkeys(series_df["label"]))
        groups = [(str(k), series_df[series_df["label"] == k]) for k in keys]
    else:
        pairs = series_df[["stream", "direction"]].drop_duplicates().itertuples(index=False)
        groups = []
        for stream, direction in pairs:
            rows = series_df[(series_df["stream"] == stream) & (series_df["direction"] == direction)]
            key = (int(stream), int(direction))
            name = (labels or {}).get(key, f"stream {key[0]} direction {key[1]}")
            groups.append((name, rows))
    volume = [float(np.nansum(rows["throughput_bps"])) for _, rows in groups]
    order = np.argsort(volume, kind="stable")[::-1]
    groups = [groups[k] for k in order]
    volume = [volume[k] for k in order]
    if not groups or volume[0] <= 0:
        return groups, 0
    kept = [g for g, v in zip(groups, volume) if v >= min_share * volume[0]]
    return kept, len(groups) - len(kept)


def plot_timeseries(
    series_df: Any,
    title: str = "",
    *,
    labels: Optional[Mapping[FlowKey, str]] = None,
    panels: Sequence[str] = TIMESERIES_PANELS,
    min_share: float = TIMESERIES_MIN_SHARE,
):
    """Stacked panels over a shared time axis, one colour per flow direction:
    throughput (solid) and goodput (dashed) in Mbit/s, retransmissions per
    interval, median RTT in ms, peak bytes in flight in KB.

    `series_df`: the DataFrame of `timeseries.series` (one row per interval per
    direction). Lines are per (stream, direction), named by `labels`
    (`flow_labels(directions)`), or per value of a `label` column when the frame
    has one (e.g. runs concatenated for an overlay). `panels` picks and orders
    panels from TIMESERIES_PANELS. Directions that carried less than
    `min_share` of the busiest one's bytes are left out (the figure says how many).
    """
    unknown = [p for p in panels if p not in TIMESERIES_PANELS]
    if unknown or not panels:
        raise ValueError(f"panels must be a non-empty selection of {TIMESERIES_PANELS}, got {list(panels)}")
    groups, left_out = _series_groups(series_df, labels, min_share)
    fig = _figure(10.0, 1.2 + 2.0 * len(panels))
    axes = fig.subplots(len(panels), 1, sharex=True, squeeze=False)[:, 0]
    colors = _colors()
    interval_s = _series_interval_s(series_df)

    for k, (name, rows) in enumerate(groups):
        color = colors[k % len(colors)]
        t = np.asarray(rows["time_s"], dtype=float)
        for ax, panel in zip(axes, panels):
            if panel == "throughput":
                ax.plot(
                    t, np.asarray(rows["throughput_bps"], float) / BITS_PER_MBIT, color=color, linewidth=1.2, label=name
                )
                ax.plot(
                    t,
                    np.asarray(rows["goodput_bps"], float) / BITS_PER_MBIT,
                    color=color,
                    linewidth=1.0,
                    linestyle="--",
                )
            elif panel == "retransmissions":
                ax.step(
                    t, np.asarray(rows["retransmissions"], float), where="post", color=color, linewidth=1.0, label=name
                )
            elif panel == "rtt":
                rtt = np.asarray(rows["rtt_ms"], float)
                ax.plot(t, rtt, color=color, linewidth=1.0, marker=".", markersize=3, label=name)
            elif panel == "bytes_in_flight":
                flight = np.asarray(rows["bytes_in_flight"], float) / BYTES_PER_KB
                ax.plot(t, flight, color=color, linewidth=1.0, marker=".", markersize=2, label=name)

    ylabels = {
        "throughput": "Throughput (Mbit/s)",
        "retransmissions": "Retransmissions\nper interval",
        "rtt": "RTT, median (ms)",
        "bytes_in_flight": "Bytes in flight\n(KB, peak)",
    }
    empty_notes = {"rtt": "no RTT samples", "bytes_in_flight": "bytes in flight are measured at the sender's side only"}
    for ax, panel in zip(axes, panels):
        ax.set_ylabel(ylabels[panel])
        ax.grid(True, alpha=0.3)
        values = [line.get_ydata() for line in ax.get_lines()]
        top = max((float(np.nanmax(v)) for v in values if np.isfinite(v).any()), default=0.0)
        ax.set_ylim(0, top * 1.1 if top > 0 else 1.0)  # headroom: a line at the top stays visible
        if panel in empty_notes and not any(
            line.get_xydata()[:, 1][~np.isnan(line.get_xydata()[:, 1])].size for line in ax.get_lines()
        ):
            ax.text(0.5, 0.5, empty_notes[panel], transform=ax.transAxes, ha="center", va="center", color="0.4")
            ax.set_yticks([])
        if panel == "retransmissions":
            from matplotlib.ticker import MaxNLocator

            ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    xlabel = "Time since the capture's first packet (s)"
    if interval_s is not None:
        xlabel += f"; {_interval_text(interval_s)} intervals"
    axes[-1].set_xlabel(xlabel)
    if not groups:
        axes[0].text(
            0.5,
            0.5,
            "no data-carrying flow direction",
            transform=axes[0].transAxes,
            ha="center",
            va="center",
            color="0.4",
        )

    handles, names = axes[0].get_legend_handles_labels()
    if "throughput" in panels and groups:
        from matplotlib.lines import Line2D

        handles += [
            Line2D([], [], color="0.3", linewidth=1.2),
            Line2D([], [], color="0.3", linewidth=1.0, linestyle="--"),
        ]
        names += ["throughput (all payload)", "goodput (unique payload)"]
    if handles:
        fig.legend(
            handles, names, loc="outside lower center", ncol=min(4, len(handles)), fontsize="small", frameon=False
        )
    heading = title or "Per-interval time series"
    if left_out:
        heading += (
            f"\n({left_out} direction{'s' if left_out > 1 else ''} carrying under "
            f"{min_share:.0%} of the busiest one's bytes not shown)"
        )
    fig.suptitle(heading)
    return fig


# ----------------------------------------------------------------------------- sequence graph


def _signed32(values: np.ndarray) -> np.ndarray:
    """uint32 differences as signed offsets (sequence arithmetic modulo 2^32)."""
    return np.asarray(values, dtype=np.uint32).astype(np.int64) - np.where(
        np.asarray(values, dtype=np.uint32) >= 2**31, 2**32, 0
    )


def _thin(index: np.ndarray, keep: int) -> Tuple[np.ndarray, int]:
    """Every k-th entry of `index` so that at most `keep` remain; returns (index, k)."""
    if keep <= 0 or len(index) <= keep:
        return index, 1
    step = int(math.ceil(len(index) / keep))
    return index[::step], step


def _sequence_unit(span_bytes: float) -> Tuple[float, str]:
    if span_bytes >= 10e6:
        return 1e6, "MB"
    if span_bytes >= 10e3:
        return 1e3, "KB"
    return 1.0, "bytes"


def plot_sequence(
    packets: Mapping[str, np.ndarray],
    flows: Any,
    directions: Any,
    direction_index: Optional[int] = None,
    *,
    title: str = "",
    time_range_s: Optional[Tuple[float, float]] = None,
    max_points: int = SEQUENCE_MAX_POINTS,
    show_sack: bool = True,
    show_window: bool = True,
):
    """The Stevens time-sequence graph of one flow direction.

    Each data segment is a point at (time, relative end sequence number);
    retransmissions (red x), spurious retransmissions (orange +) and late
    originals (reordered, purple triangles) are drawn over the originals.
    The peer's cumulative ACK is a green step line, its SACK blocks light
    green vertical bars at the ACK's time, and the receive-window limit
    (ACK + advertised window) a grey step line when the window scale is known.
    A horizontal run of points is a stall; the slope is the sending rate; the
    gap between the ACK line and the points is what is in flight.

    `direction_index`: a row of `directions.table` (default: the main
    direction, the one that carried the most payload). `time_range_s`: (start,
    end) seconds since the capture's first packet to zoom into; the y axis then
    spans what that window holds. Beyond `max_points`
    markers, originals and ACKs are thinned to every k-th one (stated in the
    title); retransmissions are always all drawn.
    """
    from .._core.truth import KIND_NONE, KIND_REORDERED, KIND_SPURIOUS, RETRANSMISSION_KINDS, main_direction
    from .._core.columns import TCP_ACK

    fig = _figure(10.0, 6.0)
    ax = fig.subplots()
    if direction_index is None:
        direction_index = main_direction(directions)
    if direction_index is None:
        ax.text(
            0.5, 0.5, "no data-carrying flow direction", transform=ax.transAxes, ha="center", va="center", color="0.4"
        )
        fig.suptitle(title or "Time-sequence graph")
        return fig
    if not 0 <= direction_index < len(directions):
        raise IndexError(f"direction_index {direction_index} out of range (0..{len(directions) - 1})")

    t = directions.table
    slot = int(t["slot"][direction_index])
    peer_slot = slot ^ 1
    ts_ns = np.asarray(packets["ts_ns"], dtype=np.int64)
    start_ns = int(ts_ns.min()) if len(ts_ns) else 0
    packet_slot = np.asarray(directions.packet_slot)
    kind = np.asarray(directions.segment_kind)
    seq64 = np.asarray(flows.seq64, dtype=np.int64)
    ack64 = np.asarray(flows.ack64, dtype=np.int64)
    payload = np.asarray(packets["tcp_payload_len"], dtype=np.int64)

    data = np.flatnonzero((packet_slot == slot) & (kind != KIND_NONE) & (seq64 >= 0))
    flags = np.asarray(packets["tcp_flags"])
    acks = np.flatnonzero((packet_slot == peer_slot) & ((flags & TCP_ACK) != 0) & (ack64 >= 0))
    base = int(seq64[data].min()) if len(data) else 0
    if time_range_s is not None:
        low_ns = start_ns + int(time_range_s[0] * NS_PER_S)
        high_ns = start_ns + int(time_range_s[1] * NS_PER_S)
        data = data[(ts_ns[data] >= low_ns) & (ts_ns[data] <= high_ns)]
        acks = acks[(ts_ns[acks] >= low_ns) & (ts_ns[acks] <= high_ns)]
    if len(data) == 0:
        ax.text(
            0.5,
            0.5,
            "no data segments in this direction" + (" and time range" if time_range_s else ""),
            transform=ax.transAxes,
            ha="center",
            va="center",
            color="0.4",
        )
        fig.suptitle((title + "\n" if title else "") + flow_label(directions, direction_index))
        return fig

    seg_end = seq64 + payload - base
    y_low = float(min(seg_end[data].min() - payload[data].max(), (ack64[acks] - base).min() if len(acks) else 0))
    y_high = float(max(seg_end[data].max(), (ack64[acks] - base).max() if len(acks) else 0))
    scale, unit = _sequence_unit(max(y_high, 1.0))

    def seconds(index: np.ndarray) -> np.ndarray:
        return (ts_ns[index] - start_ns) / NS_PER_S

    kinds = kind[data]
    retrans = data[np.isin(kinds, RETRANSMISSION_KINDS) & (kinds != KIND_SPURIOUS)]
    spurious = data[kinds == KIND_SPURIOUS]
    reordered = data[kinds == KIND_REORDERED]
    originals = data[~np.isin(kinds, RETRANSMISSION_KINDS + (KIND_REORDERED,))]
    budget = max(max_points - len(retrans) - len(spurious) - len(reordered), 0)
    share = len(originals) / max(len(originals) + len(acks), 1)
    originals, step_originals = _thin(originals, int(budget * share))
    ack_lines = 2 if show_window else 1  # the window limit line has a vertex per ACK too
    acks_drawn, step_acks = _thin(acks, (budget - len(originals)) // ack_lines)

    from matplotlib.lines import Line2D

    legend = [
        (Line2D([], [], linestyle="none", marker="o", markersize=4, color="tab:blue"), f"data segment ({len(data):,})")
    ]
    ax.plot(
        seconds(originals),
        seg_end[originals] / scale,
        linestyle="none",
        marker=".",
        markersize=2.0,
        color="tab:blue",
        rasterized=len(originals) > 20_000,
    )
    if len(acks_drawn):
        ack_y = (ack64[acks_drawn] - base) / scale
        legend += [
            (ax.step(seconds(acks_drawn), ack_y, where="post", color="tab:green", linewidth=1.0)[0], "cumulative ACK")
        ]
        if show_window:
            legend += _draw_window_limit(
                ax, packets, flows, directions, direction_index, acks_drawn, base, scale, seconds
            )
    if show_sack and len(acks_drawn):
        legend += _draw_sack(ax, packets, ack64, acks_drawn, base, scale, seconds, max_points)
    for index, marker, color, size, name in (
        (retrans, "x", "tab:red", 6, "retransmission"),
        (spurious, "+", "tab:orange", 7, "spurious retransmission"),
        (reordered, "^", "tab:purple", 4, "reordered (late original)"),
    ):
        if len(index):
            # thousands of big crosses would hide the originals: shrink them as they multiply
            marker_size = size if len(index) <= 300 else size * (0.7 if len(index) <= 3000 else 0.45)
            line = ax.plot(
                seconds(index),
                seg_end[index] / scale,
                linestyle="none",
                marker=marker,
                markersize=marker_size,
                color=color,
            )[0]
            legend.append((line, f"{name} ({len(index):,})"))

    # the window line may run far above the data: the y axis follows data and ACKs
    pad = 0.03 * max(y_high - y_low, 1.0)
    ax.set_ylim((y_low - pad) / scale, (y_high + pad) / scale)
    if time_range_s is not None:
        ax.set_xlim(*time_range_s)
    ax.set_xlabel("Time since the capture's first packet (s)")
    ax.set_ylabel(f"Relative sequence number, segment end ({unit})")
    ax.grid(True, alpha=0.3)
    ax.legend([h for h, _ in legend], [n for _, n in legend], loc="upper left", fontsize="small")
    heading = title or "Time-sequence graph"
    heading += f"\n{flow_label(directions, direction_index)}, vantage: {t['vantage'][direction_index]}"
    if step_originals > 1 or step_acks > 1:
        heading += f" (1 in {max(step_originals, step_acks)} segments/ACKs drawn)"
    fig.suptitle(heading)
    return fig


def _draw_window_limit(
    ax: Any,
    packets: Mapping[str, np.ndarray],
    flows: Any,
    directions: Any,
    row: int,
    acks: np.ndarray,
    base: int,
    scale: float,
    seconds: Any,
) -> List[Any]:
    """ACK + the peer's advertised window, when the handshake told the window scale."""
    streams = getattr(flows, "streams", None) or {}
    if "window_scale" not in streams:
        return []
    stream = int(directions.table["stream"][row])
    peer_direction = 1 - int(directions.table["direction"][row])
    shift = int(np.asarray(streams["window_scale"])[stream, peer_direction])
    if shift < 0:
        return []
    window = np.asarray(packets["window"], dtype=np.int64)[acks] << shift
    limit = (np.asarray(flows.ack64, dtype=np.int64)[acks] + window - base) / scale
    line = ax.step(seconds(acks), limit, where="post", color="0.55", linewidth=0.8, linestyle=":")[0]
    return [(line, "receive window limit (ACK + window)")]


def _draw_sack(
    ax: Any,
    packets: Mapping[str, np.ndarray],
    ack64: np.ndarray,
    acks: np.ndarray,
    base: int,
    scale: float,
    seconds: Any,
    max_blocks: int,
) -> List[Any]:
    """SACK blocks as vertical bars at the time of the ACK that carried them."""
    from matplotlib.collections import LineCollection

    count = np.asarray(packets["sack_count"])[acks]
    with_sack = acks[count > 0]
    if len(with_sack) == 0:
        return []
    with_sack, _ = _thin(with_sack, max_blocks // 4)
    count = np.asarray(packets["sack_count"])[with_sack].astype(np.int64)
    ack_raw = np.asarray(packets["ack"], dtype=np.uint32)[with_sack]
    left = np.asarray(packets["sack_left"], dtype=np.uint32)[with_sack]
    right = np.asarray(packets["sack_right"], dtype=np.uint32)[with_sack]
    present = np.arange(left.shape[1])[None, :] < count[:, None]
    ack_here = ack64[with_sack][:, None]
    left64 = ack_here + _signed32(left - ack_raw[:, None])
    right64 = ack_here + _signed32(right - ack_raw[:, None])
    x = np.repeat(seconds(with_sack)[:, None], left.shape[1], axis=1)[present]
    y0 = ((left64 - base) / scale)[present]
    y1 = ((right64 - base) / scale)[present]
    segments = np.stack([np.column_stack([x, y0]), np.column_stack([x, y1])], axis=1)
    collection = LineCollection(list(segments), colors="tab:green", alpha=0.35, linewidths=2.0)
    ax.add_collection(collection)
    return [(collection, f"SACK block ({int(present.sum()):,})")]


# ----------------------------------------------------------------------------- RTT distribution


def rtt_samples_ms(directions: Any, direction_index: Optional[int] = None) -> np.ndarray:
    """The RTT samples (ms) of one data direction (default: the main one), in packet order."""
    from .._core.truth import main_direction

    if direction_index is None:
        direction_index = main_direction(directions)
    if direction_index is None:
        return np.zeros(0)
    slot = int(directions.table["slot"][direction_index])
    values = np.asarray(directions.rtt_sample_us, dtype=float)
    mask = (np.asarray(directions.rtt_slot) == slot) & ~np.isnan(values)
    return values[mask] / US_PER_MS


def plot_rtt_cdf(samples_ms: Mapping[str, Any], title: str = "", *, log_x: bool = False):
    """Empirical CDFs of RTT samples, one step line per entry of
    `samples_ms` ({legend name: RTT samples in ms}, e.g. one per run or per
    direction from `rtt_samples_ms`). The legend gives each line's sample count
    and median; a dotted line marks the median. Entries without samples are
    named in the legend as such."""
    fig = _figure(8.0, 5.0)
    ax = fig.subplots()
    colors = _colors()
    drawn = 0
    for k, (name, values) in enumerate(samples_ms.items()):
        values = np.sort(np.asarray(values, dtype=float)[~np.isnan(np.asarray(values, dtype=float))])
        color = colors[k % len(colors)]
        if len(values) == 0:
            ax.plot([], [], color=color, label=f"{name} (no RTT samples)")
            continue
        cdf = np.arange(1, len(values) + 1) / len(values)
        median = float(np.median(values))
        ax.step(
            np.r_[values[0], values],
            np.r_[0.0, cdf],
            where="post",
            color=color,
            linewidth=1.5,
            label=f"{name} (n={len(values):,}, median {median:.3g} ms)",
        )
        ax.axvline(median, color=color, linestyle=":", linewidth=0.8)
        drawn += 1
    if log_x and drawn:
        ax.set_xscale("log")
    ax.set_xlabel("RTT (ms)" + (", log scale" if log_x else ""))
    ax.set_ylabel("Fraction of samples at or below")
    ax.set_ylim(0, 1.02)
    ax.grid(True, alpha=0.3)
    if samples_ms:
        ax.legend(loc="lower right", fontsize="small")
    else:
        ax.text(0.5, 0.5, "no RTT samples", transform=ax.transAxes, ha="center", va="center", color="0.4")
    fig.suptitle(title or "RTT distribution")
    return fig


# ----------------------------------------------------------------------------- one capture's PNGs


def _busy_rows(directions: Any, min_share: float) -> List[int]:
    """Rows carrying at least `min_share` of the busiest row's payload, busiest first."""
    payload = np.asarray(directions.table["payload_bytes"], dtype=float)
    if len(payload) == 0:
        return []
    order = np.argsort(-payload, kind="stable")
    return [int(r) for r in order if payload[r] >= min_share * payload[order[0]]]


def _part(parts: Any, name: str) -> Any:
    if isinstance(parts, Mapping):
        return parts.get(name)
    return getattr(parts, name, None)


def plot_kernel_window(
    probe: Any,
    events: np.ndarray,
    packet_ns: Optional[np.ndarray] = None,
    capture_in_flight: Optional[np.ndarray] = None,
    mss_bytes: int = 1448,
    title: str = "",
):
    """The sending kernel's cwnd and ssthresh (segments, from probe.csv) over time, with the
    capture's bytes in flight in segments beside them, and the kernel's srtt below."""
    from .._core.kernel_probe import SSTHRESH_INFINITE

    fig = _figure(9.0, 5.5)
    top, bottom = fig.subplots(2, 1, sharex=True, height_ratios=(2, 1))
    start_ns = int(probe.time_ns[events].min()) if len(events) else 0
    if packet_ns is not None and len(packet_ns):
        start_ns = min(start_ns, int(packet_ns.min()))
    t_s = (probe.time_ns[events] - start_ns) / NS_PER_S
    colors = _colors()
    if packet_ns is not None and capture_in_flight is not None:
        known = capture_in_flight >= 0
        top.plot(
            (packet_ns[known] - start_ns) / NS_PER_S,
            capture_in_flight[known] / max(mss_bytes, 1),
            color=colors[7],
            linewidth=0.6,
            alpha=0.8,
            label="in flight (capture)",
        )
    top.step(t_s, probe.cwnd_segments[events], where="post", color=colors[0], linewidth=1.2, label="cwnd (kernel)")
    ssthresh = probe.ssthresh_segments[events].astype(np.float64)
    ssthresh[ssthresh >= SSTHRESH_INFINITE] = np.nan
    if np.isfinite(ssthresh).any():
        top.step(t_s, ssthresh, where="post", color=colors[3], linewidth=1.0, linestyle="--", label="ssthresh (kernel)")
    top.set_ylabel("segments")
    top.legend(loc="upper right", fontsize="small")
    top.set_title(title or "kernel congestion window")
    bottom.plot(t_s, probe.srtt_us[events] / 1000.0, color=colors[2], linewidth=0.8)
    bottom.set_ylabel("srtt (ms)")
    bottom.set_xlabel("time (s)")
    return fig


def save_report_plots(analysis_parts: Any, out_dir: Union[str, Path], stem: str, *, dpi: int = 120) -> List[Path]:
    """Write the PNGs of one capture into `out_dir` and return their paths:
    `<stem>.timeseries.png`, `<stem>.sequence.png` (main direction) and
    `<stem>.rtt_cdf.png` (directions with RTT samples that carried at least
    TIMESERIES_MIN_SHARE of the busiest one's bytes); the last two only
    when the capture has a data-carrying direction.

    `analysis_parts`: a mapping or object with `packets`, `flows`, `directions`
    and optionally `series` (a `timeseries.series` DataFrame; computed with
    `choose_interval_s` when absent), `title` and `warnings` (their codes go into
    every figure's title).
    """
    from .._core.timeseries import series as make_series
    from .._core.truth import main_direction

    packets, flows, directions = (_part(analysis_parts, n) for n in ("packets", "flows", "directions"))
    if packets is None or flows is None or directions is None:
        raise ValueError("analysis_parts needs packets, flows and directions")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    title = with_warning_codes(_part(analysis_parts, "title") or stem, _part(analysis_parts, "warnings"))
    series_df = _part(analysis_parts, "series")
    if series_df is None:
        ts_ns = np.asarray(packets["ts_ns"], dtype=np.int64)
        duration_s = float(ts_ns.max() - ts_ns.min()) / NS_PER_S if len(ts_ns) else 0.0
        series_df = make_series(packets, flows, directions, choose_interval_s(duration_s))

    written: List[Path] = []

    def save(fig: Any, suffix: str) -> None:
        path = out / f"{stem}.{suffix}.png"
        save_figure_atomically(fig, path, dpi=dpi)
        written.append(path)

    save(plot_timeseries(series_df, title=title, labels=flow_labels(directions)), "timeseries")
    main = main_direction(directions)
    if main is not None:
        save(plot_sequence(packets, flows, directions, main, title=title), "sequence")
        samples = {
            flow_label(directions, r): rtt_samples_ms(directions, r)
            for r in _busy_rows(directions, TIMESERIES_MIN_SHARE)
        }
        samples = {name: values for name, values in samples.items() if len(values)}
        if samples:
            save(plot_rtt_cdf(samples, title=title), "rtt_cdf")
        probe = _part(analysis_parts, "probe")
        if probe is not None:
            from .._core.kernel_probe import events_of

            table = directions.table
            events = events_of(
                probe,
                str(table["src"][main]),
                int(table["sport"][main]),
                str(table["dst"][main]),
                int(table["dport"][main]),
            )
            if len(events):
                packet_ns = capture_flight = None
                if table["vantage"][main] == "sender":
                    slot = directions.packet_slot
                    of_main = np.where(slot >= 0, directions.row_of_slot[np.maximum(slot, 0)], -1) == main
                    packet_ns = np.asarray(packets["ts_ns"], dtype=np.int64)[of_main]
                    capture_flight = directions.bytes_in_flight[of_main]
                save(
                    plot_kernel_window(probe, events, packet_ns, capture_flight, int(table["mss"][main]), title=title),
                    "kernel",
                )
    return written
