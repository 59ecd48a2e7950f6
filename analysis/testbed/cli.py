"""`spline-testbed`: run an emulation matrix and write a tidy results table.

    spline-testbed run --cca cubic,bbr --rate 50mbit --loss 0,2% --duration 5 --out DIR
    spline-testbed run --config experiment.toml --out DIR
    spline-testbed check            # what this host can emulate
    spline-testbed realhost --matrix capture/experiments/realhost-matrix.toml --out DIR

This is the only module of the testbed that prints (to stderr, except `check`).

Exit status: 0 done, 1 (realhost) a capture missed its tolerances, 2 refused (options,
--out, host) or a run failed, 4 the results could not be written (a full disk: one line;
what `run` wrote stays in OUT/.spline-testbed-PID-XXXXXX), 130 interrupted (Ctrl-C,
SIGTERM, SIGHUP). A reader that has gone (`| head -1`) is not an error: the run goes on.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import List, Optional, Sequence

from . import netns, vm
from .errors import TestbedError
from .matrix import MatrixSpec, RunSpec, ccas_needed, expand, load_toml, matrix_from_mapping
from .probe import ProbeTrace
from .results import read_csv, rows_for_run, write_csv, write_parquet
from .run import FIRST_CLIENT_PORT, execute_run

REQUIRED_TOOLS = ("ip", "tc", "iptables", "ethtool", "ss", "tcpdump", "iperf3")
EXIT_REFUSED = 2
EXIT_OUTPUT = 4
EXIT_INTERRUPTED = 130
# Signals that end a run as Ctrl-C does: namespaces removed, finished runs kept, status 130.
INTERRUPT_SIGNALS = (signal.SIGTERM, signal.SIGHUP)
BAR_WIDTH_CHARS = 30
NO_NETEM_MESSAGE = (
    "spline-testbed: this kernel has no netem qdisc: delay, jitter and reordering cannot be "
    "emulated here and are NOT applied (runs record delay_applied=false); rate is shaped with tbf "
    "and loss is a random drop in the router's FORWARD chain (iptables statistic)"
)


def available_ccas() -> List[str]:
    try:
        return Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text().split()
    except OSError:
        return []


def check_host(ccas: Sequence[str]) -> None:
    """Fail before anything starts: root, tools, congestion controls."""
    if os.geteuid() != 0:
        raise TestbedError("spline-testbed needs root (network namespaces, tc, iptables, tcpdump)")
    missing = [tool for tool in REQUIRED_TOOLS if shutil.which(tool) is None]
    if missing:
        raise TestbedError(
            f"missing tools: {', '.join(missing)} (Debian: apt-get install iproute2 iptables ethtool tcpdump iperf3)"
        )
    available = available_ccas()
    unknown = [cca for cca in ccas if cca not in available]
    if unknown:
        raise TestbedError(
            f"congestion control not available: {', '.join(unknown)}; available here: "
            f"{' '.join(available) or 'none'} (for spline, load the module or register its "
            f"eBPF struct_ops first)"
        )


def detect_netem(prefix: str) -> bool:
    with netns.namespace(f"{prefix}-probe") as scratch:
        return netns.kernel_has_netem(scratch)


def draw_progress(done: int, total: int, label: str, started_s: float, redraw: Optional[bool] = None) -> None:
    """The progress bar on stderr: redrawn in place on a terminal, one line per step otherwise
    (and in a VM guest, whose console the host reads line by line)."""
    filled = BAR_WIDTH_CHARS * done // max(total, 1)
    bar = "=" * filled + " " * (BAR_WIDTH_CHARS - filled)
    line = f"[{bar}] {done}/{total} runs  {time.monotonic() - started_s:6.1f} s  {label}"
    if sys.stderr.isatty() if redraw is None else redraw:
        sys.stderr.write("\r\033[K" + line + ("\n" if done == total else ""))
    else:
        sys.stderr.write(line + "\n")
    sys.stderr.flush()


def raise_keyboard_interrupt(signum, frame):  # noqa: ARG001 - signal handler signature
    raise KeyboardInterrupt


class OutputError(Exception):
    """The results could not be written (exit status 4)."""


class ReaderMayLeave:
    """stdout or stderr whose reader may go away (`spline-testbed ... | head -1`): from then
    on what is written goes to /dev/null and the run carries on, instead of a
    BrokenPipeError in the middle of a matrix."""

    def __init__(self, stream) -> None:
        self._stream = stream

    def _gone(self) -> None:
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self._stream.fileno())
            os.close(devnull)
        except (OSError, ValueError, AttributeError):
            pass

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            self._gone()
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._gone()
            try:
                self._stream.flush()  # the buffered rest, into /dev/null now
            except OSError:
                pass

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


def disk_is_full(folder: Path) -> bool:
    try:
        return os.statvfs(folder).f_bavail == 0
    except OSError:
        return False


def build_matrix(args: argparse.Namespace) -> MatrixSpec:
    spec = MatrixSpec()
    if args.config:
        spec = matrix_from_mapping(load_toml(Path(args.config)), spec)
    flags = {
        "cca": args.cca,
        "rate": args.rate,
        "delay": args.delay,
        "jitter": args.jitter,
        "loss": args.loss,
        "reorder": args.reorder,
        "flows": args.flows,
        "duration_s": args.duration,
    }
    return matrix_from_mapping({k: v for k, v in flags.items() if v is not None}, spec)


NAMESPACE_PREFIX = "stb"
STAGING_PREFIX = ".spline-testbed-"
OUTPUT_TABLES = ("results.csv", "results.parquet", "testbed.json")


def prepare_out_dir(out: Path, force: bool) -> Path:
    """--out as a folder to publish into: made when missing; one line when it cannot be."""
    if os.path.lexists(out) and not out.is_dir():
        raise TestbedError(f"--out {out}: exists and is not a folder")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise TestbedError(f"--out {out}: cannot make the folder: {exc.strerror or exc}") from None
    if not os.access(out, os.W_OK | os.X_OK):
        raise TestbedError(f"--out {out}: not writable")
    if os.path.lexists(out / "results.csv") and not force:
        raise TestbedError(f"{out}/results.csv exists; choose another --out or pass --force")
    return out


def make_staging_dir(out_dir: Path) -> Path:
    """A fresh private folder inside --out (0700, a name nobody could have planted) where
    every file of this invocation is created; published into --out by renames at the end,
    so a symlink planted in --out is never followed, even as root."""
    return Path(tempfile.mkdtemp(prefix=f"{STAGING_PREFIX}{os.getpid()}-", dir=out_dir))


def publish(staging: Path, out_dir: Path) -> None:
    """Move the run folders and tables of `staging` into `out_dir`. A rename replaces a
    symlink in its way instead of following it; a run folder never lands on anything."""
    runs = out_dir / "runs"
    if (staging / "runs").is_dir():
        if os.path.islink(runs) or (os.path.lexists(runs) and not runs.is_dir()):
            raise TestbedError(f"{runs} is not a plain folder; results left in {staging}")
        runs.mkdir(exist_ok=True)
        for run_dir in sorted((staging / "runs").iterdir()):
            target = runs / run_dir.name
            if os.path.islink(target) or os.path.isfile(target):
                os.unlink(target)
            elif target.is_dir():
                shutil.rmtree(target)  # --force: the earlier run of this id
            os.rename(run_dir, target)
        (staging / "runs").rmdir()
    for name in OUTPUT_TABLES:
        if (staging / name).exists():
            os.replace(staging / name, out_dir / name)
    staging.rmdir()


def leftovers_of_killed_runs(out_dir: Optional[Path]) -> List[str]:
    """Remove what a SIGKILLed spline-testbed left (namespaces, with the tcpdump and iperf3
    inside them) and name it; name staging folders of dead runs in `out_dir`."""
    notes = []
    for name in netns.orphaned_namespaces(NAMESPACE_PREFIX):
        pids = netns.remove_namespace(name)
        notes.append(
            f"removed namespace {name} of a killed run"
            + (f" and stopped its processes {', '.join(map(str, pids))}" if pids else "")
        )
    if out_dir is not None and out_dir.is_dir():
        for staging in sorted(out_dir.glob(f"{STAGING_PREFIX}*")):
            pid = staging.name[len(STAGING_PREFIX) :].split("-")[0]
            if pid.isdigit() and not Path(f"/proc/{pid}").exists():
                notes.append(f"{staging} holds the files of a killed run (captures marked unfinished)")
    return notes


def needs_netem(runs: Sequence[RunSpec]) -> bool:
    return any(r.delay.value or r.jitter.value or r.reorder.value for r in runs)


def vm_choice(args: argparse.Namespace, runs: Sequence[RunSpec]) -> Optional[str]:
    """Why the matrix runs in a VM (None: on this host): asked with --vm, or delay, jitter or
    reordering asked for on a host whose kernel has no netem and that can boot a VM."""
    if args.vm:
        return "--vm"
    if args.guest or args.no_vm or not needs_netem(runs) or os.geteuid() != 0:
        return None
    if detect_netem(f"{NAMESPACE_PREFIX}-{os.getpid()}"):
        return None
    if (
        not vm.usable_kernels()
        or shutil.which("vng", path=vm.tool_path()) is None
        or shutil.which("qemu-system-x86_64") is None
    ):
        return None
    return "this host's kernel has no netem, so delay, jitter and reordering need one that has (--no-vm: run here without them)"


def write_parquet_beside_csv(out_dir: Path) -> Optional[str]:
    """results.parquet from the results.csv a guest published (by a rename: a planted symlink
    is replaced, never followed); why not, when it could not be written."""
    results_csv = out_dir / "results.csv"
    if os.path.islink(results_csv) or not results_csv.is_file():
        return None
    rows = read_csv(results_csv)
    if not rows:
        return None
    handle, part = tempfile.mkstemp(prefix=".results.parquet.", dir=out_dir)
    os.close(handle)
    try:
        note = write_parquet(rows, Path(part))
        if note is None:
            os.replace(part, out_dir / "results.parquet")
    finally:
        if os.path.exists(part):
            os.unlink(part)
    return note


def command_run_vm(args: argparse.Namespace, runs: Sequence[RunSpec], reason: str) -> int:
    """The matrix in a guest kernel: the guest runs command_run (--guest) on the shared --out."""
    out_dir = prepare_out_dir(Path(args.out), args.force)
    warning = vm.tcg_rate_warning([spec.rate.value for spec in runs], vm.kvm_usable())
    if warning:
        print(f"spline-testbed: {warning}", file=sys.stderr)
    summary = vm.run_in_vm(
        args,
        [spec.run_id for spec in runs],
        runs[0].duration_s if runs else 0.0,
        out_dir,
        publish,
        STAGING_PREFIX,
        reason,
    )
    parquet_note = write_parquet_beside_csv(out_dir)
    if parquet_note:
        print(f"spline-testbed: {parquet_note}", file=sys.stderr)
    testbed_json = out_dir / "testbed.json"
    try:
        document = json.loads(testbed_json.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        document = {"runs_planned": len(runs), "runs_finished": summary["runs_recovered"]}
    document["interrupted"] = bool(document.get("interrupted")) or summary["interrupted"]
    document["vm"] = {
        key: summary[key]
        for key in (
            "kernel",
            "accel",
            "cpus",
            "boot_s",
            "run_costs_s",
            "wall_time_s",
            "status",
            "boots",
            "guest_faults",
            "boot_faults",
        )
    }
    if not os.path.islink(testbed_json):
        testbed_json.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    costs = summary["run_costs_s"]
    boot = f"{summary['boot_s']:.1f} s" if summary["boot_s"] is not None else "unknown"
    per_run = f"{sum(costs) / len(costs):.1f} s per run" if costs else "no run finished"
    print(
        f"spline-testbed: VM ({summary['kernel']}, {summary['accel']}): boot and set-up {boot}, {per_run}, "
        f"{summary['wall_time_s']:.1f} s in all",
        file=sys.stderr,
    )
    if summary["interrupted"]:
        print(
            f"spline-testbed: interrupted; the VM is stopped; results of the {summary['runs_recovered']} "
            f"finished run(s) kept in {out_dir}",
            file=sys.stderr,
        )
        return 130
    # The guest publishes testbed.json last: every planned run finished there is success,
    # whatever status virtme-ng passes on for the guest's poweroff.
    if document.get("runs_finished") == len(runs) and not document.get("interrupted"):
        return 0
    fault = f" ({'; '.join(summary['guest_faults'])})" if summary["guest_faults"] else ""
    print(
        f"spline-testbed: {document.get('runs_finished', 0)} of {len(runs)} runs finished in the VM{fault}; "
        f"its console: {out_dir / 'vm-console.log'}",
        file=sys.stderr,
    )
    return 2


def command_run(args: argparse.Namespace) -> int:
    runs = expand(build_matrix(args))
    if args.guest:
        for note in vm.prepare_guest(args.guest_ko):
            print(f"spline-testbed: guest: {note}", file=sys.stderr)
    reason = vm_choice(args, runs)
    if reason is not None:
        return command_run_vm(args, runs, reason)
    check_host(ccas_needed(runs))
    # a fresh guest after one that faulted: the runs its predecessor published stay, the rest run
    resume = bool(getattr(args, "guest_resume", False)) and (Path(args.out) / "results.csv").is_file()
    out_dir = prepare_out_dir(Path(args.out), args.force or resume)
    for note in leftovers_of_killed_runs(out_dir):
        print(f"spline-testbed: {note}", file=sys.stderr)
    staging = make_staging_dir(out_dir)
    prefix = f"{NAMESPACE_PREFIX}-{os.getpid()}"
    netem_available = detect_netem(prefix)
    if not netem_available and needs_netem(runs):
        print(NO_NETEM_MESSAGE, file=sys.stderr)
    rows = read_csv(out_dir / "results.csv") if resume else []
    finished_before = {row["run_id"] for row in rows}
    started_s = time.monotonic()
    interrupted = False
    flows_max = max((spec.flows for spec in runs), default=1)
    tracer = ProbeTrace(FIRST_CLIENT_PORT, FIRST_CLIENT_PORT + flows_max - 1)
    redraw = False if args.guest else None
    draw_progress(len(finished_before), len(runs), "starting", started_s, redraw)
    try:
        for number, spec in enumerate(runs, start=1):
            if spec.run_id in finished_before:
                continue
            draw_progress(number - 1, len(runs), f"running {spec.run_id}", started_s, redraw)
            tracer.clear()
            record = execute_run(
                spec,
                staging / "runs" / spec.run_id,
                f"{prefix}-{spec.index}",
                netem_available,
                snaplen_bytes=args.snaplen,
            )
            tracer.save(record.sender_pcap.with_name("probe.csv"))
            rows.extend(rows_for_run(record, staging))
            write_csv(rows, staging / "results.csv")  # finished runs survive a killed VM
            draw_progress(number, len(runs), f"{spec.run_id} ({record.wall_time_s:.1f} s)", started_s, redraw)
            if args.guest and args.guest_crash_after == len({row["run_id"] for row in rows} - finished_before):
                Path("/proc/sysrq-trigger").write_text("c\n")
    except KeyboardInterrupt:
        interrupted = True
        print(
            "\nspline-testbed: interrupted; namespaces, rules and processes removed; "
            f"results of the {len({r['run_id'] for r in rows})} finished run(s) kept",
            file=sys.stderr,
        )
    except (TestbedError, OSError):
        if disk_is_full(staging):  # a run that failed for want of space: say that, not its symptom
            raise OutputError(
                f"cannot write into {out_dir}: No space left on device; what was written is in {staging}"
            ) from None
        raise
    finally:
        probe_overruns = tracer.overruns()
        probe_recorded = tracer.available
        tracer.close()
        try:
            write_csv(rows, staging / "results.csv")
            # a guest leaves Parquet to the host: importing pyarrow under QEMU TCG takes ~2 min
            parquet_note = write_parquet(rows, staging / "results.parquet") if rows and not args.guest else None
            (staging / "testbed.json").write_text(
                json.dumps(
                    {
                        "netem_available": netem_available,
                        "runs_planned": len(runs),
                        "runs_finished": len({r["run_id"] for r in rows}),
                        "interrupted": interrupted,
                        "wall_time_s": round(time.monotonic() - started_s, 3),
                        "kernel": os.uname().release,
                        "probe_trace_recorded": probe_recorded,
                        "probe_overrun_events": probe_overruns,
                    },
                    indent=2,
                )
                + "\n",
                encoding="utf-8",
            )
        except OSError as exc:
            raise OutputError(
                f"cannot write the results into {out_dir}: {exc.strerror or exc}; what was written is in {staging}"
            ) from None
        publish(staging, out_dir)
    if parquet_note:
        print(f"spline-testbed: {parquet_note}", file=sys.stderr)
    notes = sorted({r["analysis_note"] for r in rows if r.get("analysis_note")})
    for note in notes[:3]:
        print(f"spline-testbed: note: {note}", file=sys.stderr)
    print(f"spline-testbed: {len(rows)} rows -> {out_dir / 'results.csv'}", file=sys.stderr)
    return EXIT_INTERRUPTED if interrupted else 0


def command_check(args: argparse.Namespace) -> int:  # noqa: ARG001
    if os.geteuid() != 0:
        raise TestbedError("spline-testbed check needs root")
    print(f"congestion controls: {' '.join(available_ccas())}")
    print(f"missing tools: {' '.join(t for t in REQUIRED_TOOLS if shutil.which(t) is None) or 'none'}")
    print(
        f"netem: {'available' if detect_netem(f'{NAMESPACE_PREFIX}-{os.getpid()}') else 'NOT available (no delay/jitter/reorder)'}"
    )
    notes = leftovers_of_killed_runs(Path(args.out) if getattr(args, "out", None) else None)
    print(f"leftovers of killed runs: {'; '.join(notes) if notes else 'none'}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="spline-testbed", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser(
        "run",
        help="run an emulation matrix (needs root)",
        description="Every combination of the lists is one run; lists are comma-separated. "
        "Flags override the TOML file's [matrix] table.",
    )
    run.add_argument("--config", help="TOML file with a [matrix] table (keys as the flags, lists allowed)")
    run.add_argument(
        "--cca",
        help="congestion controls, e.g. cubic,bbr; 'cubic+bbr' mixes them across flows, "
        "'bbr+cubic@10s' starts the cubic flows 10 s after the bbr ones",
    )
    run.add_argument("--rate", help="bottleneck rates, tc syntax: 10mbit,50mbit (default 10mbit)")
    run.add_argument("--delay", help="one-way delays at the router: 0,50ms (needs netem)")
    run.add_argument("--jitter", help="delay jitter: 10ms (needs netem)")
    run.add_argument("--loss", help="random loss of each flow's data segments: 0,1%%,2%% (default 0)")
    run.add_argument("--reorder", help="reordering probability (needs netem)")
    run.add_argument("--flows", help="parallel flows per run: 1,10 (default 1)")
    run.add_argument("--duration", help="seconds per transfer (default 10)")
    run.add_argument("--snaplen", type=int, default=128, help="capture snaplen in bytes (default 128)")
    run.add_argument("--out", required=True, help="output directory (results.csv, results.parquet, runs/)")
    run.add_argument("--force", action="store_true", help="overwrite an existing results.csv in --out")
    run.add_argument(
        "--vm",
        action="store_true",
        help="run the matrix inside an installed stock kernel under QEMU (virtme-ng): netem, every "
        "CCA the kernel ships and spline from tcp_spline.ko built for it (chosen by itself, and "
        "said so, when this host has no netem and delay, jitter or reordering is asked for)",
    )
    run.add_argument("--no-vm", action="store_true", help="never boot a VM, even when this host has no netem")
    vm.add_guest_arguments(run)
    run.add_argument("--no-module", action="store_true", help="with --vm: do not build and load tcp_spline.ko")
    run.add_argument("--guest", action="store_true", help=argparse.SUPPRESS)
    run.add_argument("--guest-resume", action="store_true", help=argparse.SUPPRESS)
    # crash the guest's kernel (sysrq c) once this guest finished N runs, or each boot's as PLANned
    # (vm.guest_crash_of): how the suite checks that the host stops a faulted guest, boots one that
    # faulted while booting again, and a fresh one runs the rest
    run.add_argument("--guest-crash-after", type=int, help=argparse.SUPPRESS)
    run.add_argument("--guest-crashes", metavar="PLAN", help=argparse.SUPPRESS)
    run.add_argument("--guest-ko", help=argparse.SUPPRESS)
    run.set_defaults(handler=command_run)
    check = commands.add_parser("check", help="say what this host can emulate; remove what killed runs left")
    check.add_argument("--out", help="also name killed runs' unfinished files in this output folder")
    check.set_defaults(handler=command_check)
    from .realhost_cli import add_parser as add_realhost_parser

    add_realhost_parser(commands)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    streams = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = ReaderMayLeave(sys.stdout), ReaderMayLeave(sys.stderr)
    previous_handlers = {signum: signal.signal(signum, raise_keyboard_interrupt) for signum in INTERRUPT_SIGNALS}
    try:
        args = build_parser().parse_args(argv)
        return args.handler(args)
    except TestbedError as exc:
        print(f"spline-testbed: error: {exc}", file=sys.stderr)
        return EXIT_REFUSED
    except OutputError as exc:
        print(f"spline-testbed: error: {exc}", file=sys.stderr)
        return EXIT_OUTPUT
    except OSError as exc:  # a file the run writes or reads (realhost's tables on a full disk)
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"spline-testbed: error: {where}{exc.strerror or exc}", file=sys.stderr)
        return EXIT_OUTPUT
    except KeyboardInterrupt:
        print("\nspline-testbed: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    finally:
        for signum, handler in previous_handlers.items():
            signal.signal(signum, handler)
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        sys.stdout, sys.stderr = streams


if __name__ == "__main__":
    sys.exit(main())
