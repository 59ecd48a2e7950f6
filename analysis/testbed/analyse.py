"""Analyse a testbed capture with the library and pick out one flow's data direction."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple


def analyse_capture(pcap_path: Path) -> Tuple[Optional[List[Dict[str, Any]]], Optional[str]]:
    """The `directions` of `spline_analysis.report.analyze_file(pcap_path)`, or None and why not."""
    try:
        from spline_analysis.report import analyze_file
    except ImportError as exc:
        return None, f"spline_analysis.report.analyze_file is not available ({exc}); throughput from iperf3, lost_segments empty"
    try:
        document = analyze_file(str(pcap_path))
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
