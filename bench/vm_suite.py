#!/usr/bin/env python3
"""Spline's scenario suite (bench/scenarios.tsv): vm-test arguments per scenario, and the
table of a finished run (goodput, retransmissions per delivered segment, p95 RTT; mean and
spread over the runs) with the issue's acceptance checks.

  bench/vm_suite.py list [--scenarios FILE]              scenario names, one a line
  bench/vm_suite.py args NAME [--scenarios FILE]         vm-test.sh options for NAME
  bench/vm_suite.py table OUT_DIR NAME... [--scenarios FILE] [--json]

`table` reads OUT_DIR/NAME/summary.json (module/vm/summarize.py) and, for the p95 RTT, the
`spline-analyze --json` report of each run's sender capture (OUT_DIR/NAME/<cca>-r<n>.analysis.json,
written by vm-test.sh when spline-analyze is on PATH, or by bench/vm_claims.sh afterwards).
Exit status of `table`: 0 when every check holds, 1 when one does not or cannot be checked.
"""
from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

DEFAULT_SCENARIOS = Path(__file__).resolve().parent / "scenarios.tsv"
# vm-test.sh never makes a bottleneck buffer smaller than this.
VM_MIN_QUEUE_BYTES = 30000
METRICS = ("goodput", "rps", "retrans", "p95_rtt", "util")


@dataclass(frozen=True)
class Check:
    metric: str      # one of METRICS
    op: str          # ">=" or "<="
    factor: float
    against: str     # a CCA name, or "link"

    def text(self) -> str:
        return f"spline {self.metric} {self.op} {self.factor:g} x {self.against}"


@dataclass(frozen=True)
class Scenario:
    name: str
    rate_mbit: float
    delay_ms: float
    jitter_ms: float
    loss_pct: float
    queue_bdp: float
    checks: tuple[Check, ...]

    @property
    def queue_bytes(self) -> int:
        bdp_bytes = self.rate_mbit * 1e6 / 8 * self.delay_ms / 1e3
        return max(int(bdp_bytes * self.queue_bdp), VM_MIN_QUEUE_BYTES)

    def vm_test_args(self) -> list[str]:
        return ["--rate-mbit", f"{self.rate_mbit:g}", "--delay-ms", f"{self.delay_ms:g}",
                "--jitter-ms", f"{self.jitter_ms:g}", "--loss-pct", f"{self.loss_pct:g}",
                "--queue-bytes", str(self.queue_bytes)]

    def describe(self) -> str:
        jitter = f" +-{self.jitter_ms:g} ms" if self.jitter_ms else ""
        return (f"{self.rate_mbit:g} Mbit/s, {self.delay_ms:g} ms{jitter}, {self.loss_pct:g}% loss, "
                f"{self.queue_bdp:g} BDP buffer ({self.queue_bytes} B)")


def parse_check(text: str) -> Check:
    """'goodput >= 1.2 x bbr' -> Check; ValueError on anything else."""
    parts = text.split()
    if len(parts) != 5 or parts[3] != "x" or parts[0] not in METRICS or parts[1] not in (">=", "<="):
        raise ValueError(f"bad check {text!r} (want: METRIC >=|<= FACTOR x CCA)")
    return Check(parts[0], parts[1], float(parts[2]), parts[4])


def parse_scenarios(text: str) -> list[Scenario]:
    scenarios: list[Scenario] = []
    for line_no, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        fields = line.split(None, 6)
        if fields[0] == "name":
            continue
        if len(fields) != 7:
            raise ValueError(f"line {line_no}: want 7 columns, got {len(fields)}")
        checks = fields[6].strip()
        scenarios.append(Scenario(
            fields[0], *(float(v) for v in fields[1:6]),
            tuple(parse_check(c.strip()) for c in checks.split(";")) if checks != "-" else ()))
    names = [s.name for s in scenarios]
    if len(set(names)) != len(names):
        raise ValueError("scenario names repeat")
    return scenarios


def load_scenarios(path: Path = DEFAULT_SCENARIOS) -> dict[str, Scenario]:
    return {s.name: s for s in parse_scenarios(path.read_text())}


# --- per-run metrics -------------------------------------------------------------------------

