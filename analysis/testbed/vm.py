"""`spline-testbed run --vm`: the same matrix, run by the same code, inside a stock kernel under QEMU.

The host boots an installed distribution kernel (`/boot/vmlinuz-VERSION`, the newest with
headers and modules unless `--kernel` names one) with virtme-ng on the host's own root
filesystem (9p, read-only, with writable overlays), and the guest runs this very package:
`python -m spline_analysis.testbed.cli run --guest ...` with the user's matrix. Only the
output folder is shared writable. So the guest has netem whatever the host lacks, every
congestion control its kernel ships (loaded by `--guest` before the host checks run), and
`spline` from tcp_spline.ko built here against that kernel's headers.

Guest runs write `results.csv` after every run, so when the user interrupts (Ctrl-C) the
host kills QEMU and publishes the runs that finished. Pitfalls met on the way: the guest
PATH must put /usr/sbin before busybox applets (virtme's initramfs), tcpdump must not drop
privileges (`-Z root`: the 9p root has no tcpdump user mapping), and QEMU runs with no
network device (`-net none`, virtme-ng's default): the testbed builds its own veths.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from queue import Empty, Queue
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from . import probe
from .errors import TestbedError
from .run import IPERF3_GRACE_S

GUEST_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
GUEST_MEMORY = "1G"
GUEST_CPUS = 2
TERMINAL_CONTROL = re.compile(r"\r|\x1b\[[0-9;]*[A-Za-z]")
KERNEL_LOG_LINE = re.compile(r"^\s*\[\s*\d+\.\d+\]")
KERNEL_TIMESTAMP = re.compile(r"^\s*\[\s*\d+\.\d+\]\s*")
PROGRESS_LINE = re.compile(r"^\[[= ]*\] (\d+)/(\d+) runs\s+([0-9.]+) s\s+(.*)$")
RUN_OVERHEAD_GUESS_S = 8.0  # set-up, tail and analysis per run under TCG, before one is measured
BOOT_GUESS_S = 15.0
QDISC_MODULES = ("sch_netem", "sch_tbf", "veth")
# A guest kernel that oopses, panics or hits a BUG is not carrying the matrix any more (one
# int3 oops in __schedule in ~12 TCG boots, see prepare_guest): stop it and say so. Soft
# lockups and RCU stalls are warnings a guest starved of host CPU can print and live on: a
# guest that does stop is caught by the progress limits instead.
GUEST_FAULT_LINE = re.compile(r"Oops: |Kernel panic - not syncing|(?<!watchdog: )BUG: |general protection fault")
GUEST_FAULT_GRACE_S = 5.0  # after a fault line: the rest of its report into the console log
GUEST_BOOT_LIMIT_S = 300.0  # boot to the first progress line (measured 10-62 s under TCG)
GUEST_RUN_MARGIN_S = 180.0  # beyond a run's duration and iperf3 grace: set-up, analysis under load
GUEST_BOOTS = 2  # a guest that faulted or hung during the runs is replaced once, for the runs left
# A guest kernel that faults while it boots, before the guest's first progress line, has run
# nothing of the matrix: it is booted again, this many times at most, on top of GUEST_BOOTS.
# Under multi-threaded QEMU TCG a vCPU now and then runs a stale translation of code the kernel
# has just patched (a static key flipped at boot, patched through a temporary int3): "Oops: int3"
# before any process ran, once in a fresh-clone CI run and in 1 of 307 boots made the harness's
# way on a host at load 0.5-5.1 (capture/README.md). Four such faults in a row are a chance of
# ~1e-10 at that rate; a kernel that faults at every boot is still reported after four boots
# (7-30 s each under TCG, by host load).
GUEST_BOOT_FAULT_RETRIES = 3
# The highest bottleneck rate QEMU TCG was measured to carry faithfully (within 90% of what tbf
# lets through) on this project's shared 2-core host, and what it carried (capture/README.md,
# "TCG's limits"): 2 Mbit/s for cubic without loss at load 2-3, none of 2-50 Mbit/s at load 7-10.
TCG_FAITHFUL_RATE_BPS = 2e6
TCG_MEASURED = (
    "cubic got 99% of 2 Mbit/s, 88% of 5, 83% of 10, 54% of 20 at host load 2-3; "
    "74-87% of 2 and 55-60% of 10 at load 7-10"
)


def kernel_sort_key(version: str) -> List:
    """Natural order of kernel versions: 6.12.117+deb12-amd64 after 6.1.0-56-amd64."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", version)]


