"""Test helper: which processes still hold files of a run (a leftover tcpdump or iperf3 would)."""

import os
from pathlib import Path
from typing import Iterator, List


def _processes() -> Iterator[Path]:
    """/proc/PID of every process."""
    return (entry for entry in Path("/proc").iterdir() if entry.name.isdigit())


def processes_holding_files_under(directory: Path) -> List[int]:
    """PIDs with an open file below `directory`."""
    holders = []
    for entry in _processes():
        try:
            targets = [os.readlink(fd) for fd in (entry / "fd").iterdir()]
        except OSError:
            continue
        if any(target.startswith(str(directory)) for target in targets):
            holders.append(int(entry.name))
    return holders


def processes_working_under(directory: Path) -> List[int]:
    """PIDs with an open file or their working directory below `directory`."""
    working = []
    for entry in _processes():
        try:
            if os.readlink(entry / "cwd").startswith(str(directory)):
                working.append(int(entry.name))
        except OSError:
            continue
    return sorted(set(working) | set(processes_holding_files_under(directory)))


def python_runs_as_nobody() -> bool:
    """Whether user nobody (65534) can run this Python with the toolkit importable: not when
    the clone sits in a folder only its owner may enter (as `mktemp -d` makes)."""
    import subprocess
    import sys

    result = subprocess.run(
        ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-c", "import spline_analysis"],
        capture_output=True,
        timeout=60,
    )
    return result.returncode == 0
