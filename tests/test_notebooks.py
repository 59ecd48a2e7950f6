"""Every notebook in notebooks/ runs top to bottom without a cell error, shows its figures,
and is committed without outputs.

The kernel is this interpreter (the venv's python), declared in a kernelspec written to the
test's tmp dir and found through JUPYTER_PATH, so a fresh clone needs no kernelspec installed
by hand.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import List

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

REPO = Path(__file__).resolve().parents[1]
NOTEBOOK_DIR = REPO / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))
SAMPLES = sorted(REPO.glob("samples/*/trace.pcap"))
KERNEL_NAME = "spline-test-python"
CELL_TIMEOUT_S = 120
# Notebooks that read the bundled captures; the others must run without them.
NEEDS_SAMPLES = {"01_explore_a_capture", "02_compare_runs"}


@pytest.fixture
def kernel_env(tmp_path, monkeypatch):
    """A kernelspec for this interpreter in tmp_path, visible to nbclient via JUPYTER_PATH."""
    spec_dir = tmp_path / "jupyter" / "kernels" / KERNEL_NAME
    spec_dir.mkdir(parents=True)
    (spec_dir / "kernel.json").write_text(
        json.dumps(
            {
                "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                "display_name": "Python 3 (spline tests)",
                "language": "python",
            }
        )
    )
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    for name in ("SPLINE_CAPTURE", "SPLINE_RUNS", "SPLINE_RESULTS_CSV"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def execute(path: Path, cwd: Path):
    """Run the notebook in `cwd`; nbclient raises CellExecutionError on the first failing cell."""
    notebook = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(
        notebook, timeout=CELL_TIMEOUT_S, kernel_name=KERNEL_NAME, resources={"metadata": {"path": str(cwd)}}
    )
    started = time.monotonic()
    client.execute()
    return notebook, time.monotonic() - started


def outputs(notebook) -> List[dict]:
    return [output for cell in notebook.cells if cell.cell_type == "code" for output in cell.get("outputs", [])]


def png_count(notebook) -> int:
    return sum("image/png" in output.get("data", {}) for output in outputs(notebook))


def text_of(notebook) -> str:
    parts = []
    for output in outputs(notebook):
        parts.append(output.get("text", ""))
        parts.append(output.get("data", {}).get("text/plain", ""))
    return "\n".join(parts)


def test_there_are_the_three_notebooks():
    assert [p.stem for p in NOTEBOOKS] == ["01_explore_a_capture", "02_compare_runs", "03_testbed_results"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_is_committed_without_outputs_and_with_the_python3_kernel(path):
    notebook = nbformat.read(path, as_version=4)
    nbformat.validate(notebook)
    assert notebook.metadata["kernelspec"]["name"] == "python3"
    for cell in notebook.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, f"{path.name}: clear outputs before committing"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs_from_the_notebooks_folder_without_errors(path, kernel_env):
    if path.stem in NEEDS_SAMPLES and not SAMPLES:
        pytest.skip("no samples/*/trace.pcap in this checkout: the notebook analyses the bundled samples")
    notebook, elapsed_s = execute(path, NOTEBOOK_DIR)
    assert not [o for o in outputs(notebook) if o.get("output_type") == "error"]
    if path.stem in NEEDS_SAMPLES:
        assert png_count(notebook) >= 3, "figures must render as images, not as <Figure ...> text"
    assert elapsed_s < 3 * 60


@pytest.mark.skipif(not SAMPLES, reason="no samples/*/trace.pcap in this checkout")
def test_explore_notebook_finds_the_samples_from_the_repository_root_too(kernel_env):
    notebook, _ = execute(NOTEBOOK_DIR / "01_explore_a_capture.ipynb", REPO)
    assert "capture: samples/" in text_of(notebook)
    assert png_count(notebook) >= 3


def test_testbed_notebook_without_results_explains_how_to_make_them(kernel_env, tmp_path):
    if sorted(REPO.glob("samples/**/results.csv")):
        pytest.skip("a results.csv is shipped under samples/: the notebook uses it")
    notebook, _ = execute(NOTEBOOK_DIR / "03_testbed_results.ipynb", NOTEBOOK_DIR)
    text = text_of(notebook)
    assert "spline-testbed run" in text and png_count(notebook) == 0


def test_testbed_notebook_reads_a_results_csv_and_draws_its_figures(kernel_env, tmp_path):
    from spline_analysis.testbed.results import COLUMNS, write_csv

    rows = []
    for cca, base_bps in (("cubic", 9e6), ("bbr", 10e6)):
        for loss, text in ((0.0, "0"), (0.01, "1%")):
            run_id = f"{cca}-20mbit-l{text}-f2"
            for flow, share in ((0, 1.0), (1, 0.8)):
                row = {key: None for key in COLUMNS}
                row.update(
                    {
                        "run_id": run_id,
                        "cca": cca,
                        "flow_cca": cca,
                        "rate": "20mbit",
                        "rate_bps": 20e6,
                        "loss": text,
                        "loss_probability": loss,
                        "flows": 2,
                        "flow": flow,
                        "duration_s": 3.0,
                        "throughput_bps": base_bps * share,
                        "throughput_source": "iperf3:receiver",
                        "retransmissions": 30,
                        "router_random_drops": 29,
                        "router_queue_drops": 1,
                        "capture_kernel_drops_receiver": 0,
                        "jain_index": (1.8**2) / (2 * (1 + 0.64)),
                    }
                )
                rows.append(row)
    results_csv = tmp_path / "results.csv"
    write_csv(rows, results_csv)
    kernel_env.setenv("SPLINE_RESULTS_CSV", str(results_csv))
    notebook, _ = execute(NOTEBOOK_DIR / "03_testbed_results.ipynb", NOTEBOOK_DIR)
    text = text_of(notebook)
    assert "8 rows, 4 runs" in text and "no results" not in text
    assert png_count(notebook) == 2  # throughput vs loss, fairness


# ---------------------------------------------------------------- one entry point, one set of figures

FIGURES_MARK = "FIGURES-JSON "


def execute_with_dump(path: Path, dump_source: str):
    """Run the notebook with one more cell at its end that prints `dump_source`'s value as
    JSON after FIGURES_MARK: the figures the notebook's own cells computed."""
    notebook = nbformat.read(path, as_version=4)
    notebook.cells.append(
        nbformat.v4.new_code_cell(f"import json as _json\nprint({FIGURES_MARK!r} + _json.dumps({dump_source}))")
    )
    client = nbclient.NotebookClient(
        notebook, timeout=CELL_TIMEOUT_S, kernel_name=KERNEL_NAME, resources={"metadata": {"path": str(NOTEBOOK_DIR)}}
    )
    client.execute()
    line = next(line for line in text_of(notebook).splitlines() if line.startswith(FIGURES_MARK))
    return json.loads(line[len(FIGURES_MARK) :])