def sender_p95_rtt_ms(analysis: Optional[dict]) -> Optional[float]:
    """p95 RTT of the bulk direction (most data segments, sender vantage) of a capture report."""
    if not analysis:
        return None
    directions = [d for d in analysis.get("directions", []) if d.get("vantage") == "sender"
                  and (d.get("rtt_ms") or {}).get("p95") is not None]
    if not directions:
        return None
    bulk = max(directions, key=lambda d: d.get("data_segments") or 0)
    return float(bulk["rtt_ms"]["p95"])


def run_metrics(run: dict, analysis: Optional[dict]) -> dict[str, Optional[float]]:
    """goodput (bit/s, receiver), retransmissions, retransmissions per delivered segment
    (delivered = bytes received / MSS), p95 RTT (ms) of one vm-test run."""
    if not run.get("ok"):
        return {m: None for m in METRICS}
    goodput = run.get("throughput_bps")
    retrans = run.get("retransmits")
    mss = run.get("mss_bytes")
    received = run.get("bytes_received")
    delivered_segs = received / mss if received and mss else None
    return {"goodput": goodput, "retrans": retrans,
            "rps": retrans / delivered_segs if retrans is not None and delivered_segs else None,
            "p95_rtt": sender_p95_rtt_ms(analysis), "util": None}


def mean_spread(values: list[Optional[float]]) -> tuple[Optional[float], Optional[float]]:
    """Mean and sample standard deviation of the known values (spread 0 for one value)."""
    known = [v for v in values if v is not None and not math.isnan(v)]
    if not known:
        return None, None
    return statistics.mean(known), (statistics.stdev(known) if len(known) > 1 else 0.0)


def aggregate(per_run: dict[str, list[dict]], rate_mbit: float) -> dict[str, dict]:
    """{cca: {metric: (mean, spread)}}; util is the mean goodput over the link rate."""
    out: dict[str, dict] = {}
    for cca, runs in per_run.items():
        out[cca] = {m: mean_spread([r[m] for r in runs]) for m in METRICS if m != "util"}
        goodput = out[cca]["goodput"]
        out[cca]["util"] = ((goodput[0] / (rate_mbit * 1e6), goodput[1] / (rate_mbit * 1e6))
                            if goodput[0] is not None else (None, None))
        out[cca]["runs"] = len(runs)
        out[cca]["ok_runs"] = sum(1 for r in runs if r["goodput"] is not None)
    return out


def evaluate(check: Check, table: dict[str, dict]) -> tuple[Optional[bool], str]:
    """(holds, text); holds is None when it cannot be checked."""
    ours = table.get("spline", {}).get(check.metric, (None, None))[0]
    if check.against == "link":
        theirs: Optional[float] = 1.0 if check.metric == "util" else None
    else:
        theirs = table.get(check.against, {}).get(check.metric, (None, None))[0]
    if ours is None or theirs is None:
        return None, f"{check.text()}: cannot check (missing data)"
    bound = check.factor * theirs
    holds = ours >= bound if check.op == ">=" else ours <= bound
    return holds, f"{check.text()}: {'HOLDS' if holds else 'DOES NOT HOLD'} ({ours:.4g} vs {bound:.4g})"


# --- reading a finished scenario ---------------------------------------------------------------

def read_json(path: Path) -> Optional[dict]:
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None
    if isinstance(data, list):
        data = data[0] if data else None
    return data if isinstance(data, dict) else None


def scenario_runs(out_dir: Path) -> dict[str, list[dict]]:
    summary = read_json(out_dir / "summary.json")
    if summary is None:
        raise FileNotFoundError(f"{out_dir}/summary.json missing or unreadable")
    per_run: dict[str, list[dict]] = {}
    for run in summary["runs"]:
        analysis = read_json(out_dir / f"{run['cca']}-r{run['run']}.analysis.json")
        per_run.setdefault(run["cca"], []).append(run_metrics(run, analysis))
    return per_run


def fmt(value: Optional[float], spec: str, scale: float = 1.0) -> str:
    return "-" if value is None else format(value * scale, spec)


