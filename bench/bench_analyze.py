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
import pstats
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

GOAL_TSHARK_SPEEDUP = 20.0  # spline-analyze must be >= 20x faster than tshark -z expert
GOAL_TCPTRACE_SLOWDOWN = 2.0  # ... and take at most 2x the time of tcptrace -l
OURS = "spline-analyze --json"
# Children run as a user's would: with cached bytecode. This environment may set
# PYTHONDONTWRITEBYTECODE=1, which makes every run recompile our package's sources
# (~10-15 ms); the cache goes to bench/data/pycache (git-ignored), not into the source tree.
PYCACHE_DIR = BENCH_DIR / "data" / "pycache"
CHILD_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
CHILD_ENV["PYTHONPYCACHEPREFIX"] = str(PYCACHE_DIR)
SKIPPABLE = ("tshark", "tshark-conv", "tcptrace", "dpkt", "scapy", "pyshark", "stages", "startup")


@dataclass
class Run:
    wall_s: float
    cpu_s: float  # user + system time of the child (robust to other load on the machine)
    rss_mb: float
    returncode: int


@dataclass
class Measurement:
    tool: str
    command: List[str]
    seconds: Optional[float] = None  # best wall-clock time (extrapolated if limited)
    cpu_s: Optional[float] = None  # best user+sys CPU time (extrapolated if limited)
    runs_s: List[float] = field(default_factory=list)
    peak_rss_mb: Optional[float] = None
    packets: Optional[int] = None  # packets the tool was asked to process
    extrapolated: bool = False
    returncode: Optional[int] = None
    ours_ref_s: Optional[float] = None  # best wall time of spline-analyze runs interleaved with this tool's
    ours_ref_cpu_s: Optional[float] = None
    peer_payload_bytes: Optional[int] = None  # a peer loop's whole-file TCP payload total (cross-check)
    note: str = ""
    skipped: str = ""  # why it was not run
    group: str = "tools"  # tools | ours-stages | start-up

    def packets_per_s(self) -> Optional[float]:
        if self.seconds and self.packets:
            return self.packets / self.seconds
        return None

    def ratio(self) -> Optional[float]:
        """This tool's wall time / spline-analyze's, from runs interleaved with each other."""
        return self.seconds / self.ours_ref_s if self.seconds and self.ours_ref_s else None

    def cpu_ratio(self) -> Optional[float]:
        return self.cpu_s / self.ours_ref_cpu_s if self.cpu_s and self.ours_ref_cpu_s else None


# ---------------------------------------------------------------- child processes


def cli_env_defaults() -> Dict[str, str]:
    """Environment defaults the CLI sets for itself (os.environ.setdefault in cli.py, e.g.
    OPENBLAS_NUM_THREADS=1): the start-up probes and the stage driver get them too, so the
    time budget's parts are measured the way the CLI runs them."""
    path = REPO_DIR / "analysis" / "cli.py"
    source = path.read_text(encoding="utf-8") if path.exists() else ""
    return dict(re.findall(r"os\.environ\.setdefault\(\s*[\"']([A-Z0-9_]+)[\"']\s*,\s*[\"']([^\"']*)[\"']", source))


def run_child(command: Sequence[str], stdout_path: str = os.devnull, extra_env: Optional[Dict[str, str]] = None) -> Run:
    """Run one child to completion; wall time from fork to reap, its own rusage."""
    env = dict(CHILD_ENV, **(extra_env or {}))
    with open(stdout_path, "wb") as out, open(os.devnull, "wb") as err:
        start = time.perf_counter()
        child = subprocess.Popen(list(command), stdout=out, stderr=err, cwd=str(REPO_DIR), env=env)
        _pid, status, usage = os.wait4(child.pid, 0)
        wall_s = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)  # already reaped: keep Popen quiet
    return Run(wall_s, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024.0, child.returncode)


