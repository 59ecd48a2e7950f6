"""Byte ranges [start, end) as int64 arrays: their union, and what lies inside it."""

from __future__ import annotations

from typing import Tuple

import numpy as np

Ranges = Tuple[np.ndarray, np.ndarray]  # starts, ends: sorted and disjoint where a union


def merged(starts: np.ndarray, ends: np.ndarray) -> Ranges:
    """The union of ranges [starts, ends) (any order) as sorted, disjoint ranges."""
    if len(starts) == 0:
        return starts, ends
    order = np.argsort(starts, kind="stable")
    s, e = starts[order], ends[order]
    reach = np.maximum.accumulate(e)
    new = np.ones(len(s), dtype=bool)
    new[1:] = s[1:] > reach[:-1]
    group_starts = np.flatnonzero(new)
    return s[group_starts], np.maximum.reduceat(e, group_starts)


def points_covered(points: np.ndarray, union: Ranges) -> np.ndarray:
    """Whether each point lies inside one range of `union` (sorted, disjoint)."""
    union_starts, union_ends = union
    where = np.searchsorted(union_starts, points, side="right") - 1
    return (where >= 0) & (points < union_ends[np.maximum(where, 0)])


def covered(starts: np.ndarray, ends: np.ndarray, union: Ranges) -> np.ndarray:
    """Whether each non-empty [start, end) lies inside one range of `union` (sorted, disjoint)."""
    union_starts, union_ends = union
    where = np.searchsorted(union_starts, starts, side="right") - 1
    inside = where >= 0
    inside[inside] = ends[inside] <= union_ends[where[inside]]
    return inside
