"""The Spline core's userspace check (`make -C module check`) and the kernel module build."""

from __future__ import annotations

import glob
import re
import shutil
import subprocess
from pathlib import Path

import pytest

MODULE_DIR = Path(__file__).resolve().parents[1] / "module"


def _last_line(text: str) -> str:
    return text.strip().splitlines()[-1]


def _check_with_core(tmp_path: Path, core: str) -> subprocess.CompletedProcess[str]:
    """Build and run the userspace check against a modified copy of the core."""
    (tmp_path / "spline_core.h").write_text(core)
    exe = tmp_path / "check"
    subprocess.run(
        [
            "cc",
            "-O2",
            "-std=gnu11",
            f"-I{tmp_path}",
            "-o",
            str(exe),
            str(MODULE_DIR / "check" / "spline_check.c"),
            "-lm",
        ],
        check=True,
    )
    return subprocess.run([str(exe)], capture_output=True, text=True, timeout=300)


def _check_with_constant(tmp_path: Path, name: str, value: str, replacement: str) -> subprocess.CompletedProcess[str]:
    """The userspace check against a core whose constant `name` is `replacement` instead of
    `value` (whatever whitespace or line continuation the formatter puts between them)."""
    core = (MODULE_DIR / "spline_core.h").read_text()
    broken = re.sub(rf"(#define {name}\s+(?:\\\s+)?){value}\b", rf"\g<1>{replacement}", core)
    assert broken != core, f"{name} is no longer {value}: update this test"
    return _check_with_core(tmp_path, broken)


@pytest.mark.skipif(not shutil.which("cc") or not shutil.which("make"), reason="needs cc and make")
def test_userspace_check_passes_every_scripted_scenario(tmp_path):
    out = subprocess.run(
        ["make", "-s", "-C", str(MODULE_DIR), "check", f"BUILD_DIR={tmp_path}"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    last = _last_line(out.stdout)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    m = re.fullmatch(r"(\d+) passed, (\d+) failed", last)
    assert m, f"last line is not 'N passed, N failed': {last!r}"
    assert int(m.group(2)) == 0 and int(m.group(1)) >= 50
    # the scenarios the design names are all exercised
    for scenario in (
        "steady",
        "random loss 1%",
        "random loss 5%",
        "jitter",
        "bw step",
        "app-limited",
        "two flows",
        "spline vs reno",
        "spline vs cubic, stretched ACKs",
        "spline vs cubic, 0-20 ms delay noise",
        "policer",
        "no overflow",
        "no division by zero",
        "repair hold",
        "in-order jitter",
    ):
        assert f"PASS {scenario}" in out.stdout, f"no passing check for {scenario!r}"


@pytest.mark.skipif(not shutil.which("cc"), reason="needs cc")
def test_check_fails_when_the_core_never_sees_a_reordering_path_and_so_never_holds_repairs(tmp_path):
    """A reordering threshold no 8-bit count reaches: no repair hold, and the hold checks fail."""
    out = _check_with_constant(tmp_path, "SPL_REORDER_ROUND_EVENTS", "8U", "300U")
    assert out.returncode != 0
    assert "FAIL repair hold" in out.stdout


@pytest.mark.skipif(not shutil.which("cc"), reason="needs cc")
def test_check_fails_loudly_when_the_core_reads_light_loss_as_congestion(tmp_path):
    """A core whose loss threshold is 1% instead of 10% must fail the random-loss checks."""
    out = _check_with_constant(tmp_path, "SPL_LOSS_HIGH_DIV", "10U", "100U")
    assert out.returncode != 0
    m = re.fullmatch(r"(\d+) passed, (\d+) failed", _last_line(out.stdout))
    assert m and int(m.group(2)) > 0
    assert re.search(r"^FAIL random loss", out.stdout, re.M)


@pytest.mark.skipif(not shutil.which("cc"), reason="needs cc")
def test_check_fails_when_probe_rtt_drops_the_additive_quantum(tmp_path):
    """Without its 4 packets PROBE_RTT shrinks a flow beside CUBIC round after round: the
    simulated noisy path must starve a seed and fail the share check."""
    core = (MODULE_DIR / "spline_core.h").read_text()
    broken = core.replace("s->mode == SPL_PROBE_BW || s->mode == SPL_PROBE_RTT", "s->mode == SPL_PROBE_BW")
    assert broken != core, "the quantum's mode test moved: update this test"
    out = _check_with_core(tmp_path, broken)
    assert out.returncode != 0
    assert re.search(r"^FAIL spline vs cubic, 0-20 ms delay noise", out.stdout, re.M)


@pytest.mark.skipif(not shutil.which("cc"), reason="needs cc")
def test_check_fails_when_the_core_reads_the_rtt_floor_at_rate_as_a_queue(tmp_path):
    """With no room above min_rtt for the floor measured at rate (item 25), the in-order jitter
    path's floor is a standing queue again: the simulated path collapses in a seed and both
    in-order checks fail."""
    out = _check_with_constant(tmp_path, "SPL_RATE_FLOOR_MAX_SHIFT", "1U", "31U")
    assert out.returncode != 0
    assert re.search(r"^FAIL in-order jitter: the floor at rate", out.stdout, re.M)
    assert re.search(r"^FAIL in-order jitter, min_rtt under the floor", out.stdout, re.M)


def _kernel_build_dir() -> str | None:
    dirs = sorted(glob.glob("/lib/modules/*/build/Makefile"))
    return str(Path(dirs[-1]).parent) if dirs else None


@pytest.mark.skipif(_kernel_build_dir() is None, reason="no kernel headers installed")
def test_module_builds_without_warnings_even_at_w1_and_is_gpl(tmp_path):
    src = tmp_path / "module"
    shutil.copytree(
        MODULE_DIR,
        src,
        ignore=shutil.ignore_patterns(
            "vm", "build", "*.o", "*.ko", "*.cmd", "*.mod*", "modules.order", "Module.symvers"
        ),
    )
    out = subprocess.run(["make", "-C", str(src), "W=1"], capture_output=True, text=True, timeout=600)
    log = out.stdout + out.stderr
    assert out.returncode == 0, log[-3000:]
    assert not re.search(r"warning:", log, re.I), log[-3000:]
    ko = src / "tcp_spline.ko"
    assert ko.exists()
    if shutil.which("modinfo"):
        info = subprocess.run(["modinfo", "-F", "license", str(ko)], capture_output=True, text=True)
        assert info.stdout.strip() == "GPL"
