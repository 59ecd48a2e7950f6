"""Run one call on another thread, and hand back its value or its error.

The C passes release the GIL, so on a machine with several cores two of them
can run at once (the halves of a decode walk; the tshark-compatible flags
beside the truth-seeking pass).
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Optional


class Background(threading.Thread):
    """`Background(function, *args).start()`; later `result()` joins and returns
    the call's value, or raises the exception it raised."""

    def __init__(self, function: Callable[..., Any], *args: Any) -> None:
        super().__init__(daemon=True)
        self._call = (function, args)
        self._value: Any = None
        self._error: Optional[BaseException] = None

    def run(self) -> None:
        function, args = self._call
        try:
            self._value = function(*args)
        except BaseException as error:  # handed to the caller in result()
            self._error = error

    def result(self) -> Any:
        self.join()
        if self._error is not None:
            raise self._error
        return self._value
