"""The pieces of `spline-testbed run --vm` that need no VM: kernel order, the guest's
command line, progress relayed with the time left, tcp_probe lines read into probe.csv."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import pytest

from spline_analysis.testbed import probe, vm
from spline_analysis.testbed.cli import build_parser


def test_kernels_sort_by_version_not_by_spelling():
    versions = ["6.1.0-56-amd64", "6.12.117+deb12-amd64", "6.1.0-9-amd64", "6.12.9+deb12-amd64"]
    assert sorted(versions, key=vm.kernel_sort_key, reverse=True) == [
        "6.12.117+deb12-amd64",
        "6.12.9+deb12-amd64",
        "6.1.0-56-amd64",
        "6.1.0-9-amd64",
    ]


def test_guest_runs_the_users_matrix_without_vm_and_with_absolute_paths(tmp_path):
    args = build_parser().parse_args(
        [
            "run",
            "--vm",
            "--cca",
            "cubic,bbr",
            "--delay",
            "50ms",
            "--loss",
            "1%",
            "--duration",
            "10",
            "--out",
            "rel/out",
            "--force",
        ]
    )
    argv = vm.guest_arguments(args, tmp_path / "out", tmp_path / "tcp_spline.ko")
    assert "--vm" not in argv and "--guest" in argv and "--force" in argv
    assert argv[argv.index("--out") + 1] == str((tmp_path / "out").resolve())
    assert argv[argv.index("--cca") + 1] == "cubic,bbr" and argv[argv.index("--delay") + 1] == "50ms"
    assert argv[argv.index("--guest-ko") + 1] == str(tmp_path / "tcp_spline.ko")
    reparsed = build_parser().parse_args(argv)
    assert reparsed.guest and not reparsed.vm and reparsed.loss == "1%"


def test_progress_relay_drops_kernel_lines_and_counts_down_from_measured_runs(monkeypatch):
    clock = [100.0]
    monkeypatch.setattr(vm.time, "monotonic", lambda: clock[0])
    relay = vm.ProgressRelay(total_runs=3, duration_s=10, started_s=100.0)
    assert relay.line("[    1.234567] virtme-ng-init: mounting /tmp") is None
    assert (
        relay.line("spline-testbed: guest: modprobe tcp_foo: not found")
        == "spline-testbed: guest: modprobe tcp_foo: not found"
    )
    clock[0] = 112.0
    shown = relay.line("[                              ] 0/3 runs     0.0 s  starting")
    assert relay.boot_s == 12.0 and "0/3 runs" in shown
    assert f"~{3 * (10 + vm.RUN_OVERHEAD_GUESS_S):.0f} s left" in shown
    clock[0] = 132.0
    shown = relay.line("[==========                    ] 1/3 runs    20.0 s  000-cubic (19.8 s)")
    assert relay.run_costs_s == [20.0]
    assert "~40 s left" in shown and "000-cubic" in shown


TRACE = """\
# tracer: nop
          iperf3-412     [001] ..s1. 1795397563.123456: tcp_probe: family=AF_INET src=10.201.1.1:40001 dest=10.201.2.2:5201 mark=0x0 data_len=0 snd_nxt=0x5c1e2f3 snd_una=0x5c1dc4b snd_cwnd=23 ssthresh=17 snd_wnd=131072 srtt=51234 rcv_wnd=64256 sock_cookie=2
          <idle>-0       [000] ..s2. 1795397563.173456: tcp_probe: family=AF_INET6 src=[::ffff:10.201.1.1]:40002 dest=[::ffff:10.201.2.2]:5202 mark=0x0 data_len=1448 snd_nxt=0x1 snd_una=0x1 snd_cwnd=10 ssthresh=2147483647 snd_wnd=64256 srtt=50001 rcv_wnd=64256 sock_cookie=3