def kernel_is_usable(version: str) -> bool:
    image = Path(f"/boot/vmlinuz-{version}")
    return (
        os.access(image, os.R_OK)
        and (Path("/lib/modules") / version / "build").is_dir()
        and (Path("/lib/modules") / version / "modules.dep").is_file()
    )


def usable_kernels() -> List[str]:
    """Installed kernels a guest can boot with its own modules and headers, newest first."""
    versions = [image.name[len("vmlinuz-") :] for image in Path("/boot").glob("vmlinuz-*")]
    return sorted((v for v in versions if kernel_is_usable(v)), key=kernel_sort_key, reverse=True)


def choose_kernel(asked: Optional[str]) -> str:
    kernels = usable_kernels()
    if asked:
        if asked not in kernels:
            raise TestbedError(
                f"--kernel {asked}: needs a readable /boot/vmlinuz-{asked}, /lib/modules/{asked}/build "
                f"and its modules; usable here: {' '.join(kernels) or 'none'}"
            )
        return asked
    if not kernels:
        raise TestbedError(
            "--vm needs an installed kernel with its headers and modules (Debian: apt-get install "
            "linux-image-amd64 linux-headers-amd64)"
        )
    return kernels[0]


def tcg_rate_warning(rates_bps: Sequence[float], kvm: bool) -> Optional[str]:
    """A warning when a rate of the matrix is above what TCG was measured to carry (None under KVM)."""
    above_bps = sorted({rate for rate in rates_bps if rate > TCG_FAITHFUL_RATE_BPS})
    if kvm or not above_bps:
        return None
    listed = ", ".join(f"{rate / 1e6:g}" for rate in above_bps)
    carried = (
        f"above the {TCG_FAITHFUL_RATE_BPS / 1e6:g} Mbit/s it was measured to carry faithfully"
        if TCG_FAITHFUL_RATE_BPS
        else "not a rate it was measured to carry faithfully"
    )
    return (
        f"warning: under QEMU TCG, {listed} Mbit/s is {carried} ({TCG_MEASURED}, on a shared 2-core host; "
        "capture/README.md): flows may fall short of the link for want of CPU, not because of their CCA; "
        "compare CCAs within one matrix, not with the rate"
    )


# What each process the guest starts costs under QEMU TCG (netns.SELF_ENTERING_TOOLS: ~0.5 s per
# exec), a `tc qdisc change` of a rate schedule's step included.
TCG_EXEC_S = 0.5


def tcg_rate_step_warning(steps_ms: Sequence[float], kvm: bool) -> Optional[str]:
    """A warning when a rate schedule's steps (`rate_step_ms`) are shorter than two of TCG's execs:
    each step's `tc` then takes a large part of it, and steps are applied late or skipped (None
    under KVM)."""
    short_ms = sorted({ms for ms in steps_ms if ms < 2000 * TCG_EXEC_S})
    if kvm or not short_ms:
        return None
    listed = ", ".join(f"{ms:g}" for ms in short_ms)
    return (
        f"warning: under QEMU TCG each step's `tc qdisc change` takes ~{TCG_EXEC_S:g} s (one exec): rate steps "
        f"of {listed} ms are applied late or skipped; truth.json's rate_schedule records when each took effect"
    )


def kvm_usable() -> bool:
    """Plain kvm_intel/kvm_amd (a PVM /dev/kvm cannot boot a stock kernel), as module/vm/vm-test.sh decides."""
    return (
        os.access("/dev/kvm", os.W_OK)
        and not Path("/sys/module/kvm_pvm").exists()
        and (Path("/sys/module/kvm_intel").exists() or Path("/sys/module/kvm_amd").exists())
    )


def tool_path() -> str:
    """PATH with this interpreter's bin folder first (where pip puts vng)."""
    return f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"


def find_module_dir() -> Optional[Path]:
    """The kernel module's sources: $SPLINE_MODULE_DIR, the checkout this package runs from, or ./module."""
    candidates = [
        os.environ.get("SPLINE_MODULE_DIR"),
        Path(__file__).resolve().parents[2] / "module",
        Path.cwd() / "module",
    ]
    for candidate in candidates:
        if candidate and (Path(candidate) / "tcp_spline.c").is_file():
            return Path(candidate)
    return None


