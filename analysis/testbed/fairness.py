"""Jain's fairness index, the one definition: the testbed's results, the plots and
bench/vm_suite.py (which runs on the system's python3 without the package's dependencies, and
loads this file by its path) all use it. Standard library only, no package imports."""

from __future__ import annotations

from typing import Optional, Sequence


def jain_index(throughputs_bps: Sequence[Optional[float]]) -> Optional[float]:
    """Jain's fairness index (sum x)^2 / (n sum x^2): 1 = equal shares, 1/n = one flow takes all.
    None when a throughput is unknown (None), there is none, or all are zero."""
    values = [float(x) for x in throughputs_bps if x is not None]
    if not values or len(values) != len(throughputs_bps):
        return None
    square_sum = sum(x * x for x in values)
    if square_sum == 0:
        return None
    return sum(values) ** 2 / (len(values) * square_sum)
