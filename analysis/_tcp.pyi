"""Types of the C passes over the packet table (analysis/_native/tcp/module.c): `columns` is the
tuple of contiguous column arrays that flows.py and wireshark.py hand over."""

from typing import Any, Union

from numpy.typing import NDArray

# What the C side reads through the buffer protocol, C-contiguous (numpy's stubs for
# Python < 3.12 do not declare ndarray a collections.abc.Buffer).
Buffer = Union[bytes, bytearray, memoryview, NDArray[Any]]

def assign_streams(n_frames: int, columns: tuple[Buffer, ...], /) -> dict[str, Any]:
    """tshark's tcp.stream per frame ("stream", "conversation", "direction", "seq64", "ack64":
    bytearrays of n_frames rows), the stream table (bytearrays of "count" rows) and "count" (int)."""

def wireshark_analyze(
    n_frames: int, columns: tuple[Buffer, ...], conversation: Buffer, direction: Buffer, n_conversations: int, /
) -> dict[str, bytearray]:
    """Wireshark 4.0's tcp.analysis flags and ACK RTTs per frame, as bytearrays."""
