"""iperf3 results saved beside a capture, and the capture seen through them.

`capture/record.sh --iperf3` saves `iperf3.json` next to `trace.pcap`; the
testbed saves `iperf3-groupN.json` (one -P client per group of flows); ground-truth sets name it `NAME.iperf3.json`
next to `NAME.snd.pcap`. iperf3's own counters are snapshots: the sender reads
TCP_INFO (`total_retrans`) when its test timer ends, yet the connection keeps
sending (and retransmitting) while iperf3 tears the test down. Measured on
ground-truth transfers: 226 retransmissions in a 4 s bbr capture, 219 of them
before the sender's timer ended, and iperf3 reported exactly 219.

So, when such a file is present, each matching flow direction gets the figures
iperf3 itself would give: retransmissions sent within the sender's measured
interval (from the direction's first data segment for `end.sum_sent.seconds`),
counted here (`window_counts`) and reported in one place (`report.direction_records`),
beside the whole-capture figures; nothing is dropped.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

NS_PER_S = 1_000_000_000
# iperf3 opens each data stream with a cookie of this many bytes (COOKIE_SIZE in iperf3).
COOKIE_BYTES = 37


@dataclass(frozen=True)
class Iperf3Test:
    """The parts of one iperf3 JSON result that a capture can be checked against."""

    path: Path
    data_ports: Tuple[Tuple[int, int], ...]  # (local_port, remote_port) per data connection
    sender_seconds: float  # length of the sender's measured interval, s
    sender_retransmits: Optional[int]  # TCP_INFO total_retrans at the sender's timer end
    sender_bytes: Optional[int]
    receiver_bps: Optional[float]
    sender_cca: Optional[str]
    reverse: bool
    reverse_half: bool = False  # the way back of a --bidir test: the server's streams to the client


def candidate_paths(capture_path: Path) -> List[Path]:
    """iperf3 JSON files that may describe the transfer in `capture_path`.

    `iperf3*.json` in the capture's directory and its parent (record.sh and
    testbed layouts), and `PREFIX.iperf3.json` for every dotted prefix of the
    capture's name (`dev_bbr.snd.pcap` -> `dev_bbr.iperf3.json`).
    """
    capture_path = Path(capture_path)
    found: List[Path] = []
    parts = capture_path.name.split(".")
    for i in range(len(parts) - 1, 0, -1):
        found.append(capture_path.with_name(".".join(parts[:i]) + ".iperf3.json"))
    for directory in (capture_path.parent, capture_path.parent.parent):
        found.extend(sorted(directory.glob("iperf3*.json")))
    unique: List[Path] = []
    for p in found:
        if p.is_file() and p not in unique:
            unique.append(p)
    return unique


def load_test(path: Path) -> Optional[Iperf3Test]:
    """Parse an iperf3 `-J` result; None when it is not one or carries no result. Of a `--bidir`
    test, the half the client sent (`load_tests` gives both)."""
    tests = load_tests(path)
    return tests[0] if tests and not tests[0].reverse_half else None


def load_tests(path: Path) -> List[Iperf3Test]:
    """The tests of an iperf3 `-J` result: one, or of a `--bidir` test its two halves, each with
    its own connections and figures (the way back's are the server's, under `*_bidir_reverse`:
    its sending streams' retransmits and seconds, the client's received rate, the server's CCA)."""
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8", errors="replace"))
    except (OSError, ValueError):
        return []
    if not isinstance(doc, dict):
        return []
    end = doc.get("end") or {}
    if not isinstance(end.get("sum_sent_bidir_reverse"), dict):
        one = _half(path, doc, "", None)
        return [one] if one is not None else []
    back = _bidir_reverse_ports(doc)
    halves = (_half(path, doc, "", back), _half(path, doc, "_bidir_reverse", back))
    return [half for half in halves if half is not None]


def _bidir_reverse_ports(doc: Mapping) -> Tuple[Tuple[int, int], ...]:
    """(local_port, remote_port) of a `--bidir` client's streams that the server sent on (their
    `sender` record's own `sender` is false)."""
    by_socket = {
        c.get("socket"): (int(c.get("local_port", 0)), int(c.get("remote_port", 0)))
        for c in (doc.get("start") or {}).get("connected") or []
        if isinstance(c, dict)
    }
    sockets = [
        (stream.get("sender") or {}).get("socket")
        for stream in (doc.get("end") or {}).get("streams") or []
        if isinstance(stream, dict) and (stream.get("sender") or {}).get("sender") is False
    ]
    return tuple(by_socket[s] for s in sockets if s in by_socket)


def _half(
    path: Path, doc: Mapping, suffix: str, bidir_reverse_ports: Optional[Tuple[Tuple[int, int], ...]]
) -> Optional[Iperf3Test]:
    """One test of a result: the whole (`bidir_reverse_ports` None), or a `--bidir` half: the
    way there (`suffix` "") without the way back's connections, or the way back
    (`suffix` "_bidir_reverse") with only those."""
    start = doc.get("start") or {}
    end = doc.get("end") or {}
    sum_sent = end.get(f"sum_sent{suffix}") or {}
    sum_received = end.get(f"sum_received{suffix}") or {}
    ports = tuple(
        (int(c.get("local_port", 0)), int(c.get("remote_port", 0)))
        for c in start.get("connected") or []
        if isinstance(c, dict)
    )
    reverse_half = bool(suffix)
    if bidir_reverse_ports is not None:
        ports = tuple(p for p in ports if (p in bidir_reverse_ports) == reverse_half)
    seconds = sum_sent.get("seconds")
    if not ports or not isinstance(seconds, (int, float)) or seconds <= 0:
        return None
    retransmits = sum_sent.get("retransmits")
    test_start = start.get("test_start") or {}
    return Iperf3Test(
        path=Path(path),
        data_ports=ports,
        sender_seconds=float(seconds),
        sender_retransmits=int(retransmits) if isinstance(retransmits, (int, float)) else None,
        sender_bytes=int(sum_sent["bytes"]) if isinstance(sum_sent.get("bytes"), (int, float)) else None,
        receiver_bps=(
            float(sum_received["bits_per_second"])
            if isinstance(sum_received.get("bits_per_second"), (int, float))
            else None
        ),
        sender_cca=end.get("receiver_tcp_congestion" if reverse_half else "sender_tcp_congestion"),
        reverse=bool(test_start.get("reverse", 0)),
        reverse_half=reverse_half,
    )


def find_tests(capture_path: Path) -> List[Iperf3Test]:
    """Every iperf3 result beside the capture that parses."""
    return [t for p in candidate_paths(capture_path) for t in load_tests(p)]


def match_direction(tests: Sequence[Iperf3Test], sport: int, dport: int) -> Optional[Iperf3Test]:
    """The test whose data connection uses this port pair (either order)."""
    for test in tests:
        for local_port, remote_port in test.data_ports:
            if {local_port, remote_port} == {sport, dport}:
                return test
    return None


def retransmissions_in_window(
    ts_ns: np.ndarray,
    is_retransmission: np.ndarray,
    segment_weight: np.ndarray,
    slot: np.ndarray,
    data_slot: int,
    window_s: float,
    payload_len: Optional[np.ndarray] = None,
) -> Tuple[int, int, float]:
    """Retransmitted segments of one direction inside [first data, first data + window_s].

    Returns (inside, after, window_start_s). `segment_weight` counts a
    super-segment as the MSS-sized segments it carries. With `payload_len`, a first
    data segment that is iperf3's cookie (COOKIE_BYTES, sent when the stream connects,
    up to a second before the test starts with -P) does not start the window.
    """
    mine = slot == data_slot
    if not np.any(mine):
        return 0, 0, float("nan")
    data = mine & (segment_weight > 0)
    data_rows = np.flatnonzero(data)
    if data_rows.size == 0:
        return 0, 0, float("nan")
    first = data_rows[np.argmin(ts_ns[data_rows])]
    if payload_len is not None and payload_len[first] == COOKIE_BYTES and data_rows.size > 1:
        later = data_rows[data_rows != first]
        first = later[np.argmin(ts_ns[later])]
    start_ns = int(ts_ns[first])
    end_ns = start_ns + int(round(window_s * NS_PER_S))
    retrans = mine & is_retransmission
    inside = int(segment_weight[retrans & (ts_ns <= end_ns)].sum())
    after = int(segment_weight[retrans & (ts_ns > end_ns)].sum())
    return inside, after, start_ns / NS_PER_S


@dataclass(frozen=True)
class TestWindow:
    """One direction seen through the iperf3 test it carried."""

    test: Iperf3Test
    retransmissions_in_test: int
    retransmissions_after_test: int
    start_s: float  # the direction's first data segment, s since the epoch


def window_counts(packets: Mapping[str, np.ndarray], directions, tests: Sequence[Iperf3Test]) -> Dict[int, TestWindow]:
    """Per direction row whose ports match an iperf3 test: its retransmissions within and
    after the sender's measured interval."""
    table = directions.table
    if not tests or len(directions) == 0:
        return {}
    ts_ns = np.asarray(packets["ts_ns"])
    payload = np.asarray(packets["tcp_payload_len"]).astype(np.int64)
    slot = np.asarray(directions.packet_slot)
    row = np.where(slot >= 0, directions.row_of_slot[np.maximum(slot, 0)], -1)
    mss = np.maximum(np.asarray(table["mss"]).astype(np.int64), 1)
    segment_weight = np.where(row >= 0, -(-payload // mss[np.maximum(row, 0)]), 0)
    is_retransmission = directions.is_retransmission
    windows: Dict[int, TestWindow] = {}
    for r in range(len(directions)):
        test = match_direction(tests, int(table["sport"][r]), int(table["dport"][r]))
        if test is not None:
            inside, after, start_s = retransmissions_in_window(
                ts_ns,
                is_retransmission,
                segment_weight,
                slot,
                int(table["slot"][r]),
                test.sender_seconds,
                payload_len=payload,
            )
            windows[r] = TestWindow(test, inside, after, start_s)
    return windows
