"""The output schema declared once (analysis/schema.py): the committed JSON Schema file and the
README's key table are generated from it, and every JSON document the toolkit writes validates
against the committed file."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from spline_analysis import schema

jsonschema = pytest.importorskip("jsonschema")

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
COMMITTED_SCHEMA = REPO / "analysis" / "report.schema.json"
SAMPLES = sorted(REPO.glob("samples/*/trace.pcap"))
CORPUS = sorted((SHARED / "corpus" / "pcaps").glob("*")) if (SHARED / "corpus" / "pcaps").is_dir() else []
GROUND_TRUTH = sorted((SHARED / "corpus" / "groundtruth").glob("*.pcap"))
CLI = str(Path(sys.executable).with_name("spline-analyze"))
REGENERATE = "regenerate with: .venv/bin/python analysis/schema.py README.md"


def validator():
    document_schema = json.loads(COMMITTED_SCHEMA.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(document_schema)
    return jsonschema.Draft202012Validator(document_schema)


def assert_valid(document, what: str) -> None:
    errors = sorted(validator().iter_errors(document), key=lambda e: list(e.absolute_path))
    assert not errors, f"{what}: " + "; ".join(f"{list(e.absolute_path)}: {e.message}" for e in errors[:5])


def cli_json(*args: str):
    done = subprocess.run([CLI, "--quiet", "--json", *args], capture_output=True, text=True, timeout=900)
    assert done.returncode in (0, 2), done.stderr  # 2: a corpus file that is not a capture
    return json.loads(done.stdout)


def test_committed_json_schema_is_the_one_schema_py_generates():
    assert COMMITTED_SCHEMA.read_text(encoding="utf-8") == schema.json_schema_text(), REGENERATE


def test_readme_key_table_is_the_one_schema_py_generates():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert schema.README_BEGIN in readme and schema.README_END in readme
    assert readme == schema.readme_with_table(readme), REGENERATE


def test_every_key_declares_a_known_type_family_and_a_meaning():
    def walk(keys, prefix=""):
        for key in keys:
            assert key.type in schema.TYPES and key.family in schema.FAMILIES, prefix + key.name
            assert key.meaning.strip(), prefix + key.name
            yield prefix + key.name
            yield from walk(key.keys, prefix + key.name + ".")

    names = list(walk(schema.DOCUMENT_KEYS))
    assert len(names) == len(set(names)), "a key declared twice"


def test_every_csv_column_is_a_declared_key():
    for _column, path in schema.DIRECTION_CSV:
        schema.key_at(path.split("|")[0])  # raises KeyError for an undeclared key
    assert len(set(schema.DIRECTION_CSV_COLUMNS)) == len(schema.DIRECTION_CSV_COLUMNS)


def test_a_document_with_an_undeclared_key_or_a_wrong_type_fails_validation():
    document = cli_json(str(SAMPLES[0])) if SAMPLES else None
    if document is None:
        pytest.skip("no samples")
    assert_valid(document, "sample")
    with pytest.raises(AssertionError):
        assert_valid({**document, "undeclared": 1}, "extra key")
    broken = json.loads(json.dumps(document))
    broken["directions"][0]["lost_segments"] = "many"
    with pytest.raises(AssertionError):
        assert_valid(broken, "wrong type")


@pytest.mark.skipif(not SAMPLES, reason="no samples/*/trace.pcap in this checkout")
def test_json_of_every_sample_validates_with_time_series_and_as_several_files():
    several = cli_json("--interval", "100ms", *map(str, SAMPLES))
    assert len(several["files"]) == len(SAMPLES)
    assert_valid(several, "samples")
    for path in SAMPLES[:2]:
        assert_valid(cli_json(str(path)), str(path))


@pytest.mark.skipif(not (CORPUS or GROUND_TRUTH), reason="no corpus under ../shared")
def test_json_of_the_shared_corpus_and_ground_truth_validates():
    document = cli_json(*map(str, CORPUS + GROUND_TRUTH))
    assert len(document["files"]) >= len(GROUND_TRUTH)
    assert_valid(document, "corpus and ground truth")


def test_the_testbed_reads_the_document_the_library_and_the_cli_write(tmp_path):
    """The testbed's per-capture figures (`testbed.analyse.analyse_capture`) are the `directions`
    of the one document: valid, and equal to what `spline-analyze --json` prints."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import pcapbuild as pb
    import spline_analysis as sa
    from spline_analysis.testbed.analyse import analyse_capture
    from test_cli_main import FLOW

    path = tmp_path / "flow.pcap"
    path.write_bytes(pb.pcap_file([(t, pb.ethernet(p)) for t, p in FLOW]))
    document = sa.analyze(path).to_json()
    assert_valid(document, "library")
    directions, note = analyse_capture(path)
    assert note is None and directions == document["directions"] == cli_json(str(path))["directions"]
