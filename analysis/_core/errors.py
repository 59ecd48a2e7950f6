"""The package's errors: one root, `SplineError`, that every error it raises derives from.

`CaptureError`: a capture file cannot be read. The testbed's `TestbedError` (a condition
the user can fix) derives from the root too, so `except SplineError` catches both.

Library code raises `CaptureError` for files it cannot read at all (bad
magic, unsupported version, damaged block header); problems it can read past
(a record cut by the end of the file, a truncated gzip stream) are returned
as warning strings instead, so callers decide what is fatal.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional, Union


class SplineError(Exception):
    """The root of every error the toolkit raises on purpose (bugs raise what they raise)."""


class CaptureError(SplineError):
    """A capture file cannot be read: `path`, byte `offset` (or None), `message`.

    `str()` is one line naming the file and the offset, ready for a CLI.
    """

    def __init__(self, path: Union[str, Path], offset: Optional[int], message: str) -> None:
        self.path = str(path)
        self.offset = offset
        self.message = message
        self.offset_in_decompressed = False  # set for gzip'd files: the offset counts decompressed bytes
        super().__init__(path, offset, message)

    def __str__(self) -> str:
        where = ""
        if self.offset is not None:
            where = f" at byte offset {self.offset}"
            if self.offset_in_decompressed:
                where += " of the decompressed data"
        return f"{self.path}: {self.message}{where}"


class CaptureCutError(CaptureError):
    """Raised only in strict mode: the file ends inside a record at `offset`."""
