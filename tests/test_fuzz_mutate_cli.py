"""The mutation fuzzer of spline-analyze (fuzz/mutate_cli.py): a short run finds nothing,
and it does call a bug a finding."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "fuzz" / "mutate_cli.py"


def load_fuzzer():
    spec = importlib.util.spec_from_file_location("mutate_cli", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_short_mutation_run_ends_with_no_internal_error_traceback_crash_or_hang():
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--variants", "400", "--seed", "11"], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "variants tried: 400" in result.stdout and "findings: 0" in result.stdout


def test_variants_are_reproducible_from_the_seed_and_cover_every_kind():
    fuzzer = load_fuzzer()
    import random

    seeds = fuzzer.seed_captures()
    first = [name for name, _ in fuzzer.variants(seeds, 200, random.Random(5))]
    again = [name for name, _ in fuzzer.variants(seeds, 200, random.Random(5))]
    assert first == again and len(first) == 200
    kinds = {name.split(":")[1].split("@")[0] for name in first}
    assert {"cut", "flip", "length"} <= kinds and any(k.startswith("gzip") for k in kinds)


def test_an_internal_error_or_exception_counts_as_a_finding(monkeypatch, tmp_path):
    fuzzer = load_fuzzer()
    import spline_analysis._core.cli as cli

    path = tmp_path / "x.pcap"
    path.write_bytes(b"")
    monkeypatch.setattr(cli, "main", lambda argv: 3)
    assert fuzzer.run_one(str(path))[0] == "exit-3"

    def explode(argv):
        raise RuntimeError("a bug")

    monkeypatch.setattr(cli, "main", explode)
    assert fuzzer.run_one(str(path))[0] == "traceback"
