"""flows.assign_streams: tshark's tcp.stream numbering, directions, 64-bit sequence numbers, options."""

from __future__ import annotations

import numpy as np

from spline_analysis._core import flows as flows_mod
from tcpcraft import DECODE_IN_ICMP_ERROR, Conversation, merge, packet_table


def test_both_directions_of_a_connection_share_one_stream() -> None:
    c = Conversation()
    c.handshake()
    c.client(1, ack=1, length=100)
    c.server(1, ack=101)
    f = flows_mod.assign_streams(c.packets())
    assert f.count == 1
    assert f.stream.tolist() == [0] * 5
    assert f.direction.tolist() == [0, 1, 0, 0, 1]
    assert flows_mod.address_to_str(f.streams["a_addr"][0]) == "10.0.0.1"
    assert int(f.streams["b_port"][0]) == 80
    assert f.streams["packets_a2b"].tolist() == [3] and f.streams["packets_b2a"].tolist() == [2]
    assert f.streams["payload_bytes_a2b"].tolist() == [100]


def test_streams_are_numbered_in_order_of_first_frame() -> None:
    a, b = Conversation(client_port=1111), Conversation(client_port=2222)
    b.client(1, ack=1, length=1, at_ms=0)
    a.client(1, ack=1, length=1, at_ms=1)
    b.server(1, ack=2, at_ms=2)
    f = flows_mod.assign_streams(packet_table(merge(a, b)))
    assert f.stream.tolist() == [0, 1, 0]
    assert f.streams["a_port"].tolist() == [2222, 1111]


def test_port_reuse_with_new_isn_starts_a_new_stream() -> None:
    first = Conversation(client_isn=1000)
    first.handshake(start_ms=0)
    first.client(1, ack=1, flags="F", at_ms=5)
    second = Conversation(client_isn=900_000, t0_ns=first.t0_ns + 10_000_000)
    second.handshake(start_ms=0)
    f = flows_mod.assign_streams(packet_table(first.frames + second.frames))
    assert f.stream.tolist() == [0, 0, 0, 0, 1, 1, 1]
    assert f.count == 2


def test_retransmitted_syn_with_same_isn_stays_in_its_stream() -> None:
    c = Conversation()
    c.client(0, flags="S", at_ms=0)
    c.client(0, flags="S", at_ms=1000)
    c.server(0, ack=1, flags="S", at_ms=1001)
    f = flows_mod.assign_streams(c.packets())
    assert f.stream.tolist() == [0, 0, 0]


def test_synack_with_new_isn_never_starts_a_stream() -> None:
    c = Conversation()
    c.client(0, flags="S", at_ms=0)
    c.server(0, ack=1, flags="S", at_ms=1)
    c.server(777, ack=1, flags="S", at_ms=2)
    assert flows_mod.assign_streams(c.packets()).stream.tolist() == [0, 0, 0]


def test_frames_without_tcp_or_inside_icmp_errors_have_no_stream() -> None:
    c = Conversation()
    c.client(1, ack=1, length=10)
    c.server(1, ack=11, decode_flags=DECODE_IN_ICMP_ERROR)
    table = c.packets()
    table["tcp_header_len"][0] = 0
    f = flows_mod.assign_streams(table)
    assert f.stream.tolist() == [-1, -1]
    assert f.seq64.tolist() == [-1, -1]


def test_sequence_numbers_unwrap_past_2_to_the_32() -> None:
    c = Conversation(client_isn=2**32 - 1500, server_isn=2**32 - 10)
    c.client(1, ack=1, length=1000, at_ms=0)
    c.client(1001, ack=1, length=1000, at_ms=1)  # crosses 2^32
    c.server(1, ack=2001, at_ms=2)
    f = flows_mod.assign_streams(c.packets())
    assert f.seq64.tolist() == [2**32 - 1499, 2**32 - 499, 2**32 - 9]
    assert f.ack64.tolist() == [2**32 - 9, 2**32 - 9, 2**32 + 501]


def test_window_scale_from_both_syns_and_unknown_without_handshake() -> None:
    c = Conversation()
    c.handshake(wscale=(7, 9))
    f = flows_mod.assign_streams(c.packets())
    assert f.streams["window_scale"].tolist() == [[7, 9]]
    assert f.streams["mss"].tolist() == [[1460, 1460]]
    assert f.streams["sack_permitted"].tolist() == [[True, True]]
    assert bool(f.streams["syn_seen"][0])

    no_handshake = Conversation()
    no_handshake.client(1, ack=1, length=10)
    g = flows_mod.assign_streams(no_handshake.packets())
    assert g.streams["window_scale"].tolist() == [[-1, -1]]
    assert g.streams["mss"].tolist() == [[-1, -1]]
    assert not bool(g.streams["syn_seen"][0])


def test_window_scaling_is_off_both_ways_when_one_syn_lacks_the_option() -> None:
    c = Conversation()
    c.handshake(wscale=(7, -1))
    f = flows_mod.assign_streams(c.packets())
    assert f.streams["window_scale"].tolist() == [[0, 0]]


def test_ipv6_streams_and_dataframe() -> None:
    c = Conversation(client_addr="2001:db8::1", server_addr="2001:db8::2")
    c.handshake()
    f = flows_mod.assign_streams(c.packets())
    df = f.to_dataframe()
    assert df.loc[0, "a_addr"] == "2001:db8::1" and df.loc[0, "b_addr"] == "2001:db8::2"
    assert df.loc[0, "window_scale_a2b"] == 0


def test_million_frames_of_fifty_conversations_are_fifty_streams() -> None:
    # speed lives in bench/bench_analyze.py (ratios against peers), not in a timed test
    frames = []
    for k in range(50):
        c = Conversation(client_port=10000 + k)
        c.client(1, ack=1, length=1000)
        frames.extend(c.frames)
    table = packet_table(frames)
    n = 1_000_000
    big = {name: np.repeat(col, n // len(frames), axis=0) for name, col in table.items()}
    big["seq"] = (big["seq"] + np.arange(n, dtype=np.uint32) * np.uint32(1000)).astype(np.uint32)
    big["ts_ns"] = big["ts_ns"] + np.arange(n, dtype=np.int64) * 1000
    from spline_analysis._core import wireshark

    f = flows_mod.assign_streams(big)
    wireshark.analyze(big, f)
    assert f.count == 50
    assert len(np.unique(f.stream)) == 50
