#!/usr/bin/env python3
"""Spline's scenario suite (bench/scenarios.tsv): vm-test arguments per scenario, and the
table of a finished run (goodput, retransmissions per delivered segment, p95 RTT; mean and
spread over the runs) with the issue's acceptance checks.

  bench/vm_suite.py list [--scenarios FILE]              scenario names, one a line
  bench/vm_suite.py args NAME [--scenarios FILE]         vm-test.sh options for NAME, one a line
  bench/vm_suite.py table OUT_DIR NAME... [--scenarios FILE] [--json]

A scenario's runs are single flows ("spline") or flows sharing the bottleneck at once
("spline+cubic": then goodput is their sum, share the first flow's part of it and jain Jain's
index over the flows); a scenario may step the bottleneck rate during each run.
`table` reads OUT_DIR/NAME/summary.json (module/vm/summarize.py) and, for the p95 RTT, the
`spline-analyze --json` report of each run's sender capture (OUT_DIR/NAME/<cca>-r<n>.analysis.json,
written by vm-test.sh when spline-analyze is on PATH, or by bench/vm_claims.sh afterwards).
Exit status of `table`: 0 when every check holds, 1 when one does not or cannot be checked.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

DEFAULT_SCENARIOS = Path(__file__).resolve().parent / "scenarios.tsv"
# vm-test.sh never makes a bottleneck buffer smaller than this.
VM_MIN_QUEUE_BYTES = 30000
METRICS = ("goodput", "rps", "retrans", "p95_rtt", "util", "link_util", "share", "jain", "spurious", "paws")
# Metrics that are fractions of a whole: "x link" compares them with 1.0.
FRACTIONS = ("util", "link_util", "share", "jain")
# A rate phase's utilisation leaves out its first second: the guest's step clock starts when the
# capture does, before iperf3 connects (up to a second earlier under TCG), and a step down
# first drains the queue built before it.
PHASE_SETTLE_S = 1.0


@dataclass(frozen=True)
class Check:
    metric: str  # one of METRICS
    op: str  # ">=" or "<="
    factor: float
    against: str  # a CCA (the run whose first flow is that CCA), or "link" (1.0)

    def text(self) -> str:
        return f"{self.metric} {self.op} {self.factor:g} x {self.against}"


@dataclass(frozen=True)
class RateStep:
    at_s: int  # seconds into the run
    rate_mbit: float  # bottleneck rate from then on


@dataclass(frozen=True)
class Scenario:
    name: str
    rate_mbit: float
    delay_ms: float
    jitter_ms: float
    loss_pct: float
    queue_bdp: float
    ccas: tuple[str, ...]  # runs, interleaved; "a+b": flows a and b at once
    rate_steps: tuple[RateStep, ...]
    checks: tuple[Check, ...]
    jitter_keeps_order: bool = False  # netem's jitter holds packet order (else they pass each other)

    @property
    def subject(self) -> str:
        """The run the checks judge: the first of ccas."""
        return self.ccas[0]

    @property
    def queue_bytes(self) -> int:
        bdp_bytes = self.rate_mbit * 1e6 / 8 * self.delay_ms / 1e3
        return max(int(bdp_bytes * self.queue_bdp), VM_MIN_QUEUE_BYTES)

    def vm_test_args(self) -> list[str]:
        args = [
            "--rate-mbit",
            f"{self.rate_mbit:g}",
            "--delay-ms",
            f"{self.delay_ms:g}",
            "--jitter-ms",
            f"{self.jitter_ms:g}",
            "--loss-pct",
            f"{self.loss_pct:g}",
            "--queue-bytes",
            str(self.queue_bytes),
            "--ccas",
            " ".join(self.ccas),
        ]
        if self.jitter_keeps_order:
            args.append("--jitter-keeps-order")
        if self.rate_steps:
            args += ["--rate-steps", " ".join(f"{s.rate_mbit:g}@{s.at_s}" for s in self.rate_steps)]
        return args

    def mean_rate_mbit(self, duration_s: float) -> float:
        """The bottleneck rate averaged over a run of duration_s (the steps weighed by time)."""
        edges = [0.0] + [min(s.at_s, duration_s) for s in self.rate_steps] + [duration_s]
        rates = [self.rate_mbit] + [s.rate_mbit for s in self.rate_steps]
        return sum(r * (b - a) for r, a, b in zip(rates, edges, edges[1:])) / duration_s

    def phases(self, duration_s: float) -> list[tuple[float, float, float]]:
        """(start_s, end_s, rate_mbit) of each constant-rate part of a run."""
        edges = [0.0] + [float(s.at_s) for s in self.rate_steps] + [duration_s]
        rates = [self.rate_mbit] + [s.rate_mbit for s in self.rate_steps]
        return [(a, b, r) for r, a, b in zip(rates, edges, edges[1:]) if b > a]

    def describe(self) -> str:
        jitter = f" +-{self.jitter_ms:g} ms" if self.jitter_ms else ""
        if self.jitter_ms and self.jitter_keeps_order:
            jitter += " in order"
        rate = f"{self.rate_mbit:g}"
        if self.rate_steps:
            rate += "".join(f" -> {s.rate_mbit:g} (at {s.at_s} s)" for s in self.rate_steps)
        flows = ""
        if any("+" in c for c in self.ccas):
            flows = ", flows at once: " + " / ".join(self.ccas)
        return (
            f"{rate} Mbit/s, {self.delay_ms:g} ms{jitter}, {self.loss_pct:g}% loss, "
            f"{self.queue_bdp:g} BDP buffer ({self.queue_bytes} B){flows}"
        )


CCA_NAME = re.compile(r"^[a-z0-9_]+(\+[a-z0-9_]+)*$")


def parse_ccas(text: str) -> tuple[str, ...]:
    """'spline,bbr,cubic' or 'spline+cubic,bbr+cubic' -> the runs."""
    ccas = tuple(c.strip() for c in text.split(","))
    if not all(CCA_NAME.match(c) for c in ccas):
        raise ValueError(f"bad ccas {text!r} (want: a,b or a+b,c+d)")
    return ccas


def parse_rate_steps(text: str) -> tuple[RateStep, ...]:
    """'-' or '5@10,20@20' (Mbit/s from that second on) -> steps, seconds rising."""
    if text == "-":
        return ()
    steps = []
    for item in text.split(","):
        rate, sep, at = item.partition("@")
        if not sep or not at.isdigit():
            raise ValueError(f"bad rate step {item!r} (want RATE@SECONDS)")
        steps.append(RateStep(int(at), float(rate)))
    ats = [s.at_s for s in steps]
    if ats != sorted(set(ats)) or ats[0] <= 0:
        raise ValueError(f"rate steps {text!r}: seconds must rise from above 0")
    return tuple(steps)


def parse_jitter(text: str) -> tuple[float, bool]:
    """'50' (+-50 ms, packets pass each other) or '50:order' (+-50 ms, order kept) -> (ms, kept)."""
    ms, sep, kind = text.partition(":")
    if sep and kind != "order":
        raise ValueError(f"bad jitter {text!r} (want MS or MS:order)")
    jitter_ms = float(ms)
    if sep and not jitter_ms:
        raise ValueError(f"jitter {text!r}: order is kept only by a jitter")
    return jitter_ms, bool(sep)


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
        fields = line.split(None, 8)
        if fields[0] == "name":
            continue
        if len(fields) != 9:
            raise ValueError(f"line {line_no}: want 9 columns, got {len(fields)}")
        checks = fields[8].strip()
        jitter_ms, jitter_keeps_order = parse_jitter(fields[3])
        scenarios.append(
            Scenario(
                fields[0],
                float(fields[1]),
                float(fields[2]),
                jitter_ms,
                *(float(v) for v in fields[4:6]),
                parse_ccas(fields[6]),
                parse_rate_steps(fields[7]),
                tuple(parse_check(c.strip()) for c in checks.split(";")) if checks != "-" else (),
                jitter_keeps_order,
            )
        )
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
    directions = [
        d
        for d in analysis.get("directions", [])
        if d.get("vantage") == "sender" and (d.get("rtt_ms") or {}).get("p95") is not None
    ]
    if not directions:
        return None
    bulk = max(directions, key=lambda d: d.get("data_segments") or 0)
    return float(bulk["rtt_ms"]["p95"])


def _load_jain_index():
    """analysis/testbed/fairness.py by its path: this script runs on the system's python3, where
    the package (numpy, pandas) may not be installed; that file needs only the standard library."""
    import importlib.util

    path = Path(__file__).resolve().parent.parent / "analysis" / "testbed" / "fairness.py"
    spec = importlib.util.spec_from_file_location("spline_testbed_fairness", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.jain_index


jain_index = _load_jain_index()


def flows_of(run: dict) -> list[dict]:
    """The flows of a run: its "flows" (several at once), else the run itself."""
    return run.get("flows") or [run]


def receiver_rate_bps(flows: list[dict], start_s: float, end_s: float) -> Optional[float]:
    """The flows' summed receiver goodput over the iperf3 intervals inside [start_s, end_s)."""
    total = 0.0
    for flow in flows:
        inside = [
            (b - a, bps)
            for a, b, bps in flow.get("receiver_intervals") or []
            if a >= start_s - 1e-3 and b <= end_s + 1e-3 and b > a
        ]
        if not inside:
            return None
        total += sum(d * bps for d, bps in inside) / sum(d for d, _ in inside)
    return total