class OursRunner:
    """Runs spline-analyze on demand, keeping every run: peers are measured between
    its runs, so a ratio compares runs taken under the same background load."""

    def __init__(self, command: List[str], total_packets: int) -> None:
        self.measurement = Measurement(tool=OURS, command=command, packets=total_packets)
        self.cpu_runs: List[float] = []
        self.tcp_payload_bytes: Optional[int] = None  # from its JSON, to cross-check the peers
        self.out_path = tempfile.NamedTemporaryFile(prefix="bench-ours-", suffix=".json", delete=False).name

    def run_once(self) -> Run:
        run = run_child(self.measurement.command, self.out_path)
        m = self.measurement
        m.runs_s.append(run.wall_s)
        self.cpu_runs.append(run.cpu_s)
        m.peak_rss_mb = max(m.peak_rss_mb or 0.0, run.rss_mb)
        m.returncode = run.returncode if m.returncode in (None, 0) else m.returncode
        m.seconds, m.cpu_s = min(m.runs_s), min(self.cpu_runs)
        m.ours_ref_s, m.ours_ref_cpu_s = m.seconds, m.cpu_s
        return run

    def finish(self) -> Measurement:
        m = self.measurement
        self.tcp_payload_bytes = json_field(self.out_path, "tcp_payload_bytes")
        m.note = (f"exit {m.returncode} " if m.returncode else "") + describe_json_output(self.out_path)
        m.note += f"; best of {len(m.runs_s)} runs interleaved with the peers"
        os.unlink(self.out_path)
        return m


def measure(
    tool: str,
    command: Sequence[str],
    repeat: int,
    cheap_s: float,
    packets: Optional[int],
    group: str = "tools",
    ours: Optional[OursRunner] = None,
    stdout_path: str = os.devnull,
    extra_env: Optional[Dict[str, str]] = None,
) -> Measurement:
    """Best of `repeat` runs (a run longer than `cheap_s` is not repeated). With `ours`,
    spline-analyze runs before each run and once after; its best there is the reference."""
    result = Measurement(tool=tool, command=list(command), packets=packets, group=group)
    cpu_runs: List[float] = []
    ours_runs: List[Run] = []
    for _ in range(max(1, repeat)):
        if ours is not None:
            ours_runs.append(ours.run_once())
        run = run_child(command, stdout_path, extra_env)
        result.runs_s.append(run.wall_s)
        cpu_runs.append(run.cpu_s)
        result.peak_rss_mb = max(result.peak_rss_mb or 0.0, run.rss_mb)
        result.returncode = run.returncode
        if run.returncode != 0 or run.wall_s > cheap_s:
            break
    if ours is not None:
        ours_runs.append(ours.run_once())
        result.ours_ref_s = min(r.wall_s for r in ours_runs)
        result.ours_ref_cpu_s = min(r.cpu_s for r in ours_runs)
    result.seconds, result.cpu_s = min(result.runs_s), min(cpu_runs)
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
    probe = subprocess.run([PYTHON, "-c", "import spline_analysis._core.cli"], capture_output=True, cwd=str(REPO_DIR))
    if probe.returncode != 0:
        return None
    return [str(script)]


def ours_runner(total_packets: int, capture: Path) -> Optional[OursRunner]:
    command = spline_analyze_command()
    if command is None:
        return None
    return OursRunner(command + ["--json", str(capture)], total_packets)


def json_field(path: str, name: str) -> Optional[int]:
    try:
        with open(path, "rb") as handle:
            value = json.load(handle).get(name)
    except (ValueError, UnicodeDecodeError, AttributeError, OSError):
        return None
    return value if isinstance(value, int) else None


