"""Read a capture file (pcap, pcapng, gzip'd either) into a columnar `Capture`.

The file is memory-mapped (a gzip'd file is first stream-decompressed to an
anonymous temporary file) and walked by the C decoder twice: a counting
pass (fast: it only hops record headers, and finds a cut or damaged record
before any work), then a decoding pass into columns allocated once at their
final size, `CHUNK_PACKETS` records per call with a progress callback
between calls. No Python object per packet and no temporary copies: memory
is the output columns (~130 bytes per packet). pandas is not imported here.
"""

from __future__ import annotations

import mmap
import os
import stat
import tempfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Callable, Dict, List, Optional, Tuple, Union

import numpy as np

from .. import _decode
from . import memory
from .background import Background
from .columns import PACKET_COLUMNS
from .errors import CaptureCutError, CaptureError
from .packets import PacketTable, join_ip_fragments
from .sidecar import NO_META, Meta, capture_drops, read_meta

ProgressCallback = Callable[[int, int], None]

# Bytes of packet columns per frame (134 today): what decoding alone holds per frame.
COLUMN_BYTES_PER_FRAME = sum(np.dtype(c.dtype).itemsize * int(np.prod(c.shape, dtype=np.int64)) for c in PACKET_COLUMNS)
# Records per C walk call between progress callbacks (~130 bytes of columns each).
CHUNK_PACKETS = 262144
# Classic pcap captures with at least this many records are filled by two threads.
PARALLEL_FILL_MIN_ROWS = 200_000
GZIP_MAGIC = b"\x1f\x8b"
# The first bytes of a capture file, any byte order: pcap (us, ns), pcapng section header.
CAPTURE_MAGICS = (
    b"\xd4\xc3\xb2\xa1",
    b"\xa1\xb2\xc3\xd4",
    b"\x4d\x3c\xb2\xa1",
    b"\xa1\xb2\x3c\x4d",
    b"\x0a\x0d\x0d\x0a",
)
# read("-") reads standard input.
STDIN_PATH = "-"
GZIP_COPY_BYTES = 1 << 20
GZIP_INFLATE_BYTES = 8 << 20
# Files up to this size (bytes) are mapped with MAP_POPULATE: the kernel maps every page in
# one call instead of one page fault per 4 KiB (1M packets, 124 MB: 20 -> 9 ms). Larger files
# are read sequentially through the page cache as the walk goes.
POPULATE_MAX_BYTES = 1 << 30

# Names as tshark's capinfos prints "File encapsulation" (Wireshark 4.0).
LINK_TYPE_NAMES: Dict[int, str] = {
    0: "NULL/Loopback",
    1: "Ethernet",
    9: "PPP",
    10: "FDDI",
    12: "Raw IP",
    14: "Raw IP",
    50: "PPP in HDLC-like framing",
    51: "PPPoE",
    101: "Raw IP",
    104: "Cisco HDLC",
    105: "IEEE 802.11 Wireless LAN",
    108: "OpenBSD loopback",
    113: "Linux cooked-mode capture v1",
    127: "IEEE 802.11 plus radiotap radio header",
    228: "Raw IPv4",
    229: "Raw IPv6",
    276: "Linux cooked-mode capture v2",
}


def link_type_name(link_type: int) -> str:
    """capinfos-style name of a LINKTYPE_ value."""
    return LINK_TYPE_NAMES.get(link_type, f"LINKTYPE {link_type}")


def ts_resolution_s(tsresol_code: int) -> float:
    """Seconds per timestamp tick for a pcapng if_tsresol code (bit 7: power of 2)."""
    if tsresol_code & 0x80:
        return 2.0 ** -(tsresol_code & 0x7F)
    return 10.0**-tsresol_code


@dataclass
class Capture:
    """A decoded capture file."""

    path: Path
    format: str  # "pcap" or "pcapng"
    compressed: bool  # the file was gzip'd
    packets: PacketTable
    interfaces: List[Dict[str, Any]]
    link_types: List[str]  # distinct capinfos-style names, in interface order
    capture_drops: Dict[str, Any]  # {"kernel", "interface", "source", "isb_ifdrop", "isb_osdrop"}
    warnings: List[str] = field(default_factory=list)
    truncated_at: Optional[int] = None  # byte offset of a record cut by the end of the file
    nonpacket_records: int = 0  # pcapng records without packet data that tshark counts as frames
    size_bytes: int = 0  # decoded (decompressed) bytes


