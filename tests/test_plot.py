"""spline_analysis.plot: figures carry the expected panels, labels, lines and markers, and save as PNG."""

from __future__ import annotations

from pathlib import Path
from typing import Dict, List, Sequence

import numpy as np
import pytest

pd = pytest.importorskip("pandas")
pytest.importorskip("matplotlib")

from spline_analysis import plot  # noqa: E402
from spline_analysis._core.columns import TCP_ACK  # noqa: E402
from spline_analysis._core.truth import (
    KIND_NONE,
    KIND_ORIGINAL,
    KIND_RETRANS_FAST,  # noqa: E402
    KIND_SPURIOUS,
)

REPO = Path(__file__).resolve().parents[1]
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
T0_NS = 1_700_000_000 * 10**9


# ----------------------------------------------------------------------------- crafted inputs


class FakeDirections:
    """The attributes of truth.Directions that the plots read, for exact control."""

    def __init__(
        self,
        table: Dict[str, np.ndarray],
        packet_slot: np.ndarray,
        segment_kind: np.ndarray,
        rtt_sample_us: np.ndarray,
        rtt_slot: np.ndarray,
    ) -> None:
        self.table = table
        self.packet_slot = packet_slot
        self.segment_kind = segment_kind
        self.rtt_sample_us = rtt_sample_us
        self.rtt_slot = rtt_slot

    def __len__(self) -> int:
        return len(self.table["stream"])


class FakeFlows:
    def __init__(self, seq64: np.ndarray, ack64: np.ndarray, window_scale: int = 7) -> None:
        self.seq64 = seq64
        self.ack64 = ack64
        self.streams = {"window_scale": np.array([[window_scale, window_scale]], dtype=np.int8)}


def one_direction(
    n_data: int,
    retransmitted: Sequence[int] = (),
    spurious: Sequence[int] = (),
    sack: Dict[int, List[tuple]] = None,
    mss: int = 1000,
):
    """Stream 0: the server (direction 1) sends `n_data` segments of `mss` bytes at 1 ms steps,
    each followed by the client's ACK of it (direction 0). Entries of `retransmitted`/`spurious`
    are indices of data segments marked as such. `sack`: {ack index: [(left, right) relative]}."""
    n = 2 * n_data
    data_rows = np.arange(0, n, 2)
    ack_rows = data_rows + 1
    base = 10_000
    ts = T0_NS + np.arange(n, dtype=np.int64) * 500_000
    payload = np.zeros(n, dtype=np.uint32)
    payload[data_rows] = mss
    seq64 = np.full(n, -1, dtype=np.int64)
    seq64[data_rows] = base + np.arange(n_data) * mss
    ack64 = np.full(n, -1, dtype=np.int64)
    ack64[ack_rows] = base + (np.arange(n_data) + 1) * mss
    flags = np.full(n, TCP_ACK, dtype=np.uint16)
    slot = np.where(np.arange(n) % 2 == 0, 1, 0).astype(np.int32)
    kind = np.full(n, KIND_NONE, dtype=np.uint8)
    kind[data_rows] = KIND_ORIGINAL
    kind[data_rows[list(retransmitted)]] = KIND_RETRANS_FAST
    kind[data_rows[list(spurious)]] = KIND_SPURIOUS
    sack_count = np.zeros(n, dtype=np.uint8)
    sack_left = np.zeros((n, 4), dtype=np.uint32)
    sack_right = np.zeros((n, 4), dtype=np.uint32)
    raw_ack = (ack64 % 2**32).astype(np.uint32)
    for index, blocks in (sack or {}).items():
        row = ack_rows[index]
        sack_count[row] = len(blocks)
        for k, (left, right) in enumerate(blocks):
            sack_left[row, k] = (base + left) % 2**32
            sack_right[row, k] = (base + right) % 2**32
    packets = {
        "ts_ns": ts,
        "tcp_payload_len": payload,
        "tcp_flags": flags,
        "window": np.full(n, 100, np.uint16),
        "ack": raw_ack,
        "sack_count": sack_count,
        "sack_left": sack_left,
        "sack_right": sack_right,
    }
    rtt_us = np.full(n, np.nan)
    rtt_us[ack_rows] = 1000.0 + np.arange(n_data)
    rtt_slot = np.full(n, -1, dtype=np.int32)
    rtt_slot[ack_rows] = 1
    table = {
        "stream": np.array([0]),
        "direction": np.array([1]),
        "slot": np.array([1]),
        "src": np.array(["10.0.0.2"], dtype=object),
        "sport": np.array([80]),
        "dst": np.array(["10.0.0.1"], dtype=object),
        "dport": np.array([40000]),
        "vantage": np.array(["sender"], dtype=object),
        "payload_bytes": np.array([n_data * mss]),
    }
    directions = FakeDirections(table, slot, kind, rtt_us, rtt_slot)
    return packets, FakeFlows(seq64, ack64), directions


