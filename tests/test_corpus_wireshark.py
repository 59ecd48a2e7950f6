"""Wireshark-compatible counts equal the tshark 4.0.17 oracle on every corpus capture.

The decoder may refuse a file tshark reads only when the refusal is about the file's header
(libpcap refuses a pcap of an unknown version, tshark 4.0 reads one) and the oracle saw no TCP
in it: refusing a file with TCP in it, or failing past the header, fails the test.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Dict, List

import numpy as np
import pytest

import spline_analysis
from spline_analysis._core import flows as flows_mod
from spline_analysis._core import wireshark
from spline_analysis._core.errors import CaptureError

SHARED = Path(__file__).resolve().parents[2] / "shared"
CORPUS = SHARED / "corpus"
ORACLE_FLAGS = (
    "retransmission",
    "fast_retransmission",
    "spurious_retransmission",
    "out_of_order",
    "lost_segment",
    "ack_lost_segment",
    "duplicate_ack",
    "zero_window",
    "keep_alive",
)


def oracle_rows(name: str) -> List[Dict[str, str]]:
    path = CORPUS / name
    if not path.is_file():
        return []
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


FILES = oracle_rows("oracle.csv")
STREAMS = oracle_rows("oracle_streams.csv")
TCP_PACKETS = {row["file"]: int(row["tcp_packets"]) for row in FILES}
# The largest file header before the first record: pcap's 24 bytes; a pcapng section header
# block is checked as it is read, and its refusal comes at offset 0.
FILE_HEADER_BYTES = 24


def analyse(file_name: str):
    path = CORPUS / "pcaps" / file_name
    try:
        capture = spline_analysis.read(path)
    except CaptureError as exc:
        assert exc.offset is not None and exc.offset < FILE_HEADER_BYTES, (
            f"the decoder refuses {file_name} past its header, which tshark reads: {exc}"
        )
        assert TCP_PACKETS.get(file_name, 1) == 0, f"the decoder refuses {file_name}, in which tshark reads TCP: {exc}"
        return None
    flows = flows_mod.assign_streams(capture.packets)
    return flows, wireshark.analyze(capture.packets, flows)


@pytest.mark.skipif(not FILES, reason="shared corpus not found")
@pytest.mark.parametrize("row", FILES, ids=[r["file"] for r in FILES])
def test_file_flag_counts_and_stream_count_equal_tshark(row: Dict[str, str]) -> None:
    analysed = analyse(row["file"])
    if analysed is None:  # refused at its header, and tshark saw no TCP in it (module docstring)
        return
    flows, analysis = analysed
    counts = analysis.counts()
    ours = {f"n_{f}": counts[f] for f in ORACLE_FLAGS}
    expected = {f"n_{f}": int(row[f"n_{f}"]) for f in ORACLE_FLAGS}
    assert ours == expected
    assert len(np.unique(flows.stream[flows.stream >= 0])) == int(row["tcp_streams"])
    assert int(np.count_nonzero(flows.stream >= 0)) == int(row["tcp_packets"])


@pytest.mark.skipif(not STREAMS, reason="shared corpus not found")
@pytest.mark.parametrize("row", STREAMS, ids=[f"{r['file']}#{r['tcp_stream']}" for r in STREAMS])
def test_stream_columns_equal_tshark(row: Dict[str, str]) -> None:
    analysed = analyse(row["file"])
    assert analysed is not None, (
        f"the decoder refuses {row['file']}, in which tshark reads TCP stream {row['tcp_stream']}"
    )
    flows, analysis = analysed
    s = int(row["tcp_stream"])
    table = flows.streams
    per = analysis.stream_counts()
    assert flows_mod.address_to_str(table["a_addr"][s]) == row["src"]
    assert int(table["a_port"][s]) == int(row["sport"])
    assert flows_mod.address_to_str(table["b_addr"][s]) == row["dst"]
    assert int(table["b_port"][s]) == int(row["dport"])
    ours = {
        "packets_a2b": int(table["packets_a2b"][s]),
        "packets_b2a": int(table["packets_b2a"][s]),
        "payload_bytes_a2b": int(table["payload_bytes_a2b"][s]),
        "payload_bytes_b2a": int(table["payload_bytes_b2a"][s]),
        "retrans_a2b": int(per["retransmission_a2b"][s]),
        "retrans_b2a": int(per["retransmission_b2a"][s]),
        "lost_segment_a2b": int(per["lost_segment_a2b"][s]),
        "lost_segment_b2a": int(per["lost_segment_b2a"][s]),
        "dup_ack_a2b": int(per["duplicate_ack_a2b"][s]),
        "dup_ack_b2a": int(per["duplicate_ack_b2a"][s]),
        "out_of_order_a2b": int(per["out_of_order_a2b"][s]),
        "out_of_order_b2a": int(per["out_of_order_b2a"][s]),
    }
    assert ours == {k: int(row[k]) for k in ours}
