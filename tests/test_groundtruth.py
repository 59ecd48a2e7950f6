"""Truth-seeking numbers against real transfers with known drops.

Every NAME.truth.json in the shared ground-truth directory is checked, so
held-out transfers dropped in there are checked the same way. Tolerances are
those of docs/metrics.md section 3.

One comparison needs care: iperf3 reads `sender_retransmits` (TCP_INFO
total_retrans) when its test timer ends, while the sender keeps recovering
for a few more milliseconds before the connection closes. The capture's own
count is therefore compared over the same window: retransmissions that left
before first data + iperf3's sender seconds. Lost segments and throughput
use the whole capture.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import spline_analysis as sa
from spline_analysis._core import truth

SHARED = Path(__file__).resolve().parents[2] / "shared"
GROUNDTRUTH = SHARED / "corpus" / "groundtruth"
TRUTH_FILES = sorted(GROUNDTRUTH.glob("*.truth.json")) if GROUNDTRUTH.is_dir() else []


def streams_of(packets):
    """flows.assign_streams when present, else a 5-tuple grouping (enough for
    captures without port reuse)."""
    try:
        from spline_analysis._core.flows import assign_streams

        return assign_streams(packets)
    except ImportError:
        pass
    is_tcp = packets["ip_proto"] == 6
    a = np.concatenate([packets["src_addr"], packets["sport"].astype(np.uint32).view(np.uint8).reshape(-1, 4)], axis=1)
    b = np.concatenate([packets["dst_addr"], packets["dport"].astype(np.uint32).view(np.uint8).reshape(-1, 4)], axis=1)
    swap = np.array([bytes(x) > bytes(y) for x, y in zip(a, b)], dtype=bool)
    lo = np.where(swap[:, None], b, a)
    hi = np.where(swap[:, None], a, b)
    key = np.ascontiguousarray(np.concatenate([lo, hi], axis=1)).view(np.dtype((np.void, 40))).ravel()
    _, first_index, inverse = np.unique(key, return_index=True, return_inverse=True)
    order = np.argsort(first_index)
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    stream = np.where(is_tcp, rank[inverse.ravel()], -1).astype(np.int32)
    first_swap = swap[first_index[inverse.ravel()]]
    direction = (swap != first_swap).astype(np.uint8)
    return SimpleNamespace(stream=stream, direction=direction, count=int(stream.max()) + 1)


def data_direction(path: Path):
    capture = sa.read(path)
    flows = streams_of(capture.packets)
    directions = truth.analyze_directions(capture.packets, flows)
    row = truth.main_direction(directions)
    assert row is not None
    return capture, directions, row


def within(measured: float, expected: float, fraction: float) -> bool:
    return abs(measured - expected) <= fraction * expected


def sender_seconds(name: str) -> float:
    iperf = json.loads((GROUNDTRUTH / f"{name}.iperf3.json").read_text())
    return float(iperf["end"]["sum_sent"]["seconds"])


@pytest.fixture(scope="module", params=TRUTH_FILES, ids=lambda p: p.name.replace(".truth.json", ""))
def transfer(request):
    truth_path: Path = request.param
    name = truth_path.name[: -len(".truth.json")]
    return name, json.loads(truth_path.read_text())


@pytest.mark.skipif(not GROUNDTRUTH.is_dir(), reason="no ../shared/corpus/groundtruth beside the clone")
def test_groundtruth_corpus_holds_transfers_with_both_captures_and_iperf3():
    """Every check below is parametrized over the corpus: an empty or incomplete corpus would
    let them all pass by running none."""
    assert TRUTH_FILES, f"no *.truth.json in {GROUNDTRUTH}"
    for truth_path in TRUTH_FILES:
        name = truth_path.name[: -len(".truth.json")]
        for part in ("snd.pcap", "rcv.pcap", "iperf3.json"):
            assert (GROUNDTRUTH / f"{name}.{part}").is_file(), f"{name}: {name}.{part} missing"


def test_sender_capture_counts_the_senders_retransmissions_and_the_routers_drops(transfer):
    name, facts = transfer
    capture, directions, row = data_direction(GROUNDTRUTH / f"{name}.snd.pcap")
    t = directions.table
    assert t["vantage"][row] == "sender"
    # retransmissions over iperf3's own window (see module docstring)
    kinds = directions.segment_kind
    in_row = directions.packet_slot == t["slot"][row]
    is_retrans = np.isin(kinds, truth.RETRANSMISSION_KINDS) & in_row
    ts = capture.packets["ts_ns"]
    test_end_ns = t["first_data_ts_ns"][row] + int(sender_seconds(name) * 1e9)
    retrans_in_test = int(np.count_nonzero(is_retrans & (ts <= test_end_ns)))
    assert within(retrans_in_test, facts["sender_retransmits"], 0.01), (retrans_in_test, facts["sender_retransmits"])
    assert within(t["lost_segments"][row], facts["data_direction_drops"], 0.02), (
        int(t["lost_segments"][row]),
        facts["data_direction_drops"],
    )
    assert within(t["goodput_bps"][row], facts["receiver_bps"], 0.02)


def test_receiver_capture_counts_the_routers_drops_and_receiver_throughput(transfer):
    name, facts = transfer
    _, directions, row = data_direction(GROUNDTRUTH / f"{name}.rcv.pcap")
    t = directions.table
    assert t["vantage"][row] == "receiver"
    assert within(t["lost_segments"][row], facts["data_direction_drops"], 0.03), (
        int(t["lost_segments"][row]),
        facts["data_direction_drops"],
    )
    assert within(t["throughput_bps"][row], facts["receiver_bps"], 0.02)
    assert within(t["goodput_bps"][row], facts["receiver_bps"], 0.02)


def test_both_vantage_points_agree_on_the_transfer(transfer):
    name, _ = transfer
    _, snd, snd_row = data_direction(GROUNDTRUTH / f"{name}.snd.pcap")
    _, rcv, rcv_row = data_direction(GROUNDTRUTH / f"{name}.rcv.pcap")
    assert snd.table["unique_bytes"][snd_row] == rcv.table["unique_bytes"][rcv_row]
    # what the receiver saw retransmitted was a subset of what the sender sent
    assert rcv.table["retransmissions"][rcv_row] <= snd.table["retransmissions"][snd_row]
    assert snd.rtt_ms[snd_row] is not None and rcv.rtt_ms[rcv_row] is not None