def series_frame() -> "pd.DataFrame":
    """Two busy directions (4 intervals of 0.1 s) and one that carries almost nothing."""
    rows = []
    for stream, direction, mbit in ((0, 1, 10.0), (1, 1, 20.0), (2, 0, 0.001)):
        for k in range(4):
            rows.append(
                {
                    "time_s": 0.1 * k,
                    "stream": stream,
                    "direction": direction,
                    "throughput_bps": mbit * 1e6 * (k + 1),
                    "goodput_bps": mbit * 1e6 * k,
                    "retransmissions": k,
                    "needed_retransmissions": k,
                    "rtt_ms": 5.0 + k,
                    "bytes_in_flight": 2000.0 * (k + 1),
                }
            )
    return pd.DataFrame(rows)


def line_with_marker(ax, marker: str):
    lines = [line for line in ax.get_lines() if line.get_marker() == marker]
    assert len(lines) == 1, f"expected one line with marker {marker!r}, found {len(lines)}"
    return lines[0]


def legend_texts(fig_or_ax) -> List[str]:
    legends = getattr(fig_or_ax, "legends", None) or [fig_or_ax.get_legend()]
    return [t.get_text() for legend in legends if legend is not None for t in legend.get_texts()]


# ----------------------------------------------------------------------------- time series


def test_timeseries_has_one_panel_per_quantity_with_units_on_a_shared_time_axis():
    fig = plot.plot_timeseries(series_frame(), title="crafted")
    axes = fig.axes
    assert len(axes) == 4
    ylabels = [ax.get_ylabel() for ax in axes]
    assert "Mbit/s" in ylabels[0] and "Retransmissions" in ylabels[1]
    assert "ms" in ylabels[2] and "KB" in ylabels[3]
    assert "(s)" in axes[-1].get_xlabel() and "100 ms intervals" in axes[-1].get_xlabel()
    assert all(ax.get_shared_x_axes().joined(axes[0], ax) for ax in axes[1:])
    assert fig._suptitle.get_text().startswith("crafted")


def test_timeseries_draws_throughput_and_goodput_in_mbit_per_s_for_each_busy_direction():
    labels = {(0, 1): "10.0.0.2:80 -> 10.0.0.1:40000", (1, 1): "10.0.0.2:80 -> 10.0.0.1:40001"}
    fig = plot.plot_timeseries(series_frame(), labels=labels)
    throughput_ax = fig.axes[0]
    assert len(throughput_ax.get_lines()) == 4  # 2 directions x (throughput, goodput)
    busiest = throughput_ax.get_lines()[0]  # busiest direction first
    np.testing.assert_allclose(busiest.get_ydata(), [20, 40, 60, 80])
    np.testing.assert_allclose(throughput_ax.get_lines()[1].get_ydata(), [0, 20, 40, 60])
    assert throughput_ax.get_lines()[1].get_linestyle() == "--"
    texts = legend_texts(fig)
    assert labels[(0, 1)] in texts and labels[(1, 1)] in texts
    assert "goodput (unique payload)" in texts


def test_timeseries_leaves_out_directions_under_the_minimum_share_and_says_so():
    fig = plot.plot_timeseries(series_frame())
    assert not any("stream 2" in t for t in legend_texts(fig))
    assert "1 direction carrying under 1%" in fig._suptitle.get_text()
    everything = plot.plot_timeseries(series_frame(), min_share=0.0)
    assert any("stream 2 direction 0" in t for t in legend_texts(everything))


def test_timeseries_bytes_in_flight_panel_is_in_kilobytes():
    fig = plot.plot_timeseries(series_frame(), panels=("bytes_in_flight",))
    assert len(fig.axes) == 1
    np.testing.assert_allclose(fig.axes[0].get_lines()[0].get_ydata(), [2, 4, 6, 8])