def cli_output(*args: str) -> str:
    cli = Path(sys.executable).with_name("spline-analyze")
    done = subprocess.run([str(cli), "--quiet", *args], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.skipif(not SAMPLES, reason="no samples/*/trace.pcap in this checkout")
def test_compare_notebook_the_cli_json_and_the_testbed_give_identical_figures_for_every_sample(kernel_env):
    from spline_analysis.testbed.analyse import analyse_capture

    documents = json.loads(cli_output("--json", *map(str, SAMPLES)))["files"]
    in_notebook = execute_with_dump(
        NOTEBOOK_DIR / "02_compare_runs.ipynb",
        "{name: r['analysis'].to_json()['directions'] for name, r in runs.items()} | {'summaries': summaries}",
    )
    summaries = {s["name"]: s for s in in_notebook.pop("summaries")}
    assert sorted(summaries) == sorted(p.parent.name for p in SAMPLES)
    narrowed = 0
    for path, document in zip(SAMPLES, documents):
        name = path.parent.name
        # the run's label differs (the CLI names files apart by their path); every figure is equal
        assert {**summaries[name], "name": None} == {**document["summary"], "name": None}, name
        assert in_notebook[name] == document["directions"], name
        testbed_directions, note = analyse_capture(path)
        assert note is None and testbed_directions == document["directions"], name
        narrowed += sum(
            d["retransmissions"] != d.get("retransmissions_in_capture", d["retransmissions"])
            for d in document["directions"]
        )
    # iperf3's test window changes some sample's count, so the equality above covers it
    assert narrowed > 0


@pytest.mark.skipif(not SAMPLES, reason="no samples/*/trace.pcap in this checkout")
def test_explore_notebook_table_and_summary_equal_the_cli_csv_and_json(kernel_env):
    import io

    import pandas as pd

    dumped = execute_with_dump(
        NOTEBOOK_DIR / "01_explore_a_capture.ipynb",
        "{'capture': str(CAPTURE), 'table': table.drop(columns='flow').to_csv(index=False), 'summary': run.summary}",
    )
    capture = dumped["capture"]
    from_cli = pd.read_csv(io.StringIO(cli_output("--csv", capture)))
    pd.testing.assert_frame_equal(pd.read_csv(io.StringIO(dumped["table"])), from_cli)
    document = json.loads(cli_output("--json", capture))
    assert {**dumped["summary"], "name": None} == {**document["summary"], "name": None}
