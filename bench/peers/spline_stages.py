#!/usr/bin/env python3
"""Stage driver: time the spline_analysis library stages one by one, in-process.

usage: spline_stages.py CAPTURE [REPEAT]   -> one JSON line

Times (best of REPEAT, in-process, so Python start-up is excluded):
  import_numpy_s, import_spline_analysis_s   (first import only, not repeatable)
  read          spline_analysis.read(path)
  flows         spline_analysis._core.flows.assign_streams(<packet table>)
  wireshark     spline_analysis._core.wireshark.analyze(packets, flows)
  truth         spline_analysis._core.truth.analyze_directions(packets, flows)
  summary       spline_analysis.report.capture_keys(capture, flows)       (the file's keys alone)
  to_json       spline_analysis._core.pipeline.Analysis(...).to_json()           (what the CLI runs)
  json          json.dumps(document, indent=2)
  pipeline      spline_analysis._core.pipeline.analyze(path): all of it, as a cross-check
A stage whose module/function does not exist yet is reported as "missing"; one
that raises is reported with its error. Arguments are found by trying the
(packets, flows), (capture, flows), (packets,), (capture,) in turn, so the
driver keeps working while the API settles.
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
    # (stage, module, function); "flows" falls back to report.assign_streams (a stand-in)
    ("flows", "spline_analysis._core.flows", "assign_streams"),
    ("wireshark", "spline_analysis._core.wireshark", "analyze"),
    ("truth", "spline_analysis._core.truth", "analyze_directions"),
    ("summary", "spline_analysis.report", "capture_keys"),
]
FLOWS_STAND_IN = ("spline_analysis.report", "assign_streams")


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def best_time(call: Callable[[], Any], repeat: int) -> Tuple[float, Any]:
    """Best wall seconds of `repeat` calls, and the result; best CPU seconds in LAST_CPU_S."""
    global LAST_CPU_S
    best_s = best_cpu_s = float("inf")
    result = None
    for _ in range(max(1, repeat)):
        result = None  # free the previous run's result first, so peak RSS is one run's
        start, start_cpu = time.perf_counter(), time.process_time()
        result = call()
        best_s = min(best_s, time.perf_counter() - start)
        best_cpu_s = min(best_cpu_s, time.process_time() - start_cpu)
    LAST_CPU_S = best_cpu_s
    return best_s, result


LAST_CPU_S = 0.0


def find_function(module_name: str, function_name: str) -> Optional[Callable]:
    try:
        module = importlib.import_module(module_name)
    except ImportError:
        return None
    return getattr(module, function_name, None)


def candidate_args(capture: Any, flows: Any) -> List[Tuple[str, tuple]]:
    """Argument lists to try, most specific first: (packets, flows), (capture, flows), ..."""
    packets = getattr(capture, "packets", capture)
    candidates = []
    if flows is not None:
        candidates += [("packets, flows", (packets, flows)), ("capture, flows", (capture, flows))]
    candidates += [("packets", (packets,)), ("capture", (capture,))]
    return candidates


def run_stage(function: Callable, capture: Any, flows: Any, repeat: int) -> Dict[str, Any]:
    errors = []
    for label, arguments in candidate_args(capture, flows):
        try:
            seconds, result = best_time(lambda arguments=arguments: function(*arguments), repeat)
        except Exception as error:  # noqa: BLE001 - wrong argument kind or a bug: report, try the next
            errors.append(f"({label}): {error!r}")
            continue
        return {
            "status": "ok",
            "seconds": seconds,
            "cpu_s": LAST_CPU_S,
            "argument": label,
            "result": result,
            "peak_rss_mb": peak_rss_mb(),
        }
    return {"status": "error", "errors": errors}


class DirectionShim:
    """Stand-in flows result for the truth stage when the flows stage gives no
    `.direction`: direction 0 = same source (address, port) as the stream's first packet."""

    def __init__(self, packets: Any, stream: Any) -> None:
        import numpy as np

        self.stream = np.asarray(stream, dtype=np.int64)
        self.count = int(self.stream.max()) + 1 if len(self.stream) else 0
        self.direction = np.zeros(len(self.stream), dtype=np.uint8)
        rows = np.flatnonzero(self.stream >= 0)
        if len(rows) == 0:
            return
        _ids, first_pos = np.unique(self.stream[rows], return_index=True)
        first_row_of_stream = np.full(self.count, -1, dtype=np.int64)
        first_row_of_stream[_ids] = rows[first_pos]
        first = first_row_of_stream[self.stream[rows]]
        same_src = np.all(packets["src_addr"][rows] == packets["src_addr"][first], axis=1) & (
            packets["sport"][rows] == packets["sport"][first]
        )
        self.direction[rows] = np.where(same_src, 0, 1)


def with_direction(capture: Any, flows: Any) -> Tuple[Any, str]:
    if flows is None or hasattr(flows, "direction"):
        return flows, ""
    stream = getattr(flows, "stream", None)
    if stream is None:
        return flows, ""
    return DirectionShim(getattr(capture, "packets", capture), stream), " (direction: bench shim)"