def _decompress_to_temp(path: Path, source: BinaryIO) -> Tuple[BinaryIO, List[str]]:
    """Stream-decompress a gzip file (all members) into an unlinked temporary file.

    A stream cut short keeps every byte decompressed before the cut and returns a
    warning; corrupt compressed data, or data that does not start as a capture file
    (checked on the first bytes, before a gzip of zeros inflates to GiBs), raises
    CaptureError. Each inflate step yields at most GZIP_INFLATE_BYTES.
    """
    warnings: List[str] = []
    out = tempfile.TemporaryFile(prefix="spline-gunzip-")
    inflater: Optional[Any] = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)  # gzip framing
    member_has_input = False
    checked_magic = False
    pending = b""
    try:
        while inflater is not None:
            if not pending:
                pending = source.read(GZIP_COPY_BYTES)
                if not pending:
                    break
            member_has_input = True
            out.write(inflater.decompress(pending, GZIP_INFLATE_BYTES))
            pending = inflater.unconsumed_tail
            if not checked_magic and out.tell() >= len(CAPTURE_MAGICS[0]):
                checked_magic = True
                out.seek(0)
                head = out.read(len(CAPTURE_MAGICS[0]))
                out.seek(0, os.SEEK_END)
                if head not in CAPTURE_MAGICS:
                    error = CaptureError(
                        path, 0, f"the gzip'd data is not a pcap or pcapng file (it starts with {head.hex()})"
                    )
                    error.offset_in_decompressed = True
                    raise error
            if inflater.eof:  # one gzip member done; another may follow
                pending = inflater.unused_data
                member_has_input = False
                inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS) if pending[:2] == GZIP_MAGIC else None
    except zlib.error as exc:
        out.close()
        raise CaptureError(path, source.tell(), f"damaged gzip stream ({exc})") from None
    except BaseException:
        out.close()
        raise
    if inflater is not None and member_has_input and not inflater.eof:
        out.write(inflater.flush())
        warnings.append(
            f"gzip stream ends early at compressed byte offset {source.tell()} (file cut); "
            f"decoded the {out.tell()} bytes before the cut"
        )
    out.flush()
    out.seek(0)
    return out, warnings


def _wrap_columns(buffers: tuple) -> Dict[str, np.ndarray]:
    """numpy views over the C walker's column bytearrays (no copy)."""
    columns: Dict[str, np.ndarray] = {}
    for index, column in enumerate(PACKET_COLUMNS):
        array = np.frombuffer(buffers[index], dtype=np.dtype(column.dtype))
        columns[column.name] = array.reshape((-1,) + column.shape) if column.shape else array
    return columns


def refuse_beyond_memory(path: Path, frames: int, frame_bytes: int, headroom: Optional[int]) -> None:
    """CaptureError when `frames` at `frame_bytes` each need more than the `headroom` bytes this
    process may still take: one line now, instead of the OOM killer's SIGKILL later."""
    need = frames * frame_bytes
    if headroom is not None and need > headroom:
        raise CaptureError(
            path,
            None,
            f"its {frames:,} frames need about {memory.human_bytes(need)} of memory, "
            f"only {memory.human_bytes(headroom)} is available",
        )


