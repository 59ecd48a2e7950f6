"""Per-interval time series and interval parsing."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from spline_analysis._core import timeseries  # noqa: E402
from test_truth_crafted import analyze, row_of, sender_side_transfer  # noqa: E402


def test_time_series_adds_up_to_the_direction_totals():
    f = sender_side_transfer(segments=200, lose=(20, 150))
    packets, flows, d = analyze(f)
    frame = timeseries.series(packets, flows, d, timeseries.parse_interval("5ms"))
    mine = frame[(frame.stream == 0) & (frame.direction == 1)]
    r = row_of(d, 0, 1)
    assert mine.retransmissions.sum() == r["retransmissions"] == 2
    assert mine.needed_retransmissions.sum() == 2
    assert abs(mine.throughput_bps.sum() * 0.005 / 8 - r["payload_bytes"]) < 1
    assert mine.rtt_ms.notna().any()


@pytest.mark.parametrize("text,seconds", [("100ms", 0.1), ("1s", 1.0), ("0.5", 0.5), ("250us", 0.00025), (2, 2.0)])
def test_interval_text_parses_to_seconds(text, seconds):
    assert timeseries.parse_interval(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "fast", "-1s", "0"])
def test_bad_interval_is_rejected(text):
    with pytest.raises(ValueError):
        timeseries.parse_interval(text)
