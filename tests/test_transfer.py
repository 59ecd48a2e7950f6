"""A transfer of several flows measured as a whole: its goodput is the flows' bytes over the
time any of them was delivering, not their goodputs added (transfer.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from spline_analysis._core.render import summary_block  # noqa: E402
from spline_analysis._core.transfer import transfer_goodput, union_seconds  # noqa: E402
from spline_analysis.report import summary_of  # noqa: E402
from test_truth_crafted import analyze, sender_side_transfer  # noqa: E402


def test_union_counts_overlapping_time_once_and_disjoint_spans_each():
    assert union_seconds([(0.0, 4.0), (1.0, 3.0), (2.0, 5.0)]) == pytest.approx(5.0)
    assert union_seconds([(0.0, 1.0), (3.0, 4.5)]) == pytest.approx(2.5)
    assert union_seconds([(2.0, 2.0)]) == 0.0 and union_seconds([]) == 0.0


def record(sport: int, delivered_bytes: int, start_s: float, end_s: float, src: str = "10.0.0.1", **extra) -> dict:
    return {
        "src": src,
        "dst": extra.pop("dst", "10.0.0.2"),
        "sport": sport,
        "dport": 5201,
        "vantage": "receiver",
        "payload_bytes": delivered_bytes,
        "delivered_bytes": delivered_bytes,
        "delivery_start_s": start_s,
        "delivery_end_s": end_s,
        "goodput_bps": 8.0 * delivered_bytes / (end_s - start_s),
        "duration_s": end_s - start_s,
        "lost_segments": extra.pop("lost", 0),
        "retransmissions": extra.pop("retransmissions", 0),
        "loss_rate": 0.0,
        "data_segments": 1,
        "rtt_ms": {},
    }


def test_summary_measures_a_multi_flow_transfer_as_a_whole_without_its_control_connection():
    """iperf3 -P 2: one stream 0.5-10.5 s, one whose first flight was lost starting at 1.5 s;
    iperf3's control connection, the same hosts and port, delivers 900 bytes over 0-11 s; the
    server's reply flow goes the other way. The transfer is the two streams over 10 s."""
    records = [
        record(41001, 10_000_000, 0.5, 10.5, lost=10, retransmissions=12),
        record(41002, 8_000_000, 1.5, 10.4, lost=5, retransmissions=6),
        record(38590, 900, 0.0, 11.0),
        record(5201, 400, 0.1, 11.0, src="10.0.0.2", dst="10.0.0.1"),
    ]
    summary = summary_of(records, name="p2", capture_drops=None, total_packets=0)
    transfer = summary["transfer"]
    assert (transfer["src"], transfer["dst"], transfer["flows"]) == ("10.0.0.1", "10.0.0.2", 2)
    assert transfer["time_s"] == pytest.approx(10.0)
    assert transfer["goodput_bps"] == pytest.approx(18_000_000 * 8 / 10.0)
    assert (transfer["lost_segments"], transfer["retransmissions"]) == (15, 18)
    added = records[0]["goodput_bps"] + records[1]["goodput_bps"]
    assert added > 1.03 * transfer["goodput_bps"], "the flows' rates added count the late stream's lost second"
    text = summary_block(summary)
    assert "All flows" in text and "2 flows 10.0.0.1 -> 10.0.0.2" in text and "14.40 Mbit/s" in text


def test_a_single_flow_transfer_is_that_flow_and_the_text_says_nothing_more():
    _, _, d = analyze(sender_side_transfer(segments=100, lose=(10,)))
    summary = summary_of(d.to_records(), name="one", capture_drops=None, total_packets=0)
    transfer = summary["transfer"]
    assert transfer["flows"] == 1 and transfer["goodput_bps"] == pytest.approx(summary["speed_Mbps"] * 1e6)
    assert "All flows" not in summary_block(summary)


def test_transfer_without_a_span_has_no_goodput():
    flows = [{"delivered_bytes": 100, "delivery_start_s": None, "delivery_end_s": None, "lost_segments": 0}]
    flows[0]["retransmissions"] = 0
    assert transfer_goodput(flows)["goodput_bps"] is None
