"""Every file of the shared corpus: packets, TCP packets/streams/payload bytes, duration and drop
counts equal the tshark 4.0.17 oracle (oracle.csv; make_oracle.sh says how each was counted)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

import spline_analysis as sa
from spline_analysis._core.errors import CaptureError

SHARED = Path(__file__).resolve().parents[2] / "shared"
ORACLE = SHARED / "corpus" / "oracle.csv"


def oracle_rows():
    if not ORACLE.is_file():
        return []
    with ORACLE.open(newline="") as fh:
        return list(csv.DictReader(fh))


ROWS = oracle_rows()


def _count(text: str):
    return None if text == "" else int(text)


@pytest.mark.skipif(not ROWS, reason="shared corpus absent")
@pytest.mark.parametrize("row", ROWS, ids=[r["file"] for r in ROWS])
def test_corpus_file_matches_tshark_oracle(row):
    path = SHARED / "corpus" / "pcaps" / row["file"]
    try:
        doc = sa.analyze(path).to_json()
    except CaptureError as exc:
        # A file libpcap itself rejects (invalid version) may be refused, cleanly and with an offset.
        assert "invalid-version" in row["file"] and exc.offset is not None
        return
    assert doc["packets"] == int(row["packets"])
    assert doc["tcp_packets"] == int(row["tcp_packets"])
    assert doc["tcp_streams"] == int(row["tcp_streams"])
    assert doc["tcp_payload_bytes"] == int(row["tcp_payload_bytes"])
    assert abs(doc["duration_s"] - float(row["duration_s"])) <= 1.5e-6
    assert doc["capture_drops"]["kernel"] == _count(row["dropped_packets"])
    assert doc["capture_drops"]["interface"] == _count(row["dropped_os"])
    if row["link_type"] != "Per packet":
        assert doc["link_types"] == [row["link_type"]]
