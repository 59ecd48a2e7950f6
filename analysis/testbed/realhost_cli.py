"""`spline-testbed realhost`: make the real-host matrix and print truth against spline-analyze.

    spline-testbed realhost --matrix capture/experiments/realhost-matrix.toml --out DIR
    spline-testbed realhost --matrix FILE --out DIR --only 'gro-v4-.*' --duration 3
    spline-testbed realhost --matrix FILE --out DIR --issue-cases     # the four cases of issue 8
    spline-testbed realhost --out DIR --reanalyse                     # compare again, no new transfers
    spline-testbed realhost --vm --matrix capture/experiments/realhost-delay.toml --out DIR

Transfers with delay or jitter need the netem qdisc. A host whose kernel has none refuses
them before anything runs (they are never run without their delay); `--vm` runs the whole
matrix in one boot of a stock kernel under QEMU (analysis/testbed/vm.py: virtme-ng, the
host's root filesystem read-only, --out shared), and the host then follows the
retransmissions through the router's captures and compares, as `--reanalyse` does.

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
from typing import Any, Dict, List, Optional

from . import vm
from .errors import TestbedError
from .realhost import (
    REVERSE_CHAINS,
    receiver_resends_truth,
    reverse_receiver_document,
    reverse_unread_at_end_s,
    recounted_truth,
    router_retransmission_truth,
    run_transfer,
    transfer_mss_bytes,
    transfer_tag,
)
from .run import read_json_document
from .realhost_compare import compare_record, format_issue_cases, format_table, write_csv
from .spline_cca import SPLINE_CCA, spline_registrable
from .realhost_spec import REVERSE_ROLE, Matrix, Transfer, load_matrix, recorded_transfer, with_duration

TOOLS = ("ip", "tc", "iptables", "ip6tables", "ethtool", "ss", "stdbuf", "tcpdump", "iperf3")


def netem_refusal(matrix: Matrix, netem_available: bool) -> Optional[str]:
    """Why the matrix cannot run on this host (None: it can): transfers with delay or jitter
    and no netem here. Never run them without it: their captures would hold another path."""
    delayed = [t.name for t in matrix.transfers if t.needs_netem]
    if not delayed or netem_available:
        return None
    named = ", ".join(delayed[:3]) + (f" and {len(delayed) - 3} more" if len(delayed) > 3 else "")
    return (
        f"this kernel has no netem qdisc, so the delay and jitter of {named} cannot be applied here, "
        "and a transfer never runs without them: add --vm to run the matrix in a stock kernel that "
        "has netem (QEMU, virtme-ng), or leave those transfers out (--only)"
    )


def check_realhost_host(matrix: Matrix) -> None:
    """Fail before anything starts: root, tools, congestion controls, netem where asked for."""
    import shutil

    from .cli import NAMESPACE_PREFIX, available_ccas, detect_netem

    if os.geteuid() != 0:
        raise TestbedError("spline-testbed realhost needs root (network namespaces, iptables, tcpdump)")
    missing = [tool for tool in TOOLS if shutil.which(tool) is None]
    if missing:
        raise TestbedError(f"missing tools: {', '.join(missing)}")
    unknown = sorted({t.cca for t in matrix.transfers} - set(available_ccas()))
    if SPLINE_CCA in unknown and spline_registrable():
        unknown.remove(SPLINE_CCA)  # registered for each transfer that names it (spline_cca.py)
    if unknown:
        raise TestbedError(f"congestion control not available here: {', '.join(unknown)}")
    if any(t.needs_netem for t in matrix.transfers):
        refusal = netem_refusal(matrix, detect_netem(f"{NAMESPACE_PREFIX}-{os.getpid()}"))
        if refusal:
            raise TestbedError(refusal)


def finished_transfers(out_dir: Path) -> set:
    """The names of the transfers under DIR/runs that wrote their truth.json."""
    return {path.parent.name for path in (out_dir / "runs").glob("*/truth.json")}


def guest_arguments(args: argparse.Namespace, out_dir: Path) -> List[str]:
    """`spline-testbed realhost` as the user asked, for the guest: make the transfers only."""
    argv = ["realhost", "--guest", "--matrix", str(Path(args.matrix).resolve()), "--out", str(out_dir.resolve())]
    for pattern in args.only or []:
        argv += ["--only", pattern]
    if args.issue_cases:
        argv.append("--issue-cases")
    if args.duration is not None:
        argv += ["--duration", f"{args.duration:g}"]
    return argv


def selected_matrix(args: argparse.Namespace) -> Matrix:
    matrix = with_duration(load_matrix(Path(args.matrix)).select(args.only or []), args.duration)
    if args.issue_cases:
        matrix = Matrix([t for t in matrix.transfers if t.issue_case])
    return matrix


def make_transfers_in_vm(args: argparse.Namespace, matrix: Matrix, out_dir: Path) -> None:
    """One boot of a stock kernel makes every transfer of `matrix` into `out_dir`/runs."""
    out_dir.mkdir(parents=True, exist_ok=True)
    kvm = vm.kvm_usable()
    warnings = (
        vm.tcg_rate_warning([t.rate_bps for t in matrix.transfers if t.rate_bps], kvm),
        vm.tcg_rate_step_warning([t.rate_step_ms for t in matrix.transfers if t.rate_steps_bps], kvm),
    )
    for warning in warnings:
        if warning:
            print(f"spline-testbed: {warning}", file=sys.stderr)
    args.no_module = "spline" not in {t.cca for t in matrix.transfers}
    summary = vm.run_in_vm(
        args,
        [t.name for t in matrix.transfers],
        max(t.duration_s for t in matrix.transfers),
        out_dir,
        lambda staging, out: None,  # the guest writes its transfers' folders in place
        ".spline-realhost-guest-",
        "--vm",
        guest_argv_of=lambda ko: guest_arguments(args, out_dir),
        finished_of=finished_transfers,
    )
    print(
        f"spline-testbed: VM ({summary['kernel']}, {summary['accel']}): {summary['runs_recovered']} of "
        f"{len(matrix.transfers)} transfers made, {summary['wall_time_s']:.1f} s",
        file=sys.stderr,
    )
    if summary["interrupted"]:
        raise KeyboardInterrupt
    missing = [t.name for t in matrix.transfers if t.name not in finished_transfers(out_dir)]
    if missing:
        fault = f" ({'; '.join(summary['guest_faults'])})" if summary["guest_faults"] else ""
        raise TestbedError(
            f"the VM did not make {', '.join(missing)}{fault}; its console: {out_dir / 'vm-console.log'}"
        )


def make_transfer(transfer: Transfer, number: int, out_dir: Path, in_vm: bool = False) -> Dict[str, Any]:
    """Transfer `number` of the matrix into `out_dir`/runs/NAME, its record kept as truth.json."""
    record = run_transfer(transfer, out_dir / "runs" / transfer.name, transfer_tag(number), in_vm=in_vm).to_json()
    record["order"] = number
    (Path(record["run_dir"]) / "truth.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    return record


def make_transfers_here(matrix: Matrix, out_dir: Path) -> List[Dict[str, Any]]:
    """Every transfer of `matrix` on this host, one after the other, with a line each."""
    records = []
    started_s = time.monotonic()
    for number, transfer in enumerate(matrix.transfers, start=1):
        record = make_transfer(transfer, number, out_dir)
        records.append(record)
        print(
            f"[{number}/{len(matrix.transfers)}] {transfer.name}: {record['wall_time_s']:.1f} s "
            f"({time.monotonic() - started_s:.0f} s in all)",
            file=sys.stderr,
            flush=True,
        )
    return records


def make_transfers_in_guest(args: argparse.Namespace, matrix: Matrix, out_dir: Path) -> None:
    """In the guest: the transfers only, with progress lines the host reads; the router's
    account of each retransmission and the comparison are left to the host (TCG is slow)."""
    from .cli import draw_progress

    for note in vm.prepare_guest(None):
        print(f"spline-testbed: guest: {note}", file=sys.stderr)
    check_realhost_host(matrix)
    done = finished_transfers(out_dir) if args.guest_resume else set()
    started_s = time.monotonic()
    total = len(matrix.transfers)
    draw_progress(len(done), total, "starting", started_s, False)
    for number, transfer in enumerate(matrix.transfers, start=1):
        if transfer.name in done:
            continue
        draw_progress(number - 1, total, f"running {transfer.name}", started_s, False)
        record = make_transfer(transfer, number, out_dir, in_vm=True)
        draw_progress(number, total, f"{transfer.name} ({record['wall_time_s']:.1f} s)", started_s, False)


def resends_readable(record: Dict[str, Any]) -> bool:
    """Whether the receiver's copies it never took are read again from its capture: always where
    the capture is still there (the count's rules change: copies discarded by PAWS were added
    before), else only for a record that never had them (kept as recorded otherwise)."""
    receiver = record["captures"].get("receiver")
    if receiver is not None and Path(receiver["pcap"]).exists():
        return True
    return "receiver_resends_not_dsacked" not in record["truth"]


def reverse_recounted_truth(record: Dict[str, Any], transfer: Transfer) -> Dict[str, Any]:
    """The way back's truth of a `bidir` record read again as `recounted_truth` reads the way
    there's: its own chains and the client's receiving intervals; the router's account of its
    retransmissions from the captures where the record was made without it (in a guest)."""
    reverse = record["reverse"]
    client_document = read_json_document(Path(record["run_dir"]) / "iperf3.json")
    truth = recounted_truth(
        {**record, "truth": reverse["truth"]}, transfer, REVERSE_CHAINS, reverse_receiver_document(client_document)
    )
    if "retransmissions" not in truth:
        pcaps = {REVERSE_ROLE[vantage]: Path(c["pcap"]) for vantage, c in record["captures"].items()}
        truth.update(
            router_retransmission_truth(
                pcaps, reverse["sender_address"], reverse["client_ports"], transfer_mss_bytes(transfer)
            )
        )
    return truth


def load_records(out_dir: Path) -> List[Dict[str, Any]]:
    """The truth.json of every finished transfer under DIR/runs, in run order; its segment
    counts are read again from the chains' listings it keeps, and a transfer made before the
    router's per-retransmission truth (or the receiver's copies it never took) existed gets it
    from its captures."""
    records = []
    for path in sorted((out_dir / "runs").glob("*/truth.json")):
        record = json.loads(path.read_text(encoding="utf-8"))
        transfer = recorded_transfer(record["transfer"])
        record["truth"] = recounted_truth(record, transfer)
        if resends_readable(record):
            record["truth"]["receiver_resends_not_dsacked"] = receiver_resends_truth(
                record["captures"],
                transfer,
                record["sender_address"],
                record["client_ports"],
                record["truth"].get("receiver_stack_drops"),
            )
        if "retransmissions" not in record["truth"]:
            pcaps = {vantage: Path(c["pcap"]) for vantage, c in record["captures"].items()}
            record["truth"].update(
                router_retransmission_truth(
                    pcaps, record["sender_address"], record["client_ports"], transfer_mss_bytes(transfer)
                )
            )
        if record.get("reverse"):
            record["reverse"]["truth"] = reverse_recounted_truth(record, transfer)
            record["reverse"]["unread_at_end_s"] = reverse_unread_at_end_s(
                record["reverse"]["truth"], read_json_document(Path(record["run_dir"]) / "iperf3.json")
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
    elif args.guest:
        make_transfers_in_guest(args, selected_matrix(args), out_dir)
        return 0
    else:
        if not args.matrix:
            raise TestbedError("--matrix FILE is needed (or --reanalyse to compare a finished run again)")
        matrix = selected_matrix(args)
        if not args.vm:
            check_realhost_host(matrix)
        if (out_dir / "results.csv").exists() and not args.force:
            raise TestbedError(f"{out_dir}/results.csv exists; choose another --out or pass --force")
        if args.vm:
            make_transfers_in_vm(args, matrix, out_dir)
            names = {t.name for t in matrix.transfers}
            records = [r for r in load_records(out_dir) if r["transfer"]["name"] in names]
        else:
            records = make_transfers_here(matrix, out_dir)
    rows = []
    for record in records:
        rows.extend(compare_record(record))
    write_csv(rows, out_dir / "results.csv")
    (out_dir / "results.json").write_text(
        json.dumps({"rows": rows, "transfers": records}, indent=2) + "\n", encoding="utf-8"
    )
    print(format_table(rows))
    by_name = {r["transfer"]["name"]: r for r in records}
    cases = [r for r in rows if r["transfer"] in by_name and by_name[r["transfer"]]["transfer"].get("issue_case")]
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
    parser.add_argument(
        "--vm",
        action="store_true",
        help="make the transfers in one boot of an installed stock kernel under QEMU (virtme-ng), "
        "which has netem for delay and jitter; compare on this host",
    )
    vm.add_guest_arguments(parser)
    parser.add_argument("--guest", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--guest-resume", action="store_true", help=argparse.SUPPRESS)
    parser.set_defaults(handler=command_realhost)