def test_timeseries_overlays_runs_named_by_a_label_column():
    frame = series_frame()
    frame = frame[frame["stream"] < 2].copy()
    frame["label"] = np.where(frame["stream"] == 0, "cubic", "bbr")
    fig = plot.plot_timeseries(frame, panels=("throughput", "rtt"))
    assert len(fig.axes) == 2
    assert {"cubic", "bbr"} <= set(legend_texts(fig))


def test_timeseries_rejects_an_unknown_panel():
    with pytest.raises(ValueError, match="panels"):
        plot.plot_timeseries(series_frame(), panels=("cwnd",))


def test_timeseries_of_an_empty_series_says_there_is_no_data():
    empty = series_frame().iloc[0:0]
    fig = plot.plot_timeseries(empty)
    assert any("no data" in t.get_text() for t in fig.axes[0].texts)


def test_timeseries_says_bytes_in_flight_needs_the_sender_side_when_all_missing():
    frame = series_frame()
    frame["bytes_in_flight"] = np.nan
    fig = plot.plot_timeseries(frame)
    assert any("sender" in t.get_text() for t in fig.axes[3].texts)


# ----------------------------------------------------------------------------- sequence graph


def test_sequence_highlights_retransmissions_and_spurious_ones_apart_from_originals():
    packets, flows, directions = one_direction(50, retransmitted=[10, 20, 30], spurious=[40])
    fig = plot.plot_sequence(packets, flows, directions, 0)
    ax = fig.axes[0]
    originals = line_with_marker(ax, ".")
    retrans = line_with_marker(ax, "x")
    spurious = line_with_marker(ax, "+")
    assert len(originals.get_xdata()) == 46
    assert len(retrans.get_xdata()) == 3 and len(spurious.get_xdata()) == 1
    assert retrans.get_color() != originals.get_color()
    # y = relative segment end in bytes (small span): segment k ends at (k + 1) * 1000
    np.testing.assert_allclose(retrans.get_ydata(), [11, 21, 31])  # KB: span 50 KB >= 10 KB
    assert "KB" in ax.get_ylabel() and "(s)" in ax.get_xlabel()
    texts = legend_texts(ax)
    assert "retransmission (3)" in texts and "spurious retransmission (1)" in texts
    assert "cumulative ACK" in texts
    assert "10.0.0.2:80 -> 10.0.0.1:40000" in fig._suptitle.get_text()


def test_sequence_ack_line_follows_the_peers_cumulative_ack():
    packets, flows, directions = one_direction(20)
    ax = plot.plot_sequence(packets, flows, directions, 0, show_window=False).axes[0]
    ack_lines = [line for line in ax.get_lines() if line.get_drawstyle() == "steps-post"]
    assert len(ack_lines) == 1
    np.testing.assert_allclose(ack_lines[0].get_ydata(), (np.arange(20) + 1) * 1.0)  # KB
    np.testing.assert_allclose(ack_lines[0].get_xdata(), 0.0005 + np.arange(20) * 0.001)


def test_sequence_draws_the_receive_window_limit_when_the_scale_is_known():
    packets, flows, directions = one_direction(20)
    ax = plot.plot_sequence(packets, flows, directions, 0).axes[0]
    assert "receive window limit (ACK + window)" in legend_texts(ax)
    flows.streams["window_scale"][:] = -1
    ax = plot.plot_sequence(packets, flows, directions, 0).axes[0]
    assert "receive window limit (ACK + window)" not in legend_texts(ax)


def test_sequence_draws_sack_blocks_at_their_sequence_range():
    packets, flows, directions = one_direction(20, sack={5: [(8000, 10000), (12000, 13000)]})
    ax = plot.plot_sequence(packets, flows, directions, 0).axes[0]
    collections = [c for c in ax.collections if len(c.get_segments())]
    assert len(collections) == 1
    segments = sorted(collections[0].get_segments(), key=lambda s: s[0][1])
    np.testing.assert_allclose([s[:, 1] for s in segments], [[8, 10], [12, 13]])  # KB
    assert "SACK block (2)" in legend_texts(ax)


