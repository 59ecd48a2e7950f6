"""Spline toolkit analysis: TCP congestion-control forensics from packet captures.

    >>> import spline_analysis as sa
    >>> a = sa.analyze("trace.pcap")      # every stage, once; the files beside it read once
    >>> a.to_json()["summary"]            # what `spline-analyze --json` prints
    >>> a.timeseries(0.1)                 # per 100 ms per direction (DataFrame)
    >>> sa.read("trace.pcap").packets.to_dataframe()   # decode only: one row per packet

Stages (each reads only what the stage before produced):
sidecars + decode -> flows -> tcp (wireshark-compatible flags | truth-seeking) -> report.

The public names below load on first use (PEP 562), so `import spline_analysis` and the
`spline-analyze` start-up pay only for what a run touches.
"""

from __future__ import annotations

# not `from typing import ...`: importing typing is ~15 ms of every start-up, during which the
# console entry (`_console`) cannot yet turn Ctrl-C into one line
TYPE_CHECKING = False

__version__ = "0.1.0"

# public name -> module (relative) that defines it
_EXPORTS = {
    "read": "._core.decode",
    "Capture": "._core.decode",
    "PacketTable": "._core.packets",
    "analyze": "._core.pipeline",
    "Analysis": "._core.pipeline",
    "Flows": "._core.flows",
    "Directions": "._core.truth",
    "WiresharkAnalysis": "._core.wireshark",
    "SplineError": "._core.errors",
    "CaptureError": "._core.errors",
    "CaptureCutError": "._core.errors",
    "SCHEMA_VERSION": ".schema",
}
# public modules: figures, the report and its schema
_MODULES = ("plot", "report", "schema")

__all__ = [
    "Analysis",
    "Capture",
    "CaptureCutError",
    "CaptureError",
    "Directions",
    "Flows",
    "PacketTable",
    "SCHEMA_VERSION",
    "SplineError",
    "WiresharkAnalysis",
    "__version__",
    "analyze",
    "plot",
    "read",
    "report",
    "schema",
]

if TYPE_CHECKING:
    from typing import Any

    from . import plot, report, schema
    from ._core.decode import Capture, read
    from ._core.errors import CaptureCutError, CaptureError, SplineError
    from ._core.flows import Flows
    from ._core.packets import PacketTable
    from ._core.pipeline import Analysis, analyze
    from ._core.truth import Directions
    from ._core.wireshark import WiresharkAnalysis
    from .schema import SCHEMA_VERSION


def __getattr__(name: str) -> Any:
    from importlib import import_module  # here: the CLI's start-up never needs it

    if name in _EXPORTS:
        value = getattr(import_module(_EXPORTS[name], __name__), name)
    elif name in _MODULES:
        value = import_module(f".{name}", __name__)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list:
    return __all__