def run_duration_s(flows: list[dict]) -> Optional[float]:
    ends = [iv[1] for f in flows for iv in f.get("receiver_intervals") or []]
    return max(ends) if ends else None


def link_utilisation(run: dict, link_mbit: Optional[float], duration_s: Optional[float]) -> Optional[float]:
    """What the bottleneck carried over what it could have: the tbf's sent bytes (frames with
    their headers, retransmissions included, as its rate counts them) over rate x the run's
    duration. Goodput over the rate cannot say whether the link was busy: payload is at most
    1448 of every 1514 bytes (95.6%), so a bar of 95% on it fails for any CCA. The tbf also
    carries the queue left at the run's end, at most one buffer (0.2% of a 20 s run at 1 BDP),
    so a full link may read a little above 1."""
    carried = (run.get("path") or {}).get("bottleneck_bytes")
    if carried is None or not link_mbit or not duration_s:
        return None
    return carried * 8 / (link_mbit * 1e6 * duration_s)


def spurious_fraction(run: dict) -> Optional[float]:
    """Of a run's retransmissions (TCP_INFO), the part no drop needed: every packet the router
    dropped (random loss or the queue overflowing) needs one retransmission, the rest repeat
    packets that arrived (reordered by jitter, marked lost before they came). The receiver's
    D-SACKs do not tell: on the 200 ms +-50 ms path it sent 27 for ~780 duplicates a run."""
    retrans, path = run.get("retransmits"), run.get("path")
    if not retrans or not path:
        return None
    drops = path.get("random_loss_drops", 0) + path.get("queue_drops", 0)
    return max(retrans - drops, 0) / retrans


