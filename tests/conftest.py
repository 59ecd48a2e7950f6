"""Shared pytest setup: tests/ on sys.path (for `pcapbuild`), where the shared corpus lives, and
a check that the suite tests this clone's analysis/ (the editable install of `setup.sh --test`),
with C extensions built from its current sources."""

from __future__ import annotations

import importlib.util
import signal
import sys
from pathlib import Path
from typing import List

import pytest

TESTS_DIR = Path(__file__).resolve().parent
if str(TESTS_DIR) not in sys.path:
    sys.path.insert(0, str(TESTS_DIR))

REPO_DIR = TESTS_DIR.parent
NATIVE_DIR = REPO_DIR / "analysis" / "_native"
REINSTALL = "run ./setup.sh --test (an editable install of this clone)"


def let_children_take_stop_signals() -> None:
    """A suite started under `nohup` or as a background job (`cmd &` in a script) ignores SIGHUP or
    SIGINT, and an ignored signal stays ignored in every child: a shell cannot even trap it. The tests
    that stop record.sh, spline-testbed or spline-analyze with those signals would then wait for a
    stop that never comes. A no-op handler in pytest keeps the signal harmless here, and a handled
    signal is back to its default in each program pytest starts."""
    for signum in (signal.SIGHUP, signal.SIGINT):
        if signal.getsignal(signum) == signal.SIG_IGN:
            signal.signal(signum, lambda _signum, _frame: None)


let_children_take_stop_signals()

# CI clones the repository with shared/ beside it; here it is /work/shared.
SHARED_DIR = Path(__file__).resolve().parents[2] / "shared"


@pytest.fixture
def shared_dir() -> Path:
    """The read-only shared material (docs, corpus); skips the test when absent."""
    if not SHARED_DIR.is_dir():
        pytest.skip(f"shared material not found at {SHARED_DIR}")
    return SHARED_DIR


def stale_install_problems(repo_dir: Path = REPO_DIR) -> List[str]:
    """Why `import spline_analysis` would not test `repo_dir`'s analysis/ as it is now: the
    package comes from elsewhere (a regular install copies the sources), or a C extension is
    missing or older than one of its sources or headers. Empty when all is current."""
    package = importlib.util.find_spec("spline_analysis")
    analysis_dir = (repo_dir / "analysis").resolve()
    if package is None or package.origin is None:
        return [f"spline_analysis is not installed; {REINSTALL}"]
    if Path(package.origin).resolve().parent != analysis_dir:
        return [
            f"spline_analysis is imported from {Path(package.origin).parent}, not from {analysis_dir}; "
            f"edits to analysis/ would go untested: {REINSTALL}"
        ]
    installed_dir = Path(package.origin).parent  # the editable install's tree of links
    missing = sorted(
        p.relative_to(analysis_dir).as_posix()
        for p in analysis_dir.rglob("*.py*")
        if p.suffix in (".py", ".pyi")
        and "__pycache__" not in p.parts
        and not (installed_dir / p.relative_to(analysis_dir)).exists()
    )
    if missing:
        return [f"the install does not have {', '.join(missing)}; {REINSTALL}"]
    native_dir = analysis_dir / "_native"
    shared_headers = list(native_dir.glob("*.h"))
    problems = []
    for source_dir in sorted(p for p in native_dir.iterdir() if p.is_dir()):
        sources = [p for p in source_dir.glob("*.[ch]") if not p.name.startswith("fuzz_")] + shared_headers
        if not any(p.suffix == ".c" for p in sources):
            continue
        extension = importlib.util.find_spec(f"spline_analysis._{source_dir.name}")
        if extension is None or extension.origin is None:
            problems.append(f"the C extension spline_analysis._{source_dir.name} is not built; {REINSTALL}")
            continue
        built_s = Path(extension.origin).stat().st_mtime
        newer = sorted(p.name for p in sources if p.stat().st_mtime > built_s)
        if newer:
            problems.append(
                f"the C extension {Path(extension.origin).name} is older than {', '.join(newer)}; "
                f"rebuild it: {REINSTALL}"
            )
    return problems


def pytest_sessionstart(session: pytest.Session) -> None:
    problems = stale_install_problems()
    if problems:
        pytest.exit("the suite would not test this clone's analysis/:\n  " + "\n  ".join(problems), returncode=4)
