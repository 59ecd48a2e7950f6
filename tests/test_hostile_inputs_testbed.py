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
live = pytest.mark.skipif(not (IS_ROOT and all(shutil.which(t) for t in TOOLS)),
                          reason="needs root, iproute2, iptables, ethtool, tcpdump, iperf3")
TESTBED = [sys.executable, "-m", "spline_analysis.testbed.cli"]
TINY_RUN = ["run", "--cca", "cubic", "--rate", "20mbit", "--loss", "1%", "--duration", "2"]


def run_testbed(*args: str, timeout_s: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([*TESTBED, *args], capture_output=True, text=True, timeout=timeout_s)


def namespaces_of_testbed() -> set:
    output = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout
    return {line.split()[0] for line in output.splitlines() if line.startswith("stb-")}


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
    child = subprocess.Popen([*TESTBED, *TINY_RUN[:-1], "8", "--out", str(out)], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not any(n.endswith("-snd") for n in namespaces_of_testbed()):
        time.sleep(0.2)
    time.sleep(2.0)                                  # tcpdump and iperf3 running
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
    child = subprocess.Popen([*TESTBED, *TINY_RUN[:-1], "8", "--out", str(out)], stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not any(n.endswith("-snd") for n in namespaces_of_testbed()):
        time.sleep(0.2)
    time.sleep(3.0)
    child.send_signal(signal.SIGINT)
    _, err = child.communicate(timeout=60)
    assert child.returncode == 130, err
    captures = sorted(out.glob("runs/*/sender/trace.pcap"))
    assert captures, list(out.rglob("*"))
    meta = json.loads((captures[0].parent / "meta.json").read_text())
    assert meta["trace_complete"] is False
    analyze = [sys.executable, "-m", "spline_analysis.cli"]
    strict = subprocess.run([*analyze, "--strict", "--quiet", str(captures[0])], capture_output=True, text=True)
    assert strict.returncode == 2 and "did not finish" in strict.stderr
    lenient = subprocess.run([*analyze, "--json", str(captures[0])], capture_output=True, text=True)
    assert lenient.returncode == 0
    assert "capture_unfinished" in {w["code"] for w in json.loads(lenient.stdout)["warnings"]}
