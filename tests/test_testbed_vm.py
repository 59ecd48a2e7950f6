"""`spline-testbed run --vm` for real: one matrix (spline and cubic, 10 Mbit/s, 50 ms delay,
1% loss, 10 s) inside the newest installed stock kernel under QEMU (TCG here, ~1.5 min).

The delay is applied (netem in the guest, whatever the host has), one way as the minimum RTT shows,
the analysed loss agrees with the router's counters, the kernel's cwnd trace of each run's
sender is there, and no QEMU, namespace or trace instance is left on the host.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from spline_analysis.testbed import vm
from spline_analysis.testbed.run import FIRST_CLIENT_PORT

DELAY_MS = 50.0
CCAS = ("spline", "cubic")
pytestmark = [
    pytest.mark.vm,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root (the kernel image is readable by root only)"),
    pytest.mark.skipif(shutil.which("qemu-system-x86_64") is None, reason="qemu-system-x86_64 not installed"),
    pytest.mark.skipif(shutil.which("vng", path=vm.tool_path()) is None, reason="virtme-ng not installed"),
    pytest.mark.skipif(not vm.usable_kernels(), reason="no installed kernel with headers and modules"),
]


def qemu_processes_mentioning(text: str) -> list:
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            words = cmdline.read_bytes().split(b"\0")
        except OSError:
            continue
        if words and b"qemu-system" in words[0] and any(text.encode() in w for w in words):
            found.append(cmdline.parent.name)
    return found


@pytest.fixture(scope="module")
def vm_matrix(tmp_path_factory):
    out = tmp_path_factory.mktemp("testbed-vm")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "spline_analysis.testbed.cli",
            "run",
            "--vm",
            "--cca",
            ",".join(CCAS),
            "--rate",
            "10mbit",
            "--delay",
            f"{DELAY_MS:g}ms",
            "--loss",
            "1%",
            "--duration",
            "10",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    with open(out / "results.csv", newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    return proc, rows, out


def test_the_vm_matrix_finishes_every_run(vm_matrix):
    proc, rows, out = vm_matrix
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert sorted(row["cca"] for row in rows) == sorted(CCAS)
    assert all(row["cca_reported"] == row["cca"] for row in rows)
    testbed = json.loads((out / "testbed.json").read_text())
    assert testbed["runs_finished"] == len(CCAS) and testbed["vm"]["kernel"] in vm.usable_kernels()
    assert testbed["netem_available"] is True
    import pyarrow.parquet as pq  # written by the host from the guest's results.csv

    table = pq.read_table(out / "results.parquet").to_pylist()
    assert [r["throughput_bps"] for r in table] == [float(row["throughput_bps"]) for row in rows]


def test_delay_is_applied_one_way_on_the_data_path_as_the_minimum_rtt_shows(vm_matrix):
    import spline_analysis as sa

    _, rows, out = vm_matrix
    for row in rows:
        assert row["delay_applied"] == "True"
        # the analyzer's RTT of the data connection: its shortest sample over the transfer
        directions = sa.analyze(str(out / row["sender_pcap"])).to_json()["directions"]
        data = next(d for d in directions if d["sport"] == FIRST_CLIENT_PORT and d.get("rtt_ms"))
        min_rtt_ms = data["rtt_ms"]["min"]
        # At least the delay; nearer once than twice (the delay on both paths would read ~2x).
        # Under TCG a single sample (the handshake) read 133 ms at load 10; the minimum over the
        # transfer only loses the guest's per-packet work.
        one_way_ms = (0.95 * DELAY_MS, 1.5 * DELAY_MS)
        assert one_way_ms[0] <= min_rtt_ms < one_way_ms[1], f"{row['cca']}: min RTT {min_rtt_ms:.1f} ms"


def test_analysed_loss_agrees_with_the_routers_counters_within_5_percent(vm_matrix):
    """Below the router (the receiver's capture) loss is counted from the sender's IP IDs:
    what the network lost. The sender's own count is the retransmissions it needed, which
    under TCG's uneven timing include a few spurious timeouts the capture cannot tell apart."""
    _, rows, _ = vm_matrix
    for row in rows:
        router_drops = int(row["router_drops"])
        assert router_drops > 0
        lost = float(row["lost_segments_receiver"])
        assert abs(lost - router_drops) <= max(1.0, 0.05 * router_drops), f"{row['cca']}: {lost} vs {router_drops}"


def test_each_senders_kernel_cwnd_trace_is_recorded_in_the_captures_clock(vm_matrix):
    import spline_analysis as sa

    _, rows, out = vm_matrix
    for row in rows:
        pcap = out / row["sender_pcap"]
        with open(pcap.with_name("probe.csv"), newline="", encoding="utf-8") as handle:
            events = list(csv.DictReader(handle))
        assert len(events) > 100, f"{row['cca']}: {len(events)} tcp_probe events"
        assert all(int(e["snd_cwnd_segments"]) > 0 for e in events)
        assert {e["src"].rsplit(":", 1)[0] for e in events} == {"10.201.1.1"}
        ts_s = sa.read(str(pcap)).packets["ts_ns"] / 1e9
        times = [float(e["time_s"]) for e in events]
        assert ts_s.min() - 1 <= min(times) and max(times) <= ts_s.max() + 1


def test_progress_shows_the_time_left_and_the_vm_costs_are_printed(vm_matrix):
    proc, _, _ = vm_matrix
    assert "running the matrix in a VM (--vm)" in proc.stderr
    assert "s left (VM)" in proc.stderr and f"{len(CCAS)}/{len(CCAS)} runs" in proc.stderr
    assert "boot and set-up" in proc.stderr and "per run" in proc.stderr


def test_nothing_is_left_running_on_the_host(vm_matrix):
    _, _, out = vm_matrix
    assert qemu_processes_mentioning(str(out)) == []
    namespaces = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert "stb-" not in namespaces
    assert not list(out.glob(".spline-testbed-*"))


def run_with_crashes(out: Path, ccas: str, plan: str) -> subprocess.CompletedProcess:
    """A 3 s run per CCA at 2 Mbit/s in the VM, its guests crashed (sysrq c) as PLANned per boot."""
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "spline_analysis.testbed.cli",
            "run",
            "--vm",
            "--no-module",
            "--cca",
            ccas,
            "--rate",
            "2mbit",
            "--delay",
            "10ms",
            "--duration",
            "3",
            "--guest-crashes",
            plan,
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )


