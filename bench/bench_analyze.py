#!/usr/bin/env python3
"""Speed and memory of `spline-analyze` against its peers, on one capture, in one run.

usage: bench_analyze.py [CAPTURE] [--repeat N] [--scapy-limit N] [--pyshark-limit N] [--full]
                        [--skip TOOL ...] [--json OUT.json] [--profile]

Every tool runs as a child of this process (same process tree, same warm page
cache): wall-clock seconds from fork to reap (best of --repeat for runs shorter
than --cheap-s), peak RSS from that child's own rusage (os.wait4). scapy and
pyshark are slow, so they read the first N packets and their whole-file time is
extrapolated (start-up measured separately, plus per-packet time x packets).

Prints a table (tool, seconds, packets/s, peak RSS MB, tool time / ours), then
the two acceptance lines. Exit status: 0 goals met, 1 a goal missed, 2 could not
measure ours. It is a check, not part of the test suite (timings are noisy).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

BENCH_DIR = Path(__file__).resolve().parent
REPO_DIR = BENCH_DIR.parent
PEERS_DIR = BENCH_DIR / "peers"
VENV_BIN = REPO_DIR / ".venv" / "bin"
PYTHON = str(VENV_BIN / "python") if (VENV_BIN / "python").exists() else sys.executable
DEFAULT_CAPTURE = BENCH_DIR / "data" / "1m.pcap"

GOAL_TSHARK_SPEEDUP = 20.0   # spline-analyze must be >= 20x faster than tshark -z expert
GOAL_TCPTRACE_SLOWDOWN = 2.0  # ... and take at most 2x the time of tcptrace -l
OURS = "spline-analyze --json"


@dataclass
class Measurement:
    tool: str
    command: List[str]
    seconds: Optional[float] = None        # best wall-clock time (extrapolated if limited)
    runs_s: List[float] = field(default_factory=list)
    peak_rss_mb: Optional[float] = None
    packets: Optional[int] = None          # packets the tool was asked to process
    extrapolated: bool = False
    returncode: Optional[int] = None
    note: str = ""
    skipped: str = ""                      # why it was not run
    group: str = "tools"                   # tools | ours-stages | start-up

    def packets_per_s(self) -> Optional[float]:
        if self.seconds and self.packets:
            return self.packets / self.seconds
        return None


# ---------------------------------------------------------------- child processes

def run_child(command: Sequence[str], stdout_path: str = os.devnull) -> Tuple[float, float, int]:
    """Run one child to completion: (wall seconds, its peak RSS in MB, exit code)."""
    with open(stdout_path, "wb") as out, open(os.devnull, "wb") as err:
        start = time.perf_counter()
        child = subprocess.Popen(list(command), stdout=out, stderr=err, cwd=str(REPO_DIR))
        _pid, status, usage = os.wait4(child.pid, 0)
        wall_s = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)  # already reaped: keep Popen quiet
    return wall_s, usage.ru_maxrss / 1024.0, child.returncode


def measure(tool: str, command: Sequence[str], repeat: int, cheap_s: float,
            packets: Optional[int], stdout_path: str = os.devnull, group: str = "tools") -> Measurement:
    """Best of `repeat` runs, but a run longer than `cheap_s` is not repeated."""
    result = Measurement(tool=tool, command=list(command), packets=packets, group=group)
    for _ in range(max(1, repeat)):
        wall_s, rss_mb, code = run_child(command, stdout_path)
        result.runs_s.append(wall_s)
        result.peak_rss_mb = max(result.peak_rss_mb or 0.0, rss_mb)
        result.returncode = code
        if code != 0 or wall_s > cheap_s:
            break
    result.seconds = min(result.runs_s)
    if result.returncode != 0:
        result.note = f"exit {result.returncode}"
    return result


def count_packets(capture: Path) -> int:
    out = subprocess.run(["capinfos", "-M", "-c", str(capture)], capture_output=True, text=True).stdout
    found = re.search(r"Number of packets:\s*(\d+)", out)
    if not found:
        sys.exit(f"bench_analyze: capinfos could not read {capture}")
    return int(found.group(1))


def warm_page_cache(capture: Path) -> None:
    with open(capture, "rb") as handle:
        while handle.read(1 << 22):
            pass


# ---------------------------------------------------------------- ours

def spline_analyze_command() -> Optional[List[str]]:
    script = VENV_BIN / "spline-analyze"
    if not script.exists():
        return None
    probe = subprocess.run([PYTHON, "-c", "import spline_analysis.cli"], capture_output=True, cwd=str(REPO_DIR))
    if probe.returncode != 0:
        return None
    return [str(script)]


def measure_ours(capture: Path, total_packets: int, repeat: int, cheap_s: float) -> Measurement:
    command = spline_analyze_command()
    if command is None:
        return Measurement(tool=OURS, command=[], skipped="spline_analysis.cli not importable yet")
    with tempfile.NamedTemporaryFile(prefix="bench-ours-", suffix=".json", delete=False) as tmp:
        out_path = tmp.name
    try:
        result = measure(OURS, command + ["--json", str(capture)], repeat, cheap_s, total_packets, out_path)
        result.note = (result.note + " " + describe_json_output(out_path)).strip()
    finally:
        os.unlink(out_path)
    return result


def describe_json_output(path: str) -> str:
    size_bytes = os.path.getsize(path)
    try:
        with open(path, "rb") as handle:
            json.load(handle)
    except (ValueError, UnicodeDecodeError):
        return f"(stdout {size_bytes} B, NOT valid JSON)"
    return f"(valid JSON, {size_bytes / 1024:.0f} KiB)"


def measure_stages(capture: Path, total_packets: int, repeat: int) -> List[Measurement]:
    """Library stages, timed in-process by bench/peers/spline_stages.py."""
    command = [PYTHON, str(PEERS_DIR / "spline_stages.py"), str(capture), str(repeat)]
    with tempfile.NamedTemporaryFile(prefix="bench-stages-", suffix=".json", delete=False) as tmp:
        out_path = tmp.name
    try:
        wall_s, rss_mb, code = run_child(command, out_path)
        text = Path(out_path).read_text()
    finally:
        os.unlink(out_path)
    try:
        report = json.loads(text.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return [Measurement(tool="spline_analysis stages", command=command, group="ours-stages",
                            skipped=f"stage driver failed (exit {code})")]
    rows = []
    if "import_spline_analysis_s" in report:
        rows.append(Measurement(tool="  import numpy", command=command, group="ours-stages",
                                seconds=report["import_numpy_s"], note="in-process, first import"))
        rows.append(Measurement(tool="  import spline_analysis", command=command, group="ours-stages",
                                seconds=report["import_spline_analysis_s"], note="after numpy"))
    if "error" in report:
        rows.append(Measurement(tool="spline_analysis", command=command, group="ours-stages",
                                skipped=report["error"]))
    for stage, outcome in report.get("stages", {}).items():
        what, _, aside = outcome.get("what", stage).partition(" (")
        name = "  " + ("spline_analysis.read" if stage == "read" else what.replace("spline_analysis.", ""))
        per_packet_stage = stage not in ("summary", "json")
        row = Measurement(tool=name, command=command, group="ours-stages",
                          packets=total_packets if per_packet_stage else None)
        if outcome["status"] == "ok":
            row.seconds = outcome["seconds"]
            row.peak_rss_mb = outcome.get("peak_rss_mb")
            row.note = f"args: {outcome['argument']}" + (f"; {aside.rstrip(')')}" if aside else "")
        elif outcome["status"] == "missing":
            row.skipped = "not written yet"
        else:
            errors = outcome.get("errors", [])
            row.skipped = "error: " + (errors[0][:160] if errors else "?") + (
                f" (+{len(errors) - 1} other argument lists failed)" if len(errors) > 1 else "")
        rows.append(row)
    if report.get("stages"):
        rows.append(Measurement(tool="  stage driver, whole process", command=command, group="ours-stages",
                                seconds=wall_s, peak_rss_mb=rss_mb,
                                note=f"repeat {repeat} per stage, incl. start-up; stage RSS = process peak so far"))
    return rows


def measure_startup(repeat: int) -> List[Measurement]:
    """Where a Python CLI's fixed cost goes: interpreter, numpy, our package."""
    probes = [
        ("python -c pass", [PYTHON, "-c", "pass"]),
        ("python -c 'import numpy'", [PYTHON, "-c", "import numpy"]),
        ("python -c 'import spline_analysis.cli'", [PYTHON, "-c", "import spline_analysis.cli"]),
    ]
    return [measure(name, command, max(repeat, 5), 5.0, None, group="start-up") for name, command in probes]


