"""Types of the C truth-seeking pass (analysis/_native/truth/module.c): one contiguous array per
input column, the last four per direction."""

from typing import Any, Union

from numpy.typing import NDArray

# What the C side reads through the buffer protocol, C-contiguous (numpy's stubs for
# Python < 3.12 do not declare ndarray a collections.abc.Buffer).
Buffer = Union[bytes, bytearray, memoryview, NDArray[Any]]

def analyze(
    n_directions: int,
    direction: Buffer,
    ts_ns: Buffer,
    seq: Buffer,
    ack: Buffer,
    tcp_flags: Buffer,
    payload_len: Buffer,
    window: Buffer,
    ip_id: Buffer,
    decode_flags: Buffer,
    ttl: Buffer,
    has_ts: Buffer,
    tsval: Buffer,
    tsecr: Buffer,
    sack_count: Buffer,
    sack_left: Buffer,
    sack_right: Buffer,
    mode: Buffer,
    mss: Buffer,
    id_per_packet: Buffer,
    sack_negotiated: Buffer,
    /,
) -> tuple[bytearray, bytearray, bytearray, bytearray, bytearray, bytearray, bytearray, bytearray]:
    """(kind u8[N], rtt_us f64[N], rtt_direction i32[N], in_flight i64[N], id64 i64[N],
    hole_age_ns i64[N], stats i64[n_directions, fields], lost_repairs i32[N]) as bytearrays."""
