"""bench/vm_suite.py: the scenario suite as data, the per-run metrics and the acceptance checks."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SPEC = importlib.util.spec_from_file_location("vm_suite", REPO / "bench" / "vm_suite.py")
vm_suite = importlib.util.module_from_spec(SPEC)
sys.modules["vm_suite"] = vm_suite
SPEC.loader.exec_module(vm_suite)


def test_the_shipped_suite_holds_the_issue_paths_and_their_bars():
    scenarios = vm_suite.load_scenarios()
    wifi = scenarios["wifi10"]
    assert (wifi.rate_mbit, wifi.delay_ms, wifi.jitter_ms, wifi.loss_pct) == (20, 90, 20, 10)
    assert vm_suite.Check("goodput", ">=", 1.2, "bbr") in wifi.checks
    assert vm_suite.Check("rps", "<=", 1.0, "bbr") in wifi.checks
    jittery = scenarios["jittery"]
    assert vm_suite.Check("retrans", "<=", 0.5, "bbr") in jittery.checks
    assert {"lossy2", "lossy5", "clean10", "clean1bdp"} <= scenarios.keys()
    # utilisation is what the link carried: goodput alone tops out at 1448/1514 of the rate
    assert vm_suite.Check("link_util", ">=", 0.95, "link") in scenarios["clean1bdp"].checks
    # one bottleneck shared by two flows, and a rate step, are runs of the suite too
    assert scenarios["vs_cubic"].ccas[0] == "spline+cubic"
    assert vm_suite.Check("share", ">=", 0.4, "link") in scenarios["vs_cubic"].checks
    assert scenarios["vs_bbr"].ccas == ("spline+bbr", "cubic+bbr")
    assert scenarios["two_flows"].ccas[0] == "spline+spline"
    assert vm_suite.Check("jain", ">=", 0.95, "link") in scenarios["two_flows"].checks
    assert [(s.at_s, s.rate_mbit) for s in scenarios["step"].rate_steps] == [(7, 5.0), (14, 20.0)]


def test_jitter_written_ms_colon_order_keeps_packet_order_and_plain_jitter_reorders():
    scenarios = vm_suite.parse_scenarios("r 10 200 50 1 1 spline - -\nk 10 200 50:order 1 1 spline - -\n")
    assert (scenarios[0].jitter_ms, scenarios[0].jitter_keeps_order) == (50, False)
    assert (scenarios[1].jitter_ms, scenarios[1].jitter_keeps_order) == (50, True)
    assert "--jitter-keeps-order" not in scenarios[0].vm_test_args()
    assert "--jitter-keeps-order" in scenarios[1].vm_test_args()
    assert "in order" in scenarios[1].describe() and "in order" not in scenarios[0].describe()
    # the shipped suite runs both issue jitter paths both ways, with the same bars
    shipped = vm_suite.load_scenarios()
    for name in ("jittery", "wifi10"):
        reordering, in_order = shipped[name], shipped[f"{name}_inorder"]
        assert not reordering.jitter_keeps_order and in_order.jitter_keeps_order
        assert in_order.jitter_ms == reordering.jitter_ms and in_order.checks == reordering.checks


def test_vm_test_args_give_the_buffer_in_bytes_with_the_harness_floor():
    scenario = vm_suite.parse_scenarios("a 50 20 0 0 1 spline,bbr - -\nb 50 20 0 0 0.2 spline - -\n")
    args = scenario[0].vm_test_args()
    assert args[args.index("--queue-bytes") + 1] == "125000"
    assert args[args.index("--ccas") + 1] == "spline bbr"
    # 0.2 BDP of 50 Mbit/s x 20 ms is 25000 B, below vm-test's 30000 B floor
    assert scenario[1].queue_bytes == 30000


@pytest.mark.parametrize(
    "line",
    [
        "a 10 50 0 2 1 spline - goodput > 1 x bbr",  # operator
        "a 10 50 0 2 1 spline - speed >= 1 x bbr",  # metric
        "a 10 50 0 2 1 spline - goodput >= 1 bbr",  # no x
        "a 10 50 0 2",  # columns
        "a 10 50 0 2 1 spline,Bbr - -",  # a CCA name
        "a 10 50 0 2 1 spline+ - -",  # an empty flow
        "a 10 50 0 2 1 spline 5@10,20@5 -",  # steps out of order
        "a 10 50 0 2 1 spline 5@0 -",  # a step at the start
        "a 10 50 0 2 1 spline 5 -",  # a step without its second
        "a 10 50 5:sorted 2 1 spline - -",  # a jitter kind
        "a 10 50 0:order 2 1 spline - -",  # order kept without a jitter
    ],
)
def test_malformed_lines_are_refused(line):
    with pytest.raises(ValueError):
        vm_suite.parse_scenarios(line)


def test_repeated_names_are_refused():
    with pytest.raises(ValueError):
        vm_suite.parse_scenarios("a 10 50 0 2 1 spline - -\na 10 50 0 5 1 spline - -\n")


SINGLE = vm_suite.parse_scenarios("s 10 50 0 2 1 spline,bbr - -\n")[0]


def test_retransmissions_are_counted_per_delivered_segment():
    run = {"ok": True, "throughput_bps": 8e6, "retransmits": 50, "mss_bytes": 1000, "bytes_received": 1_000_000}
    metrics = vm_suite.run_metrics(run, None, SINGLE)
    assert metrics["rps"] == pytest.approx(0.05)
    assert metrics["util"] == pytest.approx(0.8)
    assert metrics["p95_rtt"] is None and metrics["share"] is None and metrics["jain"] is None
    assert all(v is None for v in vm_suite.run_metrics({"ok": False}, None, SINGLE).values())


def test_flows_sharing_a_bottleneck_give_the_first_flows_share_and_jains_index():
    pair = vm_suite.parse_scenarios("p 20 40 0 0 1 spline+cubic,bbr+cubic - share >= 0.4 x link\n")[0]
    run = {
        "ok": True,
        "throughput_bps": 20e6,
        "retransmits": 10,
        "mss_bytes": 1000,
        "bytes_received": 50_000_000,
        "flows": [{"throughput_bps": 5e6}, {"throughput_bps": 15e6}],
    }
    metrics = vm_suite.run_metrics(run, None, pair)
    assert metrics["share"] == pytest.approx(0.25)
    assert metrics["jain"] == pytest.approx(0.8)  # (5 + 15)^2 / (2 x (25 + 225))
    assert metrics["util"] == pytest.approx(1.0)
    assert vm_suite.jain_index([7.0, 7.0]) == pytest.approx(1.0)
    table = vm_suite.aggregate({"spline+cubic": [metrics], "bbr+cubic": [dict(metrics, share=0.5)]})
    # the subject is the first run; "x link" is 1.0 for fractions
    assert vm_suite.evaluate(pair.checks[0], table, pair.subject)[0] is False
    assert vm_suite.evaluate(vm_suite.Check("share", "<=", 0.5, "bbr"), table, pair.subject)[0] is True


def test_a_rate_step_weighs_the_link_by_time_and_gives_utilisation_per_phase():
    step = vm_suite.parse_scenarios("st 20 40 0 0 1 spline 5@10,20@20 -\n")[0]
    assert step.mean_rate_mbit(30) == pytest.approx(15.0)
    assert step.phases(30) == [(0.0, 10.0, 20.0), (10.0, 20.0, 5.0), (20.0, 30.0, 20.0)]
    intervals = [[float(t), float(t + 1), 19e6 if t < 10 else (5e6 if t < 20 else 10e6)] for t in range(30)]
    run = {
        "ok": True,
        "throughput_bps": 11.3e6,
        "retransmits": 0,
        "mss_bytes": 1000,
        "bytes_received": 1,
        "receiver_intervals": intervals,
    }
    metrics = vm_suite.run_metrics(run, None, step)
    assert metrics["util"] == pytest.approx(11.3 / 15)
    assert metrics["phase_util"] == pytest.approx([0.95, 1.0, 0.5])
    assert step.vm_test_args()[-2:] == ["--rate-steps", "5@10 20@20"]


def test_link_utilisation_is_what_the_bottleneck_carried_over_rate_times_duration():
    clean = vm_suite.parse_scenarios("c 10 40 0 0 1 spline - link_util >= 0.95 x link\n")[0]
    intervals = [[float(t), float(t + 1), 9.4e6] for t in range(20)]
    run = {
        "ok": True,
        "throughput_bps": 9.4e6,  # payload: 1448 of each 1514-byte frame on a full 10 Mbit/s link
        "retransmits": 0,
        "mss_bytes": 1448,
        "bytes_received": 23_500_000,
        "receiver_intervals": intervals,
        "path": {"random_loss_drops": 0, "queue_drops": 0, "bottleneck_bytes": 24_500_000},
    }
    metrics = vm_suite.run_metrics(run, None, clean)
    assert metrics["util"] == pytest.approx(0.94)
    assert metrics["link_util"] == pytest.approx(24_500_000 * 8 / (10e6 * 20))  # 0.98
    assert vm_suite.evaluate(clean.checks[0], vm_suite.aggregate({"spline": [metrics]}), "spline")[0] is True
    # a rate step: the capacity is the time-weighted rate
    step = vm_suite.parse_scenarios("st 20 40 0 0 1 spline 5@10 -\n")[0]
    assert vm_suite.run_metrics(run, None, step)["link_util"] == pytest.approx(24_500_000 * 8 / (12.5e6 * 20))
    # no router counters (an older summary): unknown, not zero
    assert vm_suite.run_metrics(dict(run, path=None), None, clean)["link_util"] is None


def test_paws_part_is_the_receivers_discards_per_retransmission():
    run = {"retransmits": 1300, "mib": {"rcv": {"TcpExt.PAWSEstab": 1170}, "snd": {}}}
    assert vm_suite.paws_fraction(run) == pytest.approx(0.9)
    # the counter did not move: none; no receiver counters recorded: unknown
    assert vm_suite.paws_fraction({"retransmits": 50, "mib": {"rcv": {}}}) == 0
    assert vm_suite.paws_fraction({"retransmits": 50}) is None


def test_spurious_retransmissions_are_those_beyond_the_routers_drops():
    run = {"retransmits": 900, "path": {"random_loss_drops": 80, "queue_drops": 10}}
    assert vm_suite.spurious_fraction(run) == pytest.approx(0.9)
    # more drops than retransmissions (a lost tail never retransmitted): none spurious
    assert vm_suite.spurious_fraction({"retransmits": 5, "path": {"random_loss_drops": 9, "queue_drops": 0}}) == 0
    assert vm_suite.spurious_fraction({"retransmits": 5}) is None


def test_p95_rtt_is_the_bulk_senders_direction():
    analysis = {
        "directions": [
            {"vantage": "sender", "data_segments": 7, "rtt_ms": {"p95": 500.0}},
            {"vantage": "receiver", "data_segments": 9000, "rtt_ms": {"p95": 900.0}},
            {"vantage": "sender", "data_segments": 8000, "rtt_ms": {"p95": 61.5}},
        ]
    }
    assert vm_suite.sender_p95_rtt_ms(analysis) == 61.5


def test_checks_compare_means_and_report_missing_data():
    per_run = {
        "spline": [
            {"goodput": 9e6, "retrans": 10, "rps": 0.01, "p95_rtt": 50.0},
            {"goodput": 11e6, "retrans": 30, "rps": 0.03, "p95_rtt": None},
        ],
        "bbr": [{"goodput": 8e6, "retrans": 100, "rps": 0.1, "p95_rtt": 40.0}],
    }
    for runs in per_run.values():
        for r in runs:
            r["util"] = r["goodput"] / 20e6
    table = vm_suite.aggregate(per_run)
    assert table["spline"]["goodput"][0] == pytest.approx(10e6)
    assert table["spline"]["goodput"][1] == pytest.approx(1.41421e6, rel=1e-4)
    assert table["spline"]["util"][0] == pytest.approx(0.5)
    assert vm_suite.evaluate(vm_suite.Check("goodput", ">=", 1.2, "bbr"), table)[0] is True
    assert vm_suite.evaluate(vm_suite.Check("goodput", ">=", 1.3, "bbr"), table)[0] is False
    assert vm_suite.evaluate(vm_suite.Check("p95_rtt", "<=", 1.0, "bbr"), table)[0] is False
    assert vm_suite.evaluate(vm_suite.Check("util", ">=", 0.95, "link"), table)[0] is False
    assert vm_suite.evaluate(vm_suite.Check("goodput", ">=", 1, "cubic"), table)[0] is None


def test_table_command_reads_a_scenario_directory(tmp_path):
    (tmp_path / "suite.tsv").write_text("s1 10 50 0 2 1 spline,bbr - goodput >= 1.0 x bbr\n")
    out = tmp_path / "out" / "s1"
    out.mkdir(parents=True)
    runs = [
        {
            "cca": c,
            "run": 1,
            "ok": True,
            "throughput_bps": g,
            "retransmits": 5,
            "mss_bytes": 1448,
            "bytes_received": 1448 * 1000,
        }
        for c, g in (("spline", 9e6), ("bbr", 8e6))
    ]
    (out / "summary.json").write_text(json.dumps({"runs": runs}))
    (out / "spline-r1.analysis.json").write_text(
        json.dumps({"directions": [{"vantage": "sender", "data_segments": 1000, "rtt_ms": {"p95": 70.0}}]})
    )
    done = subprocess.run(
        [
            sys.executable,
            str(REPO / "bench" / "vm_suite.py"),
            "table",
            str(tmp_path / "out"),
            "s1",
            "--scenarios",
            str(tmp_path / "suite.tsv"),
            "--json",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)["s1"]
    assert report["checks"][0]["holds"] is True
    assert report["table"]["spline"]["p95_rtt"][0] == 70.0
    assert report["table"]["spline"]["rps"][0] == pytest.approx(0.005)


def test_markdown_rows_name_the_path_once_and_every_cca():
    scenario = vm_suite.parse_scenarios("w 20 90 20 10 1 spline,bbr - -\n")[0]
    table = vm_suite.aggregate(
        {
            "spline": [{"goodput": 10e6, "retrans": 3, "rps": 0.2, "p95_rtt": 100.0}],
            "bbr": [{"goodput": 5e6, "retrans": 2, "rps": 0.19, "p95_rtt": None}],
        }
    )
    rows = vm_suite.markdown_rows(scenario, table)
    assert rows[0].startswith("| 20 Mbit/s, 90 ms +-20 ms, 10% loss") and "| spline | 10.00 +- 0.00 | 20.0" in rows[0]
    assert rows[1].startswith("|  | bbr | 5.00") and rows[1].endswith("| 2 | - | - |")
