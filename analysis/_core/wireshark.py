"""Wireshark-compatible TCP expert flags, exactly as tshark 4.0 computes them.

`analyze(packets, flows)` runs Wireshark 4.0's `tcp_analyze_sequence_numbers` over every frame
in file order (one C pass, `_native/tcp/seqanalysis.c`) and returns a per-frame bitmask of the
`tcp.analysis.*` flags plus tshark's `ack_rtt` and `bytes_in_flight`. Counts follow the display
filters: `retransmission` also counts fast and spurious retransmissions, as
`tcp.analysis.retransmission` matches them.

These numbers are Wireshark's heuristics, kept for comparison with published figures; they
are not the truth-seeking numbers of `truth.py`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any, Dict, Tuple

import numpy as np

from .. import _tcp
from .columns import DECODE_TRUNCATED
from .flows import Flows, frame_count, native_column_tuple, packet_columns

# Bits of WiresharkAnalysis.flags (mirrors WS_* in _native/tcp/tcp_native.h).
RETRANSMISSION = 1 << 0  # generic retransmission only (see counts() for the filter's meaning)
FAST_RETRANSMISSION = 1 << 1
SPURIOUS_RETRANSMISSION = 1 << 2
OUT_OF_ORDER = 1 << 3
LOST_SEGMENT = 1 << 4  # "previous segment not captured"
ACK_LOST_SEGMENT = 1 << 5  # "ACKed unseen segment"
DUPLICATE_ACK = 1 << 6
ZERO_WINDOW = 1 << 7
ZERO_WINDOW_PROBE = 1 << 8
ZERO_WINDOW_PROBE_ACK = 1 << 9
KEEP_ALIVE = 1 << 10
KEEP_ALIVE_ACK = 1 << 11
WINDOW_UPDATE = 1 << 12
WINDOW_FULL = 1 << 13
REUSED_PORTS = 1 << 14

# Display-filter name (tcp.analysis.<name>) -> the bits whose presence makes the filter match.
FLAG_FILTERS: Dict[str, int] = {
    "retransmission": RETRANSMISSION | FAST_RETRANSMISSION | SPURIOUS_RETRANSMISSION,
    "fast_retransmission": FAST_RETRANSMISSION,
    "spurious_retransmission": SPURIOUS_RETRANSMISSION,
    "out_of_order": OUT_OF_ORDER,
    "lost_segment": LOST_SEGMENT,
    "ack_lost_segment": ACK_LOST_SEGMENT,
    "duplicate_ack": DUPLICATE_ACK,
    "zero_window": ZERO_WINDOW,
    "zero_window_probe": ZERO_WINDOW_PROBE,
    "zero_window_probe_ack": ZERO_WINDOW_PROBE_ACK,
    "keep_alive": KEEP_ALIVE,
    "keep_alive_ack": KEEP_ALIVE_ACK,
    "window_update": WINDOW_UPDATE,
    "window_full": WINDOW_FULL,
    "reused_ports": REUSED_PORTS,
}

# The flags of the JSON schema (`wireshark` object), in display order.
REPORTED_FLAGS: Tuple[str, ...] = (
    "retransmission",
    "fast_retransmission",
    "spurious_retransmission",
    "out_of_order",
    "lost_segment",
    "ack_lost_segment",
    "duplicate_ack",
    "zero_window",
    "zero_window_probe",
    "zero_window_probe_ack",
    "keep_alive",
    "keep_alive_ack",
    "window_update",
    "window_full",
)


def matches(flags: np.ndarray, name: str) -> np.ndarray:
    """Boolean mask of the frames the display filter `tcp.analysis.<name>` matches."""
    return (np.asarray(flags) & FLAG_FILTERS[name]) != 0


@dataclass(frozen=True)
class WiresharkAnalysis:
    """Per-frame results of tshark 4.0's TCP sequence analysis.

    `flags` uint32[N] (bits above); `ack_rtt_ns` int64[N] (tcp.analysis.ack_rtt, -1 absent);
    `acked_frame` int64[N] (0-based frame tcp.analysis.acks_frame names, -1 absent);
    `bytes_in_flight` int64[N] (-1 absent); `dupack_num` int32[N] (0 absent).
    """

    flags: np.ndarray
    ack_rtt_ns: np.ndarray
    acked_frame: np.ndarray
    bytes_in_flight: np.ndarray
    dupack_num: np.ndarray
    flows: Flows

    def counts(self) -> Dict[str, int]:
        """{flag: number of frames the display filter tcp.analysis.<flag> matches}."""
        flags = self.flags[self.flagged_rows]
        return {name: int(np.count_nonzero(matches(flags, name))) for name in REPORTED_FLAGS}

    @cached_property
    def flagged_rows(self) -> np.ndarray:
        """Rows that carry any flag: most frames carry none, so counting over these
        alone avoids a pass over every frame per flag (found once per analysis)."""
        return np.flatnonzero(self.flags)

    def stream_counts(self) -> Dict[str, np.ndarray]:
        """Per stream and direction counts: {f"{flag}_a2b" / f"{flag}_b2a": int64[count]}."""
        rows = self.flagged_rows
        stream = self.flows.stream[rows]
        rows = rows[stream >= 0]
        index = self.flows.stream[rows].astype(np.int64) * 2 + self.flows.direction[rows]
        flags = self.flags[rows]
        size = 2 * self.flows.count
        out: Dict[str, np.ndarray] = {}
        for name in REPORTED_FLAGS:
            per = np.bincount(index[matches(flags, name)], minlength=size)
            per = per.astype(np.int64).reshape(-1, 2)
            out[f"{name}_a2b"] = per[:, 0]
            out[f"{name}_b2a"] = per[:, 1]
        return out

    def stream_table(self) -> Any:
        """The per-stream flows table joined with the per-direction flag counts (pandas)."""
        import pandas as pd

        frame = self.flows.to_dataframe()
        return pd.concat([frame, pd.DataFrame(self.stream_counts())], axis=1)


def reused_port_frames(flows: Flows) -> np.ndarray:
    """Frames tshark marks "reused ports": the SYN that opened a stream on an address/port
    pair an earlier stream already used (the streams pass starts a new stream exactly there)."""
    s = flows.streams
    if flows.count < 2:
        return np.zeros(0, dtype=np.int64)
    ports = lambda p: np.asarray(p, dtype=">u2").view(np.uint8).reshape(-1, 2)  # noqa: E731
    a = np.concatenate([np.asarray(s["a_addr"], dtype=np.uint8), ports(s["a_port"])], axis=1)
    b = np.concatenate([np.asarray(s["b_addr"], dtype=np.uint8), ports(s["b_port"])], axis=1)
    rows = np.arange(len(a))
    first_diff = np.argmax(a != b, axis=1)
    a_first = (a[rows, first_diff] <= b[rows, first_diff])[:, None]
    key = np.ascontiguousarray(np.where(a_first, np.concatenate([a, b], axis=1), np.concatenate([b, a], axis=1)))
    _, first = np.unique(key.view(f"V{key.shape[1]}").ravel(), return_index=True)
    later = np.ones(len(a), dtype=bool)
    later[first] = False
    frames = np.asarray(s["first_frame"], dtype=np.int64)[later]
    return frames[frames >= 0]


def analyze(packets: Any, flows: Flows) -> WiresharkAnalysis:
    """Runs tshark 4.0's per-frame TCP sequence analysis over a packet table and its
    streams (`flows.assign_streams(packets)`, the stage before)."""
    columns = packet_columns(packets)
    n_frames = frame_count(columns)
    native = native_column_tuple(columns, n_frames)
    raw = _tcp.wireshark_analyze(
        n_frames, native, np.ascontiguousarray(flows.conversation), np.ascontiguousarray(flows.direction), flows.count
    )
    flags = np.frombuffer(raw["flags"], dtype=np.uint32)
    reused = reused_port_frames(flows)
    if len(reused):  # a SYN whose header the snaplen cut shows no analysis (tshark throws first)
        cut = (np.asarray(columns["decode_flags"])[reused] & DECODE_TRUNCATED) != 0
        reused = reused[~cut]
    if len(reused):
        flags = flags.copy()
        flags[reused] |= REUSED_PORTS
    return WiresharkAnalysis(
        flags=flags,
        ack_rtt_ns=np.frombuffer(raw["ack_rtt_ns"], dtype=np.int64),
        acked_frame=np.frombuffer(raw["acked_frame"], dtype=np.int64),
        bytes_in_flight=np.frombuffer(raw["bytes_in_flight"], dtype=np.int64),
        dupack_num=np.frombuffer(raw["dupack_num"], dtype=np.int32),
        flows=flows,
    )


__all__ = ["WiresharkAnalysis", "analyze", "reused_port_frames", "matches", "FLAG_FILTERS", "REPORTED_FLAGS"] + [
    name.upper() for name in FLAG_FILTERS
]
