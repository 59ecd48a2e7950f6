"""The bundled samples' lost segments against their routers' drops (samples/*/truth.json).

Tolerance: 3% of the drops or 2 segments, the larger (the project's loss tolerance), plus
three standard deviations of the part the analysis infers at a sender (lost_inferred_sd):
on a path that reorders, a first copy that a repair overtook and the receiver discarded
leaves no trace in the ACKs, so it counts by its probability of loss. The jitter samples
read 231, 39 and 492 lost segments for 18, 11 and 91 drops before the sender's scoreboard.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from spline_analysis._core.pipeline import analyze

SAMPLES = sorted(
    p.parent
    for p in (Path(__file__).resolve().parents[1] / "samples").glob("*/truth.json")
    if (p.parent / "trace.pcap").exists()
)


@pytest.mark.skipif(not SAMPLES, reason="no samples/*/truth.json with a trace.pcap in this checkout")
@pytest.mark.parametrize("sample", SAMPLES, ids=lambda p: p.name)
def test_sample_lost_segments_match_the_router_drops(sample: Path):
    truth = json.loads((sample / "truth.json").read_text())
    drops = truth["router_random_drops"] + truth.get("router_queue_drops", 0)
    document = analyze(sample / "trace.pcap").to_json()
    main = max(document["directions"], key=lambda d: d["payload_bytes"])
    tolerance = max(0.03 * drops, 2) + 3 * main["lost_inferred_sd"]
    assert abs(main["lost_segments"] - drops) <= tolerance, (main["lost_segments"], drops, tolerance)
