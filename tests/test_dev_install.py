"""The suite refuses to run against anything but this clone's analysis/ with current C builds
(tests/conftest.py): an engineer who edits analysis/ and runs pytest tests what they edited."""

from __future__ import annotations

import os
from pathlib import Path

from conftest import NATIVE_DIR, stale_install_problems


def test_the_suite_imports_this_clones_analysis_with_current_c_extensions():
    assert stale_install_problems() == []


def test_a_package_imported_from_another_tree_is_reported(tmp_path: Path):
    (tmp_path / "analysis").mkdir()
    problems = stale_install_problems(tmp_path)
    assert len(problems) == 1 and "edits to analysis/ would go untested" in problems[0]


def test_a_c_header_newer_than_its_extension_is_reported():
    header = NATIVE_DIR / "decode" / "decode.h"
    before = header.stat()
    try:
        os.utime(header, (before.st_atime, before.st_mtime + 3600 * 24 * 365))
        problems = stale_install_problems()
    finally:
        os.utime(header, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert len(problems) == 1 and "_decode" in problems[0] and "decode.h" in problems[0]
