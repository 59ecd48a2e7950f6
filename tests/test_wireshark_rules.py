"""wireshark.analyze: each tshark 4.0 rule raised, and not raised, at its boundary.

Every crafted case states the flags we expect per frame; when tshark is installed the same
frames are also written as a pcap and tshark's own flags must be identical.
"""

from __future__ import annotations

import shutil
import subprocess
from typing import Callable, Dict, List, Set

import numpy as np
import pytest

from spline_analysis._core import wireshark
from tcpcraft import Conversation

SINGLE_BITS = {value: name for name, value in wireshark.FLAG_FILTERS.items() if bin(value).count("1") == 1}
SINGLE_BITS[wireshark.RETRANSMISSION] = "retransmission"
TSHARK_NAMES = [n for n in wireshark.REPORTED_FLAGS]


def ws_analyze(packets) -> wireshark.WiresharkAnalysis:
    """The tshark-compatible pass over crafted packets, after the flows stage it reads."""
    from spline_analysis._core.flows import assign_streams

    return wireshark.analyze(packets, assign_streams(packets))


def our_flags(conv: Conversation) -> List[Set[str]]:
    """Flag names per frame, as the display filters see them (fast/spurious imply retransmission)."""
    flags = ws_analyze(conv.packets()).flags
    out = []
    for value in flags.tolist():
        out.append({name for name in TSHARK_NAMES if value & wireshark.FLAG_FILTERS[name]})
    return out


def tshark_flags(conv: Conversation, tmp_path) -> List[Set[str]]:
    path = tmp_path / "crafted.pcap"
    path.write_bytes(conv.pcap())
    cmd = [
        "tshark",
        "-n",
        "-r",
        str(path),
        "-o",
        "tcp.analyze_sequence_numbers:TRUE",
        "-T",
        "fields",
        "-E",
        "occurrence=f",
    ] + [x for n in TSHARK_NAMES for x in ("-e", f"tcp.analysis.{n}")]
    lines = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.splitlines()
    return [{n for n, v in zip(TSHARK_NAMES, line.split("\t")) if v} for line in lines]


# ---------------------------------------------------------------- the cases


def case_retransmission_after_rto() -> Conversation:
    c = Conversation()
    c.handshake()
    c.client(1, ack=1, length=1000, at_ms=10)
    c.client(1, ack=1, length=1000, at_ms=300)  # same data, long after: RTO retransmission
    return c


def case_new_data_is_not_a_retransmission() -> Conversation:
    c = Conversation()
    c.handshake()
    c.client(1, ack=1, length=1000, at_ms=10)
    c.client(1001, ack=1, length=1000, at_ms=300)
    return c


def case_fast_retransmission_needs_two_dupacks() -> Conversation:
    c = Conversation()
    c.handshake()
    c.client(1, ack=1, length=1000, at_ms=10)
    c.client(1001, ack=1, length=1000, at_ms=10.1)
    c.client(2001, ack=1, length=1000, at_ms=10.2)
    c.server(1, ack=1001, at_ms=20)
    c.server(1, ack=1001, at_ms=20.1)  # dup ack 1
    c.server(1, ack=1001, at_ms=20.2)  # dup ack 2
    c.client(1001, ack=1, length=1000, at_ms=25)  # within 20 ms: fast retransmission
    return c


def case_one_dupack_gives_plain_retransmission() -> Conversation:
    c = Conversation()
    c.handshake()
    c.client(1, ack=1, length=1000, at_ms=10)
    c.client(1001, ack=1, length=1000, at_ms=10.1)
    c.server(1, ack=1001, at_ms=20)
    c.server(1, ack=1001, at_ms=20.1)  # only one dup ack
    c.client(1001, ack=1, length=1000, at_ms=25)
    return c


def case_fast_retransmission_window_is_20ms() -> Conversation:
    c = case_fast_retransmission_needs_two_dupacks()
    c.frames.pop()
    c.client(1001, ack=1, length=1000, at_ms=20.2 + 20.001)  # just past 20 ms: not fast
    return c


def case_spurious_retransmission_of_acked_data() -> Conversation:
    c = Conversation()
    c.handshake()
    c.client(1, ack=1, length=1000, at_ms=10)
    c.server(1, ack=1001, at_ms=20)
    c.client(1, ack=1, length=1000, at_ms=300)
    return c


def case_out_of_order_within_handshake_rtt() -> Conversation:
    c = Conversation()
    c.handshake(rtt_ms=10)  # first RTT 10 ms -> threshold
    c.client(1001, ack=1, length=1000, at_ms=20)  # gap: lost segment
    c.client(1, ack=1, length=1000, at_ms=25)  # 5 ms later: out of order
    c.client(2001, ack=1, length=1000, at_ms=26)
    c.client(4001, ack=1, length=1000, at_ms=40)  # gap again
    c.client(3001, ack=1, length=1000, at_ms=55)  # fills it 15 ms later (> RTT): retransmission
    return c


