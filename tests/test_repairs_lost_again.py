"""Below the sender, a repair lost and sent again leaves no hole of its own. Where the holes count
the loss (IPv6: no IP IDs), the repairs expected lost again, at the rate of the loss events
around each repair, less those the holes' signs already counted, are estimated into
`lost_inferred` and `lost_segments`; a burst dropped at a full queue is one loss event, and
adds next to nothing."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Set

import numpy as np
from tcpcraft import Conversation

from spline_analysis._core.pipeline import analyze
from spline_analysis._core.truth import repairs_lost_uncounted

SEGMENT_BYTES = 1000
REPAIR_AFTER_SEGMENTS = 3


def download(lost: Set[int], n_segments: int, sack: bool = True) -> Conversation:
    """A download captured at the client (the receiver), IPv6, TCP timestamps on a 1 ms clock:
    the server's segments arrive 1 ms apart and each is ACKed at once (with a SACK block while
    a hole is open); the segments in `lost` never arrive, and each run of them is repaired in
    order, a segment a millisecond, once `REPAIR_AFTER_SEGMENTS` more have arrived above it.
    `sack`: the handshake negotiates SACK (without it, no SACK blocks either)."""
    conv = Conversation(client_addr="fd00::1", server_addr="fd00::2")
    conv.client(0, flags="S", at_ms=0.0, mss=1012, wscale=7, sack_permitted=sack, timestamps=(1, 0))
    conv.server(0, ack=1, flags="S", at_ms=10.0, mss=1012, wscale=7, sack_permitted=sack, timestamps=(10, 1))
    conv.client(1, ack=1, at_ms=10.05, timestamps=(10, 10))
    # each lost segment is repaired after the arrival of the segment this far above its run's end
    trigger = {}
    for k in sorted(lost):
        end = k
        while end + 1 in lost:
            end += 1
        trigger[k] = end + REPAIR_AFTER_SEGMENTS
    held: Set[int] = set()
    t = 20.0

    def arrive(k: int) -> None:
        nonlocal t
        t += 1.0
        conv.server(1 + SEGMENT_BYTES * k, ack=1, length=SEGMENT_BYTES, at_ms=t, timestamps=(int(t), 10))
        held.add(k)
        received = 0
        while received in held:
            received += 1
        top = max(held) + 1
        blocks = [(conv.server_isn + 1 + SEGMENT_BYTES * (received + 1), conv.server_isn + 1 + SEGMENT_BYTES * top)]
        conv.client(
            1,
            ack=1 + SEGMENT_BYTES * received,
            at_ms=t + 0.05,
            sack=blocks if sack and received < top else [],
            timestamps=(int(t), int(t)),
        )

    for k in range(n_segments):
        if k not in lost:
            arrive(k)
        for repaired in sorted(m for m, at in trigger.items() if at == k):
            arrive(repaired)
    return conv


def receiver_direction(conv: Conversation, tmp_path: Path) -> tuple:
    capture = tmp_path / "download.pcap"
    capture.write_bytes(conv.pcap())
    document = analyze(capture).to_json()
    direction = max(document["directions"], key=lambda d: d["data_segments"])
    assert direction["vantage"] == "receiver" and direction["loss_method"] == "holes"
    return document, direction


def test_random_loss_adds_the_repairs_expected_lost_again_at_the_loss_event_rate(tmp_path):
    n_segments, lost = 2000, {k for k in range(2000) if k % 20 == 10}
    document, direction = receiver_direction(download(lost, n_segments), tmp_path)

    # every repair sees the other 99 loss events among the other 1,999 segments of the flow
    rate = (len(lost) - 1) / (n_segments - 1)
    expected = len(lost) * rate / (1 - rate)  # 5.2: a geometric series per hole
    assert direction["hole_lost_segments"] == len(lost) and direction["lost_repairs"] == 0
    assert direction["lost_inferred"] == round(expected) == 5
    assert direction["lost_segments"] == len(lost) + 5
    assert math.isclose(direction["lost_inferred_sd"], math.sqrt(expected), rel_tol=1e-3)
    by_code = {w["code"]: w for w in document["warnings"]}
    assert sorted(by_code) == ["loss_estimated", "loss_floor"], document["warnings"]
    assert "of which +5 estimated" in by_code["loss_estimated"]["message"]
    assert "repairs lost and sent again" in by_code["loss_estimated"]["message"]


def test_a_burst_dropped_at_once_is_one_loss_event_and_adds_nothing(tmp_path):
    n_segments, lost = 2000, set(range(1000, 1100))
    document, direction = receiver_direction(download(lost, n_segments), tmp_path)

    assert direction["hole_lost_segments"] == len(lost)
    assert direction["lost_inferred"] == 0 and direction["lost_segments"] == len(lost)
    assert [w["code"] for w in document["warnings"]] == ["loss_floor"], document["warnings"]


def test_without_sack_the_holes_age_counts_the_lost_repairs_and_nothing_is_added(tmp_path):
    n_segments, lost = 2000, {k for k in range(2000) if k % 20 == 10}
    document, direction = receiver_direction(download(lost, n_segments, sack=False), tmp_path)

    assert direction["lost_inferred"] == 0 and direction["lost_segments"] == len(lost)
    assert [w["code"] for w in document["warnings"]] == ["loss_floor"], document["warnings"]


def test_a_single_hole_in_a_flow_adds_nothing(tmp_path):
    document, direction = receiver_direction(download({500}, 2000), tmp_path)

    assert direction["lost_inferred"] == 0 and direction["lost_segments"] == 1


def test_lost_repairs_already_counted_are_not_added_twice_and_never_below_zero():
    expected = np.array([5.2, 5.2, 0.4, 3.0])
    counted = np.array([0, 4, 2, 7])

    assert repairs_lost_uncounted(expected, counted).tolist() == [5, 1, 0, 0]