def paws_fraction(run: dict) -> Optional[float]:
    """Of a run's retransmissions, the part that replaced originals the receiver discarded by PAWS
    (its TcpExt.PAWSEstab): a retransmission that fills a hole carries a newer timestamp, and an
    original sent before it that jitter delays past it is discarded as old, unseen. On the
    jitter paths this is nearly all of the "spurious" part (stop 20: within 13 packets a run)."""
    retrans, receiver = run.get("retransmits"), (run.get("mib") or {}).get("rcv")
    if not retrans or receiver is None:
        return None
    return min(receiver.get("TcpExt.PAWSEstab", 0) / retrans, 1.0)


def run_metrics(run: dict, analysis: Optional[dict], scenario: Scenario) -> dict:
    """One vm-test run: goodput (bit/s at the receiver, summed over its flows), retransmissions
    (TCP_INFO's total, iperf3), retransmissions per delivered segment (delivered = bytes
    received / MSS), p95 RTT (ms, sender capture), util (goodput over the bottleneck rate,
    time-weighted when it steps), link_util (what the bottleneck carried over its capacity), share (the first flow's part of the goodput), jain (over
    the flows), spurious (the part of the retransmissions no router drop needed), paws (the part
    that replaced originals the receiver discarded by PAWS),
    phase_util (per constant-rate part of the run, from the receiver's intervals)."""
    if not run.get("ok"):
        return {m: None for m in METRICS} | {"phase_util": None}
    goodput = run.get("throughput_bps")
    retrans = run.get("retransmits")
    mss = run.get("mss_bytes")
    received = run.get("bytes_received")
    delivered_segs = received / mss if received and mss else None
    flows = flows_of(run)
    flow_goodputs = [f.get("throughput_bps") or 0.0 for f in flows]
    duration_s = run_duration_s(flows)
    link_mbit = (
        scenario.mean_rate_mbit(duration_s) if duration_s else (None if scenario.rate_steps else scenario.rate_mbit)
    )
    phase_util = None
    if scenario.rate_steps and duration_s:
        rates = [
            receiver_rate_bps(flows, a + (PHASE_SETTLE_S if a else 0.0), b) for a, b, _ in scenario.phases(duration_s)
        ]
        phase_util = [
            None if r is None else r / (mbit * 1e6) for r, (_, _, mbit) in zip(rates, scenario.phases(duration_s))
        ]
    return {
        "goodput": goodput,
        "retrans": retrans,
        "rps": retrans / delivered_segs if retrans is not None and delivered_segs else None,
        "p95_rtt": sender_p95_rtt_ms(analysis),
        "util": goodput / (link_mbit * 1e6) if goodput and link_mbit else None,
        "link_util": link_utilisation(run, link_mbit, duration_s),
        "share": flow_goodputs[0] / sum(flow_goodputs) if len(flows) > 1 and sum(flow_goodputs) else None,
        "jain": jain_index(flow_goodputs) if len(flows) > 1 else None,
        "spurious": spurious_fraction(run),
        "paws": paws_fraction(run),
        "phase_util": phase_util,
    }


