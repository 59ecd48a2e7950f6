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
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

from .errors import TestbedError

GUEST_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
GUEST_MEMORY = "1G"
GUEST_CPUS = 2
TERMINAL_CONTROL = re.compile(r"\r|\x1b\[[0-9;]*[A-Za-z]")
KERNEL_LOG_LINE = re.compile(r"^\s*\[\s*\d+\.\d+\]")
PROGRESS_LINE = re.compile(r"^\[[= ]*\] (\d+)/(\d+) runs\s+([0-9.]+) s\s+(.*)$")
RUN_OVERHEAD_GUESS_S = 8.0          # set-up, tail and analysis per run under TCG, before one is measured
BOOT_GUESS_S = 15.0
QDISC_MODULES = ("sch_netem", "sch_tbf", "veth")
# The highest bottleneck rate QEMU TCG was measured to carry faithfully (within 90% of what tbf
# lets through) on this project's shared 2-core host, and what it carried (capture/README.md,
# "TCG's limits"): 2 Mbit/s for cubic without loss at load 2-3, none of 2-50 Mbit/s at load 7-10.
TCG_FAITHFUL_RATE_BPS = 2e6
TCG_MEASURED = ("cubic got 99% of 2 Mbit/s, 88% of 5, 83% of 10, 54% of 20 at host load 2-3; "
                "74-87% of 2 and 55-60% of 10 at load 7-10")


def kernel_sort_key(version: str) -> List:
    """Natural order of kernel versions: 6.12.117+deb12-amd64 after 6.1.0-56-amd64."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", version)]


def kernel_is_usable(version: str) -> bool:
    image = Path(f"/boot/vmlinuz-{version}")
    return (os.access(image, os.R_OK) and (Path("/lib/modules") / version / "build").is_dir()
            and (Path("/lib/modules") / version / "modules.dep").is_file())


def usable_kernels() -> List[str]:
    """Installed kernels a guest can boot with its own modules and headers, newest first."""
    versions = [image.name[len("vmlinuz-"):] for image in Path("/boot").glob("vmlinuz-*")]
    return sorted((v for v in versions if kernel_is_usable(v)), key=kernel_sort_key, reverse=True)


def choose_kernel(asked: Optional[str]) -> str:
    kernels = usable_kernels()
    if asked:
        if asked not in kernels:
            raise TestbedError(f"--kernel {asked}: needs a readable /boot/vmlinuz-{asked}, /lib/modules/{asked}/build "
                               f"and its modules; usable here: {' '.join(kernels) or 'none'}")
        return asked
    if not kernels:
        raise TestbedError("--vm needs an installed kernel with its headers and modules (Debian: apt-get install "
                           "linux-image-amd64 linux-headers-amd64)")
    return kernels[0]


def tcg_rate_warning(rates_bps: Sequence[float], kvm: bool) -> Optional[str]:
    """A warning when a rate of the matrix is above what TCG was measured to carry (None under KVM)."""
    above_bps = sorted({rate for rate in rates_bps if rate > TCG_FAITHFUL_RATE_BPS})
    if kvm or not above_bps:
        return None
    listed = ", ".join(f"{rate / 1e6:g}" for rate in above_bps)
    carried = (f"above the {TCG_FAITHFUL_RATE_BPS / 1e6:g} Mbit/s it was measured to carry faithfully"
               if TCG_FAITHFUL_RATE_BPS else "not a rate it was measured to carry faithfully")
    return (f"warning: under QEMU TCG, {listed} Mbit/s is {carried} ({TCG_MEASURED}, on a shared 2-core host; "
            "capture/README.md): flows may fall short of the link for want of CPU, not because of their CCA; "
            "compare CCAs within one matrix, not with the rate")


def kvm_usable() -> bool:
    """Plain kvm_intel/kvm_amd (a PVM /dev/kvm cannot boot a stock kernel), as module/vm/vm-test.sh decides."""
    return (os.access("/dev/kvm", os.W_OK) and not Path("/sys/module/kvm_pvm").exists()
            and (Path("/sys/module/kvm_intel").exists() or Path("/sys/module/kvm_amd").exists()))


def tool_path() -> str:
    """PATH with this interpreter's bin folder first (where pip puts vng)."""
    return f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"


def find_module_dir() -> Optional[Path]:
    """The kernel module's sources: $SPLINE_MODULE_DIR, the checkout this package runs from, or ./module."""
    candidates = [os.environ.get("SPLINE_MODULE_DIR"), Path(__file__).resolve().parents[2] / "module",
                  Path.cwd() / "module"]
    for candidate in candidates:
        if candidate and (Path(candidate) / "tcp_spline.c").is_file():
            return Path(candidate)
    return None


def build_module(kernel: str, work_dir: Path) -> Path:
    """tcp_spline.ko built against /lib/modules/KERNEL/build, by the VM harness's own build step."""
    module_dir = find_module_dir()
    if module_dir is None:
        raise TestbedError("spline needs the module sources (module/tcp_spline.c): run from a checkout or set "
                           "SPLINE_MODULE_DIR")
    harness = module_dir / "vm" / "vm-test.sh"
    proc = subprocess.run(["bash", "-c", f'source "{harness}"; MODULE_DIR="{module_dir}"; '
                                         f'build_module "{kernel}" "{work_dir / "module"}"'],
                          capture_output=True, text=True, timeout=600, check=False)
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


