"""Analyse a testbed capture with the library and pick out one flow's data direction."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from .._core.errors import CaptureError


def analyse_capture(pcap_path: Path) -> Tuple[Optional[List[Dict[str, Any]]], Optional[str]]:
    """The `directions` of the capture's report (`spline_analysis.analyze(pcap_path).to_json()`,
    what `spline-analyze --json` prints), or None and why not.

    A capture the decoder rejects (CaptureError: damaged, cut, not a capture) becomes a note on
    the run's rows, so one bad capture does not stop a matrix. Any other exception is a bug in
    the analysis and propagates: a note would hide it behind empty columns."""
    from .. import analyze

    try:
        document = analyze(str(pcap_path)).to_json()
    except CaptureError as exc:
        return None, f"analysis of {pcap_path} failed: {exc}"
    directions = document.get("directions")
    if not directions:
        return None, f"{pcap_path} holds no flow direction that carried data"
    return list(directions), None


def find_direction(directions: Optional[List[Dict[str, Any]]], src: str, sport: int) -> Optional[Dict[str, Any]]:
    """The direction whose data leave `src`:`sport` (the flow's data direction), if present."""
    for direction in directions or []:
        if str(direction.get("src")) == src and int(direction.get("sport", -1)) == sport:
            return direction
    return None
