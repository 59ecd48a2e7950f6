"""bench/vm_claims.sh's copy of the module sources, without booting: every scenario of a suite
run builds one copy, taken from a commit or once from the working tree, and a second suite run
into the same output directory keeps the first one's copy."""

from __future__ import annotations

import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
VM_CLAIMS = REPO / "bench" / "vm_claims.sh"


def snapshot(out_dir: Path, commit: str) -> Path:
    """Source vm_claims.sh, take a snapshot of module/ at `commit` into out_dir, return its path."""
    proc = subprocess.run(
        [
            "bash",
            "-c",
            f'source "{VM_CLAIMS}"; OUT_DIR="{out_dir}"; COMMIT="{commit}"; SCENARIOS="clean10"; '
            'snapshot_module; echo "$MODULE_SNAPSHOT"',
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    return Path(proc.stdout.strip().splitlines()[-1])


def committed(commit: str, path: str) -> str:
    return subprocess.run(
        ["git", "-C", str(REPO), "show", f"{commit}:{path}"], capture_output=True, text=True, check=True
    ).stdout


def last_commit_changing_the_core() -> tuple[str, str]:
    """The newest commit that changed module/spline_core.h, and its parent."""
    log = subprocess.run(
        ["git", "-C", str(REPO), "log", "-2", "--format=%H", "--", "module/spline_core.h"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return log[0], log[1]


def test_a_snapshot_of_a_commit_holds_that_commits_core_and_no_vm_harness(tmp_path):
    newer, _ = last_commit_changing_the_core()
    copy = snapshot(tmp_path, newer)
    assert (copy / "spline_core.h").read_text() == committed(newer, "module/spline_core.h")
    assert not (copy / "vm").exists()
    assert f"commit={newer[:7]}" in (tmp_path / "module-source.txt").read_text()


def test_a_second_suite_run_into_one_directory_keeps_the_first_runs_copy(tmp_path):
    newer, older = last_commit_changing_the_core()
    first = snapshot(tmp_path, older)
    second = snapshot(tmp_path, newer)
    assert first != second
    assert (first / "spline_core.h").read_text() == committed(older, "module/spline_core.h")
    assert (second / "spline_core.h").read_text() == committed(newer, "module/spline_core.h")
    assert len((tmp_path / "module-source.txt").read_text().splitlines()) == 2


def test_the_same_sources_twice_share_one_copy(tmp_path):
    newer, _ = last_commit_changing_the_core()
    assert snapshot(tmp_path, newer) == snapshot(tmp_path, newer)
    assert len(list(tmp_path.glob("module-src-*"))) == 1
