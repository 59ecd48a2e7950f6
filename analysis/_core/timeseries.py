"""Per-interval time series of each data direction (vectorised with bincount)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Mapping, Union

import numpy as np

from .truth import KIND_NONE, KIND_ORIGINAL, KIND_REORDERED, KIND_SPURIOUS, RETRANSMISSION_KINDS, Directions

_INTERVAL = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*(ns|us|ms|s|min)?\s*$")
_UNIT_S = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0, "min": 60.0, None: 1.0}

SERIES_COLUMNS = (
    "time_s",
    "stream",
    "direction",
    "throughput_bps",
    "goodput_bps",
    "retransmissions",
    "needed_retransmissions",
    "rtt_ms",
    "bytes_in_flight",
)


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


# Intervals are listed one by one (empty ones as zero rows) while directions x intervals stays
# under this many cells per captured packet (or MIN_DENSE_CELLS); beyond it (a few packets
# spread over a day at 1 ms) only intervals holding packets are listed, each idle run as one
# zero row where it starts, so memory follows the packets, not the time span.
DENSE_CELLS_PER_PACKET = 8
MIN_DENSE_CELLS = 1_000_000


def series(packets: Mapping[str, np.ndarray], flows: Any, directions: Directions, interval_s: float):
    """One row per interval per data direction, from its first to its last data packet,
    time measured from the capture's first packet (idle runs of a sparse capture: one zero
    row each, see DENSE_CELLS_PER_PACKET). Lost segments per interval: retransmissions that
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
    row = np.where(directions.packet_slot >= 0, directions.row_of_slot[np.maximum(directions.packet_slot, 0)], -1)
    first_bin = np.maximum(((directions.table["first_data_ts_ns"] - start_ns) // interval_ns).astype(np.int64), 0)
    last_bin = np.maximum(((directions.table["last_data_ts_ns"] - start_ns) // interval_ns).astype(np.int64), first_bin)
    kind = directions.segment_kind
    payload = np.asarray(packets["tcp_payload_len"], dtype=np.int64)
    data = (row >= 0) & (kind != KIND_NONE)
    rtt_row = np.where(directions.rtt_slot >= 0, directions.row_of_slot[np.maximum(directions.rtt_slot, 0)], -1)
    has_rtt = rtt_row >= 0
    has_flight = (directions.bytes_in_flight >= 0) & (row >= 0)
    cell = np.where(row >= 0, row * n_bins + bin_of, -1)
    rtt_cell = rtt_row[has_rtt] * n_bins + bin_of[has_rtt]

    # the cells listed: every interval of each direction's span, or (sparse) those with
    # packets and the first of each idle run after them
    spans = last_bin - first_bin + 1
    if int(spans.sum()) <= max(MIN_DENSE_CELLS, DENSE_CELLS_PER_PACKET * len(ts)):
        cells = np.concatenate([r * n_bins + np.arange(first_bin[r], last_bin[r] + 1) for r in range(rows)])
    else:
        busy = np.unique(np.concatenate([cell[data | has_flight], rtt_cell]))
        busy = busy[busy >= 0]
        busy_row, busy_bin = busy // n_bins, busy % n_bins
        after = busy[busy_bin < last_bin[busy_row]] + 1
        cells = np.union1d(busy, after)
        cell_row, cell_bin = cells // n_bins, cells % n_bins
        cells = cells[(cell_bin >= first_bin[cell_row]) & (cell_bin <= last_bin[cell_row])]
    n_cells = len(cells)
    cell_row, cell_bin = cells // n_bins, cells % n_bins

    def index_of(wanted: np.ndarray) -> np.ndarray:
        """Position of each cell id in `cells`, or n_cells when it is not listed."""
        at = np.searchsorted(cells, wanted)
        found = at < n_cells
        found[found] = cells[at[found]] == wanted[found]
        return np.where(found, at, n_cells)

    def per_cell(mask: np.ndarray, weights: Any = None) -> np.ndarray:
        counted = np.bincount(
            index_of(cell[mask]), weights=None if weights is None else weights[mask], minlength=n_cells + 1
        )
        return counted[:n_cells]

    payload_per = per_cell(data, payload)
    fresh = data & np.isin(kind, (KIND_ORIGINAL, KIND_REORDERED))
    # unique bytes: originals and late originals (hole fills that were retransmissions
    # also add new bytes downstream; count them when they filled a hole)
    unique_per = per_cell(fresh, payload)
    retrans = data & np.isin(kind, RETRANSMISSION_KINDS)
    retrans_per = per_cell(retrans)
    needed = retrans & (kind != KIND_SPURIOUS)
    needed_per = per_cell(needed)
    downstream = np.array([v != "sender" for v in directions.table["vantage"]], dtype=bool)
    unique_per = unique_per + np.where(downstream[cell_row], per_cell(needed, payload), 0)

    # RTT: median per cell of the samples that belong to each direction
    rtt_median = np.full(n_cells, np.nan)
    if has_rtt.any():
        values = directions.rtt_sample_us[has_rtt] / 1000.0
        order = np.lexsort((values, rtt_cell))
        sorted_cell, sorted_values = rtt_cell[order], values[order]
        found, first, counts = np.unique(sorted_cell, return_index=True, return_counts=True)
        lower = sorted_values[first + (counts - 1) // 2]
        upper = sorted_values[first + counts // 2]
        at = index_of(found)
        listed = at < n_cells
        rtt_median[at[listed]] = ((lower + upper) / 2.0)[listed]

    flight_max = np.full(n_cells + 1, -1.0)
    if has_flight.any():
        np.maximum.at(flight_max, index_of(cell[has_flight]), directions.bytes_in_flight[has_flight])
    flight_max = flight_max[:n_cells]
    sender_rows = np.array([v == "sender" for v in directions.table["vantage"]], dtype=bool)
    flight_max[~sender_rows[cell_row]] = -1.0

    return pd.DataFrame(
        {
            "time_s": cell_bin * interval_s,
            "stream": directions.table["stream"][cell_row],
            "direction": directions.table["direction"][cell_row],
            "throughput_bps": payload_per * 8 / interval_s,
            "goodput_bps": unique_per * 8 / interval_s,
            "retransmissions": retrans_per.astype(np.int64),
            "needed_retransmissions": needed_per.astype(np.int64),
            "rtt_ms": rtt_median,
            "bytes_in_flight": np.where(flight_max >= 0, flight_max, np.nan),
        }
    )


def write_csv(frame, path: Union[str, Path]) -> None:
    """Write a series DataFrame as CSV (empty cells where a value is unknown)."""
    frame.to_csv(path, index=False, float_format="%.6g")
