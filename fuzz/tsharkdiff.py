"""tsharkdiff.py -- frame-by-frame comparison of tshark 4.0 and spline_analysis._core.wireshark.

`tshark_table(path)` and `our_table(path)` give the same per-frame fields for one capture:
tcp.stream, tcp.len, every tcp.analysis flag, ack_rtt (ns) and bytes_in_flight, -1 or False
where a field is absent. `differences(ours, theirs)` lists (frame, field, ours, tshark).
`shrink(conv, still_fails)` removes segments while a difference remains, down to a
conversation where every remaining segment is needed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Callable, Dict, List, Tuple

import numpy as np

import tcpgen

FLAGS: Tuple[str, ...] = (
    "retransmission",
    "fast_retransmission",
    "spurious_retransmission",
    "out_of_order",
    "lost_segment",
    "ack_lost_segment",
    "duplicate_ack",
    "zero_window",
    "zero_window_probe",
    "zero_window_probe_ack",
    "keep_alive",
    "keep_alive_ack",
    "window_update",
    "window_full",
    "reused_ports",
)
FIELDS: Tuple[str, ...] = ("stream", "len", "ack_rtt_ns", "bytes_in_flight") + FLAGS
TSHARK = shutil.which("tshark")
Table = Dict[str, np.ndarray]
Difference = Tuple[int, str, int, int]


def tshark_table(path: Path) -> Table:
    """tshark 4.0's view of every frame (default preferences, sequence analysis on)."""
    names = [
        "tcp.stream",
        "tcp.len",
        "icmp.type",
        "icmpv6.type",
        "tcp.analysis.ack_rtt",
        "tcp.analysis.bytes_in_flight",
    ] + [f"tcp.analysis.{f}" for f in FLAGS]
    cmd = [
        TSHARK or "tshark",
        "-n",
        "-r",
        str(path),
        "-o",
        "tcp.analyze_sequence_numbers:TRUE",
        "-T",
        "fields",
        "-E",
        "separator=/t",
        "-E",
        "occurrence=f",
    ]
    for name in names:
        cmd += ["-e", name]
    text = subprocess.run(cmd, capture_output=True, text=True, errors="replace", check=True, timeout=600).stdout
    rows = [line.split("\t") for line in text.splitlines()]
    n = len(rows)
    out: Table = {name: np.full(n, -1, dtype=np.int64) for name in ("stream", "len", "ack_rtt_ns", "bytes_in_flight")}
    out.update({f: np.zeros(n, dtype=np.int64) for f in FLAGS})
    for i, c in enumerate(rows):
        if c[2] or c[3]:  # TCP quoted inside an ICMP error: not a frame of the stream
            continue
        if c[0]:
            out["stream"][i] = int(c[0])
        if c[1]:
            out["len"][i] = int(c[1])
        if c[4]:
            text = c[4].lstrip("-")
            seconds, _, fraction = text.partition(".")
            value = int(seconds) * 10**9 + int((fraction + "000000000")[:9])
            out["ack_rtt_ns"][i] = -value if c[4].startswith("-") else value
        if c[5]:
            out["bytes_in_flight"][i] = int(c[5])
        for k, f in enumerate(FLAGS):
            out[f][i] = 1 if c[6 + k] else 0
    return out


def our_table(path: Path) -> Table:
    """The same fields from spline_analysis (decode -> flows -> wireshark.analyze)."""
    import spline_analysis
    from spline_analysis._core import flows as flows_mod
    from spline_analysis._core import wireshark
    from spline_analysis.report import tcp_packet_mask

    packets = spline_analysis.read(path).packets
    flows = flows_mod.assign_streams(packets)
    ws = wireshark.analyze(packets, flows)
    is_tcp = tcp_packet_mask(packets)
    out: Table = {
        "stream": np.where(flows.stream >= 0, flows.stream, -1).astype(np.int64),
        "len": np.where(is_tcp, packets["tcp_payload_len"].astype(np.int64), -1),
        "ack_rtt_ns": ws.ack_rtt_ns.astype(np.int64),
        "bytes_in_flight": ws.bytes_in_flight.astype(np.int64),
    }
    for f in FLAGS:
        out[f] = (
            wireshark.matches(ws.flags, f).astype(np.int64)
            if f != "reused_ports"
            else ((ws.flags & wireshark.REUSED_PORTS) != 0).astype(np.int64)
        )
    return out


def differences(ours: Table, theirs: Table) -> List[Difference]:
    """(0-based frame, field, ours, tshark) for every disagreement; a frame-count mismatch is
    reported as frame -1, field "frames"."""
    n_ours, n_theirs = len(ours["stream"]), len(theirs["stream"])
    if n_ours != n_theirs:
        return [(-1, "frames", n_ours, n_theirs)]
    out: List[Difference] = []
    for name in FIELDS:
        for i in np.flatnonzero(ours[name] != theirs[name]).tolist():
            out.append((i, name, int(ours[name][i]), int(theirs[name][i])))
    out.sort()
    return out


def compare_bytes(data: bytes, workdir: Path) -> Tuple[List[Difference], Table]:
    """Writes a capture, runs both sides; returns the differences and tshark's table."""
    fd, name = tempfile.mkstemp(suffix=".pcap", dir=workdir)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    try:
        theirs = tshark_table(Path(name))
        return differences(our_table(Path(name)), theirs), theirs
    finally:
        os.unlink(name)


def conversation_differences(conv: tcpgen.Conversation, workdir: Path) -> List[Difference]:
    return compare_bytes(tcpgen.pcap_bytes([conv]), workdir)[0]


def shrink(conv: tcpgen.Conversation, still_fails: Callable[[tcpgen.Conversation], bool]) -> tcpgen.Conversation:
    """Greedy delta debugging over segments: drop chunks, then single segments, while
    `still_fails` holds; then simplify the carriage (plain Ethernet, no trailer, full frames)."""
    segs = list(conv.segments)

    def with_segments(s):
        return tcpgen.Conversation(**{**conv.__dict__, "segments": s})

    chunk = max(1, len(segs) // 2)
    while chunk >= 1:
        i, changed = 0, False
        while i < len(segs):
            trial = segs[:i] + segs[i + chunk :]
            if trial and still_fails(with_segments(trial)):
                segs, changed = trial, True
            else:
                i += chunk
        if not changed:
            chunk //= 2
    best = with_segments(segs)
    for simpler in (
        {"link": "ethernet", "encapsulation": "plain"},
        {"trailer": 0},
        {"snaplen": 0},
        {"ipv6_extensions": 0},
    ):
        trial = tcpgen.Conversation(**{**best.__dict__, **simpler})
        if trial.__dict__ != best.__dict__ and still_fails(trial):
            best = trial
    return best