# ---------------------------------------------------------------- peers

def measure_limited_peer(tool: str, driver: str, capture: Path, total_packets: int,
                         limit: int, repeat: int) -> Measurement:
    """Run a Python peer driver on the first `limit` packets; extrapolate to the whole file."""
    command = [PYTHON, str(PEERS_DIR / driver), str(capture)]
    startup = measure(tool + " start-up", command + ["1"], repeat, 5.0, 1)
    if limit <= 0 or limit >= total_packets:
        result = measure(tool, command + ["0"], 1, 0.0, total_packets)
        return result
    result = measure(tool, command + [str(limit)], 1, 0.0, total_packets)
    measured_s = result.seconds or 0.0
    per_packet_s = max(measured_s - (startup.seconds or 0.0), 0.0) / limit
    result.seconds = (startup.seconds or 0.0) + per_packet_s * total_packets
    result.extrapolated = True
    result.note = (f"extrapolated from {limit} packets in {measured_s:.2f} s "
                   f"(start-up {startup.seconds:.2f} s); RSS of the limited run")
    return result


def measure_peers(capture: Path, total_packets: int, args: argparse.Namespace) -> List[Measurement]:
    rows: List[Measurement] = []
    wanted = lambda name: name not in args.skip  # noqa: E731
    if wanted("tshark"):
        if shutil.which("tshark"):
            rows.append(measure("tshark -q -z expert", ["tshark", "-r", str(capture), "-q", "-z", "expert"],
                                args.repeat, args.cheap_s, total_packets))
            if wanted("tshark-conv"):
                rows.append(measure("tshark -z conv,tcp (seq analysis)",
                                    ["tshark", "-r", str(capture), "-q", "-o",
                                     "tcp.analyze_sequence_numbers:TRUE", "-z", "conv,tcp"],
                                    args.repeat, args.cheap_s, total_packets))
        else:
            rows.append(Measurement(tool="tshark", command=[], skipped="not installed"))
    if wanted("tcptrace"):
        if shutil.which("tcptrace"):
            rows.append(measure("tcptrace -l", ["tcptrace", "-l", str(capture)],
                                args.repeat, args.cheap_s, total_packets))
        else:
            rows.append(Measurement(tool="tcptrace", command=[], skipped="not installed"))
    if wanted("dpkt"):
        rows.append(measure("dpkt loop (flow payload sums)",
                            [PYTHON, str(PEERS_DIR / "dpkt_flows.py"), str(capture), "0"],
                            args.repeat, args.cheap_s, total_packets))
    if wanted("scapy"):
        limit = 0 if args.full else args.scapy_limit
        rows.append(measure_limited_peer("scapy PcapReader loop", "scapy_flows.py", capture, total_packets,
                                         limit, args.repeat))
    if wanted("pyshark"):
        if python_can_import("pyshark"):
            limit = 0 if args.full else args.pyshark_limit
            rows.append(measure_limited_peer("pyshark FileCapture loop", "pyshark_flows.py", capture,
                                             total_packets, limit, args.repeat))
        else:
            rows.append(Measurement(tool="pyshark", command=[], skipped="not installed (.venv/bin/pip install pyshark)"))
    return rows