def _walk(
    path: Path,
    buffer: Any,
    size: int,
    strict: bool,
    progress: Optional[ProgressCallback],
    *,
    frame_bytes: int = COLUMN_BYTES_PER_FRAME,
) -> Tuple[str, Dict[str, np.ndarray], bytearray, Optional[int], List[str]]:
    """Two passes over the mapped file: count the records (and find a cut or damage), then
    decode them into columns allocated once at their final size, `CHUNK_PACKETS` at a time.
    Between them, a file whose frames need more than `frame_bytes` each beyond the memory
    this process may take is refused."""
    state = _decode.new_state()
    status, first_offset, fmt, message, where = _decode.open(state, buffer)
    if status == _decode.ERROR:
        raise CaptureError(path, where, message)
    if status == _decode.CUT:
        raise CaptureError(path, where, "file ends inside its file header")
    format_name = "pcapng" if fmt == _decode.FORMAT_PCAPNG else "pcap"
    status, where, total_rows, message = _decode.walk(state, buffer, first_offset, size)
    if status == _decode.ERROR:
        raise CaptureError(path, where, message)
    warnings: List[str] = []
    truncated_at: Optional[int] = None
    if status == _decode.CUT:
        truncated_at = where
        if strict:
            raise CaptureCutError(path, where, "file cut mid-record")
        warnings.append(
            f"file cut mid-record at byte offset {where} ({size - where} trailing bytes ignored); "
            f"analysed the {total_rows} complete records before it"
        )
    refuse_beyond_memory(path, total_rows, frame_bytes, memory.headroom_bytes())
    # Second pass: the same walk from a fresh state, now writing columns. (The first pass's state,
    # which saw every block to the end, keeps the interfaces and their statistics.)
    buffers = _decode.allocate(total_rows)
    fill_state = _decode.new_state()
    _decode.open(fill_state, buffer)
    half = total_rows // 2
    if format_name == "pcap" and progress is None and total_rows >= PARALLEL_FILL_MIN_ROWS:
        # Two cores: classic pcap records stand alone, so a counting walk to the middle record
        # gives where the second half starts and the halves fill side by side. (Not pcapng: a
        # Simple Packet Block takes its timestamp from the records before it.)
        middle_state = _decode.new_state()
        _decode.open(middle_state, buffer)
        status, middle_offset, rows, message = _decode.walk(middle_state, buffer, first_offset, half)
        if status == _decode.ERROR or rows != half:
            raise CaptureError(path, middle_offset, message or "decoder stopped early")
        second_half = Background(
            _fill, path, middle_state, buffer, middle_offset, half, total_rows - half, buffers, None, size
        )
        second_half.start()
        try:
            _fill(path, fill_state, buffer, first_offset, 0, half, buffers, None, size)
        finally:
            # the other half holds the mapping until its walk returns: never close it under it
            # (an interrupt here would otherwise end in "cannot close exported pointers")
            second_half.join()
        second_half.result()
    else:
        _fill(path, fill_state, buffer, first_offset, 0, total_rows, buffers, progress, size)
        if progress is not None:
            progress(size, size)
    return format_name, _wrap_columns(buffers), state, truncated_at, warnings


def _fill(
    path: Path,
    state: Any,
    buffer: Any,
    offset: int,
    first_row: int,
    rows_wanted: int,
    buffers: tuple,
    progress: Optional[ProgressCallback],
    size: int,
) -> None:
    """Decode `rows_wanted` records from `offset` into rows [first_row, ...) of the columns,
    `CHUNK_PACKETS` at a time."""
    rows_done = 0
    while rows_done < rows_wanted:
        status, offset, rows, message = _decode.walk(
            state, buffer, offset, min(CHUNK_PACKETS, rows_wanted - rows_done), buffers, first_row + rows_done
        )
        if status == _decode.ERROR or rows == 0:  # cannot happen after the first pass; never loop on it
            raise CaptureError(path, offset, message or "decoder stopped early")
        rows_done += rows
        if progress is not None:
            progress(offset, size)


def _map_read_only(fd: int, size: int) -> mmap.mmap:
    """A read-only shared mapping of the whole file, prefaulted when it is small enough."""
    populate = getattr(mmap, "MAP_POPULATE", 0)
    if populate and size <= POPULATE_MAX_BYTES:
        return mmap.mmap(fd, 0, flags=mmap.MAP_SHARED | populate, prot=mmap.PROT_READ)
    mapped = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
    if hasattr(mapped, "madvise") and hasattr(mmap, "MADV_SEQUENTIAL"):
        mapped.madvise(mmap.MADV_SEQUENTIAL)
    return mapped


