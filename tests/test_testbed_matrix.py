"""The testbed's pure parts: matrix specs, Jain's index, tcpdump counters, iperf3 figures."""

from __future__ import annotations

import pytest

from spline_analysis.testbed.analyse import find_direction
from spline_analysis.testbed.errors import TestbedError
from spline_analysis.testbed.matrix import (
    MatrixSpec,
    expand,
    load_toml,
    matrix_from_mapping,
    parse_cca_entry,
    parse_duration_s,
    parse_probability,
    parse_rate_bps,
    parse_time_ms,
)
from spline_analysis.testbed.results import jain_index, overlap_throughput_bps, shares
from spline_analysis.testbed.run import (
    client_groups,
    flow_client_ports,
    iperf3_flow_figures,
    iperf3_receiver_intervals,
    netem_arguments,
    parse_tcpdump_counters,
)


@pytest.mark.parametrize(
    "text,bps",
    [("10mbit", 10e6), ("500kbit", 5e5), ("1gbit", 1e9), ("1.5mbit", 1.5e6), ("2mbps", 16e6), ("64000", 64e3)],
)
def test_parse_rate_bps_follows_tc_units(text, bps):
    assert parse_rate_bps(text).value == bps


@pytest.mark.parametrize("text", ["fast", "10 furlongs", "-5mbit", "1kbit"])
def test_parse_rate_bps_rejects_nonsense_and_tiny_rates(text):
    with pytest.raises(TestbedError):
        parse_rate_bps(text)


def test_parse_time_and_duration_units():
    assert parse_time_ms("50ms").value == 50.0
    assert parse_time_ms("1s").value == 1000.0
    assert parse_time_ms("200us").value == pytest.approx(0.2)
    assert parse_duration_s("5") == 5.0  # iperf3's -t: seconds
    assert parse_duration_s("3000ms") == 3.0
    assert parse_duration_s("2m") == 120.0


@pytest.mark.parametrize("text", ["500ms", "1.5", "0", "", "-3", "10 parsecs", "604801"])
def test_durations_iperf3_cannot_run_are_refused_not_rounded(text):
    """iperf3 3.12 reads -t 0.5 as 0, i.e. no limit; -t 1.5 runs 1 s and would be recorded as 1.5."""
    with pytest.raises(TestbedError, match="duration"):
        parse_duration_s(text)


def test_parse_probability_reads_percent_like_netem():
    assert parse_probability("2%").value == pytest.approx(0.02)
    assert parse_probability("0.5").value == pytest.approx(0.005)
    assert parse_probability("0").value == 0.0
    with pytest.raises(TestbedError):
        parse_probability("120%")


def test_parse_cca_entry_alternates_mixed_ccas_across_flows():
    assert parse_cca_entry("cubic", 3) == ("cubic", "cubic", "cubic")
    assert parse_cca_entry("cubic+bbr", 4) == ("cubic", "bbr", "cubic", "bbr")


def test_a_late_cca_starts_at_its_offset_and_every_flow_ends_with_the_run():
    (run,) = expand(matrix_from_mapping({"cca": "bbr+cubic@10s", "flows": "4", "duration": "30"}))
    assert run.flow_ccas == ("bbr", "cubic", "bbr", "cubic")
    assert [run.start_s(flow) for flow in range(4)] == [0.0, 10.0, 0.0, 10.0]
    assert [run.transfer_s(flow) for flow in range(4)] == [30.0, 20.0, 30.0, 20.0]
    assert "@" not in run.run_id and "cubic_10s" in run.run_id
    (together,) = expand(matrix_from_mapping({"cca": "cubic+bbr", "flows": "2", "duration": "30"}))
    assert [together.start_s(flow) for flow in range(2)] == [0.0, 0.0]
    assert parse_cca_entry("cubic+bbr@5", 2) == ("cubic", "bbr")  # a bare number is seconds


@pytest.mark.parametrize(
    "entry,message",
    [
        ("bbr+cubic@30s", "would not run"),
        ("bbr@5s", "incumbent"),
        ("bbr+cubic@2.5s", "whole seconds"),
        ("bbr+cubic@soon", "time"),
        ("bbr+@5s", "no name"),
    ],
)
def test_start_offsets_that_cannot_run_are_refused(entry, message):
    with pytest.raises(TestbedError, match=message):
        expand(matrix_from_mapping({"cca": entry, "flows": "2", "duration": "30"}))


def test_overlap_throughput_counts_only_the_time_every_flow_was_sending():
    incumbent = [(float(t), float(t + 1), 1_000_000) for t in range(30)]  # 8 Mbit/s for 30 s
    joiner = [(float(t), float(t + 1), 250_000) for t in range(20)]  # 2 Mbit/s from 10 s on
    incumbent[:10] = [(float(t), float(t + 1), 1_250_000) for t in range(10)]  # 10 Mbit/s alone first
    assert overlap_throughput_bps(incumbent, 0.0, (10.0, 30.0)) == pytest.approx(8e6)
    assert overlap_throughput_bps(joiner, 10.0, (10.0, 30.0)) == pytest.approx(2e6)
    assert overlap_throughput_bps(incumbent, 0.0, (0.0, 30.0)) == pytest.approx((10 * 10e6 + 20 * 8e6) / 30)
    assert overlap_throughput_bps([], 0.0, (0.0, 30.0)) is None
    assert shares([8e6, 2e6]) == pytest.approx([0.8, 0.2])
    assert shares([8e6, None]) == [None, None] and shares([0.0, 0.0]) == [None, None]


