"""Types of the C capture walker (analysis/_native/decode/module.c). Offsets are bytes into the
buffer; a state is an opaque bytearray from new_state()."""

from typing import Any, Optional, TypedDict, Union

from numpy.typing import NDArray

# What the C side reads through the buffer protocol, C-contiguous (numpy's stubs for
# Python < 3.12 do not declare ndarray a collections.abc.Buffer).
Buffer = Union[bytes, bytearray, memoryview, NDArray[Any]]

# (column name, bytes per row), in the order allocate() returns the columns.
COLUMNS: tuple[tuple[str, int], ...]
# walk()/open() status: max_packets decoded / buffer ended on a record boundary /
# a record cut short / a damaged file.
MORE: int
END: int
CUT: int
ERROR: int
FORMAT_PCAP: int
FORMAT_PCAPNG: int

class Counters(TypedDict):
    nonpacket_records: int
    sections: int
    big_endian: int
    isb_ifdrop_by_local_id: Optional[int]
    isb_osdrop_by_local_id: Optional[int]

def new_state() -> bytearray: ...
def open(state: bytearray, buffer: Buffer, /) -> tuple[int, int, int, str, int]:
    """(status, first record's offset, FORMAT_*, error message, offset of the cut or error)."""

def allocate(rows: int, /) -> tuple[bytearray, ...]:
    """One zeroed bytearray per COLUMNS entry, room for `rows` rows."""

def walk(
    state: bytearray,
    buffer: Buffer,
    offset: int,
    max_packets: int,
    columns: Optional[tuple[bytearray, ...]] = None,
    first_row: int = 0,
    /,
) -> tuple[int, int, int, str]:
    """(status, offset reached, rows decoded, error message); without columns it only counts."""

def interfaces(state: bytearray, /) -> list[dict[str, Any]]:
    """Per interface: link_type, snaplen, tsresol, tsoffset_s, name, has_ifdrop, isb_ifdrop,
    has_osdrop, isb_osdrop, isb_count (decode.py adds its own keys to these dicts)."""

def counters(state: bytearray, /) -> Counters: ...
