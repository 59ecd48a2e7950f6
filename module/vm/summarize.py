#!/usr/bin/env python3
"""Summarise one VM test run (the files the guest wrote over 9p) as ONE JSON line.

Reads, in the output directory: available.txt (tcp_available_congestion_control),
<cca>-r<n>.json/.rc/.err (iperf3 -J per run; a run of flows "a+b" at once:
<a+b>-r<n>.f1.json, .f2.json, ...), rmmod.txt (module unload outcome),
dmesg.txt. Prints

  {"available": [...], "runs": [{"cca", "run", "throughput_bps", "retransmits", "ok", ...}],
   "kernel_warnings": N, "kernel_warning_lines": [...], "module_unloaded": true|false|null,
   "failures": [...]}

and exits 1 when a failure was found: a required CCA missing, a run failed (iperf3 error,
no throughput, wrong sender CCA), the module not unloaded, or kernel warnings.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

# Lines a healthy run may show: loading an unsigned, out-of-tree module taints the kernel.
BENIGN_TAINT = (
    re.compile(r"module verification failed: signature and/or required key missing - tainting kernel"),
    re.compile(r"loading out-of-tree module taints kernel"),
)
WARNING = re.compile(
    r"\bWARN(ING)?\b|\bBUG\b|\b[Oo]ops\b|\b[Tt]aint(s|ed|ing)?\b|general protection fault"
    r"|Call Trace|[Kk]ernel panic|[Hh]ung task|soft lockup|hard LOCKUP|refcount_t:|UBSAN|KASAN"
)


def kernel_warning_lines(dmesg: str) -> list[str]:
    """Lines of dmesg that report a warning, bug, oops or taint, minus the benign taints."""
    return [
        line for line in dmesg.splitlines() if WARNING.search(line) and not any(p.search(line) for p in BENIGN_TAINT)
    ]


def read_text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return None


QDISC_HEAD = re.compile(r"^qdisc (\w+) ")
QDISC_SENT = re.compile(r"Sent (\d+) bytes (\d+) pkt \(dropped (\d+)")


def path_drops(tc_stats: str) -> dict | None:
    """Drops on the router from `tc -s qdisc` (netem root, tbf child), as the run's ground truth.

    netem counts its random losses and also each packet its tbf child refused, so
    random losses = netem drops - tbf drops; tbf drops are the bottleneck queue overflowing.
    bottleneck_bytes is what the tbf sent on: frame bytes (Ethernet header included, as its
    rate counts them), retransmissions and headers included, i.e. what the link carried.
    """
    counters, kind = {}, None
    for line in tc_stats.splitlines():
        head = QDISC_HEAD.match(line)
        if head:
            kind = head.group(1)
            continue
        sent = QDISC_SENT.search(line)
        if sent and kind and kind not in counters:
            counters[kind] = {"bytes": int(sent.group(1)), "pkts": int(sent.group(2)), "dropped": int(sent.group(3))}
    if "netem" not in counters or "tbf" not in counters:
        return None
    return {
        "random_loss_drops": counters["netem"]["dropped"] - counters["tbf"]["dropped"],
        "queue_drops": counters["tbf"]["dropped"],
        "delivered_pkts": counters["tbf"]["pkts"],
        "bottleneck_bytes": counters["tbf"]["bytes"],
    }


def mib_counters(text: str) -> dict[str, int]:
    """`cat /proc/net/netstat /proc/net/snmp`: pairs of header and value lines ("TcpExt: A B",
    "TcpExt: 1 2") -> {"TcpExt.A": 1, ...}."""
    counters: dict[str, int] = {}
    lines = [line.split() for line in text.splitlines() if ":" in line.split(" ", 1)[0]]
    for names, values in zip(lines[::2], lines[1::2]):
        if names[0] != values[0]:
            continue
        for name, value in zip(names[1:], values[1:]):
            if value.lstrip("-").isdigit():
                counters[f"{names[0].rstrip(':')}.{name}"] = int(value)
    return counters


def mib_deltas(text: str) -> dict[str, dict[str, int]]:
    """A run's <name>.mib.txt ("## <ns> before|after" sections) -> {ns: {counter: after -
    before}}, counters that moved only."""
    sections: dict[tuple[str, str], list[str]] = {}
    key = None
    for line in text.splitlines():
        if line.startswith("## "):
            parts = line.split()
            key = (parts[1], parts[2]) if len(parts) == 3 else None
            if key:
                sections[key] = []
        elif key:
            sections[key].append(line)
    out = {}
    for ns in sorted({k[0] for k in sections}):
        before = mib_counters("\n".join(sections.get((ns, "before"), [])))
        after = mib_counters("\n".join(sections.get((ns, "after"), [])))
        if before and after:
            out[ns] = {k: after[k] - before.get(k, 0) for k in after if after[k] != before.get(k, 0)}
    return out


def analysis_digest(path: Path) -> dict | None:
    """The headline of `spline-analyze --json` on a run's pcap, when the host ran it."""
    raw = read_text(path)
    if raw is None:
        return None
    try:
        report = json.loads(raw)
    except json.JSONDecodeError:
        return {"file": path.name, "error": "not JSON"}
    if isinstance(report, list):  # one document per file, should the CLI ever return a list
        report = report[0] if report else {}
    keys = ("tcp_packets", "tcp_streams", "tcp_payload_bytes", "duration_s", "warnings")
    return {"file": path.name, **{k: report.get(k) for k in keys}}


