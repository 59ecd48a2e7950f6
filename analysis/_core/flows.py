"""TCP connections of a packet table, numbered exactly as tshark 4.0 numbers `tcp.stream`.

A stream is one address/port pair until a pure SYN with a new initial sequence number reuses
the pair (then a new stream starts); see `_native/tcp/streams.c` for the rules. One C pass with
a hash table does the work; this module only wraps its buffers as numpy arrays.

    >>> flows = assign_streams(capture.packets)
    >>> flows.count, flows.stream[:5], flows.direction[:5]
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Any, Dict, Mapping, Tuple

import numpy as np

from .. import _tcp

# Columns the native passes read, in the order module.c expects them, with their dtype and
# per-row shape. Columns missing from a table are filled with their "absent" value.
NATIVE_COLUMNS: Tuple[Tuple[str, str, Tuple[int, ...], int], ...] = (
    ("ts_ns", "int64", (), 0),
    ("decode_flags", "uint8", (), 0),
    ("src_addr", "uint8", (16,), 0),
    ("dst_addr", "uint8", (16,), 0),
    ("sport", "uint16", (), 0),
    ("dport", "uint16", (), 0),
    ("seq", "uint32", (), 0),
    ("ack", "uint32", (), 0),
    ("tcp_flags", "uint16", (), 0),
    ("window", "uint16", (), 0),
    ("tcp_header_len", "uint8", (), 0),
    ("tcp_payload_len", "uint32", (), 0),
    ("opt_mss", "uint16", (), 0),
    ("opt_wscale", "int8", (), -1),
    ("opt_sack_permitted", "bool", (), 0),
    ("opt_has_ts", "bool", (), 0),
    ("sack_count", "uint8", (), 0),
    ("sack_left", "uint32", (4,), 0),
    ("sack_right", "uint32", (4,), 0),
    ("opt_mptcp", "uint16", (), 0),
)


def packet_columns(packets: Any) -> Mapping[str, np.ndarray]:
    """The packet table as a name -> array mapping (accepts a mapping or an object with `.columns`)."""
    if isinstance(packets, Mapping):
        return packets
    for attribute in ("columns", "arrays", "_columns"):
        table = getattr(packets, attribute, None)
        if isinstance(table, Mapping):
            return table
    return {name: getattr(packets, name) for name, *_ in NATIVE_COLUMNS if hasattr(packets, name)}


def frame_count(columns: Mapping[str, np.ndarray]) -> int:
    """Number of frames (rows) of a packet table."""
    for name in ("ts_ns", "tcp_header_len", "seq"):
        if name in columns:
            return int(len(columns[name]))
    return int(len(next(iter(columns.values())))) if columns else 0


def native_column_tuple(columns: Mapping[str, np.ndarray], n_frames: int) -> Tuple[np.ndarray, ...]:
    """The columns as contiguous arrays of the dtypes the C passes read."""
    out = []
    for name, dtype, shape, absent in NATIVE_COLUMNS:
        if name in columns:
            array = np.ascontiguousarray(columns[name], dtype=dtype)
        else:
            array = np.full((n_frames,) + shape, absent, dtype=dtype)
        if array.shape != (n_frames,) + shape:
            raise ValueError(f"column {name} has shape {array.shape}, expected {(n_frames,) + shape}")
        out.append(array)
    return tuple(out)


def address_to_str(address: np.ndarray) -> str:
    """Renders a 16-byte address: IPv4-mapped as dotted quad, else IPv6 text."""
    raw = bytes(np.asarray(address, dtype=np.uint8))
    ip = ipaddress.IPv6Address(raw)
    return str(ip.ipv4_mapped) if ip.ipv4_mapped is not None else str(ip)


def addresses_to_str(addresses: np.ndarray) -> np.ndarray:
    """Renders an [n, 16] address array as an object array of strings."""
    return np.array([address_to_str(a) for a in np.asarray(addresses).reshape(-1, 16)], dtype=object)


@dataclass(frozen=True)
class Flows:
    """TCP streams of one capture.

    Per frame (length N): `stream` (tcp.stream, -1 for frames without TCP or TCP quoted in an
    ICMP error), `direction` (0 from endpoint a, the source of the stream's first frame; 1
    reverse), `seq64` / `ack64` (sequence and ACK numbers unwrapped to 64 bits in the sender's /
    the peer's sequence space; -1 where not applicable). Per stream (length `count`): the
    arrays of `streams` (see `STREAM_COLUMNS`).
    """

    stream: np.ndarray
    direction: np.ndarray
    seq64: np.ndarray
    ack64: np.ndarray
    count: int
    streams: Dict[str, np.ndarray]
    conversation: np.ndarray  # like stream, also set for TCP quoted in ICMP errors

    def to_dataframe(self) -> Any:
        """One row per stream, addresses as strings and two-direction columns split `_a2b`/`_b2a`."""
        import pandas as pd

        s = self.streams
        data: Dict[str, Any] = {
            "stream": np.arange(self.count, dtype=np.int32),
            "a_addr": addresses_to_str(s["a_addr"]),
            "a_port": s["a_port"],
            "b_addr": addresses_to_str(s["b_addr"]),
            "b_port": s["b_port"],
            "first_frame": s["first_frame"],
            "last_frame": s["last_frame"],
            "syn_seen": s["syn_seen"],
        }
        for name in ("packets", "payload_bytes"):
            data[f"{name}_a2b"] = s[f"{name}_a2b"]
            data[f"{name}_b2a"] = s[f"{name}_b2a"]
        for name in ("window_scale", "mss", "sack_permitted", "timestamps"):
            data[f"{name}_a2b"] = s[name][:, 0]
            data[f"{name}_b2a"] = s[name][:, 1]
        return pd.DataFrame(data)


STREAM_COLUMNS = (
    "a_addr",
    "a_port",
    "b_addr",
    "b_port",
    "first_frame",
    "last_frame",
    "packets_a2b",
    "packets_b2a",
    "payload_bytes_a2b",
    "payload_bytes_b2a",
    "syn_seen",
    "window_scale",
    "mss",
    "sack_permitted",
    "timestamps",
)


def assign_streams(packets: Any) -> Flows:
    """Numbers the TCP streams of a packet table as tshark 4.0 does (one C pass)."""
    columns = packet_columns(packets)
    n_frames = frame_count(columns)
    native = native_column_tuple(columns, n_frames)
    raw = _tcp.assign_streams(n_frames, native)
    count = int(raw["count"])

    def buf(name: str, dtype: str, shape: Tuple[int, ...] = ()) -> np.ndarray:
        return np.frombuffer(raw[name], dtype=dtype).reshape((-1,) + shape)

    packets_per_direction = buf("packets", "int64", (2,))
    bytes_per_direction = buf("payload_bytes", "int64", (2,))
    streams = {
        "a_addr": buf("a_addr", "uint8", (16,)),
        "a_port": buf("a_port", "uint16"),
        "b_addr": buf("b_addr", "uint8", (16,)),
        "b_port": buf("b_port", "uint16"),
        "first_frame": buf("first_frame", "int64"),
        "last_frame": buf("last_frame", "int64"),
        "packets_a2b": packets_per_direction[:, 0],
        "packets_b2a": packets_per_direction[:, 1],
        "payload_bytes_a2b": bytes_per_direction[:, 0],
        "payload_bytes_b2a": bytes_per_direction[:, 1],
        "syn_seen": buf("syn_seen", "bool"),
        "window_scale": buf("window_scale", "int8", (2,)),
        "mss": buf("mss", "int32", (2,)),
        "sack_permitted": buf("sack_permitted", "bool", (2,)),
        "timestamps": buf("timestamps", "bool", (2,)),
    }
    return Flows(
        stream=buf("stream", "int32"),
        direction=buf("direction", "uint8"),
        seq64=buf("seq64", "int64"),
        ack64=buf("ack64", "int64"),
        count=count,
        streams=streams,
        conversation=buf("conversation", "int32"),
    )


__all__ = [
    "Flows",
    "STREAM_COLUMNS",
    "assign_streams",
    "address_to_str",
    "addresses_to_str",
    "packet_columns",
    "native_column_tuple",
    "frame_count",
]
