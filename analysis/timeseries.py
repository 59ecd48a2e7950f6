"""Per-interval time series of each data direction (vectorised with bincount)."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Mapping, Union

import numpy as np

from .truth import (KIND_NONE, KIND_ORIGINAL, KIND_REORDERED, KIND_SPURIOUS,
                    RETRANSMISSION_KINDS, Directions)

_INTERVAL = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*(ns|us|ms|s|min)?\s*$")
_UNIT_S = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0, "min": 60.0, None: 1.0}

SERIES_COLUMNS = ("time_s", "stream", "direction", "throughput_bps", "goodput_bps",
                  "retransmissions", "lost_segments", "rtt_ms", "bytes_in_flight")


def parse_interval(text: Union[str, float, int]) -> float:
    """'100ms', '1s', '0.5' (seconds), '250us' -> seconds (> 0)."""
    if isinstance(text, (int, float)):
        seconds = float(text)
    else:
        match = _INTERVAL.match(str(text))
        if not match:
            raise ValueError(f"not an interval: {text!r} (examples: 100ms, 1s, 0.5)")
        seconds = float(match.group(1)) * _UNIT_S[match.group(2)]
    if not seconds > 0:
        raise ValueError(f"interval must be positive: {text!r}")
    return seconds


def series(packets: Mapping[str, np.ndarray], flows: Any, directions: Directions,
           interval_s: float):
    """One row per interval per data direction, time measured from the
    capture's first packet. Lost segments per interval: retransmissions that
    were needed (sender vantage) or holes filled by retransmission (downstream)."""
    import pandas as pd
    ts = np.asarray(packets["ts_ns"], dtype=np.int64)
    if len(ts) == 0 or len(directions) == 0:
        return pd.DataFrame({name: [] for name in SERIES_COLUMNS})
    interval_ns = interval_s * 1e9
    start_ns = ts.min()
    bin_of = ((ts - start_ns) // interval_ns).astype(np.int64)
    n_bins = int(bin_of.max()) + 1
    rows = len(directions)
    row = np.where(directions.packet_slot >= 0,
                   directions.row_of_slot[np.maximum(directions.packet_slot, 0)], -1)
    kind = directions.segment_kind
    payload = np.asarray(packets["tcp_payload_len"], dtype=np.int64)
    data = (row >= 0) & (kind != KIND_NONE)
    cell = row * n_bins + bin_of
    size = rows * n_bins

    payload_per = np.bincount(cell[data], weights=payload[data], minlength=size)
    fresh = data & np.isin(kind, (KIND_ORIGINAL, KIND_REORDERED))
    # unique bytes: originals and late originals (hole fills that were retransmissions
    # also add new bytes downstream; count them when they filled a hole)
    unique_per = np.bincount(cell[fresh], weights=payload[fresh], minlength=size)
    retrans = data & np.isin(kind, RETRANSMISSION_KINDS)
    retrans_per = np.bincount(cell[retrans], minlength=size)
    needed = retrans & (kind != KIND_SPURIOUS)
    lost_per = np.bincount(cell[needed], minlength=size)
    downstream = np.array([v != "sender" for v in directions.table["vantage"]], dtype=bool)
    unique_per = unique_per + np.where(np.repeat(downstream, n_bins),
                                       np.bincount(cell[needed], weights=payload[needed],
                                                   minlength=size), 0)

    # RTT: median per cell of the samples that belong to each direction
    rtt_row = np.where(directions.rtt_slot >= 0,
                       directions.row_of_slot[np.maximum(directions.rtt_slot, 0)], -1)
    has_rtt = rtt_row >= 0
    rtt_median = np.full(size, np.nan)
    if has_rtt.any():
        rtt_cell = rtt_row[has_rtt] * n_bins + bin_of[has_rtt]
        values = directions.rtt_sample_us[has_rtt] / 1000.0
        order = np.lexsort((values, rtt_cell))
        sorted_cell, sorted_values = rtt_cell[order], values[order]
        cells, first, counts = np.unique(sorted_cell, return_index=True, return_counts=True)
        lower = sorted_values[first + (counts - 1) // 2]
        upper = sorted_values[first + counts // 2]
        rtt_median[cells] = (lower + upper) / 2.0

    flight_max = np.full(size, -1.0)
    has_flight = (directions.bytes_in_flight >= 0) & (row >= 0)
    if has_flight.any():
        np.maximum.at(flight_max, cell[has_flight], directions.bytes_in_flight[has_flight])
    sender_rows = np.array([v == "sender" for v in directions.table["vantage"]], dtype=bool)
    flight_max[~np.repeat(sender_rows, n_bins)] = -1.0

    # keep, per direction, the bins from its first to its last data packet
    row_ids = np.repeat(np.arange(rows), n_bins)
    bin_ids = np.tile(np.arange(n_bins), rows)
    first_bin = ((directions.table["first_data_ts_ns"] - start_ns) // interval_ns).astype(np.int64)
    last_bin = ((directions.table["last_data_ts_ns"] - start_ns) // interval_ns).astype(np.int64)
    keep = (bin_ids >= first_bin[row_ids]) & (bin_ids <= last_bin[row_ids])

    frame = pd.DataFrame({
        "time_s": bin_ids * interval_s,
        "stream": directions.table["stream"][row_ids],
        "direction": directions.table["direction"][row_ids],
        "throughput_bps": payload_per * 8 / interval_s,
        "goodput_bps": unique_per * 8 / interval_s,
        "retransmissions": retrans_per.astype(np.int64),
        "lost_segments": lost_per.astype(np.int64),
        "rtt_ms": rtt_median,
        "bytes_in_flight": np.where(flight_max >= 0, flight_max, np.nan),
    })
    return frame[keep].reset_index(drop=True)


def write_csv(frame, path: Union[str, Path]) -> None:
    """Write a series DataFrame as CSV (empty cells where a value is unknown)."""
    frame.to_csv(path, index=False, float_format="%.6g")