def case_keep_alive_and_its_ack() -> Conversation:
    c = Conversation()
    c.handshake()
    c.client(1, ack=1, length=10, at_ms=10)
    c.server(1, ack=11, at_ms=20)
    c.client(10, ack=1, length=1, at_ms=2000)  # seq = nextseq - 1, one byte
    c.server(1, ack=11, at_ms=2001)  # keep-alive ACK
    c.client(10, ack=1, length=0, at_ms=4000)  # zero-byte keep-alive
    return c


def case_zero_window_probe_and_ack() -> Conversation:
    c = Conversation()
    c.handshake()
    c.client(1, ack=1, length=1000, at_ms=10)
    c.server(1, ack=1001, window=0, at_ms=20)  # zero window
    c.client(1001, ack=1, length=1, at_ms=300)  # probe
    c.server(1, ack=1001, window=0, at_ms=301)  # probe ack
    c.server(1, ack=1001, window=4000, at_ms=900)  # window update
    c.client(1001, ack=1, length=1000, at_ms=901)  # the probe byte again, then more: not a retransmission
    return c


def case_duplicate_ack_needs_same_window() -> Conversation:
    c = Conversation()
    c.handshake()
    c.client(1, ack=1, length=1000, at_ms=10)
    c.server(1, ack=1001, at_ms=20)
    c.server(1, ack=1001, at_ms=21)  # duplicate
    c.server(1, ack=1001, window=30000, at_ms=22)  # window changed: window update, not dup
    c.server(1, ack=1001, window=30000, at_ms=23)  # duplicate again
    return c


def case_window_full_with_scaling() -> Conversation:
    c = Conversation()
    c.handshake(wscale=(2, 2))
    c.server(1, ack=1, window=1000, at_ms=5)  # receiver: 1000 << 2 = 4000 bytes
    c.client(1, ack=1, length=3000, at_ms=10)
    c.client(3001, ack=1, length=1000, at_ms=11)  # reaches ack + 4000: window full
    c.client(4001, ack=1, length=1000, at_ms=12)  # beyond: lost? no, just not full
    return c


def case_window_full_unknown_without_handshake() -> Conversation:
    c = Conversation()
    c.server(1, ack=1, window=1000, at_ms=5)
    c.client(1, ack=1, length=1000, at_ms=10)  # would be full unscaled, but scale unknown
    return c


def case_lost_segment_counts_gaps_and_ack_lost_once() -> Conversation:
    c = Conversation()
    c.handshake()
    c.client(1, ack=1, length=1000, at_ms=10)
    c.client(2001, ack=1, length=1000, at_ms=11)  # gap of one segment
    c.client(5001, ack=1, length=1000, at_ms=12)  # gap of two segments: still one flag
    c.server(1, ack=3001, at_ms=20)  # ACKs data never seen
    c.server(1, ack=3001, at_ms=21)
    c.server(1, ack=6001, at_ms=22)  # the gap was reported once: no flag
    return c


def case_rst_is_never_a_lost_segment() -> Conversation:
    c = Conversation()
    c.handshake()
    c.client(1, ack=1, length=10, at_ms=10)
    c.client(50000, flags="R", at_ms=20)
    return c


def case_sequence_wraparound() -> Conversation:
    c = Conversation(client_isn=2**32 - 2500)
    c.handshake()
    for k in range(5):
        c.client(1 + 1000 * k, ack=1, length=1000, at_ms=10 + k)
    c.server(1, ack=2001, at_ms=20)
    c.client(2001, ack=1, length=1000, at_ms=300)  # retransmission across the wrap
    c.server(1, ack=5001, at_ms=301)
    return c


def case_sack_blocks_do_not_change_flags() -> Conversation:
    c = Conversation()
    c.handshake()
    c.client(1, ack=1, length=1000, at_ms=10)
    c.client(1001, ack=1, length=1000, at_ms=10.1)
    c.client(2001, ack=1, length=1000, at_ms=10.2)
    isn = c.client_isn
    c.server(1, ack=1001, at_ms=20, sack=[(isn + 2001, isn + 3001)])
    c.server(1, ack=1001, at_ms=20.1, sack=[(isn + 2001, isn + 3001)])
    c.server(1, ack=1001, at_ms=20.2, sack=[(isn + 2001, isn + 3001)])
    c.client(1001, ack=1, length=1000, at_ms=21)
    return c