def measure_python_peer(
    tool: str, command: List[str], repeat: int, cheap_s: float, packets: int, ours: Optional[OursRunner]
) -> Measurement:
    """A peer driver from bench/peers: its one-line JSON summary goes into the note, so the
    table shows that every loop did the same work (flows, payload bytes)."""
    with tempfile.NamedTemporaryFile(prefix="bench-peer-", suffix=".json", delete=False) as tmp:
        out_path = tmp.name
    try:
        result = measure(tool, command, repeat, cheap_s, packets, ours=ours, stdout_path=out_path)
        lines = Path(out_path).read_text().strip().splitlines()
    finally:
        os.unlink(out_path)
    try:
        summary = json.loads(lines[-1])
        result.peer_payload_bytes = summary["payload_bytes"] if not summary.get("limit") else None
        result.note = (
            result.note + f" {summary['flows']} directed flows, "
            f"{summary['payload_bytes']:,} payload bytes in {summary['packets']:,} packets"
        ).strip()
    except (ValueError, IndexError, KeyError):
        result.note = (result.note + " (no summary line)").strip()
    return result


def describe_json_output(path: str) -> str:
    size_bytes = os.path.getsize(path)
    try:
        with open(path, "rb") as handle:
            json.load(handle)
    except (ValueError, UnicodeDecodeError):
        return f"stdout {size_bytes} B, NOT valid JSON"
    return f"valid JSON, {size_bytes / 1024:.1f} KiB"