def test_sequence_thins_originals_beyond_max_points_but_keeps_every_retransmission():
    retrans = list(range(0, 150_000, 1000))
    packets, flows, directions = one_direction(150_000, retransmitted=retrans)
    fig = plot.plot_sequence(packets, flows, directions, 0, max_points=20_000, show_sack=False)
    ax = fig.axes[0]
    drawn = sum(len(line.get_xdata()) for line in ax.get_lines())
    assert drawn <= 20_000 + 1000
    assert len(line_with_marker(ax, "x").get_xdata()) == len(retrans)
    assert "1 in " in fig._suptitle.get_text()
    assert "data segment (150,000)" in legend_texts(ax)


def test_sequence_time_range_keeps_only_that_window():
    packets, flows, directions = one_direction(100)
    ax = plot.plot_sequence(packets, flows, directions, 0, time_range_s=(0.010, 0.019)).axes[0]
    xs = line_with_marker(ax, ".").get_xdata()
    assert len(xs) == 10 and xs.min() >= 0.010 and xs.max() <= 0.019
    assert ax.get_xlim() == pytest.approx((0.010, 0.019))


def test_sequence_defaults_to_the_main_direction_and_rejects_a_bad_index():
    packets, flows, directions = one_direction(10)
    assert len(line_with_marker(plot.plot_sequence(packets, flows, directions).axes[0], ".").get_xdata()) == 10
    with pytest.raises(IndexError):
        plot.plot_sequence(packets, flows, directions, 3)


# ----------------------------------------------------------------------------- RTT CDF


def test_rtt_samples_ms_are_the_directions_samples_in_milliseconds():
    _, _, directions = one_direction(5)
    np.testing.assert_allclose(plot.rtt_samples_ms(directions, 0), [1.0, 1.001, 1.002, 1.003, 1.004])


def test_rtt_cdf_has_one_step_line_per_entry_rising_to_one_with_count_and_median():
    fig = plot.plot_rtt_cdf({"cubic": [3.0, 1.0, 2.0, np.nan], "bbr": np.array([10.0, 20.0]), "none": []})
    ax = fig.axes[0]
    steps = [line for line in ax.get_lines() if line.get_drawstyle() == "steps-post"]
    assert len(steps) == 2
    assert steps[0].get_ydata()[-1] == pytest.approx(1.0)
    np.testing.assert_allclose(steps[0].get_xdata()[1:], [1.0, 2.0, 3.0])
    texts = legend_texts(ax)
    assert "cubic (n=3, median 2 ms)" in texts and "bbr (n=2, median 15 ms)" in texts
    assert "none (no RTT samples)" in texts
    assert ax.get_xlabel() == "RTT (ms)"


# ----------------------------------------------------------------------------- runs compared


def summaries() -> List[dict]:
    return [
        {"name": "spline", "speed_Mbps": 202.4, "packet_loss_pct": 11.4, "retransmissions_pct": 12.6},
        {"name": "bbr", "speed_Mbps": 162.4, "packet_loss_pct": 11.9, "retransmissions_pct": None},
    ]


def test_compare_draws_speed_loss_and_retransmission_bars_per_run():
    fig = plot.plot_compare(summaries())
    assert [ax.get_title() for ax in fig.axes] == ["Speed (Mbit/s)", "Packet loss (%)", "Retransmissions (%)"]
    heights = [[patch.get_height() for patch in ax.patches] for ax in fig.axes]
    assert heights == [[202.4, 162.4], [11.4, 11.9], [12.6, 0.0]]
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["spline", "bbr"]
    labels = [t.get_text() for t in fig.axes[2].texts]
    assert "12.60" in labels and "n/a" in labels


# ----------------------------------------------------------------------------- testbed results


def results_frame() -> "pd.DataFrame":
    rows = []
    for cca, scale in (("cubic", 1.0), ("bbr", 1.5)):
        for loss in (0.0, 0.01, 0.03):
            run_id = f"{cca}-loss{loss}"
            for flow, share in ((0, 1.0), (1, 0.5)):
                rows.append(
                    {
                        "run_id": run_id,
                        "cca": cca,
                        "loss_probability": loss,
                        "flow": flow,
                        "throughput_bps": scale * share * 10e6 * (1 - 10 * loss),
                    }
                )
    rows.append({"run_id": "broken", "cca": "cubic", "loss_probability": 0.0, "flow": 0, "throughput_bps": None})
    return pd.DataFrame(rows)