def time_json(document: Any, repeat: int) -> Dict[str, Any]:
    try:
        seconds, text = best_time(lambda: json.dumps(document, indent=2), repeat)
    except (TypeError, ValueError) as error:
        return {"status": "error", "errors": [repr(error)], "what": "json.dumps"}
    return {
        "status": "ok",
        "seconds": seconds,
        "cpu_s": LAST_CPU_S,
        "argument": f"document ({len(text)} chars)",
        "peak_rss_mb": peak_rss_mb(),
        "what": "json.dumps(indent=2)",
    }


def pipeline_available() -> bool:
    return find_function("spline_analysis._core.pipeline", "Analysis") is not None


def time_pipeline(path: str, capture: Any, results: Dict[str, Any], repeat: int) -> Dict[str, Any]:
    """What the CLI does after the stages: report.document(analysis) (what Analysis.to_json()
    returns, made once there) and json.dumps of it; and the whole pipeline.analyze(path)
    in-process, as a cross-check of the stage sum."""
    from spline_analysis import report
    from spline_analysis._core import pipeline

    timed: Dict[str, Any] = {}
    if all(k in results for k in ("flows", "wireshark", "truth")):
        analysis = pipeline.Analysis(
            capture=capture, flows=results["flows"], wireshark=results["wireshark"], directions=results["truth"]
        )
        try:
            seconds, document = best_time(lambda: report.document(analysis), repeat)
            timed["to_json"] = {
                "status": "ok",
                "seconds": seconds,
                "cpu_s": LAST_CPU_S,
                "argument": "Analysis of the stages above",
                "peak_rss_mb": peak_rss_mb(),
                "what": "report.document",
            }
            timed["json"] = time_json(document, repeat)
        except Exception as error:  # noqa: BLE001
            timed["to_json"] = {"status": "error", "errors": [repr(error)], "what": "report.document"}
    try:
        seconds, _ = best_time(lambda: pipeline.analyze(path), repeat)
        timed["pipeline"] = {
            "status": "ok",
            "seconds": seconds,
            "cpu_s": LAST_CPU_S,
            "argument": "path",
            "peak_rss_mb": peak_rss_mb(),
            "what": "pipeline.analyze (all stages, cross-check)",
        }
    except Exception as error:  # noqa: BLE001
        timed["pipeline"] = {"status": "error", "errors": [repr(error)], "what": "pipeline.analyze"}
    return timed


def main() -> None:
    if len(sys.argv) < 2:
        sys.exit("usage: spline_stages.py CAPTURE [REPEAT]")
    path = sys.argv[1]
    repeat = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    report: Dict[str, Any] = {"stages": {}}

    start, start_cpu = time.perf_counter(), time.process_time()
    import numpy  # noqa: F401

    report["import_numpy_s"] = time.perf_counter() - start
    report["import_numpy_cpu_s"] = time.process_time() - start_cpu
    start, start_cpu = time.perf_counter(), time.process_time()
    try:
        import spline_analysis
    except ImportError as error:
        report["error"] = f"import spline_analysis: {error!r}"
        print(json.dumps(report))
        return
    report["import_spline_analysis_s"] = time.perf_counter() - start
    report["import_spline_analysis_cpu_s"] = time.process_time() - start_cpu

    try:
        seconds, capture = best_time(lambda: spline_analysis.read(path), repeat)
    except Exception as error:  # noqa: BLE001
        report["stages"]["read"] = {
            "status": "error",
            "errors": [repr(error)],
            "traceback": traceback.format_exc(limit=3),
        }
        print(json.dumps(report))
        return
    report["stages"]["read"] = {
        "status": "ok",
        "seconds": seconds,
        "cpu_s": LAST_CPU_S,
        "argument": "path",
        "peak_rss_mb": peak_rss_mb(),
    }
    packets = getattr(capture, "packets", None)
    try:
        report["packets"] = len(packets) if packets is not None else len(capture)
    except TypeError:
        pass

    flows = None
    results: Dict[str, Any] = {}
    for stage, module_name, function_name in STAGES:
        function = find_function(module_name, function_name)
        what = f"{module_name}.{function_name}"
        if function is None and stage == "flows":
            function = find_function(*FLOWS_STAND_IN)
            what = ".".join(FLOWS_STAND_IN) + " (stand-in: flows.assign_streams missing)"
        if function is None:
            report["stages"][stage] = {"status": "missing", "what": what}
            continue
        if stage == "summary" and pipeline_available():
            continue  # the pipeline's to_json (below) is what the CLI runs; capture_keys is inside it
        stage_flows, shim_note = with_direction(capture, flows) if stage == "truth" else (flows, "")
        outcome = run_stage(function, capture, stage_flows, repeat)
        what += shim_note
        if outcome["status"] == "ok":
            results[stage] = outcome["result"]
            if stage == "flows":
                flows = outcome["result"]  # per-packet stream ids feed the tcp stages
            if stage == "summary":
                report["stages"]["json"] = time_json(outcome["result"], repeat)
        outcome.pop("result", None)
        outcome["what"] = what
        report["stages"][stage] = outcome
    if pipeline_available():
        report["stages"].update(time_pipeline(path, capture, results, repeat))
    report["stages"]["json"] = report["stages"].pop("json", {"status": "missing", "what": "json.dumps"})
    report["peak_rss_mb"] = peak_rss_mb()
    print(json.dumps(report))


if __name__ == "__main__":
    main()