def python_can_import(module: str) -> bool:
    return subprocess.run([PYTHON, "-c", f"import {module}"], capture_output=True).returncode == 0


# ---------------------------------------------------------------- profile

def profile_ours(capture: Path, top: int = 25) -> str:
    """cProfile of the whole CLI (cumulative), and -X importtime's slowest imports."""
    if spline_analyze_command() is None:
        return "spline-analyze not available: nothing to profile"
    sections = []
    prof = subprocess.run([PYTHON, "-m", "cProfile", "-s", "cumulative", "-m", "spline_analysis.cli",
                           "--json", str(capture)], capture_output=True, text=True, cwd=str(REPO_DIR))
    lines = prof.stdout.splitlines()
    start = next((i for i, line in enumerate(lines) if "ncalls" in line and "cumtime" in line), None)
    if start is not None:
        header = next((line for line in lines[max(0, start - 4):start] if "function calls" in line), "")
        sections.append("cProfile, cumulative (spline-analyze --json):\n" + header.strip() + "\n" +
                        "\n".join(lines[start:start + top + 1]))
    else:
        sections.append("cProfile produced no table (exit %d): %s" % (prof.returncode, prof.stderr[-500:]))
    imports = subprocess.run([PYTHON, "-X", "importtime", "-c", "import spline_analysis.cli"],
                             capture_output=True, text=True, cwd=str(REPO_DIR))
    rows = []
    for line in imports.stderr.splitlines():
        parts = line.split("|")
        if len(parts) == 3 and parts[1].strip().isdigit():
            rows.append((int(parts[1]), parts[2].rstrip()))
    rows.sort(reverse=True)
    sections.append("-X importtime, slowest cumulative imports of spline_analysis.cli (us):\n" +
                    "\n".join(f"{us:>10}  {name}" for us, name in rows[:15]))
    return "\n\n".join(sections)