def case_snaplen_truncated_frames_use_ip_length() -> Conversation:
    c = Conversation()
    c.handshake()
    c.client(1, ack=1, length=1400, at_ms=10, snaplen=60)
    c.client(1401, ack=1, length=1400, at_ms=11, snaplen=60)
    c.client(1, ack=1, length=1400, at_ms=300, snaplen=60)
    return c


# 1-based frame number -> flags (the handshake takes frames 1-3). Checked against tshark 4.0.17.
EXPECTED: Dict[Callable[[], Conversation], Dict[int, Set[str]]] = {
    case_retransmission_after_rto: {5: {"retransmission"}},
    case_new_data_is_not_a_retransmission: {},
    case_fast_retransmission_needs_two_dupacks: {
        8: {"duplicate_ack"},
        9: {"duplicate_ack"},
        10: {"retransmission", "fast_retransmission"},
    },
    case_one_dupack_gives_plain_retransmission: {7: {"duplicate_ack"}, 8: {"retransmission"}},
    case_fast_retransmission_window_is_20ms: {8: {"duplicate_ack"}, 9: {"duplicate_ack"}, 10: {"retransmission"}},
    case_spurious_retransmission_of_acked_data: {6: {"retransmission", "spurious_retransmission"}},
    case_out_of_order_within_handshake_rtt: {
        4: {"lost_segment"},
        5: {"out_of_order"},
        7: {"lost_segment"},
        8: {"retransmission"},
    },
    case_keep_alive_and_its_ack: {6: {"keep_alive"}, 7: {"keep_alive_ack"}, 8: {"keep_alive"}},
    case_zero_window_probe_and_ack: {
        5: {"zero_window"},
        6: {"zero_window_probe"},
        7: {"zero_window", "zero_window_probe_ack"},
        8: {"window_update"},
    },
    case_duplicate_ack_needs_same_window: {6: {"duplicate_ack"}, 7: {"window_update"}, 8: {"duplicate_ack"}},
    case_window_full_with_scaling: {4: {"window_update"}, 6: {"window_full"}},
    case_window_full_unknown_without_handshake: {},
    case_lost_segment_counts_gaps_and_ack_lost_once: {
        5: {"lost_segment"},
        6: {"lost_segment"},
        7: {"ack_lost_segment"},
        8: {"duplicate_ack"},
    },
    case_rst_is_never_a_lost_segment: {},
    case_sequence_wraparound: {10: {"retransmission"}},
    case_sack_blocks_do_not_change_flags: {
        8: {"duplicate_ack"},
        9: {"duplicate_ack"},
        10: {"retransmission", "fast_retransmission"},
    },
    case_snaplen_truncated_frames_use_ip_length: {6: {"retransmission"}},
}
CASES = list(EXPECTED)


@pytest.mark.parametrize("case", CASES, ids=[c.__name__[5:] for c in CASES])
def test_flags_per_frame(case: Callable[[], Conversation]) -> None:
    conv = case()
    expected = [EXPECTED[case].get(i + 1, set()) for i in range(len(conv.frames))]  # 1-based frames
    assert our_flags(conv) == expected


@pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed")
@pytest.mark.parametrize("case", CASES, ids=[c.__name__[5:] for c in CASES])
def test_flags_per_frame_equal_real_tshark(case: Callable[[], Conversation], tmp_path) -> None:
    conv = case()
    assert our_flags(conv) == tshark_flags(conv, tmp_path)


def test_counts_follow_the_display_filters() -> None:
    analysis = ws_analyze(case_fast_retransmission_needs_two_dupacks().packets())
    counts = analysis.counts()
    assert counts["retransmission"] == 1 and counts["fast_retransmission"] == 1
    assert counts["duplicate_ack"] == 2
    per = analysis.stream_counts()
    assert per["duplicate_ack_b2a"].tolist() == [2] and per["retransmission_a2b"].tolist() == [1]


def test_ack_rtt_takes_the_oldest_copy_and_bytes_in_flight_spans_unacked_data() -> None:
    conv = case_retransmission_after_rto()
    conv.server(1, ack=1001, at_ms=310)
    a = ws_analyze(conv.packets())
    assert a.acked_frame[5] == 3  # the original, not the retransmission
    assert a.ack_rtt_ns[5] == 300_000_000
    assert a.bytes_in_flight[3] == 1000 and a.bytes_in_flight[4] == 1000
    assert np.all(a.bytes_in_flight[[0, 1, 2, 5]] == -1)
    assert a.acked_frame[1] == 0 and a.acked_frame[2] == 1  # SYN/ACK acks the SYN, ACK the SYN/ACK
