"""The Spline kernel module on a stock Debian kernel, in QEMU (module/vm/vm-test.sh).

ONE VM boot per installed kernel (about a minute each under TCG): the harness builds
tcp_spline.ko against that kernel's linux-headers, boots it, and runs iperf3 with spline,
bbr and cubic through 10 Mbit/s, 50 ms, 2% loss for 5 s each. With Debian's 6.1 and 6.12
both installed (setup.sh --test), both module code paths run: the 2-argument cong_control
(< 6.10) and the 4-argument one (>= 6.10). Skipped when qemu-system-x86_64, a readable
/boot/vmlinuz-*-amd64 or its headers are missing.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
VM_TEST = REPO / "module" / "vm" / "vm-test.sh"
CCAS = ("spline", "bbr", "cubic")
PCAP_HEADER_BYTES = 24


def usable_kernels() -> list[str]:
    """The kernels the harness can boot (readable image, headers, modules), newest first."""
    proc = subprocess.run(
        ["bash", "-c", f'source "{VM_TEST}"; set +e; usable_kernel_versions'],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return proc.stdout.split()


KERNELS = usable_kernels()


pytestmark = [
    pytest.mark.vm,
    pytest.mark.skipif(shutil.which("qemu-system-x86_64") is None, reason="qemu-system-x86_64 not installed"),
    pytest.mark.skipif(not KERNELS, reason="no readable /boot/vmlinuz-*-amd64 with /lib/modules/<ver>/build"),
]


def env_with_this_python_on_path() -> dict:
    """The environment, with this interpreter's bin dir (where spline-analyze installs) on PATH."""
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


@pytest.fixture(scope="module", params=KERNELS or ["none"])
def vm_run(request, tmp_path_factory):
    """Run the harness once per kernel; give its exit status, its summary and its output directory."""
    out = tmp_path_factory.mktemp("vm-out")
    proc = subprocess.run(
        [
            "bash",
            str(VM_TEST),
            "--kernel",
            request.param,
            "--duration-s",
            "5",
            "--sample-ms",
            "500",
            "--runs",
            "1",
            "--ccas",
            " ".join(CCAS),
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
        env=env_with_this_python_on_path(),
    )
    lines = proc.stdout.strip().splitlines()
    assert lines, f"vm-test printed nothing; stderr:\n{proc.stderr}"
    summary = json.loads(lines[-1])
    summary["asked_kernel"] = request.param
    return proc, summary, out


def test_the_guest_runs_the_kernel_asked_for(vm_run):
    proc, summary, _ = vm_run
    assert f"vm-test: booted {summary['asked_kernel']}" in proc.stderr


def test_vm_test_exits_zero_when_every_check_passes(vm_run):
    proc, summary, _ = vm_run
    assert proc.returncode == 0, f"failures: {summary['failures']}\nstderr:\n{proc.stderr}"


def test_spline_is_listed_in_the_guest_available_congestion_controls(vm_run):
    _, summary, _ = vm_run
    assert "spline" in summary["available"]
    assert "bbr" in summary["available"] and "cubic" in summary["available"]


def test_spline_carries_traffic_next_to_bbr_and_cubic(vm_run):
    _, summary, _ = vm_run
    by_cca = {run["cca"]: run for run in summary["runs"]}
    assert set(by_cca) == set(CCAS)
    for cca, run in by_cca.items():
        assert run["ok"], f"{cca}: {run.get('error')}"
        assert run["sender_cca"] == cca
        assert run["throughput_bps"] > 0
        assert run["retransmits"] is not None


def test_each_run_leaves_a_capture_with_packets(vm_run):
    _, summary, out = vm_run
    for run in summary["runs"]:
        pcap = out / run["pcap"]
        assert pcap.stat().st_size > PCAP_HEADER_BYTES, f"{pcap.name} holds no packet"


def test_guest_kernel_logs_no_warning_bug_oops_or_unexpected_taint(vm_run):
    _, summary, out = vm_run
    assert (out / "dmesg.txt").stat().st_size > 0
    assert summary["kernel_warnings"] == 0, summary["kernel_warning_lines"]


def test_module_unloads_once_its_sockets_are_gone(vm_run):
    _, summary, _ = vm_run
    assert summary["module_unloaded"] is True


def test_spline_analyze_reads_every_capture_when_installed(vm_run):
    if shutil.which("spline-analyze", path=env_with_this_python_on_path()["PATH"]) is None:
        pytest.skip("spline-analyze not installed")
    _, summary, _ = vm_run
    for run in summary["runs"]:
        analysis = run.get("analysis")
        assert analysis is not None and "error" not in analysis, f"{run['cca']}: {analysis}"
        assert analysis["tcp_packets"] > 0
        assert analysis["tcp_payload_bytes"] >= run["bytes_received"]


def test_guest_progress_lines_reach_the_callers_stderr(vm_run):
    proc, _, _ = vm_run
    for cca in CCAS:
        assert f"vm-test: run {cca}-r1: iperf3 exit 0" in proc.stderr
    assert "vm-test: rmmod tcp_spline: ok" in proc.stderr


# Spline's get_info reports its model in BBR's INET_DIAG fields: bw, min_rtt, the pacing gain
# (1 START_PROBE; PROBE_BW 2.15 below a BDP in flight, from there 1.25 or the probe-then-drain
# cycle 1.25, 0.75, 1 over (1 - random loss under 8%); 0.98 PROBE_RTT; 0.39 DRAIN_PROBE) and
# its window over the BDP.
SPLINE_MODE_PACING_GAINS = {1.0, 550 / 256, 320 / 256, 251 / 256, 100 / 256}
SPLINE_CYCLE_PACING_GAINS = {320 / 256, 192 / 256, 1.0}
CYCLE_LOSS_MAX = 20 / 256  # the cycle's loss term applies below the 8% allowance


def is_spline_pacing_gain(gain: float) -> bool:
    """A mode's gain, or a cycle gain over (1 - a loss ratio under 8%)."""
    if any(abs(gain - mode_gain) < 0.01 for mode_gain in SPLINE_MODE_PACING_GAINS):
        return True
    return any(
        cycle_gain - 0.01 <= gain <= cycle_gain / (1 - CYCLE_LOSS_MAX) + 0.01
        for cycle_gain in SPLINE_CYCLE_PACING_GAINS
    )


SS_MODEL = re.compile(r"bbr:\(bw:(\d+)bps,mrtt:([\d.]+),pacing_gain:([\d.]+)(?:,cwnd_gain:([\d.]+))?\)")


def test_ss_shows_spline_bandwidth_min_rtt_and_mode_during_a_run(vm_run):
    _, _, out = vm_run
    samples = (out / "spline-r1.ss.txt").read_text()
    models = [m for m in SS_MODEL.finditer(samples) if int(m.group(1)) > 0]
    assert models, f"no Spline model in the sampled ss output:\n{samples[:2000]}"
    for model in models:
        bw_bps, min_rtt_ms, pacing_gain = int(model.group(1)), float(model.group(2)), float(model.group(3))
        # the path: 10 Mbit/s, 50 ms added delay; the estimate is a max of delivery rates
        assert 0 < bw_bps < 40e6
        assert 50 <= min_rtt_ms < 400
        assert is_spline_pacing_gain(pacing_gain), pacing_gain