def test_throughput_vs_loss_has_a_mean_line_per_cca_in_mbit_per_s_against_loss_percent():
    fig = plot.plot_throughput_vs_loss(results_frame())
    ax = fig.axes[0]
    means = {line.get_label(): line for line in ax.get_lines() if not line.get_label().startswith("_")}
    assert set(means) == {"bbr (mean)", "cubic (mean)"}
    np.testing.assert_allclose(means["cubic (mean)"].get_xdata(), [0, 1, 3])
    np.testing.assert_allclose(means["cubic (mean)"].get_ydata(), [7.5, 6.75, 5.25])
    assert "Mbit/s" in ax.get_ylabel() and "%" in ax.get_xlabel()


def test_fairness_bars_are_jains_index_per_run_and_match_the_testbed():
    from spline_analysis.testbed.results import jain_index as testbed_jain

    fig = plot.plot_fairness(results_frame())
    ax = fig.axes[0]
    assert len(ax.patches) == 6  # the single-flow "broken" run is skipped
    assert ax.patches[0].get_height() == pytest.approx(testbed_jain([10e6, 5e6]))
    assert plot.jain_index([4.0, 4.0, 4.0]) == pytest.approx(1.0)
    assert plot.jain_index([1.0, 0.0]) == pytest.approx(0.5)
    assert "Jain" in ax.get_ylabel()


# ----------------------------------------------------------------------------- intervals and PNGs


@pytest.mark.parametrize(
    "duration_s, expected", [(4.0, 0.02), (3.0, 0.02), (60.0, 0.5), (600.0, 5.0), (0.01, 0.001), (0.0, 1.0)]
)
def test_choose_interval_gives_a_round_interval_near_200_per_capture(duration_s, expected):
    assert plot.choose_interval_s(duration_s) == pytest.approx(expected)


def test_figures_save_as_non_empty_pngs(tmp_path):
    packets, flows, directions = one_direction(30, retransmitted=[5], sack={4: [(6000, 7000)]})
    figures = {
        "timeseries": plot.plot_timeseries(series_frame()),
        "sequence": plot.plot_sequence(packets, flows, directions),
        "rtt": plot.plot_rtt_cdf({"a": [1.0, 2.0]}),
        "compare": plot.plot_compare(summaries()),
        "loss": plot.plot_throughput_vs_loss(results_frame()),
        "fairness": plot.plot_fairness(results_frame()),
    }
    for name, fig in figures.items():
        path = tmp_path / f"{name}.png"
        fig.savefig(path, dpi=60)
        data = path.read_bytes()
        assert data.startswith(PNG_SIGNATURE) and len(data) > 5000, name


def crafted_capture():
    """A real pipeline run over a crafted transfer with one lost and retransmitted segment."""
    from tcpcraft import Conversation
    from spline_analysis._core.flows import assign_streams
    from spline_analysis._core.truth import analyze_directions

    conv = Conversation()
    # captured next to the server (the data sender): SYN/ACK leaves at once, the ACK takes an RTT
    conv.client(0, flags="S", at_ms=0.0, mss=1460, wscale=7, sack_permitted=True)
    conv.server(0, ack=1, flags="S", at_ms=0.05, mss=1460, wscale=7, sack_permitted=True)
    conv.client(1, ack=1, at_ms=10.05)
    t = 20.0
    for k in range(40):  # segment 7 is lost after the capture point
        conv.server(1 + 1000 * k, ack=1, length=1000, at_ms=t)
        t += 1.0
        acked = 1 + 1000 * (min(k, 6) + 1) if k >= 7 else 1 + 1000 * (k + 1)
        # SACK edges are raw sequence numbers (tcpcraft passes them through)
        sack = [(conv.server_isn + 1 + 8000, conv.server_isn + 1 + 1000 * (k + 1))] if k >= 8 else ()
        conv.client(1, ack=acked, at_ms=t + 0.2, sack=sack)
    conv.server(1 + 7000, ack=1, length=1000, at_ms=t + 5)  # the retransmission
    conv.client(1, ack=1 + 40_000, at_ms=t + 15)
    packets = conv.packets()
    flows = assign_streams(packets)
    return packets, flows, analyze_directions(packets, flows)


