"""Spline toolkit analysis: TCP congestion-control forensics from packet captures.

    >>> import spline_analysis as sa
    >>> cap = sa.read("trace.pcap")
    >>> cap.packets.to_dataframe()        # one row per packet, columns with units

Stages (each reads only what the stage before produced):
decode -> flows -> tcp (wireshark-compatible flags | truth-seeking) -> report.
"""
from __future__ import annotations

__version__ = "0.1.0"


def read(path, **kwargs):
    """Decode a capture file (pcap, pcapng, gzip'd either) into a `Capture`."""
    from .decode import read as _read
    return _read(path, **kwargs)


__all__ = ["read", "__version__"]