"""


def test_tcp_probe_lines_become_probe_csv_rows_in_record_sh_columns(tmp_path):
    rows = probe.parse_trace_lines(TRACE.splitlines())
    assert len(rows) == 2
    assert rows[0]["time_s"] == "1795397563.123456" and rows[0]["snd_cwnd_segments"] == "23"
    assert rows[0]["ssthresh_segments"] == "17" and rows[0]["srtt_us"] == "51234"
    assert rows[1]["src"] == "10.201.1.1:40002" and rows[1]["dst"] == "10.201.2.2:5202"
    path = tmp_path / "probe.csv"
    probe.write_probe_csv(rows, path)
    lines = path.read_text().splitlines()
    assert lines[0].split(",") == probe.PROBE_COLUMNS
    assert lines[1].split(",")[probe.PROBE_COLUMNS.index("srtt_us")] == "51234"


def test_no_vm_is_chosen_for_a_matrix_without_delay_jitter_or_reordering():
    from spline_analysis.testbed.cli import vm_choice
    from spline_analysis.testbed.matrix import MatrixSpec, expand

    args = argparse.Namespace(vm=False, guest=False, no_vm=False)
    assert vm_choice(args, expand(MatrixSpec(loss=["1%"]))) is None
    assert vm_choice(argparse.Namespace(vm=True, guest=False, no_vm=False), expand(MatrixSpec())) == "--vm"


EXPERIMENTS = sorted(
    p
    for p in (Path(__file__).resolve().parents[1] / "capture" / "experiments").glob("*.toml")
    if not p.name.startswith("realhost")
)
GUEST_CCAS = {
    "reno",
    "cubic",
    "bbr",
    "vegas",
    "westwood",
    "hybla",
    "htcp",
    "illinois",
    "bic",
    "highspeed",
    "scalable",
    "veno",
    "yeah",
    "lp",
    "nv",
    "cdg",
    "dctcp",
    "spline",
}
# Under TCG on this shared 2-core host at load 5-9 (README): each run costs its duration + up to
# ~50 s (set-up, two captures, their analysis; ten flows no more than one now that they start
# together), the first ~30 s more (the guest imports the analysis), the boot up to ~115 s.
RUN_COST_S, FIRST_RUN_EXTRA_S, BOOT_S = 50.0, 30.0, 115.0


@pytest.mark.parametrize("path", EXPERIMENTS, ids=lambda p: p.name)
def test_experiment_files_expand_to_ccas_the_guest_ships_and_short_ones_fit_10_minutes(path):
    from spline_analysis.testbed.matrix import ccas_needed, expand, load_toml, matrix_from_mapping

    runs = expand(matrix_from_mapping(load_toml(path)))
    assert runs and set(ccas_needed(runs)) <= GUEST_CCAS
    assert "spline-testbed run" in path.read_text()  # the file says how to run it
    if path.stem.endswith("-short") or path.stem.startswith(("spline-claims", "cs244")):
        cost_s = BOOT_S + FIRST_RUN_EXTRA_S + sum(r.duration_s + RUN_COST_S for r in runs)
        assert cost_s < 600, f"{path.name}: ~{cost_s:.0f} s"


def test_trace_instances_of_dead_runs_are_removed_and_live_ones_kept(tmp_path):
    """tracefs-like folders: a SIGKILLed run's instance goes, a running process's stays."""
    instances = tmp_path / "instances"
    dead, alive = instances / "spline-testbed-999999999", instances / f"spline-testbed-{os.getpid()}"
    for folder in (dead, alive):
        (folder / "events" / "tcp" / "tcp_probe").mkdir(parents=True)
        (folder / "events" / "tcp" / "tcp_probe" / "enable").write_text("1\n")
    # a real tracefs removes an instance's files with it; here only the empty folder can go
    assert probe.remove_orphaned_instances(tmp_path) == []
    assert (dead / "events" / "tcp" / "tcp_probe" / "enable").read_text() == "0\n"
    assert (alive / "events" / "tcp" / "tcp_probe" / "enable").read_text() == "1\n"


def test_rates_above_what_tcg_carries_faithfully_are_warned_about_under_tcg_only(monkeypatch):
    monkeypatch.setattr(vm, "TCG_FAITHFUL_RATE_BPS", 10e6)
    warning = vm.tcg_rate_warning([10e6, 50e6], kvm=False)
    assert warning and "50 Mbit/s is above the 10 Mbit/s" in warning and vm.TCG_MEASURED in warning
    assert vm.tcg_rate_warning([10e6, 50e6], kvm=True) is None
    assert vm.tcg_rate_warning([5e6, 10e6], kvm=False) is None
    monkeypatch.setattr(vm, "TCG_FAITHFUL_RATE_BPS", 0.0)  # as measured here: no rate
    assert "2 Mbit/s is not a rate it was measured to carry" in vm.tcg_rate_warning([2e6], kvm=False)


def test_a_guest_that_died_before_publishing_has_its_finished_runs_published(tmp_path):
    """What a guest leaves when it is killed or panics after some runs: its staging folder
    with results.csv listing the finished runs; the host publishes those and drops the rest."""
    from spline_analysis.testbed.cli import STAGING_PREFIX, publish
    from spline_analysis.testbed.results import COLUMNS, write_csv

    out = tmp_path / "out"
    staging = out / f"{STAGING_PREFIX}4242-abcdef"
    for run_id in ("000-cubic", "001-bbr"):
        (staging / "runs" / run_id / "sender").mkdir(parents=True)
    write_csv([{key: None for key in COLUMNS} | {"run_id": "000-cubic"}], staging / "results.csv")
    (staging / "probe-scratch.txt").write_text("partial")
    assert vm.recover_interrupted(out, set(), publish, STAGING_PREFIX) == 1
    assert (out / "runs" / "000-cubic" / "sender").is_dir() and not (out / "runs" / "001-bbr").exists()
    assert (out / "results.csv").is_file() and not list(out.glob(f"{STAGING_PREFIX}*"))
    assert vm.recover_interrupted(out, set(), publish, STAGING_PREFIX) == 0  # nothing left: nothing done


OOPS_LINE = "[  191.983292] Oops: int3: 0000 [#1] PREEMPT SMP NOPTI"


def test_a_guest_kernel_oops_stops_the_guest_once_its_report_had_time_to_arrive():
    watch = vm.GuestWatch(boot_limit_s=300, run_limit_s=250, started_s=0.0)
    watch.line("[==  ] 1/4 runs   60.0 s  running 001-cubic", is_progress=True, now_s=60.0)
    watch.line("[  190.1] snd0: entered promiscuous mode", is_progress=False, now_s=61.0)
    assert watch.verdict(now_s=61.0) is None
    watch.line(OOPS_LINE, is_progress=False, now_s=62.0)
    watch.line("[  192.001064] Kernel panic - not syncing: Fatal exception in interrupt", False, now_s=62.1)
    assert watch.verdict(now_s=62.0 + vm.GUEST_FAULT_GRACE_S / 2) is None  # the rest of the report first
    assert (
        watch.verdict(now_s=62.0 + vm.GUEST_FAULT_GRACE_S)
        == "the guest kernel faulted: Oops: int3: 0000 [#1] PREEMPT SMP NOPTI"
    )


@pytest.mark.parametrize(
    "line",
    [
        "[ 3.1] BUG: kernel NULL pointer dereference, address: 0000000000000008",
        "[ 9.9] general protection fault, probably for non-canonical address",
        "[ 12.5] Kernel panic - not syncing: VFS: Unable to mount root fs",
    ],
)
def test_bugs_and_panics_count_as_guest_faults(line):
    watch = vm.GuestWatch(boot_limit_s=300, run_limit_s=250, started_s=0.0)
    watch.line(line, is_progress=False, now_s=1.0)
    assert watch.verdict(now_s=1.0 + vm.GUEST_FAULT_GRACE_S).startswith("the guest kernel faulted: ")


def test_ordinary_guest_output_and_starvation_warnings_are_no_fault():
    watch = vm.GuestWatch(boot_limit_s=300, run_limit_s=250, started_s=0.0)
    for text in (
        "[ 1.0] tcp_spline: loading out-of-tree module taints kernel.",
        "spline-testbed: guest: modprobe tcp_lp: not found",
        "[ 2.0] Debugging BUG-compat mode off",
        "[ 80.0] watchdog: BUG: soft lockup - CPU#1 stuck for 26s! [python:160]",
        "[ 81.0] rcu: INFO: rcu_preempt detected stalls on CPUs/tasks:",
    ):
        watch.line(text, is_progress=False, now_s=2.0)
    watch.line("[=   ] 0/2 runs   0.0 s  starting", is_progress=True, now_s=40.0)
    assert watch.verdict(now_s=40.0 + 249) is None


def test_a_guest_silent_past_its_boot_or_run_limit_is_called_hung():
    booting = vm.GuestWatch(boot_limit_s=300, run_limit_s=250, started_s=0.0)
    assert booting.verdict(now_s=299.0) is None
    assert "did not start the matrix within 300 s" in booting.verdict(now_s=301.0)
    running = vm.GuestWatch(boot_limit_s=300, run_limit_s=250, started_s=0.0)
    running.line("[=   ] 1/2 runs   90.0 s  running 001-bbr", is_progress=True, now_s=100.0)
    assert running.verdict(now_s=349.0) is None
    assert "no progress for 250 s (hung)" in running.verdict(now_s=351.0)


def test_a_panic_that_ended_the_guest_before_its_grace_is_still_its_fault():
    watch = vm.GuestWatch(boot_limit_s=300, run_limit_s=250, started_s=0.0)
    assert watch.fault() is None
    watch.line("[ 70.2] Kernel panic - not syncing: sysrq triggered crash", is_progress=False, now_s=70.0)
    assert watch.verdict(now_s=70.5) is None
    assert watch.fault() == "the guest kernel faulted: Kernel panic - not syncing: sysrq triggered crash"


def test_guest_crash_after_is_a_hidden_flag_of_run():
    args = build_parser().parse_args(["run", "--vm", "--guest-crash-after", "1", "--out", "x"])
    assert args.guest_crash_after == 1 and not args.guest_resume
    assert "--guest-crash-after" not in build_parser().format_help()


def test_a_kernel_fault_before_the_guests_first_progress_line_is_a_fault_while_booting():
    watch = vm.GuestWatch(boot_limit_s=300, run_limit_s=250, started_s=0.0)
    assert not watch.faulted_while_booting()
    watch.line("[ 1.58] sched_clock: Marking stable (1568175285, 10166224)->(1590643041, -12301532)", False, now_s=1.0)
    watch.line("[ 1.58] Oops: int3: 0000 [#1] PREEMPT SMP NOPTI", is_progress=False, now_s=1.1)
    assert watch.faulted_while_booting()


def test_a_kernel_fault_once_the_guest_drew_its_progress_is_not_a_fault_while_booting():
    watch = vm.GuestWatch(boot_limit_s=300, run_limit_s=250, started_s=0.0)
    watch.line("[    ] 0/2 runs   0.0 s  starting", is_progress=True, now_s=15.0)
    watch.line("[ 30.2] Kernel panic - not syncing: sysrq triggered crash", is_progress=False, now_s=30.0)
    assert watch.fault() is not None and not watch.faulted_while_booting()


def test_a_guest_that_faults_while_booting_is_booted_again_a_bounded_number_of_times():
    steps = [vm.after_fault(True, booted_again, 0) for booted_again in range(vm.GUEST_BOOT_FAULT_RETRIES + 1)]
    assert steps == [vm.BOOT_AGAIN] * vm.GUEST_BOOT_FAULT_RETRIES + [vm.FRESH_GUEST]
    assert vm.after_fault(True, vm.GUEST_BOOT_FAULT_RETRIES, vm.GUEST_BOOTS - 1) is None
    # a fault while booting spends nothing of the fresh guests a fault during the runs gets
    assert vm.after_fault(True, 0, vm.GUEST_BOOTS - 1) == vm.BOOT_AGAIN


def test_a_guest_that_faults_during_the_runs_gets_a_fresh_guest_once_and_is_never_booted_again():
    assert vm.after_fault(False, 0, 0) == vm.FRESH_GUEST
    assert vm.after_fault(False, 0, vm.GUEST_BOOTS - 1) is None


def test_the_suites_crash_plan_gives_each_boot_its_own_crash():
    plan = build_parser().parse_args(["run", "--vm", "--guest-crashes", "boot,2,-", "--out", "x"])
    assert [vm.guest_crash_of(plan, boot) for boot in (1, 2, 3, 4)] == [
        ([], [vm.BOOT_PANIC_KERNEL_OPTION]),
        (["--guest-crash-after", "2"], []),
        ([], []),
        ([], []),
    ]
    after = build_parser().parse_args(["run", "--vm", "--guest-crash-after", "1", "--out", "x"])
    assert [vm.guest_crash_of(after, boot) for boot in (1, 2)] == [(["--guest-crash-after", "1"], []), ([], [])]
    assert "--guest-crashes" not in build_parser().format_help()


@pytest.mark.skipif(vm.shutil.which("vng", path=vm.tool_path()) is None, reason="virtme-ng not installed")
def test_kernel_options_reach_the_guest_kernels_command_line():
    command = vm.vng_command("6.12.1", ["run"], [], kvm=False, kernel_options=[vm.BOOT_PANIC_KERNEL_OPTION])
    guest_start = command.index("--")
    assert command[command.index("--append") + 1] == vm.BOOT_PANIC_KERNEL_OPTION
    assert command.index("--append") < guest_start