def mean_spread(values: list[Optional[float]]) -> tuple[Optional[float], Optional[float]]:
    """Mean and sample standard deviation of the known values (spread 0 for one value)."""
    known = [v for v in values if v is not None and not math.isnan(v)]
    if not known:
        return None, None
    return statistics.mean(known), (statistics.stdev(known) if len(known) > 1 else 0.0)


def aggregate(per_run: dict[str, list[dict]]) -> dict[str, dict]:
    """{run name: {metric: (mean, spread)}, phase_util: [(mean, spread) per phase]}."""
    out: dict[str, dict] = {}
    for cca, runs in per_run.items():
        out[cca] = {m: mean_spread([r.get(m) for r in runs]) for m in METRICS}
        phases = [r["phase_util"] for r in runs if r.get("phase_util")]
        out[cca]["phase_util"] = [mean_spread(list(p)) for p in zip(*phases)] if phases else None
        out[cca]["runs"] = len(runs)
        out[cca]["ok_runs"] = sum(1 for r in runs if r["goodput"] is not None)
    return out


def row_for(table: dict[str, dict], cca: str) -> dict:
    """The row of run `cca`, else of the run whose first flow is `cca` ("bbr" -> "bbr+cubic")."""
    if cca in table:
        return table[cca]
    return next((row for name, row in table.items() if name.split("+")[0] == cca), {})


def evaluate(check: Check, table: dict[str, dict], subject: str = "spline") -> tuple[Optional[bool], str]:
    """(holds, text) for the subject's run; holds is None when it cannot be checked."""
    ours = row_for(table, subject).get(check.metric, (None, None))[0]
    text = f"{subject} {check.text()}"
    if check.against == "link":
        theirs: Optional[float] = 1.0 if check.metric in FRACTIONS else None
    else:
        theirs = row_for(table, check.against).get(check.metric, (None, None))[0]
    if ours is None or theirs is None:
        return None, f"{text}: cannot check (missing data)"
    bound = check.factor * theirs
    holds = ours >= bound if check.op == ">=" else ours <= bound
    return holds, f"{text}: {'HOLDS' if holds else 'DOES NOT HOLD'} ({ours:.4g} vs {bound:.4g})"


# --- reading a finished scenario ---------------------------------------------------------------


def read_json(path: Path) -> Optional[dict]:
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None
    if isinstance(data, list):
        data = data[0] if data else None
    return data if isinstance(data, dict) else None


def scenario_runs(out_dir: Path, scenario: Scenario) -> dict[str, list[dict]]:
    summary = read_json(out_dir / "summary.json")
    if summary is None:
        raise FileNotFoundError(f"{out_dir}/summary.json missing or unreadable")
    per_run: dict[str, list[dict]] = {}
    for run in summary["runs"]:
        analysis = read_json(out_dir / f"{run['cca']}-r{run['run']}.analysis.json")
        per_run.setdefault(run["cca"], []).append(run_metrics(run, analysis, scenario))
    return per_run