def build_module(kernel: str, work_dir: Path) -> Path:
    """tcp_spline.ko built against /lib/modules/KERNEL/build, by the VM harness's own build step."""
    module_dir = find_module_dir()
    if module_dir is None:
        raise TestbedError(
            "spline needs the module sources (module/tcp_spline.c): run from a checkout or set SPLINE_MODULE_DIR"
        )
    harness = module_dir / "vm" / "vm-test.sh"
    proc = subprocess.run(
        [
            "bash",
            "-c",
            f'source "{harness}"; MODULE_DIR="{module_dir}"; build_module "{kernel}" "{work_dir / "module"}"',
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    ko = Path(proc.stdout.strip().splitlines()[-1]) if proc.stdout.strip() else None
    if proc.returncode != 0 or ko is None or not ko.is_file():
        raise TestbedError(f"building tcp_spline.ko for {kernel} failed: {proc.stderr.strip()[-600:]}")
    return ko


def guest_arguments(args: argparse.Namespace, out_dir: Path, ko: Optional[Path]) -> List[str]:
    """`spline-testbed run` as the user asked, without --vm, for the guest."""
    argv = ["run", "--guest", "--out", str(out_dir.resolve()), "--snaplen", str(args.snaplen)]
    if args.config:
        argv += ["--config", str(Path(args.config).resolve())]
    for flag in ("cca", "rate", "delay", "jitter", "loss", "reorder", "flows", "duration"):
        value = getattr(args, flag)
        if value is not None:
            argv += [f"--{flag}", str(value)]
    if args.force:
        argv.append("--force")
    if ko is not None:
        argv += ["--guest-ko", str(ko)]
    return argv


def add_guest_arguments(parser: argparse.ArgumentParser) -> None:
    """--kernel and --vm-cpus, for a subcommand that has --vm."""
    parser.add_argument(
        "--kernel",
        help="with --vm: the kernel version to boot (default: the newest installed with "
        "headers and modules, e.g. 6.12.117+deb12-amd64)",
    )
    parser.add_argument(
        "--vm-cpus",
        type=int,
        choices=range(1, 9),
        metavar="N",
        help=f"with --vm: the guest's virtual CPUs (default {GUEST_CPUS}; under TCG each is a host thread)",
    )


def vng_command(
    kernel: str,
    guest_argv: Sequence[str],
    writable: Sequence[Path],
    kvm: bool,
    cpus: int = GUEST_CPUS,
    kernel_options: Sequence[str] = (),
) -> List[str]:
    vng = shutil.which("vng", path=tool_path())
    if vng is None:
        raise TestbedError("--vm needs virtme-ng (pip install virtme-ng) and qemu-system-x86_64")
    command = [
        vng,
        "--run",
        f"/boot/vmlinuz-{kernel}",
        "--force-9p",
        "--verbose",
        "--cpus",
        str(cpus),
        "--memory",
        GUEST_MEMORY,
    ]
    if not kvm:
        command.append("--disable-kvm")
    for folder in writable:
        command += ["--rwdir", str(folder)]
    for option in kernel_options:
        command += ["--append", option]
    return [
        *command,
        "--",
        "env",
        f"PATH={GUEST_PATH}",
        sys.executable,
        "-m",
        "spline_analysis.testbed.cli",
        *guest_argv,
    ]


class ProgressRelay:
    """Reads the guest's stderr: kernel lines to the console log, the guest's progress redrawn
    with the time left (runs still to go x the mean cost of a finished run), the rest passed on."""

    def __init__(self, total_runs: int, duration_s: float, started_s: float) -> None:
        self.total_runs = total_runs
        self.duration_s = duration_s
        self.started_s = started_s
        self.boot_s: Optional[float] = None
        self.run_costs_s: List[float] = []
        self.last_done_s: Optional[float] = None
        self.done = 0

    def time_left_s(self, now_s: float) -> float:
        per_run_s = (
            sum(self.run_costs_s) / len(self.run_costs_s)
            if self.run_costs_s
            else self.duration_s + RUN_OVERHEAD_GUESS_S
        )
        left_s = (self.total_runs - self.done) * per_run_s
        if self.boot_s is None:
            left_s += BOOT_GUESS_S
        elif self.last_done_s is not None and self.done < self.total_runs:
            left_s -= min(per_run_s, now_s - self.last_done_s)
        return max(0.0, left_s)

    def line(self, text: str) -> Optional[str]:
        """Handle one guest stderr line; return what to print (None: nothing)."""
        now_s = time.monotonic()
        text = TERMINAL_CONTROL.sub("", text)
        match = PROGRESS_LINE.match(text)
        if match:
            done = int(match.group(1))
            if self.boot_s is None:
                self.boot_s = now_s - self.started_s
                self.last_done_s = now_s
            elif done > self.done:
                self.run_costs_s.append(now_s - (self.last_done_s or now_s))
                self.last_done_s = now_s
            self.done = done
            return self.render(match.group(4), now_s)
        if KERNEL_LOG_LINE.match(text) or not text.strip():
            return None
        if self.boot_s is None and not text.startswith("spline-testbed"):
            return None  # boot messages: in the console log only
        return text

    def render(self, label: str, now_s: float) -> str:
        width = 30
        filled = width * self.done // max(self.total_runs, 1)
        return (
            f"[{'=' * filled}{' ' * (width - filled)}] {self.done}/{self.total_runs} runs  "
            f"{now_s - self.started_s:6.1f} s, ~{self.time_left_s(now_s):.0f} s left (VM)  {label}"
        )


class GuestWatch:
    """Tells a guest that faulted (a kernel Oops, panic or BUG on its console) or hung (no
    progress line within the boot limit, or within a run's limit of the last one) from one
    that works; the host then stops it instead of waiting on its console for ever."""

    def __init__(self, boot_limit_s: float, run_limit_s: float, started_s: Optional[float] = None) -> None:
        self.boot_limit_s = boot_limit_s
        self.run_limit_s = run_limit_s
        self.started_s = time.monotonic() if started_s is None else started_s
        self.last_progress_s: Optional[float] = None
        self.first_progress_s: Optional[float] = None
        self.fault_line: Optional[str] = None
        self.fault_s: Optional[float] = None

    def line(self, text: str, is_progress: bool, now_s: Optional[float] = None) -> None:
        now_s = time.monotonic() if now_s is None else now_s
        if is_progress:
            self.last_progress_s = now_s
            if self.first_progress_s is None:
                self.first_progress_s = now_s
        if self.fault_line is None and GUEST_FAULT_LINE.search(text):
            self.fault_line = KERNEL_TIMESTAMP.sub("", text).strip()
            self.fault_s = now_s

    def fault(self) -> Optional[str]:
        """The fault seen so far, whatever the time (for a guest that is gone)."""
        return None if self.fault_line is None else f"the guest kernel faulted: {self.fault_line}"

    def faulted_while_booting(self) -> bool:
        """Whether the guest's kernel faulted before the guest's first progress line: while it
        booted or set itself up, before the matrix started (no run of it can have begun)."""
        if self.fault_s is None:
            return False
        return self.first_progress_s is None or self.fault_s < self.first_progress_s

    def verdict(self, now_s: Optional[float] = None) -> Optional[str]:
        """Why the guest is to be stopped (None: let it run)."""
        now_s = time.monotonic() if now_s is None else now_s
        if self.fault_line is not None and now_s - (self.fault_s or now_s) >= GUEST_FAULT_GRACE_S:
            return self.fault()
        if self.last_progress_s is None and now_s - self.started_s > self.boot_limit_s:
            return f"the guest did not start the matrix within {self.boot_limit_s:.0f} s of booting (hung)"
        if self.last_progress_s is not None and now_s - self.last_progress_s > self.run_limit_s:
            return f"the guest made no progress for {self.run_limit_s:.0f} s (hung)"
        return None


def pump_lines(stream, lines: "Queue[Optional[str]]") -> None:
    """Copy a pipe's lines into `lines`, then None at its end (a thread: the reader must not block)."""
    for text in stream:
        lines.put(text)
    lines.put(None)


def drain_lines(lines: "Queue[Optional[str]]", console) -> None:
    """What the pump still holds after the guest stopped, into the console log."""
    while True:
        try:
            text = lines.get(timeout=0.5)
        except Empty:
            return
        if text is None:
            return
        console.write(text)


def recover_interrupted(out_dir: Path, staging_before: set, publish, staging_prefix: str) -> int:
    """After the guest was killed: publish the runs its results.csv lists; return how many."""
    import csv

    finished = 0
    for staging in sorted(out_dir.glob(f"{staging_prefix}*")):
        if staging.name in staging_before or not staging.is_dir():
            continue
        results = staging / "results.csv"
        run_ids = set()
        if results.is_file():
            with open(results, newline="", encoding="utf-8") as handle:
                run_ids = {row["run_id"] for row in csv.DictReader(handle)}
        for run_dir in sorted((staging / "runs").glob("*")) if (staging / "runs").is_dir() else []:
            if run_dir.name not in run_ids:
                shutil.rmtree(run_dir, ignore_errors=True)  # the run the interrupt cut short
        for name in os.listdir(staging):
            if name not in ("runs", "results.csv", "results.parquet", "testbed.json"):
                path = staging / name
                if path.is_dir():
                    shutil.rmtree(path)
                else:
                    path.unlink()
        publish(staging, out_dir)
        finished += len(run_ids)
    return finished


def finished_run_ids(out_dir: Path) -> set:
    """The run ids results.csv in `out_dir` lists (what guests published so far)."""
    import csv

    try:
        with open(out_dir / "results.csv", newline="", encoding="utf-8") as handle:
            return {row["run_id"] for row in csv.DictReader(handle)}
    except (OSError, KeyError):
        return set()


def boot_guest(
    command: Sequence[str],
    env: Dict[str, str],
    work_dir: Path,
    console,
    relay: "ProgressRelay",
    watch: GuestWatch,
    total_runs: int,
    console_shown: Path,
):
    """Run one guest to its end, relaying its progress; (status, interrupted, fault). A guest whose
    kernel faulted or that hung is killed (fault says why); Ctrl-C kills it too."""
    interrupted, fault = False, None
    proc = subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        errors="replace",
        env=env,
        start_new_session=True,
        cwd=str(work_dir),
    )
    lines: "Queue[Optional[str]]" = Queue()
    threading.Thread(target=pump_lines, args=(proc.stdout, lines), daemon=True).start()
    try:
        while True:
            try:
                text = lines.get(timeout=1.0)
            except Empty:
                text = ""
            if text is None:
                break
            if text:
                console.write(text)
                watch.line(text.rstrip("\n"), PROGRESS_LINE.match(TERMINAL_CONTROL.sub("", text)) is not None)
                shown = relay.line(text.rstrip("\n"))
                if shown is not None:
                    if shown.startswith("[") and sys.stderr.isatty():  # the bar, redrawn in place
                        sys.stderr.write("\r\033[K" + shown + ("\n" if relay.done == total_runs else ""))
                    else:
                        sys.stderr.write(shown + "\n")
                    sys.stderr.flush()
            fault = watch.verdict()
            if fault is not None:
                break
        fault = fault or watch.fault()  # a panic that ended the guest before its grace
        if fault is not None:
            print(f"\nspline-testbed: {fault}; the VM is stopped (its console: {console_shown})", file=sys.stderr)
        status = proc.wait() if fault is None else -1
    except KeyboardInterrupt:
        interrupted = True
        status = 130
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        # qemu is vng's child in the same session: make sure none of the session lives on.
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        drain_lines(lines, console)
    return status, interrupted, fault


BOOT_AGAIN = "boot again"
FRESH_GUEST = "fresh guest"


def after_fault(faulted_while_booting: bool, booted_again: int, fresh_guests: int) -> Optional[str]:
    """What follows a guest stopped for a fault or a hang while runs are still left: BOOT_AGAIN
    for a kernel that faulted while booting (GUEST_BOOT_FAULT_RETRIES times at most), else
    FRESH_GUEST (GUEST_BOOTS - 1 times at most: the run under way fails, a fresh guest runs the
    rest), else None (the matrix stays short of runs)."""
    if faulted_while_booting and booted_again < GUEST_BOOT_FAULT_RETRIES:
        return BOOT_AGAIN
    if fresh_guests < GUEST_BOOTS - 1:
        return FRESH_GUEST
    return None


# A kernel command-line option that makes the guest kernel panic while it boots, before any
# process of the guest runs: its initramfs has no such init, and the kernel falls back to a root
# device the guest does not have ("Kernel panic - not syncing: VFS: Unable to mount root fs").
BOOT_PANIC_KERNEL_OPTION = "rdinit=/spline-testbed-no-such-init"


def guest_crash_of(args: argparse.Namespace, boot: int) -> Tuple[List[str], List[str]]:
    """The suite's real fault of guest `boot`'s kernel, as (guest arguments, kernel command-line
    options), from the hidden --guest-crashes PLAN: one item per boot, `boot` (a panic while it
    boots), N (sysrq c once the guest finished N runs) or `-` (none); --guest-crash-after N is
    the plan `N`."""
    plan = getattr(args, "guest_crashes", None)
    crash_after = getattr(args, "guest_crash_after", None)
    items = plan.split(",") if plan else [str(crash_after)] if crash_after else []
    item = items[boot - 1].strip() if boot <= len(items) else "-"
    if item == "boot":
        return [], [BOOT_PANIC_KERNEL_OPTION]
    if item.isdigit() and int(item) > 0:
        return ["--guest-crash-after", item], []
    return [], []


def run_in_vm(
    args: argparse.Namespace,
    run_ids: Sequence[str],
    duration_s: float,
    out_dir: Path,
    publish,
    staging_prefix: str,
    reason: str,
    guest_argv_of: Optional[Callable[[Optional[Path]], List[str]]] = None,
    finished_of: Callable[[Path], set] = finished_run_ids,
) -> Dict[str, Any]:
    """Boot the guest, run the matrix in it, relay its progress; a summary of the VM's costs.
    A guest that faulted or hung is stopped, its finished runs published, and a fresh guest
    (GUEST_BOOTS in all) runs the rest; one whose kernel faulted while booting is booted again
    (GUEST_BOOT_FAULT_RETRIES more at most: see after_fault). `guest_argv_of(ko)` is the
    guest's command line (default: `spline-testbed run --guest` as the user asked),
    `finished_of(out_dir)` the run ids it finished so far."""
    total_runs = len(run_ids)
    kernel = choose_kernel(getattr(args, "kernel", None))
    if shutil.which("qemu-system-x86_64") is None:
        raise TestbedError("--vm needs qemu-system-x86_64 (Debian: apt-get install qemu-system-x86)")
    kvm = kvm_usable()
    cpus = getattr(args, "vm_cpus", None) or GUEST_CPUS
    print(
        f"spline-testbed: running the matrix in a VM ({reason}): kernel {kernel}, "
        f"{'KVM' if kvm else 'QEMU TCG (no KVM)'}, {cpus} CPUs, {GUEST_MEMORY}",
        file=sys.stderr,
    )
    started_s = time.monotonic()
    staging_before = {p.name for p in out_dir.glob(f"{staging_prefix}*")}
    faults: List[str] = []
    boot_costs_s: List[float] = []
    run_costs_s: List[float] = []
    with tempfile.TemporaryDirectory(prefix="spline-testbed-vm-") as work:
        work_dir = Path(work)
        ko = None
        if not getattr(args, "no_module", False):
            ko = build_module(kernel, work_dir)
            print(
                f"spline-testbed: built {ko.name} against {kernel}'s headers ({time.monotonic() - started_s:.1f} s)",
                file=sys.stderr,
            )
        console_path = work_dir / "console.log"
        env = dict(os.environ, PATH=tool_path())
        with open(console_path, "w", encoding="utf-8") as console:
            boots, boot_faults, booted_again, fresh_guests = 0, 0, 0, 0
            while True:
                boots += 1
                guest_argv = (guest_argv_of(ko) if guest_argv_of else guest_arguments(args, out_dir, ko)) + (
                    ["--guest-resume"] if boots > 1 else []
                )
                crash_argv, kernel_options = guest_crash_of(args, boots)  # the suite's checks of this loop
                command = vng_command(
                    kernel, guest_argv + crash_argv, [out_dir.resolve(), work_dir], kvm, cpus, kernel_options
                )
                relay = ProgressRelay(total_runs, duration_s, time.monotonic())
                watch = GuestWatch(
                    boot_limit_s=GUEST_BOOT_LIMIT_S, run_limit_s=duration_s + IPERF3_GRACE_S + GUEST_RUN_MARGIN_S
                )
                status, interrupted, fault = boot_guest(
                    command, env, work_dir, console, relay, watch, total_runs, out_dir / "vm-console.log"
                )
                # a guest that was interrupted, or died before publishing, leaves its staging
                # folder: publish the runs it finished; a guest that published left none
                recover_interrupted(out_dir, staging_before, publish, staging_prefix)
                boot_costs_s += [relay.boot_s] if relay.boot_s is not None else []
                run_costs_s += relay.run_costs_s
                if fault is None or interrupted:
                    break
                while_booting = watch.faulted_while_booting()
                faults.append(f"{fault} (while booting, before the matrix started)" if while_booting else fault)
                left = [run_id for run_id in run_ids if run_id not in finished_of(out_dir)]
                next_step = after_fault(while_booting, booted_again, fresh_guests) if left else None
                boot_faults += int(while_booting)
                if next_step is None:
                    break
                if next_step == BOOT_AGAIN:
                    booted_again += 1
                    print(
                        f"spline-testbed: the guest kernel faulted while booting, before the matrix started "
                        f"(boot fault {booted_again} of at most {GUEST_BOOT_FAULT_RETRIES} booted again"
                        f"{'' if kvm else '; under QEMU TCG most often an emulator flake, capture/README.md'}): "
                        f"booting it again for the {len(left)} run(s) left (boot {boots + 1})",
                        file=sys.stderr,
                    )
                else:
                    fresh_guests += 1
                    print(
                        f"spline-testbed: booting a fresh guest for the {len(left)} run(s) left "
                        f"(boot {boots + 1} of {GUEST_BOOTS + booted_again})",
                        file=sys.stderr,
                    )
                console.write(
                    f"\n==== spline-testbed: guest {boots} stopped ({fault}"
                    f"{', while booting' if while_booting else ''}); booting guest {boots + 1} ====\n"
                )
        # the console goes into --out by a rename, which replaces a planted symlink, never follows it
        handle, part = tempfile.mkstemp(prefix=".vm-console.", dir=out_dir)  # O_EXCL: never a planted link
        with os.fdopen(handle, "wb") as target, open(console_path, "rb") as source:
            shutil.copyfileobj(source, target)
        os.replace(part, out_dir / "vm-console.log")
    wall_s = time.monotonic() - started_s
    return {
        "kernel": kernel,
        "accel": "kvm" if kvm else "tcg",
        "cpus": cpus,
        "status": status,
        "interrupted": interrupted,
        "boot_s": boot_costs_s[0] if boot_costs_s else None,
        "boots": boots,
        "run_costs_s": run_costs_s,
        "wall_time_s": wall_s,
        "runs_recovered": len(finished_of(out_dir)),
        "guest_faults": faults,
        "boot_faults": boot_faults,
    }


def prepare_guest(ko: Optional[str]) -> List[str]:
    """In the guest: load the qdiscs and every congestion control the kernel ships, then the
    Spline module, and keep trace events from patching the scheduler; returns notes for what
    could not be done.

    Enabling or disabling a trace event with tracefs' `record-cmd` option on (the default)
    also registers or unregisters the sched_switch/sched_wakeup probes that record command
    names, and that rewrites live instructions in __schedule (static calls, patched through a
    temporary int3). Under multi-threaded QEMU TCG another vCPU can still run a stale
    translation holding that int3 after the patch completed: the one guest oops seen in ~12
    boots was exactly that, "Oops: int3" at __schedule+0x339, under tracepoint_probe_unregister
    <- tracing_stop_cmdline_record <- event_enable_write, as the tcp_probe trace was switched
    off (kernel "Not tainted": no module of ours loaded). probe.csv needs no command names, so
    the guest turns the option off before its trace instance copies the flags."""
    notes = []
    tracing = probe.tracefs_root()
    try:
        if tracing is not None:
            (tracing / "options" / "record-cmd").write_text("0\n")
    except OSError as exc:
        notes.append(f"tracefs record-cmd: {exc.strerror or exc}")
    release = os.uname().release
    names = list(QDISC_MODULES)
    for path in sorted((Path("/lib/modules") / release / "kernel" / "net" / "ipv4").glob("tcp_*.ko*")):
        names.append(path.name.split(".ko")[0])
    for name in names:
        proc = subprocess.run(["modprobe", name], capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            notes.append(f"modprobe {name}: {proc.stderr.strip()}")
    if ko:
        proc = subprocess.run(["insmod", ko], capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            notes.append(f"insmod {ko}: {proc.stderr.strip()}")
    return notes
