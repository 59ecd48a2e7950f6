"""Summary statistics of RTT samples (milliseconds)."""

from __future__ import annotations

from typing import Dict, Optional

import numpy as np


def rtt_stats(samples_ms: np.ndarray) -> Optional[Dict[str, float]]:
    """min / median / p95 / max and jitter (mean absolute difference of
    consecutive samples, in arrival order) of RTT samples in ms; None if empty."""
    samples = np.asarray(samples_ms, dtype=np.float64)
    samples = samples[~np.isnan(samples)]
    if len(samples) == 0:
        return None
    jitter = float(np.mean(np.abs(np.diff(samples)))) if len(samples) > 1 else 0.0
    median, p95 = np.percentile(samples, [50, 95])  # one partition for both quantiles
    return {
        "min": float(samples.min()),
        "median": float(median),
        "p95": float(p95),
        "max": float(samples.max()),
        "jitter": jitter,
        "samples": int(len(samples)),
    }
