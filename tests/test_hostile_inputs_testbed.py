"""spline-testbed against hostile paths, values and signals, as root: no symlink followed,
one line per refusal, nothing left running after SIGKILL once `check` (or the next run) has
cleaned up, and an interrupted run's captures marked unfinished."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from processes import processes_holding_files_under

IS_ROOT = os.geteuid() == 0
TOOLS = ("ip", "tc", "iptables", "ethtool", "ss", "tcpdump", "iperf3")
live = pytest.mark.skipif(
    not (IS_ROOT and all(shutil.which(t) for t in TOOLS)),
    reason="needs root, iproute2, iptables, ethtool, tcpdump, iperf3",
)
TESTBED = [sys.executable, "-m", "spline_analysis.testbed.cli"]
TINY_RUN = ["run", "--cca", "cubic", "--rate", "20mbit", "--loss", "1%", "--duration", "2"]


def run_testbed(*args: str, timeout_s: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([*TESTBED, *args], capture_output=True, text=True, timeout=timeout_s)


def namespaces_of_testbed() -> set:
    output = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout
    return {line.split()[0] for line in output.splitlines() if line.startswith("stb-")}


def start_transfer(out: Path, stderr=subprocess.DEVNULL) -> subprocess.Popen:
    """An 8 s run into `out`, returned once its namespaces exist (tcpdump and iperf3 starting)."""
    child = subprocess.Popen(
        [*TESTBED, *TINY_RUN[:-1], "8", "--out", str(out)], stdout=subprocess.DEVNULL, stderr=stderr, text=True
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not any(
        n.startswith(f"stb-{child.pid}-") and n.endswith("-snd") for n in namespaces_of_testbed()
    ):
        time.sleep(0.2)
    return child


@pytest.mark.parametrize("value", ["500ms", "1.5", "0", "abc"])
def test_duration_iperf3_cannot_run_is_refused_in_one_line(value, tmp_path):
    result = run_testbed(*TINY_RUN[:-2], "--duration", value, "--out", str(tmp_path / "out"))
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [result.stderr.strip()]
    assert "duration" in result.stderr and "Traceback" not in result.stderr


@live
@pytest.mark.parametrize("where", ["/dev/null/x", "/proc/spline-testbed-out", "existing file"])
def test_out_folder_that_cannot_be_made_is_one_line_before_anything_runs(where, tmp_path):
    out = tmp_path / "a-file" if where == "existing file" else Path(where)
    if where == "existing file":
        out.write_text("taken")
    result = run_testbed(*TINY_RUN, "--out", str(out), timeout_s=30)
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().startswith(f"spline-testbed: error: --out {out}: ")
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1


@live
def test_symlinks_planted_in_out_are_replaced_never_followed(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    out = tmp_path / "out"
    out.mkdir()
    for name in ("testbed.json", "results.parquet", "results.csv.tmp"):
        (out / name).symlink_to(victim)
    result = run_testbed(*TINY_RUN, "--out", str(out), "--force")
    assert result.returncode == 0, result.stderr
    assert victim.read_text() == "precious\n"
    assert not (out / "testbed.json").is_symlink() and json.loads((out / "testbed.json").read_text())
    assert (out / "results.csv").is_file() and len((out / "runs").iterdir().__next__().name) > 0
    assert not list(out.glob(".spline-testbed-*"))


@live
def test_sigkill_leaves_nothing_running_once_check_has_cleaned_up(tmp_path):
    out = tmp_path / "out"
    child = start_transfer(out)
    time.sleep(2.0)  # tcpdump and iperf3 running
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=10)
    time.sleep(1.0)
    assert processes_holding_files_under(out) == []  # tcpdump and iperf3 died with it
    check = run_testbed("check", "--out", str(out))
    assert check.returncode == 0, check.stderr
    assert "removed namespace stb-" in check.stdout
    assert "holds the files of a killed run" in check.stdout
    assert not {n for n in namespaces_of_testbed() if n.startswith(f"stb-{child.pid}-")}
    again = run_testbed("check")
    assert "leftovers of killed runs: none" in again.stdout


@live
def test_interrupted_run_marks_its_captures_unfinished_and_strict_analysis_refuses_them(tmp_path):
    out = tmp_path / "out"
    child = start_transfer(out, stderr=subprocess.PIPE)
    time.sleep(3.0)
    child.send_signal(signal.SIGINT)
    _, err = child.communicate(timeout=60)
    assert child.returncode == 130, err
    captures = sorted(out.glob("runs/*/sender/trace.pcap"))
    assert captures, list(out.rglob("*"))
    meta = json.loads((captures[0].parent / "meta.json").read_text())
    assert meta["trace_complete"] is False
    analyze = [sys.executable, "-m", "spline_analysis"]
    strict = subprocess.run([*analyze, "--strict", "--quiet", str(captures[0])], capture_output=True, text=True)
    assert strict.returncode == 2 and "did not finish" in strict.stderr
    lenient = subprocess.run([*analyze, "--json", str(captures[0])], capture_output=True, text=True)
    assert lenient.returncode == 0
    assert "capture_unfinished" in {w["code"] for w in json.loads(lenient.stdout)["warnings"]}


def _config_unreadable_for_nobody(folder: Path) -> tuple:
    if not (IS_ROOT and shutil.which("setpriv")):
        pytest.skip("needs root and setpriv")
    from processes import python_runs_as_nobody

    if not python_runs_as_nobody():
        pytest.skip("user nobody cannot reach this checkout's Python (a folder only its owner may enter)")
    config = folder / "private.toml"
    config.write_text('[matrix]\ncca = "cubic"\n')
    config.chmod(0o600)
    return config, ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"], "Permission denied"


def _config_directory(tmp_path: Path) -> tuple:
    (tmp_path / "a-folder").mkdir()
    return tmp_path / "a-folder", [], "Is a directory"


def _config_dangling_symlink(tmp_path: Path) -> tuple:
    (tmp_path / "gone.toml").symlink_to(tmp_path / "never-made.toml")
    return tmp_path / "gone.toml", [], "No such file or directory"


@pytest.mark.parametrize(
    "make",
    [_config_unreadable_for_nobody, _config_directory, _config_dangling_symlink],
    ids=["unreadable", "directory", "dangling-symlink"],
)
@pytest.mark.parametrize("command", [["run", "--config"], ["realhost", "--matrix"]], ids=["run", "realhost"])
def test_experiment_file_that_cannot_be_read_is_one_line_and_status_2(make, command, tmp_path):
    import tempfile

    with tempfile.TemporaryDirectory(prefix="hd-config-") as public:  # pytest's tmp_path is 0700
        os.chmod(public, 0o755)
        path, prefix, reason = make(Path(public))
        result = subprocess.run(
            [*prefix, *TESTBED, *command, str(path), "--out", str(tmp_path / "out")],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert (
        len(lines) == 1
        and lines[0].startswith("spline-testbed: error: cannot read ")
        and str(path) in lines[0]
        and reason in lines[0]
    ), result.stderr


@live
def test_check_into_a_reader_that_stops_early_is_status_0_without_traceback():
    result = subprocess.run(
        ["bash", "-c", f"{' '.join(TESTBED)} check | head -1; exit ${{PIPESTATUS[0]}}"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("congestion controls:") and "Traceback" not in result.stderr


@live
def test_run_whose_stderr_reader_has_gone_carries_on_to_its_results(tmp_path):
    out = tmp_path / "out"
    result = subprocess.run(
        ["bash", "-c", f"{' '.join(TESTBED)} {' '.join(TINY_RUN)} --out {out} 2>&1 | head -1; exit ${{PIPESTATUS[0]}}"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert (out / "results.csv").read_text().count("\n") >= 2
    assert json.loads((out / "testbed.json").read_text())["runs_finished"] == 1


@live
def test_full_disk_under_out_is_one_line_status_4_and_nothing_left_running(tmp_path):
    disk = tmp_path / "tiny"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "hdtestbed", str(disk)], check=True)
    try:
        child = subprocess.Popen(
            [*TESTBED, *TINY_RUN, "--out", str(disk / "out")], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        _, err = child.communicate(timeout=120)
        assert child.returncode == 4, err
        lines = [line for line in err.splitlines() if not line.startswith("[")]  # the progress bar
        assert (
            len(lines) == 1
            and lines[0].startswith("spline-testbed: error: cannot write ")
            and "No space left on device; what was written is in" in lines[0]
        ), err
        assert not {n for n in namespaces_of_testbed() if n.startswith(f"stb-{child.pid}-")}
        assert processes_holding_files_under(disk) == []
    finally:
        subprocess.run(["umount", str(disk)], check=True)


@live
def test_sighup_is_an_interrupt_that_cleans_up_like_ctrl_c(tmp_path):
    out = tmp_path / "out"
    child = start_transfer(out, stderr=subprocess.PIPE)
    time.sleep(2.0)
    child.send_signal(signal.SIGHUP)
    _, err = child.communicate(timeout=60)
    assert child.returncode == 130, err
    assert json.loads((out / "testbed.json").read_text())["interrupted"] is True
    assert not {n for n in namespaces_of_testbed() if n.startswith(f"stb-{child.pid}-")}
    assert processes_holding_files_under(out) == []