def test_flows_of_one_cca_and_start_share_a_client_with_consecutive_ports():
    (run,) = expand(matrix_from_mapping({"cca": "cubic+bbr", "flows": "4", "duration": "30"}))
    groups = client_groups(run)
    assert [(g.cca, g.flows, g.client_ports, g.server_port) for g in groups] == [
        ("cubic", (0, 2), [40001, 40002], 5201),
        ("bbr", (1, 3), [40003, 40004], 5202),
    ]
    (late,) = expand(matrix_from_mapping({"cca": "bbr+cubic@10s", "flows": "3", "duration": "30"}))
    assert [(g.cca, g.flows, g.start_s) for g in client_groups(late)] == [("bbr", (0, 2), 0.0), ("cubic", (1,), 10.0)]
    assert flow_client_ports(client_groups(late)) == {0: 40001, 2: 40002, 1: 40003}


def test_a_flow_of_a_parallel_client_gets_its_own_streams_figures():
    client = {
        "start": {"connected": [{"socket": 5, "local_port": 40001}, {"socket": 7, "local_port": 40002}]},
        "end": {
            "streams": [
                {
                    "sender": {"socket": 5, "bytes": 100, "bits_per_second": 8e6, "retransmits": 3},
                    "receiver": {"socket": 5, "bytes": 90, "bits_per_second": 7e6},
                },
                {
                    "sender": {"socket": 7, "bytes": 50, "bits_per_second": 4e6, "retransmits": 1},
                    "receiver": {"socket": 7, "bytes": 40, "bits_per_second": 3e6},
                },
            ],
            "sum_sent": {"bytes": 150, "bits_per_second": 12e6, "retransmits": 4},
            "sum_received": {"bytes": 130, "bits_per_second": 10e6},
            "sender_tcp_congestion": "cubic",
        },
    }
    second = iperf3_flow_figures(client, 40002)
    assert (
        second["iperf3_sent_bytes"],
        second["iperf3_receiver_bps"],
        second["tcpinfo_retransmissions"],
        second["cca_reported"],
    ) == (50, 3e6, 1, "cubic")
    assert iperf3_flow_figures(client)["iperf3_sent_bytes"] == 150
    server = {
        "start": {"connected": [{"socket": 5, "remote_port": 40001}, {"socket": 8, "remote_port": 40002}]},
        "intervals": [
            {
                "sum": {"start": 0, "end": 1.0, "bytes": 300},
                "streams": [
                    {"socket": 5, "start": 0, "end": 1.0, "bytes": 100},
                    {"socket": 8, "start": 0, "end": 1.0, "bytes": 200},
                ],
            }
        ],
    }
    assert iperf3_receiver_intervals(server, 40002) == [(0.0, 1.0, 200)]
    assert iperf3_receiver_intervals(server) == [(0.0, 1.0, 300)]


def test_iperf3_receiver_intervals_read_the_servers_sum_per_interval():
    document = {
        "intervals": [
            {"sum": {"start": 0, "end": 1.0006, "bytes": 1000}},
            {"sum": {"start": 1.0006, "end": 2.0, "bytes": 2000}},
            {"sum": {"start": 2.0, "end": 2.0, "bytes": 0}},
            {"streams": []},
        ]
    }
    assert iperf3_receiver_intervals(document) == [(0.0, 1.0006, 1000), (1.0006, 2.0, 2000)]
    assert iperf3_receiver_intervals({}) == []


def test_expand_makes_every_combination_with_unique_run_ids():
    spec = matrix_from_mapping(
        {
            "cca": "cubic,bbr,spline",
            "rate": "10mbit",
            "delay": "50ms",
            "jitter": "10ms",
            "loss": "0,1%,2%",
            "flows": "1,10",
            "duration": "30",
        }
    )
    runs = expand(spec)
    assert len(runs) == 3 * 3 * 2
    assert len({run.run_id for run in runs}) == len(runs)
    assert {run.flows for run in runs} == {1, 10}
    assert runs[0].duration_s == 30.0 and runs[0].delay.value == 50.0
    assert all("%" not in run.run_id for run in runs)


def test_matrix_from_mapping_rejects_unknown_keys():
    with pytest.raises(TestbedError, match="unknown matrix key"):
        matrix_from_mapping({"bandwidth": "10mbit"})


