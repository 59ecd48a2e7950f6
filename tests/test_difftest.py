"""Differential testing against tshark 4.0 (fuzz/difftest.py): every difference the generator
ever found, shrunk to a minimal conversation, stays fixed; and a short seeded run finds none.

Regression cases live in tests/difftest_cases/*.json: the conversation (fuzz/tcpgen.py's data)
and tshark's per-frame answer, so they run without tshark. With tshark installed, its answer is
checked to be still the stored one, and the smoke run compares a few hundred fresh
conversations frame by frame.
"""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "fuzz"))
import difftest  # noqa: E402
import tcpgen  # noqa: E402
import tsharkdiff  # noqa: E402

CASES = sorted((REPO / "tests" / "difftest_cases").glob("*.json"))
SMOKE_SEED = 20261123
SMOKE_CONVERSATIONS = 300


def load_case(path: Path):
    doc = json.loads(path.read_text())
    conv = tcpgen.Conversation.from_json(doc["conversation"])
    expected = {k: np.asarray(v, dtype=np.int64) for k, v in doc["tshark"].items()}
    return doc, conv, expected


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_shrunk_difference_now_agrees_with_tsharks_stored_answer(tmp_path, path):
    doc, conv, expected = load_case(path)
    capture = tmp_path / "case.pcap"
    capture.write_bytes(tcpgen.pcap_bytes([conv]))
    assert tsharkdiff.differences(tsharkdiff.our_table(capture), expected) == [], doc["origin"]


@pytest.mark.skipif(tsharkdiff.TSHARK is None, reason="tshark not installed")
@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_stored_answer_is_what_tshark_says(tmp_path, path):
    _, conv, expected = load_case(path)
    capture = tmp_path / "case.pcap"
    capture.write_bytes(tcpgen.pcap_bytes([conv]))
    assert tsharkdiff.differences(tsharkdiff.tshark_table(capture), expected) == []


def test_conversations_are_reproducible_from_seed_and_index():
    a, b = tcpgen.generate(5, 17), tcpgen.generate(5, 17)
    assert a.to_json() == b.to_json()
    assert tcpgen.pcap_bytes([a]) == tcpgen.pcap_bytes([b])
    assert tcpgen.generate(5, 18).to_json() != a.to_json()
    assert tcpgen.Conversation.from_json(json.loads(json.dumps(a.to_json()))).to_json() == a.to_json()


def test_generator_draws_every_carriage_and_the_rare_events():
    convs = [tcpgen.generate(SMOKE_SEED, i) for i in range(SMOKE_CONVERSATIONS)]
    assert {c.link for c in convs} == set(tcpgen.LINK_TYPES)
    assert {c.encapsulation for c in convs if c.link == "ethernet"} == set(tcpgen.ETHERNET_ENCAPSULATIONS)
    segs = [s for c in convs for s in c.segments]
    assert any(s.mptcp for s in segs) and any(s.unknown_option for s in segs)
    assert any(s.sack for s in segs) and any(s.window == 0 for s in segs)
    assert any("R" in s.flags for s in segs) and any("F" in s.flags for s in segs)
    assert any(c.snaplen for c in convs) and any(c.ipv6_extensions for c in convs)
    assert any(c.client_isn > 0xFFFF0000 for c in convs)  # sequence wrap


def test_differences_name_the_frame_and_field():
    base = {name: np.zeros(3, dtype=np.int64) for name in tsharkdiff.FIELDS}
    other = {k: v.copy() for k, v in base.items()}
    other["duplicate_ack"][2] = 1
    other["ack_rtt_ns"][0] = 5
    assert tsharkdiff.differences(base, other) == [(0, "ack_rtt_ns", 0, 5), (2, "duplicate_ack", 0, 1)]
    short = {k: v[:2] for k, v in base.items()}
    assert tsharkdiff.differences(short, base) == [(-1, "frames", 2, 3)]


@pytest.mark.skipif(tsharkdiff.TSHARK is None, reason="tshark not installed")
def test_smoke_run_of_seeded_conversations_has_no_difference_from_tshark(tmp_path):
    out = io.StringIO()
    status = difftest.run(SMOKE_SEED, SMOKE_CONVERSATIONS, SMOKE_CONVERSATIONS, tmp_path, None, False, out=out)
    assert status == 0, out.getvalue()
    assert f"conversations tried: {SMOKE_CONVERSATIONS}" in out.getvalue()