# ---------------------------------------------------------------- report

def format_table(rows: List[Measurement], ours: Measurement) -> str:
    header = f"{'tool':<40} {'seconds':>9} {'packets/s':>12} {'peak RSS MB':>12} {'tool/ours':>10}  note"
    lines = [header, "-" * len(header)]
    width = max([40] + [len(row.tool) for row in rows])
    header = header.replace(f"{'tool':<40}", f"{'tool':<{width}}")
    lines = [header, "-" * len(header)]
    group = None
    for row in rows:
        if row.group != group:
            group = row.group
            if group != "tools":
                lines.append(f"[{group}]")
        if row.skipped:
            lines.append(f"{row.tool:<{width}} {'-':>9} {'-':>12} {'-':>12} {'-':>10}  skipped: {row.skipped}")
            continue
        seconds = f"{row.seconds:.3f}{'*' if row.extrapolated else ''}" if row.seconds is not None else "-"
        pps = row.packets_per_s()
        rate = f"{pps:,.0f}" if pps else "-"
        rss = f"{row.peak_rss_mb:.0f}" if row.peak_rss_mb is not None else "-"
        ratio = "-"
        if row.group == "tools" and ours.seconds and row.seconds:
            ratio = f"{row.seconds / ours.seconds:.2f}x"
        lines.append(f"{row.tool:<{width}} {seconds:>9} {rate:>12} {rss:>12} {ratio:>10}  {row.note}")
    lines.append("* extrapolated to the whole file; tool/ours > 1 means ours is faster")
    return "\n".join(lines)


