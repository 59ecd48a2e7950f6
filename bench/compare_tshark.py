#!/usr/bin/env python3
"""Compare our Wireshark-compatible TCP flags with tshark's on any capture.

    .venv/bin/python bench/compare_tshark.py CAPTURE [CAPTURE ...] [--show 10] [--json]

For each capture: runs tshark (-o tcp.analyze_sequence_numbers:TRUE, default preferences)
and `spline_analysis._core.wireshark.analyze`, then prints per-flag frame counts side by side, the
frames where each flag disagrees (the first --show of them), tcp.stream disagreements, and
ack_rtt / bytes_in_flight disagreements. Exit status 1 when anything differs.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Dict, List

import numpy as np

import spline_analysis
from spline_analysis._core import flows as flows_mod
from spline_analysis._core import wireshark

TSHARK_FLAGS = wireshark.REPORTED_FLAGS


def run_tshark(path: Path) -> Dict[str, np.ndarray]:
    """tshark's per-frame stream, flags, ack_rtt and bytes_in_flight (frame order)."""
    fields = [
        "frame.number",
        "tcp.stream",
        "icmp.type",
        "icmpv6.type",
        "tcp.analysis.ack_rtt",
        "tcp.analysis.bytes_in_flight",
    ] + [f"tcp.analysis.{f}" for f in TSHARK_FLAGS]
    cmd = [
        "tshark",
        "-n",
        "-r",
        str(path),
        "-o",
        "tcp.analyze_sequence_numbers:TRUE",
        "-T",
        "fields",
        "-E",
        "separator=/t",
        "-E",
        "occurrence=f",
    ]
    for f in fields:
        cmd += ["-e", f]
    text = subprocess.run(cmd, capture_output=True, text=True, errors="replace").stdout
    rows = [line.split("\t") for line in text.splitlines() if line.count("\t") >= len(fields) - 1]
    n = len(rows)
    stream = np.full(n, -1, dtype=np.int64)
    rtt_ns = np.full(n, -1, dtype=np.int64)
    bif = np.full(n, -1, dtype=np.int64)
    flags = {f: np.zeros(n, dtype=bool) for f in TSHARK_FLAGS}
    for i, c in enumerate(rows):
        in_icmp = c[2] != "" or c[3] != ""
        if c[1] != "" and not in_icmp:
            stream[i] = int(c[1])
        if c[4]:
            rtt_ns[i] = int(round(float(c[4]) * 1e9))
        if c[5]:
            bif[i] = int(c[5])
        for k, f in enumerate(TSHARK_FLAGS):
            flags[f][i] = c[6 + k] != ""
    return {"stream": stream, "ack_rtt_ns": rtt_ns, "bytes_in_flight": bif, **flags}


def compare(path: Path, show: int) -> Dict[str, object]:
    """Runs both and returns a report dict (counts, disagreements)."""
    cap = spline_analysis.read(path)
    flows = flows_mod.assign_streams(cap.packets)
    ours = wireshark.analyze(cap.packets, flows)
    theirs = run_tshark(path)
    n_ours, n_theirs = len(ours.flags), len(theirs["stream"])
    report: Dict[str, object] = {
        "file": str(path),
        "frames_ours": n_ours,
        "frames_tshark": n_theirs,
        "flags": {},
        "aligned": n_ours == n_theirs,
    }
    flag_report: Dict[str, Dict[str, object]] = {}
    for f in TSHARK_FLAGS:
        mine = wireshark.matches(ours.flags, f)
        entry: Dict[str, object] = {"ours": int(mine.sum()), "tshark": int(theirs[f].sum())}
        if n_ours == n_theirs:
            diff = np.flatnonzero(mine != theirs[f])
            entry["disagree"] = int(len(diff))
            entry["first_frames"] = [int(x) + 1 for x in diff[:show]]
        flag_report[f] = entry
    report["flags"] = flag_report
    if n_ours == n_theirs:
        stream_ours = np.where(flows.stream >= 0, flows.stream, -1).astype(np.int64)
        sdiff = np.flatnonzero(stream_ours != theirs["stream"])
        report["stream_disagree"] = int(len(sdiff))
        report["stream_first_frames"] = [int(x) + 1 for x in sdiff[:show]]
        for name in ("ack_rtt_ns", "bytes_in_flight"):
            mine = getattr(ours, name)
            if name == "ack_rtt_ns":  # tshark prints microsecond-rounded seconds for pcap
                close = (mine == theirs[name]) | (
                    (mine >= 0) & (theirs[name] >= 0) & (np.abs(mine - theirs[name]) <= 1000)
                )
            else:
                close = mine == theirs[name]
            d = np.flatnonzero(~close)
            report[f"{name}_disagree"] = int(len(d))
            report[f"{name}_first_frames"] = [int(x) + 1 for x in d[:show]]
    report["tcp_streams_ours"] = int(len(np.unique(flows.stream[flows.stream >= 0])))
    report["tcp_streams_tshark"] = int(len(np.unique(theirs["stream"][theirs["stream"] >= 0])))
    return report


def print_report(r: Dict[str, object]) -> bool:
    """Prints one capture's comparison; returns True when everything agrees."""
    ok = bool(r["aligned"])
    print(f"== {r['file']}")
    print(
        f"   frames: ours {r['frames_ours']}  tshark {r['frames_tshark']}"
        + ("" if r["aligned"] else "  (NOT ALIGNED: only counts compared)")
    )
    print(
        f"   tcp streams: ours {r['tcp_streams_ours']}  tshark {r['tcp_streams_tshark']}"
        + (
            f"  frames with another stream: {r['stream_disagree']} {r['stream_first_frames']}"
            if "stream_disagree" in r
            else ""
        )
    )
    ok &= r["tcp_streams_ours"] == r["tcp_streams_tshark"] and not r.get("stream_disagree", 0)
    print(f"   {'flag':26s} {'ours':>8s} {'tshark':>8s} {'disagree':>9s}  first differing frames")
    for f, e in r["flags"].items():  # type: ignore[union-attr]
        dis = e.get("disagree", abs(e["ours"] - e["tshark"]))
        ok &= dis == 0 and e["ours"] == e["tshark"]
        print(f"   {f:26s} {e['ours']:8d} {e['tshark']:8d} {dis:9d}  {e.get('first_frames', '')}")
    for name in ("ack_rtt_ns", "bytes_in_flight"):
        if f"{name}_disagree" in r:
            print(f"   {name:26s} disagree {r[f'{name}_disagree']}  {r[f'{name}_first_frames']}")
    return ok


def main(argv: List[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("captures", nargs="+", type=Path)
    parser.add_argument("--show", type=int, default=10, help="differing frames to list per flag")
    parser.add_argument("--json", action="store_true", help="print JSON instead of tables")
    args = parser.parse_args(argv)
    all_ok = True
    reports = []
    for path in args.captures:
        try:
            r = compare(path, args.show)
        except Exception as exc:  # a capture our decoder rejects: say so and go on
            print(f"== {path}: not compared ({type(exc).__name__}: {exc})")
            continue
        reports.append(r)
        if not args.json:
            all_ok &= print_report(r)
    if args.json:
        print(json.dumps(reports, indent=1))
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main())