# A receiver interval line of iperf3's text report: "[  5]   1.00-2.07   sec  1.64 MBytes  13.0 Mbits/sec"
TEXT_INTERVAL = re.compile(r"^\[\s*\d+\]\s+([\d.]+)-([\d.]+)\s+sec\s+[\d.]+ \w?Bytes\s+([\d.]+) ([KMG]?)bits/sec\s*$")
BIT_PREFIX = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9}


def receiver_intervals(report: dict) -> list[list[float]] | None:
    """[[start_s, end_s, bits_per_second], ...] as the receiver saw them (iperf3
    --get-server-output: the server's JSON, or its text report when it ran without -J),
    None when the client report does not carry the server's."""
    server = report.get("server_output_json")
    if isinstance(server, dict):
        out = []
        for interval in server.get("intervals", []):
            total = interval.get("sum", {})
            if {"start", "end", "bits_per_second"} <= total.keys():
                out.append([total["start"], total["end"], total["bits_per_second"]])
        return out
    text = report.get("server_output_text")
    if not isinstance(text, str):
        return None
    out = []
    for line in text.splitlines():
        m = TEXT_INTERVAL.match(line)
        if m:
            out.append([float(m.group(1)), float(m.group(2)), float(m.group(3)) * BIT_PREFIX[m.group(4)]])
    return out  # (the summary line ends in "receiver" and does not match)


def summarize_flow(out: Path, stem: str, cca: str) -> dict:
    """One iperf3 client (files <stem>.json/.rc): throughput at the receiver, sender
    retransmits (TCP_INFO's tcpi_total_retrans), and whether it is sound."""
    result = {"cca": cca, "throughput_bps": None, "retransmits": None, "ok": False}
    raw = read_text(out / f"{stem}.json")
    rc = (read_text(out / f"{stem}.rc") or "").strip()
    if raw is None:
        result["error"] = "no iperf3 output (run did not happen)"
        return result
    try:
        report = json.loads(raw)
    except json.JSONDecodeError as exc:
        result["error"] = f"iperf3 output is not JSON: {exc}"
        return result
    end = report.get("end", {})
    result["throughput_bps"] = end.get("sum_received", {}).get("bits_per_second")
    result["retransmits"] = end.get("sum_sent", {}).get("retransmits")
    result["sender_cca"] = end.get("sender_tcp_congestion")
    result["bytes_received"] = end.get("sum_received", {}).get("bytes")
    result["bytes_sent"] = end.get("sum_sent", {}).get("bytes")
    result["mss_bytes"] = report.get("start", {}).get("tcp_mss_default")
    intervals = receiver_intervals(report)
    if intervals is not None:
        result["receiver_intervals"] = intervals
    if report.get("error"):
        result["error"] = f"iperf3: {report['error']}"
    elif rc != "0":
        result["error"] = f"iperf3 exit status {rc or 'unknown'}"
    elif not result["throughput_bps"]:
        result["error"] = "no throughput"
    elif result["sender_cca"] != cca:
        result["error"] = f"sender used {result['sender_cca']!r}, not {cca!r}"
    else:
        result["ok"] = True
    return result


