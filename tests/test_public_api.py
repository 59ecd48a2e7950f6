"""The public API: a few names at the package top, loaded on first use, one root error."""

from __future__ import annotations

import subprocess
import sys

import pytest

import spline_analysis as sa

PUBLIC = (
    "read",
    "analyze",
    "Analysis",
    "Capture",
    "PacketTable",
    "Flows",
    "Directions",
    "WiresharkAnalysis",
    "SplineError",
    "CaptureError",
    "CaptureCutError",
    "SCHEMA_VERSION",
    "plot",
    "report",
    "schema",
)


def test_importing_the_package_loads_no_stage_and_not_numpy():
    code = (
        "import sys, spline_analysis; "
        "print(sorted(m for m in sys.modules if m.startswith('spline_analysis.') or m == 'numpy'))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == "[]"


@pytest.mark.parametrize("name", PUBLIC)
def test_every_public_name_resolves_and_is_listed(name):
    assert name in sa.__all__ and name in dir(sa)
    assert getattr(sa, name) is not None


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError):
        sa.no_such_name  # noqa: B018


def test_every_error_the_toolkit_raises_derives_from_one_root():
    from spline_analysis.testbed.errors import TestbedError

    assert issubclass(sa.CaptureError, sa.SplineError) and issubclass(sa.CaptureCutError, sa.CaptureError)
    assert issubclass(TestbedError, sa.SplineError)


def test_an_unreadable_file_raises_the_public_capture_error(tmp_path):
    bad = tmp_path / "bad.pcap"
    bad.write_bytes(b"not a capture at all")
    with pytest.raises(sa.CaptureError) as caught:
        sa.analyze(bad)
    assert str(bad) in str(caught.value)


def test_implementation_modules_are_private():
    from pathlib import Path

    package = Path(sa.__file__).parent
    public_modules = sorted(
        [p.stem for p in package.glob("*.py") if not p.stem.startswith("_")]
        + [p.parent.name for p in package.glob("*/__init__.py") if not p.parent.name.startswith("_")]
    )
    assert public_modules == ["plot", "report", "schema", "testbed"]