def test_a_guest_whose_kernel_crashed_is_stopped_and_a_fresh_guest_runs_the_rest(tmp_path):
    """A real kernel crash (sysrq c) in the guest after its first run: the host says the guest
    faulted, publishes that run, boots a fresh guest for the second, and exits 0 with both."""
    proc = run_with_crashes(tmp_path, "cubic,reno", "1")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "the guest kernel faulted: Kernel panic - not syncing: sysrq triggered crash" in proc.stderr
    assert "booting a fresh guest for the 1 run(s) left (boot 2 of 2)" in proc.stderr
    with open(tmp_path / "results.csv", newline="", encoding="utf-8") as handle:
        assert [row["flow_cca"] for row in csv.DictReader(handle)] == ["cubic", "reno"]
    document = json.loads((tmp_path / "testbed.json").read_text())
    assert document["runs_finished"] == 2 and document["vm"]["boots"] == 2
    assert len(document["vm"]["guest_faults"]) == 1
    assert [p.name.split("-")[1] for p in sorted((tmp_path / "runs").iterdir())] == ["cubic", "reno"]
    assert "sysrq triggered crash" in (tmp_path / "vm-console.log").read_text(errors="replace")
    assert qemu_processes_mentioning(str(tmp_path)) == []


def test_a_guest_whose_kernel_faulted_while_booting_is_booted_again_and_the_run_finishes(tmp_path):
    """Two guests in a row crash before their first progress line (what an emulator flake at
    boot does): each is booted again, said so and recorded, and the third runs the matrix."""
    proc = run_with_crashes(tmp_path, "cubic", "boot,boot")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stderr.count("the guest kernel faulted while booting, before the matrix started") == 2
    assert "booting it again for the 1 run(s) left (boot 3)" in proc.stderr
    document = json.loads((tmp_path / "testbed.json").read_text())
    assert document["runs_finished"] == 1 and document["vm"]["boots"] == 3
    assert document["vm"]["boot_faults"] == 2 and len(document["vm"]["guest_faults"]) == 2
    assert all(fault.endswith("(while booting, before the matrix started)") for fault in document["vm"]["guest_faults"])
    with open(tmp_path / "results.csv", newline="", encoding="utf-8") as handle:
        assert [row["flow_cca"] for row in csv.DictReader(handle)] == ["cubic"]
    assert qemu_processes_mentioning(str(tmp_path)) == []


def test_a_guest_whose_kernel_faulted_during_the_runs_is_replaced_once_and_never_booted_again(tmp_path):
    """Each guest crashes after a run of its own: the first is replaced by a fresh guest, the
    second's fault is reported and the matrix is left short of its last run (exit 2)."""
    proc = run_with_crashes(tmp_path, "cubic,reno,bbr", "1,1")
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert "booting it again" not in proc.stderr
    assert "2 of 3 runs finished in the VM" in proc.stderr and "sysrq triggered crash" in proc.stderr
    document = json.loads((tmp_path / "testbed.json").read_text())
    assert document["runs_finished"] == 2 and document["vm"]["boots"] == 2
    assert document["vm"]["boot_faults"] == 0 and len(document["vm"]["guest_faults"]) == 2
    with open(tmp_path / "results.csv", newline="", encoding="utf-8") as handle:
        assert [row["flow_cca"] for row in csv.DictReader(handle)] == ["cubic", "reno"]
    assert qemu_processes_mentioning(str(tmp_path)) == []