def fmt(value: Optional[float], spec: str, scale: float = 1.0) -> str:
    return "-" if value is None else format(value * scale, spec)


def details_text(row: dict) -> str:
    """Share and Jain's index (runs of several flows), the spurious part of the retransmissions
    (beyond the router's drops), the link's utilisation (what the bottleneck carried),
    utilisation by phase (rate steps)."""
    parts = []
    if row["link_util"][0] is not None:
        parts.append(f"link util {fmt(row['link_util'][0], '.3f')} +- {fmt(row['link_util'][1], '.3f')}")
    if row["share"][0] is not None:
        parts.append(f"share {fmt(row['share'][0], '.2f')} +- {fmt(row['share'][1], '.2f')}")
    if row["jain"][0] is not None:
        parts.append(f"Jain {fmt(row['jain'][0], '.3f')} +- {fmt(row['jain'][1], '.3f')}")
    if row["spurious"][0] is not None:
        parts.append(f"spurious {fmt(row['spurious'][0], '.0f', 100)}%")
    if row["paws"][0] is not None:
        parts.append(f"receiver PAWS discards {fmt(row['paws'][0], '.0f', 100)}%")
    if row.get("phase_util"):
        parts.append("util by phase " + " / ".join(fmt(m, ".2f") for m, _ in row["phase_util"]))
    return ", ".join(parts) or "-"


def format_table(scenario: Scenario, table: dict[str, dict]) -> list[str]:
    lines = [
        f"== {scenario.name}: {scenario.describe()}",
        f"{'cca':7} {'runs':>4} {'goodput Mbit/s':>16} {'util':>5} {'link':>5} {'retrans':>12}"
        f" {'retr/deliv %':>13} {'p95 RTT ms':>12}  details",
    ]
    for cca, row in table.items():
        g, r, rps, p95, util, link = (row[m] for m in ("goodput", "retrans", "rps", "p95_rtt", "util", "link_util"))
        lines.append(
            f"{cca:7} {row['ok_runs']:>2}/{row['runs']:<1} "
            f"{fmt(g[0], '.2f', 1e-6):>8} +-{fmt(g[1], '.2f', 1e-6):<5} {fmt(util[0], '.2f'):>5} {fmt(link[0], '.2f'):>5} "
            f"{fmt(r[0], '.0f'):>6} +-{fmt(r[1], '.0f'):<4} "
            f"{fmt(rps[0], '.2f', 100):>6} +-{fmt(rps[1], '.2f', 100):<5} "
            f"{fmt(p95[0], '.0f'):>5} +-{fmt(p95[1], '.0f'):<4}  {details_text(row)}"
        )
    return lines


def markdown_rows(scenario: Scenario, table: dict[str, dict]) -> list[str]:
    """One markdown table row per run name: scenario, cca, goodput, retr/deliv, retrans, p95 RTT,
    sharing."""
    rows = []
    for i, (cca, row) in enumerate(table.items()):
        g, r, rps, p95 = (row[m] for m in ("goodput", "retrans", "rps", "p95_rtt"))
        rows.append(
            f"| {scenario.describe() if i == 0 else ''} | {cca} "
            f"| {fmt(g[0], '.2f', 1e-6)} +- {fmt(g[1], '.2f', 1e-6)} "
            f"| {fmt(rps[0], '.1f', 100)} +- {fmt(rps[1], '.1f', 100)} "
            f"| {fmt(r[0], '.0f')} | {fmt(p95[0], '.0f')} | {details_text(row)} |"
        )
    return rows


MARKDOWN_HEADER = [
    "| path | CCA | goodput Mbit/s | retrans per delivered segment % | retransmits | p95 RTT ms"
    " | link util, share, Jain, spurious retransmissions, util by phase |",
    "| --- | --- | --- | --- | --- | --- | --- |",
]


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
        print("\n".join(scenarios[args.rest[0]].vm_test_args()))
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
            table = aggregate(scenario_runs(out_dir / name, scenario))
        except FileNotFoundError as exc:
            print(f"vm_suite: {exc}", file=sys.stderr)
            status = 1
            continue
        results = [evaluate(c, table, scenario.subject) for c in scenario.checks]
        if any(holds is not True for holds, _ in results):
            status = 1
        report[name] = {
            "scenario": scenario.describe(),
            "table": table,
            "checks": [{"holds": h, "text": t} for h, t in results],
        }
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