def vng_command(kernel: str, guest_argv: Sequence[str], writable: Sequence[Path], kvm: bool,
                cpus: int = GUEST_CPUS) -> List[str]:
    vng = shutil.which("vng", path=tool_path())
    if vng is None:
        raise TestbedError("--vm needs virtme-ng (pip install virtme-ng) and qemu-system-x86_64")
    command = [vng, "--run", f"/boot/vmlinuz-{kernel}", "--force-9p", "--verbose",
               "--cpus", str(cpus), "--memory", GUEST_MEMORY]
    if not kvm:
        command.append("--disable-kvm")
    for folder in writable:
        command += ["--rwdir", str(folder)]
    return [*command, "--", "env", f"PATH={GUEST_PATH}", sys.executable, "-m", "spline_analysis.testbed.cli",
            *guest_argv]


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
        per_run_s = (sum(self.run_costs_s) / len(self.run_costs_s) if self.run_costs_s
                     else self.duration_s + RUN_OVERHEAD_GUESS_S)
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
            return None                      # boot messages: in the console log only
        return text

    def render(self, label: str, now_s: float) -> str:
        width = 30
        filled = width * self.done // max(self.total_runs, 1)
        return (f"[{'=' * filled}{' ' * (width - filled)}] {self.done}/{self.total_runs} runs  "
                f"{now_s - self.started_s:6.1f} s, ~{self.time_left_s(now_s):.0f} s left (VM)  {label}")


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
                shutil.rmtree(run_dir, ignore_errors=True)   # the run the interrupt cut short
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


def run_in_vm(args: argparse.Namespace, total_runs: int, duration_s: float, out_dir: Path,
              publish, staging_prefix: str, reason: str) -> Dict[str, Any]:
    """Boot the guest, run the matrix in it, relay its progress; a summary of the VM's costs."""
    kernel = choose_kernel(getattr(args, "kernel", None))
    if shutil.which("qemu-system-x86_64") is None:
        raise TestbedError("--vm needs qemu-system-x86_64 (Debian: apt-get install qemu-system-x86)")
    kvm = kvm_usable()
    cpus = getattr(args, "vm_cpus", None) or GUEST_CPUS
    print(f"spline-testbed: running the matrix in a VM ({reason}): kernel {kernel}, "
          f"{'KVM' if kvm else 'QEMU TCG (no KVM)'}, {cpus} CPUs, {GUEST_MEMORY}", file=sys.stderr)
    started_s = time.monotonic()
    staging_before = {p.name for p in out_dir.glob(f"{staging_prefix}*")}
    with tempfile.TemporaryDirectory(prefix="spline-testbed-vm-") as work:
        work_dir = Path(work)
        ko = None
        if not getattr(args, "no_module", False):
            ko = build_module(kernel, work_dir)
            print(f"spline-testbed: built {ko.name} against {kernel}'s headers "
                  f"({time.monotonic() - started_s:.1f} s)", file=sys.stderr)
        command = vng_command(kernel, guest_arguments(args, out_dir, ko), [out_dir.resolve(), work_dir], kvm,
                              cpus)
        console_path = work_dir / "console.log"
        relay = ProgressRelay(total_runs, duration_s, time.monotonic())
        env = dict(os.environ, PATH=tool_path())
        interrupted = False
        with open(console_path, "w", encoding="utf-8") as console:
            proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, text=True, errors="replace", env=env,
                                    start_new_session=True, cwd=str(work_dir))
            assert proc.stdout is not None   # stdout=PIPE
            try:
                for text in proc.stdout:
                    console.write(text)
                    shown = relay.line(text.rstrip("\n"))
                    if shown is None:
                        continue
                    if shown.startswith("[") and sys.stderr.isatty():   # the bar, redrawn in place
                        sys.stderr.write("\r\033[K" + shown + ("\n" if relay.done == total_runs else ""))
                    else:
                        sys.stderr.write(shown + "\n")
                    sys.stderr.flush()
                status = proc.wait()
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
        # a guest that was interrupted, or died (a kernel Oops under TCG) before publishing, leaves
        # its staging folder: publish the runs it finished; a guest that published left none
        recovered = recover_interrupted(out_dir, staging_before, publish, staging_prefix)
        # the console goes into --out by a rename, which replaces a planted symlink, never follows it
        handle, part = tempfile.mkstemp(prefix=".vm-console.", dir=out_dir)     # O_EXCL: never a planted link
        with os.fdopen(handle, "wb") as target, open(console_path, "rb") as source:
            shutil.copyfileobj(source, target)
        os.replace(part, out_dir / "vm-console.log")
    wall_s = time.monotonic() - started_s
    return {"kernel": kernel, "accel": "kvm" if kvm else "tcg", "cpus": cpus, "status": status, "interrupted": interrupted,
            "boot_s": relay.boot_s, "run_costs_s": relay.run_costs_s, "wall_time_s": wall_s,
            "runs_recovered": recovered}


def prepare_guest(ko: Optional[str]) -> List[str]:
    """In the guest: load the qdiscs and every congestion control the kernel ships, then the
    Spline module; returns notes for what could not be loaded."""
    notes = []
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
