"""Analyse a testbed capture with the library and pick out one flow's data direction."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple


def analyse_capture(pcap_path: Path) -> Tuple[Optional[List[Dict[str, Any]]], Optional[str]]:
    """The `directions` of the capture's report (`spline_analysis.analyze(pcap_path).to_json()`,
    what `spline-analyze --json` prints), or None and why not."""
    from .. import analyze
    try:
        document = analyze(str(pcap_path)).to_json()
    except Exception as exc:  # noqa: BLE001 - one bad capture must not stop a matrix
        return None, f"analysis of {pcap_path} failed: {exc.__class__.__name__}: {exc}"
    directions = document.get("directions") if isinstance(document, dict) else None
    if not directions:
        return None, "the analysis report has no 'directions' list yet; throughput from iperf3, lost_segments empty"
    return list(directions), None


def find_direction(directions: Optional[List[Dict[str, Any]]], src: str, sport: int) -> Optional[Dict[str, Any]]:
    """The direction whose data leave `src`:`sport` (the flow's data direction), if present."""
    for direction in directions or []:
        if str(direction.get("src")) == src and int(direction.get("sport", -1)) == sport:
            return direction
    return None
