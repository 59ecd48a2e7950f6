"""Large classic pcap captures are filled by two threads (one per half); the result is the
same as one walk. pcapng keeps one walk: a Simple Packet Block takes its timestamp from the
records before it, which a walk starting in the middle would not know (found by the corpus
comparison below when the split was tried on pcapng).
"""

from pathlib import Path

import numpy as np
import pytest

import pcapbuild as pb
from spline_analysis._core import decode

SHARED = Path(__file__).resolve().parents[2] / "shared"
T0_NS = 1_700_000_000_123_456_789


def _read_both_ways(path, monkeypatch):
    monkeypatch.setattr(decode, "PARALLEL_FILL_MIN_ROWS", 10**12)
    one_walk = decode.read(path)
    monkeypatch.setattr(decode, "PARALLEL_FILL_MIN_ROWS", 1)
    two_halves = decode.read(path)
    return one_walk, two_halves


def _assert_same(a, b):
    assert set(a.packets) == set(b.packets)
    for name in a.packets:
        assert np.array_equal(a.packets[name], b.packets[name]), name
    assert a.capture_drops == b.capture_drops and a.warnings == b.warnings
    assert a.link_types == b.link_types


@pytest.mark.parametrize("nanosecond", [False, True])
@pytest.mark.parametrize("big_endian", [False, True])
@pytest.mark.parametrize("link", ["ethernet", "sll2", "raw"])
def test_two_halves_decode_pcap_like_one_walk(tmp_path, monkeypatch, nanosecond, big_endian, link):
    wrap = {"ethernet": pb.ethernet, "sll2": pb.sll2, "raw": lambda p: p}[link]
    link_type = {"ethernet": pb.LINKTYPE_ETHERNET, "sll2": 276, "raw": 101}[link]
    flow = pb.tcp_flow_frames(25, start_ns=T0_NS) + pb.tcp_flow_frames(
        8, sport=40001, ip_version=6, start_ns=T0_NS + 10**9
    )
    path = tmp_path / "x.pcap"
    path.write_bytes(
        pb.pcap_file([(t, wrap(p)) for t, p in flow], link_type=link_type, nanosecond=nanosecond, big_endian=big_endian)
    )
    _assert_same(*_read_both_ways(path, monkeypatch))


def test_pcapng_with_simple_packet_blocks_keeps_one_walk(tmp_path, monkeypatch):
    flow = pb.tcp_flow_frames(20, start_ns=T0_NS)
    section = pb.Section(
        [pb.Interface(pb.LINKTYPE_ETHERNET, tsresol=9)],
        [pb.Packet(0, t, pb.ethernet(p), block=("epb", "spb")[k % 2]) for k, (t, p) in enumerate(flow)],
    )
    path = tmp_path / "spb.pcapng"
    path.write_bytes(pb.pcapng_file([section]))
    _assert_same(*_read_both_ways(path, monkeypatch))


def test_two_halves_decode_a_cut_pcap_like_one_walk(tmp_path, monkeypatch):
    data = pb.pcap_file([(t, pb.ethernet(p)) for t, p in pb.tcp_flow_frames(30, start_ns=T0_NS)], nanosecond=True)
    path = tmp_path / "cut.pcap"
    path.write_bytes(data[:-7])
    one_walk, two_halves = _read_both_ways(path, monkeypatch)
    _assert_same(one_walk, two_halves)
    assert one_walk.truncated_at == two_halves.truncated_at is not None


def test_two_halves_decode_every_corpus_capture_like_one_walk(monkeypatch):
    pcaps = SHARED / "corpus" / "pcaps"
    if not pcaps.is_dir():
        pytest.skip("shared corpus not present")
    checked = 0
    for path in sorted(pcaps.iterdir()):
        try:
            one_walk, two_halves = _read_both_ways(path, monkeypatch)
        except decode.CaptureError:
            continue
        _assert_same(one_walk, two_halves)
        checked += 1
    assert checked >= 10