def test_toml_file_sets_the_matrix_and_flags_override_it(tmp_path):
    path = tmp_path / "experiment.toml"
    path.write_text(
        '[matrix]\ncca = ["cubic", "bbr"]\nrate = "20mbit"\nloss = ["0", "2%"]\nflows = [1, 2]\nduration_s = 3\n'
    )
    spec = matrix_from_mapping(load_toml(path), MatrixSpec())
    assert spec.cca == ["cubic", "bbr"] and spec.flows == [1, 2] and spec.duration_s == 3.0
    spec = matrix_from_mapping({"loss": "1%"}, spec)
    assert [run.loss.value for run in expand(spec)] == [0.01] * 4


def test_jain_index_is_one_for_equal_shares_and_one_over_n_for_a_hog():
    assert jain_index([5e6, 5e6, 5e6]) == pytest.approx(1.0)
    assert jain_index([10e6, 0.0, 0.0, 0.0]) == pytest.approx(0.25)
    assert jain_index([3e6, 1e6]) == pytest.approx(16 / 20)
    assert jain_index([1e6, None]) is None
    assert jain_index([]) is None


def test_parse_tcpdump_counters_reads_its_closing_lines_and_keeps_unknown_as_none():
    text = (
        "tcpdump: listening on snd0, link-type EN10MB (Ethernet), snapshot length 128 bytes\n"
        "7585 packets captured\n7590 packets received by filter\n3 packets dropped by kernel\n"
    )
    assert parse_tcpdump_counters(text) == {
        "captured": 7585,
        "received_by_filter": 7590,
        "kernel_drops": 3,
        "interface_drops": 0,
    }
    assert (
        parse_tcpdump_counters(
            "1 packet captured\n1 packet received by filter\n0 packets dropped by kernel\n"
            "7 packets dropped by interface\n"
        )["interface_drops"]
        == 7
    )
    killed = parse_tcpdump_counters("tcpdump: listening on snd0\n")
    assert killed == {"captured": None, "received_by_filter": None, "kernel_drops": None, "interface_drops": None}


def test_iperf3_flow_figures_take_tcp_info_retransmissions_from_the_sender_sum():
    document = {
        "end": {
            "sum_sent": {"bytes": 1000, "bits_per_second": 8e3, "retransmits": 7},
            "sum_received": {"bytes": 990, "bits_per_second": 7.9e3},
            "sender_tcp_congestion": "bbr",
        }
    }
    figures = iperf3_flow_figures(document)
    assert figures["tcpinfo_retransmissions"] == 7 and figures["cca_reported"] == "bbr"
    assert figures["iperf3_receiver_bps"] == 7.9e3 and figures["iperf3_error"] is None


def test_netem_arguments_carry_delay_jitter_and_reordering_but_never_loss():
    spec = expand(matrix_from_mapping({"delay": "50ms", "jitter": "10ms", "loss": "2%", "reorder": "1%"}))[0]
    arguments = netem_arguments(spec)
    assert arguments[:3] == ["delay", "50.0ms", "10.0ms"] and "reorder" in arguments
    assert "loss" not in arguments
    assert netem_arguments(expand(MatrixSpec())[0]) == []


def test_find_direction_picks_the_flows_data_direction():
    directions = [
        {"src": "10.201.2.2", "sport": 5201, "dst": "10.201.1.1", "dport": 40001},
        {"src": "10.201.1.1", "sport": 40001, "dst": "10.201.2.2", "dport": 5201, "lost_segments": 4},
    ]
    assert find_direction(directions, "10.201.1.1", 40001)["lost_segments"] == 4
    assert find_direction(directions, "10.201.1.1", 40002) is None
    assert find_direction(None, "10.201.1.1", 40001) is None


def test_tools_that_enter_a_namespace_themselves_run_as_one_process():
    from spline_analysis.testbed.netns import in_namespace

    assert in_namespace(["ip", "link", "set", "lo", "up"], "ns1") == ["ip", "-n", "ns1", "link", "set", "lo", "up"]
    assert in_namespace(["tc", "-s", "qdisc"], "ns1") == ["tc", "-n", "ns1", "-s", "qdisc"]
    assert in_namespace(["ss", "-Hltn"], "ns1") == ["ss", "-N", "ns1", "-Hltn"]
    assert in_namespace(["ethtool", "-K", "x"], "ns1") == ["ip", "netns", "exec", "ns1", "ethtool", "-K", "x"]


def test_results_csv_reads_back_with_the_types_its_rows_had(tmp_path):
    """The host writes a VM run's results.parquet from the guest's results.csv: the types must
    be those a host run's rows have."""
    from spline_analysis.testbed.results import COLUMNS, read_csv, write_csv

    row = {key: None for key in COLUMNS}
    row.update(
        {
            "run_id": "000-cubic",
            "cca": "cubic+bbr@10s",
            "flow_cca": "bbr",
            "rate": "10mbit",
            "rate_bps": 1e7,
            "delay_ms": 50.0,
            "delay_applied": False,
            "flows": 2,
            "flow": 1,
            "throughput_bps": 4.25e6,
            "retransmissions": 17,
            "start_s": 10.0,
            "overlap_share": 0.58,
            "sender_pcap": "runs/x/trace.pcap",
        }
    )
    write_csv([row], tmp_path / "results.csv")
    assert read_csv(tmp_path / "results.csv") == [row]
