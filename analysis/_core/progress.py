"""A dependency-free progress bar for the CLI (stderr, only on a terminal).

Library code takes a `progress(bytes_done, bytes_total)` callback; this
module provides the one the CLI passes. It redraws at most every 0.1 s.
"""

from __future__ import annotations

import sys
import time
from typing import Callable, Optional, TextIO

# Files smaller than this decode in well under a second: no bar.
MIN_BYTES_FOR_BAR = 64 * 1024 * 1024
REDRAW_INTERVAL_S = 0.1
BAR_WIDTH_CHARS = 30


class ProgressBar:
    """Callable `(bytes_done, bytes_total)` drawing `label [=====     ]  42%` on `stream`."""

    def __init__(self, label: str, stream: TextIO = sys.stderr) -> None:
        self.label = label
        self.stream = stream
        self._last_draw_s = 0.0
        self._drawn = False

    def __call__(self, bytes_done: int, bytes_total: int) -> None:
        now_s = time.monotonic()
        if bytes_done < bytes_total and now_s - self._last_draw_s < REDRAW_INTERVAL_S:
            return
        self._last_draw_s = now_s
        fraction = 1.0 if bytes_total <= 0 else min(1.0, bytes_done / bytes_total)
        filled = int(fraction * BAR_WIDTH_CHARS)
        self.stream.write(f"\r{self.label} [{'=' * filled}{' ' * (BAR_WIDTH_CHARS - filled)}] {fraction * 100:3.0f}%")
        self.stream.flush()
        self._drawn = True

    def close(self) -> None:
        if self._drawn:
            self.stream.write("\r" + " " * (len(self.label) + BAR_WIDTH_CHARS + 8) + "\r")
            self.stream.flush()


def bar_for(label: str, size_bytes: int, stream: TextIO = sys.stderr) -> Optional[ProgressBar]:
    """A ProgressBar when `stream` is a terminal and the file is large, else None."""
    isatty: Callable[[], bool] = getattr(stream, "isatty", lambda: False)
    if size_bytes < MIN_BYTES_FOR_BAR or not isatty():
        return None
    return ProgressBar(label, stream)