def format_table(scenario: Scenario, table: dict[str, dict]) -> list[str]:
    lines = [f"== {scenario.name}: {scenario.describe()}",
             f"{'cca':7} {'runs':>4} {'goodput Mbit/s':>16} {'util':>5} {'retrans':>12}"
             f" {'retr/deliv %':>13} {'p95 RTT ms':>12}"]
    for cca, row in table.items():
        g, r, rps, p95, util = (row[m] for m in ("goodput", "retrans", "rps", "p95_rtt", "util"))
        lines.append(
            f"{cca:7} {row['ok_runs']:>2}/{row['runs']:<1} "
            f"{fmt(g[0], '.2f', 1e-6):>8} +-{fmt(g[1], '.2f', 1e-6):<5} {fmt(util[0], '.2f'):>5} "
            f"{fmt(r[0], '.0f'):>6} +-{fmt(r[1], '.0f'):<4} "
            f"{fmt(rps[0], '.2f', 100):>6} +-{fmt(rps[1], '.2f', 100):<5} "
            f"{fmt(p95[0], '.0f'):>5} +-{fmt(p95[1], '.0f'):<4}")
    return lines


def markdown_rows(scenario: Scenario, table: dict[str, dict]) -> list[str]:
    """One markdown table row per CCA: scenario, cca, goodput, retr/deliv, retrans, p95 RTT."""
    rows = []
    for i, (cca, row) in enumerate(table.items()):
        g, r, rps, p95 = (row[m] for m in ("goodput", "retrans", "rps", "p95_rtt"))
        rows.append(f"| {scenario.describe() if i == 0 else ''} | {cca} "
                    f"| {fmt(g[0], '.2f', 1e-6)} +- {fmt(g[1], '.2f', 1e-6)} "
                    f"| {fmt(rps[0], '.1f', 100)} +- {fmt(rps[1], '.1f', 100)} "
                    f"| {fmt(r[0], '.0f')} | {fmt(p95[0], '.0f')} |")
    return rows


MARKDOWN_HEADER = ["| path | CCA | goodput Mbit/s | retrans per delivered segment % | retransmits | p95 RTT ms |",
                   "| --- | --- | --- | --- | --- | --- |"]


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=("list", "args", "table"))
    parser.add_argument("rest", nargs="*")
    parser.add_argument("--scenarios", type=Path, default=DEFAULT_SCENARIOS)
    parser.add_argument("--json", action="store_true", help="table: one JSON object instead")
    parser.add_argument("--markdown", action="store_true", help="table: one markdown table")
    args = parser.parse_args(argv)
    try:
        scenarios = load_scenarios(args.scenarios)
    except (OSError, ValueError) as exc:
        print(f"vm_suite: {args.scenarios}: {exc}", file=sys.stderr)
        return 2
    if args.command == "list":
        print("\n".join(scenarios))
        return 0
    if args.command == "args":
        if len(args.rest) != 1 or args.rest[0] not in scenarios:
            print(f"vm_suite: args NAME, one of: {' '.join(scenarios)}", file=sys.stderr)
            return 2
        print(" ".join(scenarios[args.rest[0]].vm_test_args()))
        return 0
    if len(args.rest) < 2:
        print("vm_suite: table OUT_DIR NAME...", file=sys.stderr)
        return 2
    out_dir, names = Path(args.rest[0]), args.rest[1:]
    status, report, markdown = 0, {}, list(MARKDOWN_HEADER)
    for name in names:
        if name not in scenarios:
            print(f"vm_suite: unknown scenario {name!r}", file=sys.stderr)
            return 2
        scenario = scenarios[name]
        try:
            table = aggregate(scenario_runs(out_dir / name), scenario.rate_mbit)
        except FileNotFoundError as exc:
            print(f"vm_suite: {exc}", file=sys.stderr)
            status = 1
            continue
        results = [evaluate(c, table) for c in scenario.checks]
        if any(holds is not True for holds, _ in results):
            status = 1
        report[name] = {"scenario": scenario.describe(), "table": table,
                        "checks": [{"holds": h, "text": t} for h, t in results]}
        markdown += markdown_rows(scenario, table)
        if not args.json and not args.markdown:
            print("\n".join(format_table(scenario, table) + [f"check: {t}" for _, t in results]))
            print()
    if args.json:
        print(json.dumps(report))
    elif args.markdown:
        print("\n".join(markdown))
    return status


if __name__ == "__main__":
    sys.exit(main())