def acceptance(ours: Measurement, rows: List[Measurement]) -> Tuple[List[str], bool]:
    by_tool: Dict[str, Measurement] = {row.tool: row for row in rows}
    tshark = by_tool.get("tshark -q -z expert")
    tcptrace = by_tool.get("tcptrace -l")
    lines, ok = [], True
    if not ours.seconds:
        return [f"spline-analyze: not measured ({ours.skipped or ours.note}): goals cannot be checked"], False
    if ours.returncode != 0:
        lines.append(f"WARNING: spline-analyze exited {ours.returncode}; its time is not a valid result")
        ok = False
    if tshark and tshark.seconds:
        speedup = tshark.seconds / ours.seconds
        met = speedup >= GOAL_TSHARK_SPEEDUP
        ok &= met
        lines.append(f"spline-analyze vs tshark -z expert: {speedup:.1f}x faster "
                     f"(goal >= {GOAL_TSHARK_SPEEDUP:.0f}x) {'OK' if met else 'MISSED'}")
    else:
        lines.append("spline-analyze vs tshark -z expert: tshark not measured")
    if tcptrace and tcptrace.seconds:
        slowdown = ours.seconds / tcptrace.seconds
        met = slowdown <= GOAL_TCPTRACE_SLOWDOWN
        ok &= met
        relation = (f"{slowdown:.2f}x tcptrace's time" if slowdown >= 1
                    else f"{1 / slowdown:.2f}x faster than tcptrace")
        lines.append(f"spline-analyze vs tcptrace -l: {relation} "
                     f"(goal: within {GOAL_TCPTRACE_SLOWDOWN:.0f}x) {'OK' if met else 'MISSED'}")
    else:
        lines.append("spline-analyze vs tcptrace -l: tcptrace not measured")
    return lines, ok


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("capture", nargs="?", default=str(DEFAULT_CAPTURE),
                        help="capture file (default bench/data/1m.pcap; make it with bench/make_capture.sh)")
    parser.add_argument("--repeat", type=int, default=3, help="best of N for cheap runs (default 3)")
    parser.add_argument("--cheap-s", type=float, default=5.0,
                        help="a run longer than this many seconds is not repeated (default 5)")
    parser.add_argument("--scapy-limit", type=int, default=50_000,
                        help="scapy reads this many packets, time extrapolated (default 50000)")
    parser.add_argument("--pyshark-limit", type=int, default=5_000,
                        help="pyshark reads this many packets, time extrapolated (default 5000)")
    parser.add_argument("--full", action="store_true", help="scapy and pyshark read the whole file (slow)")
    parser.add_argument("--skip", nargs="*", default=[],
                        choices=["tshark", "tshark-conv", "tcptrace", "dpkt", "scapy", "pyshark",
                                 "stages", "startup"], help="tools not to run")
    parser.add_argument("--json", metavar="OUT", help="also write the results as JSON to OUT")
    parser.add_argument("--profile", action="store_true",
                        help="profile spline-analyze (cProfile, import times) even if the goals are met")
    return parser.parse_args(argv)


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    capture = Path(args.capture).resolve()
    if not capture.exists():
        sys.exit(f"bench_analyze: {capture} does not exist (make it: sudo bench/make_capture.sh)")
    total_packets = count_packets(capture)
    warm_page_cache(capture)
    print(f"capture: {capture} ({total_packets:,} packets, {capture.stat().st_size / 1e6:.0f} MB); "
          f"machine: {os.cpu_count()} cores; best of {args.repeat} for runs < {args.cheap_s:g} s", flush=True)

    ours = measure_ours(capture, total_packets, args.repeat, args.cheap_s)
    rows: List[Measurement] = [ours] + measure_peers(capture, total_packets, args)
    if "stages" not in args.skip:
        rows += measure_stages(capture, total_packets, args.repeat)
    if "startup" not in args.skip:
        rows += measure_startup(args.repeat)

    print(format_table(rows, ours))
    print()
    lines, ok = acceptance(ours, rows)
    print("\n".join(lines))
    profile_text = ""
    if args.profile or (ours.seconds and not ok):
        profile_text = profile_ours(capture)
        print("\n" + profile_text)
    if args.json:
        Path(args.json).write_text(json.dumps({
            "capture": str(capture), "packets": total_packets, "cores": os.cpu_count(),
            "measured_at_unix": time.time(), "goals_met": ok, "acceptance": lines,
            "results": [dict(asdict(row), packets_per_s=row.packets_per_s()) for row in rows],
            "profile": profile_text,
        }, indent=2))
        print(f"\nwrote {args.json}")
    if not ours.seconds:
        return 2
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
