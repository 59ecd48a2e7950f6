"""The Spline report's run summary (read from the main direction's record) and the side-by-side table."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from spline_analysis._core.render import format_side_by_side  # noqa: E402
from spline_analysis.report import summary_of  # noqa: E402
from test_truth_crafted import MSS, analyze, sender_side_transfer  # noqa: E402


def run_summary(directions, name="", capture_drops=None, total_packets=0):
    return summary_of(directions.to_records(), name=name, capture_drops=capture_drops, total_packets=total_packets)


def test_summary_reports_main_direction_loss_and_retransmissions():
    _, _, d = analyze(sender_side_transfer(segments=100, lose=(10, 20, 30)))
    s = run_summary(d, name="run")
    assert s["vantage"] == "sender"
    assert s["lost_segments"] == 3 and s["retransmissions"] == 3
    assert abs(s["packet_loss_pct"] - 3.0) < 1e-9
    # speed is the direction's goodput, over its delivery span: here that runs to the last ACK's
    # data (its ACK came 1 ms late), past the last data sent, where time_s (the duration) ends
    (main,) = [r for r in d.to_records() if r["vantage"] == "sender"]
    delivery_s = main["delivery_end_s"] - main["delivery_start_s"]
    assert abs(s["speed_Mbps"] * 1e6 / 8 * delivery_s - 100 * MSS) < 1
    assert s["time_s"] == main["duration_s"]
    assert abs(s["speed_MBps"] - s["speed_Mbps"] / 8) < 1e-12


def test_unknown_kernel_drops_stay_unknown_never_zero():
    _, _, d = analyze(sender_side_transfer(segments=10))
    assert run_summary(d, capture_drops={"kernel": None, "interface": None, "source": "none"})["kernel_drops"] is None
    known = run_summary(d, capture_drops={"kernel": 5, "interface": None, "source": "meta.json"}, total_packets=95)
    assert known["kernel_drops"] == 5 and abs(known["kernel_drops_pct"] - 5.0) < 1e-9


def test_side_by_side_table_has_one_column_per_run():
    _, _, lossy = analyze(sender_side_transfer(segments=50, lose=(5,)))
    _, _, clean = analyze(sender_side_transfer(segments=50))
    text = format_side_by_side([run_summary(lossy, name="a.pcap"), run_summary(clean, name="b.pcap")])
    lines = text.splitlines()
    assert "a.pcap" in lines[0] and "b.pcap" in lines[0]
    loss_line = next(line for line in lines if line.startswith("Packet loss"))
    assert "(1)" in loss_line and "(0)" in loss_line
    assert next(line for line in lines if line.startswith("Kernel drops")).count("unknown") == 2
