"""Spline, the product's own congestion control, for the transfers that name it (`cca = "spline"`).

The eBPF struct_ops build (module/spline.bpf.c) is registered for the transfer and
unregistered after it, once its namespaces (and so its sockets) are gone; each socket selects
it by itself (iperf3 -C spline, TCP_CONGESTION). It is never made a namespace's default with
sysctl: on Linux 6.18 that leaks a reference and the struct_ops cannot be freed until reboot
(module/README.md). Where a congestion control named spline is already there (tcp_spline.ko
loaded, or registered by someone else) it is used as it is and left registered.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, List

from .errors import TestbedError

SPLINE_CCA = "spline"
MODULE_DIR = Path(__file__).resolve().parents[2] / "module"
BTF_PATH = Path("/sys/kernel/btf/vmlinux")
AVAILABLE_CCAS_PATH = Path("/proc/sys/net/ipv4/tcp_available_congestion_control")
BUILD_TIMEOUT_S = 300.0
BPFTOOL_TIMEOUT_S = 60.0


def available_ccas() -> List[str]:
    try:
        return AVAILABLE_CCAS_PATH.read_text().split()
    except OSError:
        return []


def spline_registrable() -> bool:
    """Whether this host can register the eBPF build: its source, a kernel with BTF, clang, make
    and bpftool."""
    tools = all(shutil.which(tool) for tool in ("clang", "make", "bpftool"))
    return tools and BTF_PATH.exists() and (MODULE_DIR / "spline.bpf.c").exists()


def build_spline_bpf(build_dir: Path) -> Path:
    """module/spline.bpf.o built against the running kernel's BTF into `build_dir`."""
    obj = build_dir / "spline.bpf.o"
    completed = subprocess.run(
        ["make", "-s", "-C", str(MODULE_DIR), "bpf", f"BUILD_DIR={build_dir}", f"BPF_OBJ={obj}"],
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT_S,
    )
    if completed.returncode != 0 or not obj.exists():
        raise TestbedError(f"building spline.bpf.o failed: {completed.stderr.strip()[-400:]}")
    return obj


def bpftool(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bpftool", *args], capture_output=True, text=True, timeout=BPFTOOL_TIMEOUT_S)


@contextmanager
def spline_registered() -> Iterator[bool]:
    """Spline available as a congestion control while inside; yields whether it was registered
    here (and is unregistered on leaving), False where it was there already."""
    if SPLINE_CCA in available_ccas():
        yield False
        return
    if not spline_registrable():
        raise TestbedError("cca spline: this host cannot register module/spline.bpf.c (needs BTF, clang, bpftool)")
    with tempfile.TemporaryDirectory(prefix="spline-bpf-") as build_dir:
        registered = bpftool("struct_ops", "register", str(build_spline_bpf(Path(build_dir))))
        if registered.returncode != 0 or SPLINE_CCA not in available_ccas():
            raise TestbedError(f"bpftool struct_ops register failed: {registered.stderr.strip()}")
        try:
            yield True
        finally:
            bpftool("struct_ops", "unregister", "name", SPLINE_CCA)
