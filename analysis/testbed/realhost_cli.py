"""`spline-testbed realhost`: make the real-host matrix and print truth against spline-analyze.

    spline-testbed realhost --matrix capture/experiments/realhost-matrix.toml --out DIR
    spline-testbed realhost --matrix FILE --out DIR --only 'gro-v4-.*' --duration 3
    spline-testbed realhost --matrix FILE --out DIR --issue-cases     # the four cases of issue 8
    spline-testbed realhost --out DIR --reanalyse                     # compare again, no new transfers

Writes DIR/runs/<transfer>/ (captures, iperf3.json, truth.json), DIR/results.csv and
DIR/results.json; prints the agreement table on stdout, progress on stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Dict, List

from .errors import TestbedError
from .realhost import router_retransmission_truth, run_transfer, transfer_tag
from .realhost_compare import compare_record, format_issue_cases, format_table, write_csv
from .realhost_spec import Matrix, load_matrix, with_duration

TOOLS = ("ip", "tc", "iptables", "ip6tables", "ethtool", "ss", "stdbuf", "tcpdump", "iperf3")


def check_realhost_host(matrix: Matrix) -> None:
    """Fail before anything starts: root, tools, congestion controls."""
    import shutil

    from .cli import available_ccas

    if os.geteuid() != 0:
        raise TestbedError("spline-testbed realhost needs root (network namespaces, iptables, tcpdump)")
    missing = [tool for tool in TOOLS if shutil.which(tool) is None]
    if missing:
        raise TestbedError(f"missing tools: {', '.join(missing)}")
    unknown = sorted({t.cca for t in matrix.transfers} - set(available_ccas()))
    if unknown:
        raise TestbedError(f"congestion control not available here: {', '.join(unknown)}")


def load_records(out_dir: Path) -> List[Dict[str, Any]]:
    """The truth.json of every finished transfer under DIR/runs, in run order; a transfer
    made before the router's per-retransmission truth existed gets it from its captures."""
    records = []
    for path in sorted((out_dir / "runs").glob("*/truth.json")):
        record = json.loads(path.read_text(encoding="utf-8"))
        if "retransmissions" not in record["truth"]:
            pcaps = {vantage: Path(c["pcap"]) for vantage, c in record["captures"].items()}
            family = record["transfer"]["family"]
            record["truth"].update(
                router_retransmission_truth(pcaps, record["sender_address"], record["client_ports"], family)
            )
        records.append(record)
    records.sort(key=lambda r: r.get("order", 0))
    return records


def command_realhost(args: argparse.Namespace) -> int:
    out_dir = Path(args.out)
    if args.reanalyse:
        records = load_records(out_dir)
        if not records:
            raise TestbedError(f"no finished transfers under {out_dir}/runs")
    else:
        if not args.matrix:
            raise TestbedError("--matrix FILE is needed (or --reanalyse to compare a finished run again)")
        matrix = with_duration(load_matrix(Path(args.matrix)).select(args.only or []), args.duration)
        if args.issue_cases:
            matrix = Matrix([t for t in matrix.transfers if t.issue_case])
        check_realhost_host(matrix)
        if (out_dir / "results.csv").exists() and not args.force:
            raise TestbedError(f"{out_dir}/results.csv exists; choose another --out or pass --force")
        records = []
        started_s = time.monotonic()
        for number, transfer in enumerate(matrix.transfers, start=1):
            record = run_transfer(transfer, out_dir / "runs" / transfer.name, transfer_tag(number)).to_json()
            record["order"] = number
            (Path(record["run_dir"]) / "truth.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
            records.append(record)
            print(
                f"[{number}/{len(matrix.transfers)}] {transfer.name}: {record['wall_time_s']:.1f} s "
                f"({time.monotonic() - started_s:.0f} s in all)",
                file=sys.stderr,
                flush=True,
            )
    rows = []
    for record in records:
        rows.extend(compare_record(record))
    write_csv(rows, out_dir / "results.csv")
    (out_dir / "results.json").write_text(
        json.dumps({"rows": rows, "transfers": records}, indent=2) + "\n", encoding="utf-8"
    )
    print(format_table(rows))
    by_name = {r["transfer"]["name"]: r for r in records}
    cases = [r for r in rows if by_name[r["transfer"]]["transfer"].get("issue_case")]
    if cases:
        cases.sort(key=lambda r: by_name[r["transfer"]]["transfer"]["issue_case"])
        print("\nIssue 8's cases, remade:")
        print(format_issue_cases(cases, by_name))
    print(f"spline-testbed realhost: {len(rows)} rows -> {out_dir / 'results.csv'}", file=sys.stderr)
    return 0 if all(r["ok"] for r in rows) else 1


def add_parser(commands) -> None:
    """The `realhost` subcommand of spline-testbed."""
    parser = commands.add_parser(
        "realhost",
        help="captures as real hosts make them (offloads, -i any, capture drops) against truth",
        description=__doc__.split("\n\n")[0],
    )
    parser.add_argument("--matrix", help="real-host matrix file (TOML: [defaults] and [[transfer]] tables)")
    parser.add_argument("--out", required=True, help="output directory (runs/, results.csv, results.json)")
    parser.add_argument("--only", action="append", help="run only transfers whose name matches (regex; repeatable)")
    parser.add_argument("--issue-cases", action="store_true", help="run only the transfers remaking issue 8's table")
    parser.add_argument("--duration", type=float, help="seconds per transfer, overriding the file")
    parser.add_argument("--reanalyse", action="store_true", help="compare the transfers already in --out again")
    parser.add_argument("--force", action="store_true", help="overwrite results in --out")
    parser.set_defaults(handler=command_realhost)