def measure_stages(capture: Path, total_packets: int, repeat: int) -> List[Measurement]:
    """Library stages, timed in-process by bench/peers/spline_stages.py."""
    command = [PYTHON, str(PEERS_DIR / "spline_stages.py"), str(capture), str(repeat)]
    with tempfile.NamedTemporaryFile(prefix="bench-stages-", suffix=".json", delete=False) as tmp:
        out_path = tmp.name
    try:
        driver_run = run_child(command, out_path, cli_env_defaults())
        wall_s, rss_mb, code = driver_run.wall_s, driver_run.rss_mb, driver_run.returncode
        text = Path(out_path).read_text()
    finally:
        os.unlink(out_path)
    try:
        report = json.loads(text.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return [
            Measurement(
                tool="spline_analysis stages",
                command=command,
                group="ours-stages",
                skipped=f"stage driver failed (exit {code})",
            )
        ]
    rows = []
    if "import_spline_analysis_s" in report:
        rows.append(
            Measurement(
                tool="  import numpy",
                command=command,
                group="ours-stages",
                seconds=report["import_numpy_s"],
                cpu_s=report.get("import_numpy_cpu_s"),
                note="in-process, first import",
            )
        )
        rows.append(
            Measurement(
                tool="  import spline_analysis",
                command=command,
                group="ours-stages",
                seconds=report["import_spline_analysis_s"],
                cpu_s=report.get("import_spline_analysis_cpu_s"),
                note="after numpy",
            )
        )
    if "error" in report:
        rows.append(Measurement(tool="spline_analysis", command=command, group="ours-stages", skipped=report["error"]))
    for stage, outcome in report.get("stages", {}).items():
        what, _, aside = outcome.get("what", stage).partition(" (")
        name = "  " + ("spline_analysis.read" if stage == "read" else what.replace("spline_analysis.", ""))
        per_packet_stage = stage not in ("summary", "json", "to_json")
        row = Measurement(
            tool=name, command=command, group="ours-stages", packets=total_packets if per_packet_stage else None
        )
        if outcome["status"] == "ok":
            row.seconds = outcome["seconds"]
            row.cpu_s = outcome.get("cpu_s")
            row.peak_rss_mb = outcome.get("peak_rss_mb")
            row.note = f"args: {outcome['argument']}" + (f"; {aside.rstrip(')')}" if aside else "")
        elif outcome["status"] == "missing":
            row.skipped = "not written yet"
        else:
            errors = outcome.get("errors", [])
            row.skipped = (
                "error: "
                + (errors[0][:160] if errors else "?")
                + (f" (+{len(errors) - 1} other argument lists failed)" if len(errors) > 1 else "")
            )
        rows.append(row)
    if report.get("stages"):
        rows.append(
            Measurement(
                tool="  stage driver, whole process",
                command=command,
                group="ours-stages",
                seconds=wall_s,
                cpu_s=driver_run.cpu_s,
                peak_rss_mb=rss_mb,
                note=f"repeat {repeat} per stage, incl. start-up; stage RSS = process peak so far",
            )
        )
    return rows


def measure_startup(repeat: int) -> List[Measurement]:
    """Where a Python CLI's fixed cost goes: interpreter, numpy, our package."""
    probes = [
        ("python -c pass", [PYTHON, "-c", "pass"]),
        ("python -c 'import numpy'", [PYTHON, "-c", "import numpy"]),
        ("python -c 'import spline_analysis._core.cli'", [PYTHON, "-c", "import spline_analysis._core.cli"]),
    ]
    env = cli_env_defaults()
    note = ("with the CLI's own env defaults: " + " ".join(f"{k}={v}" for k, v in env.items())) if env else ""
    rows = [
        measure(name, command, max(repeat, 5), 5.0, None, group="start-up", extra_env=env) for name, command in probes
    ]
    for row in rows:
        row.note = (row.note + " " + note).strip()
    return rows


# ---------------------------------------------------------------- peers


def measure_limited_peer(
    tool: str, driver: str, capture: Path, total_packets: int, limit: int, repeat: int, ours: Optional[OursRunner]
) -> Measurement:
    """Run a Python peer driver on the first `limit` packets; extrapolate to the whole file:
    start-up (the driver on 1 packet) + per-packet time x packets."""
    command = [PYTHON, str(PEERS_DIR / driver), str(capture)]
    if limit <= 0 or limit >= total_packets:
        return measure_python_peer(tool, command + ["0"], 1, 0.0, total_packets, ours)
    startup = measure(tool + " start-up", command + ["1"], repeat, 5.0, 1)
    result = measure_python_peer(tool, command + [str(limit)], 1, 0.0, total_packets, ours)
    measured_s, measured_cpu_s = result.seconds or 0.0, result.cpu_s or 0.0
    scale = total_packets / limit
    result.seconds = startup.seconds + max(measured_s - startup.seconds, 0.0) * scale
    result.cpu_s = startup.cpu_s + max(measured_cpu_s - startup.cpu_s, 0.0) * scale
    result.extrapolated = True
    result.note = (
        f"extrapolated from {limit:,} packets in {measured_s:.2f} s "
        f"(start-up {startup.seconds:.2f} s); RSS of the limited run; {result.note}"
    )
    return result


def measure_peers(
    capture: Path, total_packets: int, args: argparse.Namespace, ours: Optional[OursRunner]
) -> List[Measurement]:
    rows: List[Measurement] = []
    wanted = lambda name: name not in args.skip  # noqa: E731
    if wanted("tcptrace"):
        if shutil.which("tcptrace"):
            rows.append(
                measure(
                    "tcptrace -l", ["tcptrace", "-l", str(capture)], args.repeat, args.cheap_s, total_packets, ours=ours
                )
            )
        else:
            rows.append(Measurement(tool="tcptrace", command=[], skipped="not installed"))
    if wanted("tshark"):
        if shutil.which("tshark"):
            rows.append(
                measure(
                    "tshark -q -z expert",
                    ["tshark", "-r", str(capture), "-q", "-z", "expert"],
                    args.repeat,
                    args.cheap_s,
                    total_packets,
                    ours=ours,
                )
            )
            if wanted("tshark-conv"):
                rows.append(
                    measure(
                        "tshark -z conv,tcp (seq analysis)",
                        [
                            "tshark",
                            "-r",
                            str(capture),
                            "-q",
                            "-o",
                            "tcp.analyze_sequence_numbers:TRUE",
                            "-z",
                            "conv,tcp",
                        ],
                        args.repeat,
                        args.cheap_s,
                        total_packets,
                        ours=ours,
                    )
                )
        else:
            rows.append(Measurement(tool="tshark", command=[], skipped="not installed"))
    if wanted("dpkt"):
        rows.append(
            measure_python_peer(
                "dpkt loop (flow payload sums)",
                [PYTHON, str(PEERS_DIR / "dpkt_flows.py"), str(capture), "0"],
                args.repeat,
                args.cheap_s,
                total_packets,
                ours,
            )
        )
    if wanted("scapy"):
        limit = 0 if args.full else args.scapy_limit
        rows.append(
            measure_limited_peer(
                "scapy PcapReader loop", "scapy_flows.py", capture, total_packets, limit, args.repeat, ours
            )
        )
    if wanted("pyshark"):
        if python_can_import("pyshark"):
            limit = 0 if args.full else args.pyshark_limit
            rows.append(
                measure_limited_peer(
                    "pyshark FileCapture loop", "pyshark_flows.py", capture, total_packets, limit, args.repeat, ours
                )
            )
        else:
            rows.append(
                Measurement(tool="pyshark", command=[], skipped="not installed (.venv/bin/pip install pyshark)")
            )
    return rows


def python_can_import(module: str) -> bool:
    return subprocess.run([PYTHON, "-c", f"import {module}"], capture_output=True).returncode == 0


# ---------------------------------------------------------------- profile


def profile_ours(capture: Path, top: int = 18) -> str:
    """cProfile of the whole CLI (by cumulative and by own time, import machinery left out),
    and -X importtime's slowest imports of what the CLI loads."""
    if spline_analyze_command() is None:
        return "spline-analyze not available: nothing to profile"
    sections = []
    with tempfile.NamedTemporaryFile(prefix="bench-prof-", suffix=".pstats", delete=False) as tmp:
        prof_path = tmp.name
    try:
        # main(), not the console script's run(): run() leaves through os._exit, before
        # cProfile writes its file
        driver = "import sys; from spline_analysis._core.cli import main; sys.exit(main(sys.argv[1:]))"
        with tempfile.NamedTemporaryFile("w", prefix="bench-prof-", suffix=".py", delete=False) as script:
            script.write(driver)
        run = subprocess.run(
            [PYTHON, "-m", "cProfile", "-o", prof_path, script.name, "--json", str(capture)],
            capture_output=True,
            text=True,
            cwd=str(REPO_DIR),
            env=CHILD_ENV,
        )
        os.unlink(script.name)
        if run.returncode != 0 or os.path.getsize(prof_path) == 0:
            return f"cProfile run failed (exit {run.returncode}): {run.stderr[-500:]}"
        stats = pstats.Stats(prof_path)
        sections.append(f"cProfile of spline-analyze --json: {stats.total_tt:.3f} s under the profiler")
        for key, title in (("cumtime", "by cumulative time"), ("tottime", "by own time")):
            sections.append(f"  {title} (s):\n" + "\n".join(profile_rows(stats, key, top)))
    finally:
        os.unlink(prof_path)
    imports = subprocess.run(
        [PYTHON, "-X", "importtime", "-c", "import spline_analysis._core.cli, spline_analysis._core.pipeline"],
        capture_output=True,
        text=True,
        cwd=str(REPO_DIR),
        env=CHILD_ENV,
    )
    rows = []
    for line in imports.stderr.splitlines():
        parts = line.split("|")
        if len(parts) == 3 and parts[1].strip().isdigit():
            rows.append((int(parts[1]), parts[2].rstrip()))
    rows.sort(reverse=True)
    sections.append(
        "-X importtime: slowest cumulative imports of spline_analysis._core.cli + .pipeline "
        "(what the CLI loads), microseconds:\n" + "\n".join(f"{us:>10}  {name}" for us, name in rows[:15])
    )
    return "\n\n".join(sections)


def profile_rows(stats: pstats.Stats, key: str, top: int) -> List[str]:
    """The top functions by `key` ('cumtime' or 'tottime'), without the import machinery."""
    entries = []
    for (filename, line, function), (_cc, ncalls, tottime, cumtime, _callers) in stats.stats.items():
        if filename.startswith("<frozen") or function in ("<module>", "exec", "__import__") or "runpy" in filename:
            continue
        where = f"{Path(filename).name}:{line}({function})" if filename != "~" else function
        entries.append((cumtime if key == "cumtime" else tottime, tottime, cumtime, ncalls, where))
    entries.sort(reverse=True)
    return [
        f"    {cum:7.3f} cum {own:7.3f} own {calls:>7} calls  {where}" for _k, own, cum, calls, where in entries[:top]
    ]


# ---------------------------------------------------------------- report


def format_table(rows: List[Measurement]) -> str:
    width = max([40] + [len(row.tool) for row in rows])
    header = (
        f"{'tool':<{width}} {'seconds':>9} {'CPU s':>9} {'packets/s':>12} {'peak RSS MB':>11} "
        f"{'tool/ours':>9} {'CPU ratio':>9}  note"
    )
    lines = [header, "-" * len(header)]
    group = None
    for row in rows:
        if row.group != group:
            group = row.group
            if group != "tools":
                lines.append(f"[{group}]")
        if row.skipped:
            lines.append(
                f"{row.tool:<{width}} {'-':>9} {'-':>9} {'-':>12} {'-':>11} {'-':>9} {'-':>9}  skipped: {row.skipped}"
            )
            continue
        star = "*" if row.extrapolated else ""
        seconds = f"{row.seconds:.3f}{star}" if row.seconds is not None else "-"
        cpu = f"{row.cpu_s:.3f}{star}" if row.cpu_s is not None else "-"
        pps = row.packets_per_s()
        rate = f"{pps:,.0f}" if pps else "-"
        rss = f"{row.peak_rss_mb:.0f}" if row.peak_rss_mb is not None else "-"
        ratio = f"{row.ratio():.2f}x" if row.group == "tools" and row.ratio() else "-"
        cpu_ratio = f"{row.cpu_ratio():.2f}x" if row.group == "tools" and row.cpu_ratio() else "-"
        lines.append(
            f"{row.tool:<{width}} {seconds:>9} {cpu:>9} {rate:>12} {rss:>11} {ratio:>9} {cpu_ratio:>9}  {row.note}"
        )
    lines.append(
        "* extrapolated to the whole file. tool/ours > 1: ours is faster; each ratio uses the best "
        "spline-analyze run among those interleaved with that tool's runs."
    )
    return "\n".join(lines)


def payload_cross_check(ours_payload_bytes: Optional[int], rows: List[Measurement]) -> str:
    """Did the whole-file peer loops count the same TCP payload as spline-analyze?"""
    peers = [row for row in rows if row.peer_payload_bytes is not None]
    if ours_payload_bytes is None or not peers:
        return ""
    verdicts = [
        f"{row.tool.split(' ')[0]} {'same' if row.peer_payload_bytes == ours_payload_bytes else f'DIFFERS ({row.peer_payload_bytes:,})'}"
        for row in peers
    ]
    return f"cross-check: spline-analyze tcp_payload_bytes {ours_payload_bytes:,}; " + ", ".join(verdicts)


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
    if tshark and tshark.ratio():
        speedup = tshark.ratio()
        met = speedup >= GOAL_TSHARK_SPEEDUP
        ok &= met
        lines.append(
            f"spline-analyze vs tshark -z expert: {speedup:.1f}x faster "
            f"(goal >= {GOAL_TSHARK_SPEEDUP:.0f}x) {'OK' if met else 'MISSED'}"
            f"   [CPU time: {tshark.cpu_ratio():.1f}x]"
        )
    else:
        lines.append("spline-analyze vs tshark -z expert: tshark not measured")
    if tcptrace and tcptrace.ratio():
        slowdown = 1 / tcptrace.ratio()
        met = slowdown <= GOAL_TCPTRACE_SLOWDOWN
        ok &= met
        relation = f"{slowdown:.2f}x tcptrace's time" if slowdown >= 1 else f"{1 / slowdown:.2f}x faster than tcptrace"
        lines.append(
            f"spline-analyze vs tcptrace -l: {relation} "
            f"(goal: within {GOAL_TCPTRACE_SLOWDOWN:.0f}x) {'OK' if met else 'MISSED'}"
            f"   [CPU time: {1 / tcptrace.cpu_ratio():.2f}x tcptrace's]"
        )
    else:
        lines.append("spline-analyze vs tcptrace -l: tcptrace not measured")
    return lines, ok


def stages_called_by_cli() -> List[str]:
    """Stage modules the CLI path (cli.py, report.py) mentions: what spline-analyze runs."""
    sources = ""
    for name in ("cli.py", "report.py", "pipeline.py"):
        path = REPO_DIR / "analysis" / name
        sources += path.read_text(encoding="utf-8") if path.exists() else ""
    return [
        stage
        for stage in ("flows", "wireshark", "truth")
        if re.search(
            rf"\.{stage}\b|import {stage}\b|"
            rf"from \.{stage} ",
            sources,
        )
    ]


def time_budget(ours: Measurement, rows: List[Measurement]) -> str:
    """Where spline-analyze's time goes: start-up probes plus in-process stage times, in wall
    and CPU seconds (CPU is the steadier of the two when other work shares the machine)."""
    if not ours.seconds:
        return ""
    by_tool = {row.tool.strip(): row for row in rows}
    called = stages_called_by_cli()
    parts: List[Tuple[str, float, float]] = []

    def add(label: str, row: Optional[Measurement], minus: Optional[Measurement] = None) -> None:
        if row is None or row.seconds is None:
            return
        wall_s = max(row.seconds - (minus.seconds if minus else 0.0), 0.0)
        cpu_s = max((row.cpu_s or 0.0) - ((minus.cpu_s or 0.0) if minus else 0.0), 0.0)
        parts.append((label, wall_s, cpu_s))

    add("interpreter start-up (python -c pass)", by_tool.get("python -c pass"))
    if "python -c pass" in by_tool:
        add(
            "import spline_analysis._core.cli (beyond start-up)",
            by_tool.get("python -c 'import spline_analysis._core.cli'"),
            by_tool["python -c pass"],
        )
    add("import numpy (in-process; the CLI imports it lazily)", by_tool.get("import numpy"))
    not_called = []
    for row in rows:
        name = row.tool.strip()
        if (
            row.group != "ours-stages"
            or row.seconds is None
            or name.startswith(("import", "stage driver", "pipeline.analyze"))
        ):
            continue
        stage = name.split(".")[0]
        if stage in ("flows", "wireshark", "truth") and stage not in called:
            not_called.append(f"{name} {row.seconds:.3f} s")
            continue
        add(name, row)
    wall_sum = sum(p[1] for p in parts)
    cpu_sum = sum(p[2] for p in parts)
    ours_cpu_s = ours.cpu_s or 0.0
    lines = [
        f"time budget of spline-analyze --json: wall {ours.seconds:.3f} s, CPU {ours_cpu_s:.3f} s "
        f"(best of {len(ours.runs_s)}); parts measured separately (stages the CLI runs in parallel overlap in wall time):"
    ]
    lines += [
        f"  {label:<55} wall {wall_s:6.3f} s {100 * wall_s / ours.seconds:5.1f} %   CPU {cpu_s:6.3f} s "
        f"{100 * cpu_s / ours_cpu_s if ours_cpu_s else 0:5.1f} %"
        for label, wall_s, cpu_s in parts
    ]
    rest_wall, rest_cpu = ours.seconds - wall_sum, ours_cpu_s - cpu_sum
    lines.append(
        f"  {'rest (other imports, progress, output, exit)':<55} wall {rest_wall:6.3f} s "
        f"{100 * rest_wall / ours.seconds:5.1f} %   CPU {rest_cpu:6.3f} s "
        f"{100 * rest_cpu / ours_cpu_s if ours_cpu_s else 0:5.1f} %"
    )
    if not_called:
        lines.append("  not called by the CLI yet (would add): " + ", ".join(not_called))
    return "\n".join(lines)


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "capture",
        nargs="?",
        default=str(DEFAULT_CAPTURE),
        help="capture file (default bench/data/1m.pcap; make it with bench/make_capture.sh)",
    )
    parser.add_argument("--repeat", type=int, default=3, help="best of N for cheap runs (default 3)")
    parser.add_argument(
        "--cheap-s", type=float, default=5.0, help="a run longer than this many seconds is not repeated (default 5)"
    )
    parser.add_argument(
        "--scapy-limit",
        type=int,
        default=50_000,
        help="scapy reads this many packets, time extrapolated (default 50000)",
    )
    parser.add_argument(
        "--pyshark-limit",
        type=int,
        default=5_000,
        help="pyshark reads this many packets, time extrapolated (default 5000)",
    )
    parser.add_argument("--full", action="store_true", help="scapy and pyshark read the whole file (slow)")
    parser.add_argument(
        "--skip",
        action="append",
        default=[],
        metavar="TOOL[,TOOL...]",
        help=f"tools not to run, comma-separated or repeated: {', '.join(SKIPPABLE)}",
    )
    parser.add_argument("--json", metavar="OUT", help="also write the results as JSON to OUT")
    parser.add_argument(
        "--profile",
        action="store_true",
        help="profile spline-analyze (cProfile, import times) even if the goals are met",
    )
    args = parser.parse_args(argv)
    args.skip = [name for item in args.skip for name in item.split(",") if name]
    unknown = sorted(set(args.skip) - set(SKIPPABLE))
    if unknown:
        parser.error(f"--skip: unknown {', '.join(unknown)} (choose from {', '.join(SKIPPABLE)})")
    return args


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    capture = Path(args.capture).resolve()
    if not capture.exists():
        sys.exit(f"bench_analyze: {capture} does not exist (make it: sudo bench/make_capture.sh)")
    total_packets = count_packets(capture)
    warm_page_cache(capture)
    PYCACHE_DIR.mkdir(parents=True, exist_ok=True)
    print(
        f"capture: {capture} ({total_packets:,} packets, {capture.stat().st_size / 1e6:.0f} MB); "
        f"machine: {os.cpu_count()} cores; best of {args.repeat} for runs < {args.cheap_s:g} s",
        flush=True,
    )

    runner = ours_runner(total_packets, capture)
    if runner is not None:
        runner.run_once()  # warm-up of the Python side (page cache, .pyc), kept as a run
    rows: List[Measurement] = measure_peers(capture, total_packets, args, runner)
    if runner is not None:
        for _ in range(max(0, args.repeat - len(runner.measurement.runs_s))):
            runner.run_once()
        ours = runner.finish()
    else:
        ours = Measurement(tool=OURS, command=[], skipped="spline_analysis._core.cli not importable yet")
    rows.insert(0, ours)
    if "stages" not in args.skip:
        rows += measure_stages(capture, total_packets, args.repeat)
    if "startup" not in args.skip:
        rows += measure_startup(args.repeat)

    print(format_table(rows))
    print()
    cross_check = payload_cross_check(runner.tcp_payload_bytes if runner else None, rows)
    if cross_check:
        print(cross_check)
    lines, ok = acceptance(ours, rows)
    print("\n".join(lines))
    budget_text = time_budget(ours, rows)
    if budget_text:
        print("\n" + budget_text)
    profile_text = ""
    if args.profile or (ours.seconds and not ok):
        profile_text = profile_ours(capture)
        print("\n" + profile_text)
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                {
                    "capture": str(capture),
                    "packets": total_packets,
                    "cores": os.cpu_count(),
                    "measured_at_unix": time.time(),
                    "goals_met": ok,
                    "acceptance": lines,
                    "results": [dict(asdict(row), packets_per_s=row.packets_per_s()) for row in rows],
                    "time_budget": budget_text,
                    "profile": profile_text,
                },
                indent=2,
            )
        )
        print(f"\nwrote {args.json}")
    if not ours.seconds:
        return 2
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