def test_save_report_plots_writes_the_three_pngs_of_a_capture(tmp_path):
    packets, flows, directions = crafted_capture()
    paths = plot.save_report_plots(
        {"packets": packets, "flows": flows, "directions": directions}, tmp_path / "out", "crafted"
    )
    assert [p.name for p in paths] == ["crafted.timeseries.png", "crafted.sequence.png", "crafted.rtt_cdf.png"]
    for path in paths:
        assert path.read_bytes().startswith(PNG_SIGNATURE) and path.stat().st_size > 5000


def test_every_report_figure_names_the_capture_warnings_in_its_title(tmp_path, monkeypatch):
    from matplotlib.figure import Figure

    packets, flows, directions = crafted_capture()
    titles = []
    original = Figure.savefig
    monkeypatch.setattr(
        Figure, "savefig", lambda fig, *a, **k: (titles.append(fig._suptitle.get_text()), original(fig, *a, **k))
    )
    warnings = [{"code": "super_segments", "message": "m"}, {"code": "capture_drops", "message": "m"}]
    parts = {"packets": packets, "flows": flows, "directions": directions, "warnings": lambda: warnings}
    assert len(plot.save_report_plots(parts, tmp_path, "crafted")) == 3
    assert len(titles) == 3
    assert all("capture warnings: capture_drops, super_segments" in t for t in titles), titles
    titles.clear()
    plot.save_report_plots({**parts, "warnings": []}, tmp_path, "clean")
    assert titles and not any("warnings" in t for t in titles)


def test_save_report_plots_without_data_writes_only_the_time_series(tmp_path):
    from tcpcraft import Conversation
    from spline_analysis._core.flows import assign_streams
    from spline_analysis._core.truth import analyze_directions

    conv = Conversation()
    conv.handshake()
    packets = conv.packets()
    flows = assign_streams(packets)
    parts = {"packets": packets, "flows": flows, "directions": analyze_directions(packets, flows)}
    paths = plot.save_report_plots(parts, tmp_path, "handshake-only")
    assert [p.name for p in paths] == ["handshake-only.timeseries.png"]
    with pytest.raises(ValueError, match="packets, flows and directions"):
        plot.save_report_plots({"packets": packets}, tmp_path, "x")


def test_sequence_of_a_crafted_loss_marks_the_retransmission():
    from spline_analysis._core.truth import RETRANSMISSION_KINDS, main_direction

    packets, flows, directions = crafted_capture()
    row = main_direction(directions)
    slot = directions.table["slot"][row]
    expected = int(np.isin(directions.segment_kind[directions.packet_slot == slot], RETRANSMISSION_KINDS).sum())
    assert expected == 1, "precondition: the truth stage sees the one retransmission"
    ax = plot.plot_sequence(packets, flows, directions).axes[0]
    kinds = {line.get_marker(): len(line.get_xdata()) for line in ax.get_lines()}
    assert kinds.get("x", 0) == 1


SAMPLES = sorted(REPO.glob("samples/*/trace.pcap"))


@pytest.mark.skipif(not SAMPLES, reason="no samples/*/trace.pcap in this checkout")
def test_sample_plots_match_the_directions_retransmission_count(tmp_path):
    import spline_analysis as sa
    from spline_analysis._core.flows import assign_streams
    from spline_analysis._core.truth import KIND_SPURIOUS as SPURIOUS, RETRANSMISSION_KINDS, analyze_directions
    from spline_analysis._core.truth import main_direction

    capture = sa.read(SAMPLES[0])
    flows = assign_streams(capture.packets)
    directions = analyze_directions(capture.packets, flows, capture_drops=capture.capture_drops)
    row = main_direction(directions)
    kinds = directions.segment_kind[directions.packet_slot == directions.table["slot"][row]]
    retrans = int((np.isin(kinds, RETRANSMISSION_KINDS) & (kinds != SPURIOUS)).sum())
    ax = plot.plot_sequence(capture.packets, flows, directions).axes[0]
    drawn = sum(len(line.get_xdata()) for line in ax.get_lines() if line.get_marker() == "x")
    assert drawn == retrans
    paths = plot.save_report_plots(
        {"packets": capture.packets, "flows": flows, "directions": directions}, tmp_path, "sample"
    )
    assert len(paths) == 3 and all(p.stat().st_size > 10_000 for p in paths)
