"""iperf3 results beside a capture: found, parsed, and the capture counted over iperf3's window."""

import json
from pathlib import Path

import numpy as np
import pytest

from spline_analysis._core import iperf3

GROUNDTRUTH = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "groundtruth"


def _write_result(path: Path, local_port: int, remote_port: int, seconds: float, retransmits: int) -> None:
    path.write_text(
        json.dumps(
            {
                "start": {
                    "connected": [{"local_port": local_port, "remote_port": remote_port}],
                    "test_start": {"reverse": 1},
                },
                "end": {
                    "sum_sent": {"seconds": seconds, "retransmits": retransmits, "bytes": 1000},
                    "sum_received": {"bits_per_second": 8000.0},
                    "sender_tcp_congestion": "bbr",
                },
            }
        )
    )


def test_candidate_paths_find_record_sh_testbed_and_groundtruth_names(tmp_path):
    (tmp_path / "run").mkdir()
    trace = tmp_path / "run" / "trace.pcap"
    trace.write_bytes(b"")
    _write_result(tmp_path / "run" / "iperf3.json", 40000, 5201, 4.0, 3)
    _write_result(tmp_path / "iperf3-group0.json", 40001, 5201, 4.0, 3)
    named = tmp_path / "x_cubic.snd.pcap"
    named.write_bytes(b"")
    _write_result(tmp_path / "x_cubic.iperf3.json", 40002, 5201, 4.0, 3)
    assert {p.name for p in iperf3.candidate_paths(trace)} == {"iperf3.json", "iperf3-group0.json"}
    assert tmp_path / "x_cubic.iperf3.json" in iperf3.candidate_paths(named)


def test_load_test_rejects_json_that_is_not_an_iperf3_result(tmp_path):
    bogus = tmp_path / "iperf3.json"
    bogus.write_text('{"error": "unable to connect"}')
    assert iperf3.load_test(bogus) is None
    bogus.write_text("not json at all")
    assert iperf3.load_test(bogus) is None


def test_match_direction_uses_the_data_connection_ports_in_either_order(tmp_path):
    _write_result(tmp_path / "iperf3.json", 40000, 5201, 4.0, 3)
    test = iperf3.load_test(tmp_path / "iperf3.json")
    assert iperf3.match_direction([test], 5201, 40000) is test
    assert iperf3.match_direction([test], 40000, 5201) is test
    assert iperf3.match_direction([test], 5201, 40001) is None


def test_retransmissions_after_the_window_are_counted_apart():
    ts_ns = np.array([0, 1, 2, 3, 4, 5], dtype=np.int64) * 1_000_000_000
    is_retrans = np.array([False, True, False, True, False, True])
    weight = np.array([1, 1, 1, 2, 1, 1])
    slot = np.array([0, 0, 0, 0, 0, 1])
    inside, after, start_s = iperf3.retransmissions_in_window(ts_ns, is_retrans, weight, slot, 0, 2.5)
    assert (inside, after, start_s) == (1, 2, 0.0)


def test_window_of_a_parallel_stream_starts_after_its_early_cookie_not_at_it():
    """iperf3 -P: the first stream sends its 37-byte cookie on connecting, up to a second
    before the test (and the other streams) start; its window must start with the test."""
    ts_ns = np.array([0, 1000, 1001, 1002, 1003, 1004], dtype=np.int64) * 1_000_000
    payload = np.array([37, 1448, 1448, 1448, 1448, 1448])
    is_retrans = np.array([False, False, False, False, False, True])
    weight = np.ones(6, dtype=np.int64)
    slot = np.zeros(6, dtype=np.int64)
    inside, after, start_s = iperf3.retransmissions_in_window(
        ts_ns, is_retrans, weight, slot, 0, 0.0045, payload_len=payload
    )
    assert (inside, after, start_s) == (1, 0, 1.0)


@pytest.mark.parametrize("name", ["dev_bbr_3pct", "dev_cubic_1pct"])
def test_sender_retransmissions_in_iperf3_window_equal_tcp_info(name):
    truth_path = GROUNDTRUTH / f"{name}.truth.json"
    if not truth_path.exists():
        pytest.skip("shared ground truth not present")
    import spline_analysis as sa

    records = sa.analyze(GROUNDTRUTH / f"{name}.snd.pcap").to_json()["directions"]
    data = max(records, key=lambda r: r["payload_bytes"])
    expected = json.loads(truth_path.read_text())["sender_retransmits"]
    assert abs(data["retransmissions"] - expected) <= 0.01 * expected
    assert data["retransmissions_in_capture"] >= data["retransmissions"]
    assert (
        data["iperf3"]["retransmissions_in_test"] + data["iperf3"]["retransmissions_after_test"]
        == data["retransmissions_in_capture"]
    )


BIDIR_RESULT = {
    "start": {
        "connected": [
            {"socket": 5, "local_port": 41001, "remote_port": 5201},
            {"socket": 7, "local_port": 41002, "remote_port": 5201},
        ],
        "test_start": {"reverse": 0, "bidir": 1},
    },
    "end": {
        "streams": [
            {"sender": {"socket": 5, "sender": True, "retransmits": 11}},
            {"sender": {"socket": 7, "sender": False, "retransmits": 4}},
        ],
        "sum_sent": {"seconds": 4.0, "retransmits": 11, "bytes": 1700},
        "sum_received": {"bits_per_second": 3400.0},
        "sum_sent_bidir_reverse": {"seconds": 4.1, "retransmits": 4, "bytes": 70},
        "sum_received_bidir_reverse": {"bits_per_second": 140.0},
        "sender_tcp_congestion": "cubic",
        "receiver_tcp_congestion": "bbr",
    },
}


def test_a_bidir_result_is_two_tests_each_with_its_own_connections_and_figures(tmp_path):
    """iperf3 --bidir: the client's streams that the server sent on carry the way back's figures
    (the server's retransmits, seconds and CCA), not the client's."""
    path = tmp_path / "iperf3.json"
    path.write_text(json.dumps(BIDIR_RESULT))
    there, back = iperf3.load_tests(path)
    assert (there.data_ports, there.sender_retransmits, there.sender_seconds, there.sender_cca) == (
        ((41001, 5201),),
        11,
        4.0,
        "cubic",
    )
    assert (back.data_ports, back.sender_retransmits, back.sender_seconds, back.sender_cca) == (
        ((41002, 5201),),
        4,
        4.1,
        "bbr",
    )
    assert (there.reverse_half, back.reverse_half, back.receiver_bps) == (False, True, 140.0)
    assert iperf3.match_direction([there, back], 5201, 41002) is back
    assert iperf3.match_direction([there, back], 41001, 5201) is there
    assert iperf3.load_test(path) == there
    assert iperf3.find_tests(tmp_path / "trace.pcap") == [there, back]


def test_a_one_way_result_stays_one_test_with_every_connection(tmp_path):
    _write_result(tmp_path / "iperf3.json", 40000, 5201, 4.0, 3)  # -R: the client received
    (test,) = iperf3.load_tests(tmp_path / "iperf3.json")
    assert test.data_ports == ((40000, 5201),) and not test.reverse_half and test.reverse