def _open_source(path: Path) -> BinaryIO:
    """The capture as a seekable file: a regular file as it is; standard input (`-`), a
    FIFO, a pipe or a character device spooled into an unlinked temporary file first (they
    cannot be mapped or read twice)."""
    try:
        if str(path) == STDIN_PATH:
            source: BinaryIO = os.fdopen(os.dup(0), "rb")
        else:
            source = open(path, "rb")
    except OSError as exc:
        raise CaptureError(path, None, exc.strerror or str(exc)) from None
    try:
        if stat.S_ISREG(os.fstat(source.fileno()).st_mode):
            return source
        spooled: BinaryIO = tempfile.TemporaryFile(prefix="spline-stream-")
        while True:
            block = source.read(GZIP_COPY_BYTES)
            if not block:
                break
            spooled.write(block)
        spooled.flush()
        spooled.seek(0)
        return spooled
    except OSError as exc:
        raise CaptureError(path, None, exc.strerror or str(exc)) from None
    finally:
        if "spooled" in locals():
            source.close()


def read(
    path: Union[str, os.PathLike],
    *,
    strict: bool = False,
    progress: Optional[ProgressCallback] = None,
    frame_bytes: int = COLUMN_BYTES_PER_FRAME,
    meta: Optional[Meta] = None,
) -> Capture:
    """Decode the capture at `path`.

    Raises `CaptureError` when the file cannot be read (and, with `strict`,
    when it is cut mid-record, or when its frames at `frame_bytes` each need more
    memory than this process may take: pass what the caller's later stages hold per
    frame, as `pipeline.analyze` does); otherwise problems are in `Capture.warnings`.
    `progress(bytes_done, bytes_total)` is called between chunks. `meta`: meta.json beside
    the file as `sidecar.read_meta` gives it (read here when not given; never for stdin).
    """
    path = Path(path)
    if meta is None:
        meta = NO_META if str(path) == STDIN_PATH else read_meta(path)
    warnings: List[str] = []
    source = _open_source(path)
    compressed = False
    try:
        if source.read(2) == GZIP_MAGIC:
            compressed = True
            source.seek(0)
            decompressed, gzip_warnings = _decompress_to_temp(path, source)
            source.close()
            source = decompressed
            warnings += gzip_warnings
            if gzip_warnings and strict:
                raise CaptureCutError(path, None, "gzip stream cut")
        source.seek(0, os.SEEK_END)
        size = source.tell()
        if size == 0:
            raise CaptureError(path, 0, "empty file")
        with _map_read_only(source.fileno(), size) as mapped:
            try:
                walked = _walk(path, mapped, size, strict, progress, frame_bytes=frame_bytes)
                format_name, columns, state, truncated_at, walk_warnings = walked
            except CaptureError as exc:
                exc.offset_in_decompressed = compressed
                raise
        if compressed:
            walk_warnings = [w.replace(" (", " of the decompressed data (", 1) for w in walk_warnings]
    finally:
        source.close()
    warnings += walk_warnings
    join_ip_fragments(columns)
    interfaces = _decode.interfaces(state)
    counters = _decode.counters(state)
    for interface in interfaces:
        interface["link_type_name"] = link_type_name(interface["link_type"])
        interface["ts_resolution_s"] = ts_resolution_s(interface["tsresol"])
    link_types: List[str] = []
    for interface in interfaces:
        if interface["link_type_name"] not in link_types:
            link_types.append(interface["link_type_name"])
    drops, drop_warnings = capture_drops(
        meta, interfaces, (counters["isb_ifdrop_by_local_id"], counters["isb_osdrop_by_local_id"])
    )
    warnings += drop_warnings
    if meta.unfinished:
        if strict:
            raise CaptureCutError(
                path, None, "the capture did not finish (meta.json: trace_complete false, an interrupted run)"
            )
        warnings.append(
            "capture unfinished: meta.json says trace_complete false (an interrupted run); "
            "the transfer is not all there"
        )
    return Capture(
        path=path,
        format=format_name,
        compressed=compressed,
        packets=PacketTable(columns),
        interfaces=interfaces,
        link_types=link_types,
        capture_drops=drops,
        warnings=warnings,
        truncated_at=truncated_at,
        nonpacket_records=int(counters["nonpacket_records"]),
        size_bytes=size,
    )