def summarize_run(out: Path, cca: str, run: int) -> dict:
    """One run: one flow (cca "a"), or flows started together through one bottleneck
    ("a+b", files <name>.f1.*, <name>.f2.*: then "flows" lists each, throughput, bytes and
    retransmits are their sums and the run is ok when every flow is)."""
    name = f"{cca}-r{run}"
    flow_ccas = cca.split("+")
    if len(flow_ccas) == 1:
        result = {"cca": cca, "run": run, **summarize_flow(out, name, cca)}
    else:
        flows = [summarize_flow(out, f"{name}.f{i}", c) for i, c in enumerate(flow_ccas, 1)]
        result = {
            "cca": cca,
            "run": run,
            "flows": flows,
            "ok": all(f["ok"] for f in flows),
            "mss_bytes": flows[0].get("mss_bytes"),
        }
        for key in ("throughput_bps", "retransmits", "bytes_received", "bytes_sent"):
            values = [f.get(key) for f in flows]
            result[key] = sum(values) if all(v is not None for v in values) else None
        errors = [f"flow {i} ({f['cca']}): {f['error']}" for i, f in enumerate(flows, 1) if not f["ok"]]
        if errors:
            result["error"] = "; ".join(errors)
    result["pcap"] = f"{name}.pcap" if (out / f"{name}.pcap").exists() else None
    drops = path_drops(read_text(out / f"{name}.qdisc.txt") or "")
    if drops is not None:
        result["path"] = drops
    mib = mib_deltas(read_text(out / f"{name}.mib.txt") or "")
    if mib:
        result["mib"] = mib
    analysis = analysis_digest(out / f"{name}.analysis.json")
    if analysis is not None:
        result["analysis"] = analysis
    return result


def module_unloaded(out: Path, module: str) -> bool | None:
    """True when the guest's rmmod of the module succeeded; None when no module was loaded."""
    if not module:
        return None
    text = read_text(out / "rmmod.txt") or ""
    return "rmmod=ok" in text and "still_loaded=no" in text


def summarize(out: Path, ccas: list[str], runs: int, required: list[str], module: str) -> dict:
    available = (read_text(out / "available.txt") or "").split()
    run_results = [summarize_run(out, cca, r) for r in range(1, runs + 1) for cca in ccas]
    dmesg = read_text(out / "dmesg.txt")
    if dmesg is None:  # the guest died before saving dmesg: its console still shows the kernel's last words
        dmesg = read_text(out / "console.log") or ""
    warnings = kernel_warning_lines(dmesg)
    unloaded = module_unloaded(out, module)
    failures = [f"{cca} is not available" for cca in required if cca not in available]
    failures += [f"{r['cca']} run {r['run']}: {r['error']}" for r in run_results if not r["ok"]]
    if warnings:
        failures.append(f"{len(warnings)} kernel warning line(s)")
    if unloaded is False:
        failures.append(f"module {module} did not unload")
    if read_text(out / "dmesg.txt") is None:
        failures.append("no dmesg from the guest")
    return {
        "available": available,
        "runs": run_results,
        "kernel_warnings": len(warnings),
        "kernel_warning_lines": warnings,
        "module_unloaded": unloaded,
        "module_info": key_values(read_text(out / "module-info.txt") or ""),
        "failures": failures,
    }


def key_values(text: str) -> dict:
    """`key=value` lines as a dict."""
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="output directory of the VM run")
    parser.add_argument("--ccas", required=True, help="CCAs run, separated by spaces")
    parser.add_argument("--runs", type=int, required=True, help="rounds run")
    parser.add_argument("--require", default="", help="CCAs that must be available")
    parser.add_argument("--module", default="", help="module name that must have unloaded")
    args = parser.parse_args(argv)
    summary = summarize(args.out, args.ccas.split(), args.runs, args.require.split(), args.module)
    for failure in summary["failures"]:
        print(f"vm-test: FAIL: {failure}", file=sys.stderr)
    for line in summary["kernel_warning_lines"]:
        print(f"vm-test: kernel: {line}", file=sys.stderr)
    (args.out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(summary))
    return 1 if summary["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
