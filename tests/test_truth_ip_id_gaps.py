"""The IP-ID gap count gives the same answer by bitmap (dense IDs) and by sorting (sparse IDs)."""

import numpy as np
import pytest

from spline_analysis._core import truth


def _random_case(rng, sparse: bool):
    n = int(rng.integers(1, 3000))
    n_slots = int(rng.integers(1, 8))
    slot = rng.integers(-1, n_slots, n).astype(np.int32)
    base = rng.integers(0, 1 << 20, n_slots)
    id64 = np.where(rng.random(n) < 0.1, -1, base[np.maximum(slot, 0)] + rng.integers(0, n * 2, n))
    if sparse:
        id64 = np.where(rng.random(n) < 0.05, id64 + (1 << 30), id64)
    wanted = np.unique(rng.integers(0, n_slots, n_slots))
    id_count = np.where(rng.random(n) < 0.2, rng.integers(2, 6, n), 1)  # some super-segments
    return id64, id_count, slot, wanted, n_slots


@pytest.mark.parametrize("sparse", [False, True])
def test_ip_id_gap_count_is_the_same_by_bitmap_and_by_sorting(sparse, monkeypatch):
    rng = np.random.default_rng(11 if sparse else 7)
    for _ in range(100):
        case = _random_case(rng, sparse)
        by_default = truth._ip_id_gaps(*case)
        monkeypatch.setattr(truth, "ID_BITMAP_MAX_FACTOR", -(10**9))
        monkeypatch.setattr(truth, "ID_BITMAP_MIN_BITS", -(10**12))
        by_sorting = truth._ip_id_gaps(*case)
        monkeypatch.undo()
        assert np.array_equal(by_default, by_sorting)


def test_ip_id_gaps_count_missing_ids_once_and_ignore_duplicates():
    slot = np.array([0, 0, 0, 0, 0, 1, 1], dtype=np.int32)
    id64 = np.array([10, 11, 11, 14, 15, 500, 502])  # slot 0 misses 12, 13; slot 1 misses 501
    gaps = truth._ip_id_gaps(id64, np.ones(len(id64), np.int64), slot, np.array([0, 1]), 2)
    assert gaps.tolist() == [2, 1]


def test_ip_id_gaps_count_each_segment_of_a_super_segment_as_seen():
    """GRO coalesces k segments into one frame carrying the first of k consecutive IDs."""
    slot = np.zeros(4, dtype=np.int32)
    id64 = np.array([10, 13, 15, 20])
    id_count = np.array([3, 1, 4, 1])  # 10-12, 13, 15-18, 20: missing 14 and 19
    gaps = truth._ip_id_gaps(id64, id_count, slot, np.array([0]), 1)
    assert gaps.tolist() == [2]
