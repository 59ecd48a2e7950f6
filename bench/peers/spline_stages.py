#!/usr/bin/env python3
"""Stage driver: time the spline_analysis library stages one by one, in-process.

usage: spline_stages.py CAPTURE [REPEAT]   -> one JSON line

Times (best of REPEAT, in-process, so Python start-up is excluded):
  import_numpy_s, import_spline_analysis_s   (first import only, not repeatable)
  read          spline_analysis.read(path)
  flows         spline_analysis.flows.assign_streams(<packet table>)
  wireshark     spline_analysis.wireshark.analyze(<table with streams>)
  truth         spline_analysis.truth.analyze_directions(<table with streams>)
A stage whose module/function does not exist yet is reported as "missing"; one
that raises is reported with its error. Arguments are found by trying the
previous stage's result, then the Capture, then its packet table, so the driver
keeps working while the API settles.
"""
from __future__ import annotations

import importlib
import json
import resource
import sys
import time
import traceback
from typing import Any, Callable, Dict, List, Optional, Tuple

STAGES: List[Tuple[str, str, str]] = [
    # (stage, module, function)
    ("flows", "spline_analysis.flows", "assign_streams"),
    ("wireshark", "spline_analysis.wireshark", "analyze"),
    ("truth", "spline_analysis.truth", "analyze_directions"),
]


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def best_time(call: Callable[[], Any], repeat: int) -> Tuple[float, Any]:
    best_s = float("inf")
    result = None
    for _ in range(max(1, repeat)):
        start = time.perf_counter()
        result = call()
        best_s = min(best_s, time.perf_counter() - start)
    return best_s, result


def find_function(module_name: str, function_name: str) -> Optional[Callable]:
    try:
        module = importlib.import_module(module_name)
    except ImportError:
        return None
    return getattr(module, function_name, None)


def candidate_args(capture: Any, previous: Any) -> List[Tuple[str, Any]]:
    candidates = []
    if previous is not None:
        candidates.append(("previous stage result", previous))
    candidates.append(("Capture", capture))
    packets = getattr(capture, "packets", None)
    if packets is not None:
        candidates.append(("Capture.packets", packets))
    return candidates


def run_stage(function: Callable, capture: Any, previous: Any, repeat: int) -> Dict[str, Any]:
    errors = []
    for label, argument in candidate_args(capture, previous):
        try:
            seconds, result = best_time(lambda: function(argument), repeat)
        except TypeError as error:  # wrong argument kind: try the next candidate
            errors.append(f"{label}: {error!r}")
            continue
        except Exception as error:  # noqa: BLE001 - report, do not die
            errors.append(f"{label}: {error!r}")
            continue
        return {"status": "ok", "seconds": seconds, "argument": label, "result": result,
                "peak_rss_mb": peak_rss_mb()}
    return {"status": "error", "errors": errors}


def main() -> None:
    if len(sys.argv) < 2:
        sys.exit("usage: spline_stages.py CAPTURE [REPEAT]")
    path = sys.argv[1]
    repeat = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    report: Dict[str, Any] = {"stages": {}}

    start = time.perf_counter()
    import numpy  # noqa: F401
    report["import_numpy_s"] = time.perf_counter() - start
    start = time.perf_counter()
    try:
        import spline_analysis
    except ImportError as error:
        report["error"] = f"import spline_analysis: {error!r}"
        print(json.dumps(report))
        return
    report["import_spline_analysis_s"] = time.perf_counter() - start

    try:
        seconds, capture = best_time(lambda: spline_analysis.read(path), repeat)
    except Exception as error:  # noqa: BLE001
        report["stages"]["read"] = {"status": "error", "errors": [repr(error)],
                                    "traceback": traceback.format_exc(limit=3)}
        print(json.dumps(report))
        return
    report["stages"]["read"] = {"status": "ok", "seconds": seconds, "argument": "path",
                                "peak_rss_mb": peak_rss_mb()}
    packets = getattr(capture, "packets", None)
    try:
        report["packets"] = len(packets) if packets is not None else len(capture)
    except TypeError:
        pass

    previous = None
    for stage, module_name, function_name in STAGES:
        function = find_function(module_name, function_name)
        if function is None:
            report["stages"][stage] = {"status": "missing", "what": f"{module_name}.{function_name}"}
            continue
        outcome = run_stage(function, capture, previous, repeat)
        if outcome["status"] == "ok" and stage == "flows":
            previous = outcome["result"]  # the table with stream ids feeds the tcp stages
        outcome.pop("result", None)
        outcome["what"] = f"{module_name}.{function_name}"
        report["stages"][stage] = outcome
    report["peak_rss_mb"] = peak_rss_mb()
    print(json.dumps(report))


if __name__ == "__main__":
    main()
