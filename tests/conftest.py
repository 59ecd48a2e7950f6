"""Shared pytest setup: tests/ on sys.path (for `pcapbuild`), and where the shared corpus lives."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

TESTS_DIR = Path(__file__).resolve().parent
if str(TESTS_DIR) not in sys.path:
    sys.path.insert(0, str(TESTS_DIR))

# CI clones the repository with shared/ beside it; here it is /work/shared.
SHARED_DIR = Path(__file__).resolve().parents[2] / "shared"


@pytest.fixture
def shared_dir() -> Path:
    """The read-only shared material (docs, corpus); skips the test when absent."""
    if not SHARED_DIR.is_dir():
        pytest.skip(f"shared material not found at {SHARED_DIR}")
    return SHARED_DIR
