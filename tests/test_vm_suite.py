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
    assert {"lossy2", "lossy5", "clean1bdp"} <= scenarios.keys()


def test_vm_test_args_give_the_buffer_in_bytes_with_the_harness_floor():
    scenario = vm_suite.parse_scenarios("a 50 20 0 0 1 -\nb 50 20 0 0 0.2 -\n")
    assert scenario[0].vm_test_args()[-2:] == ["--queue-bytes", "125000"]
    # 0.2 BDP of 50 Mbit/s x 20 ms is 25000 B, below vm-test's 30000 B floor
    assert scenario[1].queue_bytes == 30000


@pytest.mark.parametrize("line", [
    "a 10 50 0 2 1 goodput > 1 x bbr",        # operator
    "a 10 50 0 2 1 speed >= 1 x bbr",         # metric
    "a 10 50 0 2 1 goodput >= 1 bbr",         # no x
    "a 10 50 0 2",                            # columns
])
def test_malformed_lines_are_refused(line):
    with pytest.raises(ValueError):
        vm_suite.parse_scenarios(line)


def test_repeated_names_are_refused():
    with pytest.raises(ValueError):
        vm_suite.parse_scenarios("a 10 50 0 2 1 -\na 10 50 0 5 1 -\n")


def test_retransmissions_are_counted_per_delivered_segment():
    run = {"ok": True, "throughput_bps": 8e6, "retransmits": 50, "mss_bytes": 1000,
           "bytes_received": 1_000_000}
    metrics = vm_suite.run_metrics(run, None)
    assert metrics["rps"] == pytest.approx(0.05)
    assert metrics["p95_rtt"] is None
    assert all(v is None for v in vm_suite.run_metrics({"ok": False}, None).values())


def test_p95_rtt_is_the_bulk_senders_direction():
    analysis = {"directions": [
        {"vantage": "sender", "data_segments": 7, "rtt_ms": {"p95": 500.0}},
        {"vantage": "receiver", "data_segments": 9000, "rtt_ms": {"p95": 900.0}},
        {"vantage": "sender", "data_segments": 8000, "rtt_ms": {"p95": 61.5}},
    ]}
    assert vm_suite.sender_p95_rtt_ms(analysis) == 61.5


def test_checks_compare_means_and_report_missing_data():
    per_run = {"spline": [{"goodput": 9e6, "retrans": 10, "rps": 0.01, "p95_rtt": 50.0},
                          {"goodput": 11e6, "retrans": 30, "rps": 0.03, "p95_rtt": None}],
               "bbr": [{"goodput": 8e6, "retrans": 100, "rps": 0.1, "p95_rtt": 40.0}]}
    table = vm_suite.aggregate(per_run, rate_mbit=20)
    assert table["spline"]["goodput"][0] == pytest.approx(10e6)
    assert table["spline"]["goodput"][1] == pytest.approx(1.41421e6, rel=1e-4)
    assert table["spline"]["util"][0] == pytest.approx(0.5)
    assert vm_suite.evaluate(vm_suite.Check("goodput", ">=", 1.2, "bbr"), table)[0] is True
    assert vm_suite.evaluate(vm_suite.Check("goodput", ">=", 1.3, "bbr"), table)[0] is False
    assert vm_suite.evaluate(vm_suite.Check("p95_rtt", "<=", 1.0, "bbr"), table)[0] is False
    assert vm_suite.evaluate(vm_suite.Check("util", ">=", 0.95, "link"), table)[0] is False
    assert vm_suite.evaluate(vm_suite.Check("goodput", ">=", 1, "cubic"), table)[0] is None


def test_table_command_reads_a_scenario_directory(tmp_path):
    (tmp_path / "suite.tsv").write_text("s1 10 50 0 2 1 goodput >= 1.0 x bbr\n")
    out = tmp_path / "out" / "s1"
    out.mkdir(parents=True)
    runs = [{"cca": c, "run": 1, "ok": True, "throughput_bps": g, "retransmits": 5,
             "mss_bytes": 1448, "bytes_received": 1448 * 1000} for c, g in (("spline", 9e6), ("bbr", 8e6))]
    (out / "summary.json").write_text(json.dumps({"runs": runs}))
    (out / "spline-r1.analysis.json").write_text(json.dumps(
        {"directions": [{"vantage": "sender", "data_segments": 1000, "rtt_ms": {"p95": 70.0}}]}))
    done = subprocess.run([sys.executable, str(REPO / "bench" / "vm_suite.py"), "table", str(tmp_path / "out"),
                           "s1", "--scenarios", str(tmp_path / "suite.tsv"), "--json"],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)["s1"]
    assert report["checks"][0]["holds"] is True
    assert report["table"]["spline"]["p95_rtt"][0] == 70.0
    assert report["table"]["spline"]["rps"][0] == pytest.approx(0.005)


def test_markdown_rows_name_the_path_once_and_every_cca():
    scenario = vm_suite.parse_scenarios("w 20 90 20 10 1 -\n")[0]
    table = vm_suite.aggregate({"spline": [{"goodput": 10e6, "retrans": 3, "rps": 0.2, "p95_rtt": 100.0}],
                                "bbr": [{"goodput": 5e6, "retrans": 2, "rps": 0.19, "p95_rtt": None}]}, 20)
    rows = vm_suite.markdown_rows(scenario, table)
    assert rows[0].startswith("| 20 Mbit/s, 90 ms +-20 ms, 10% loss") and "| spline | 10.00 +- 0.00 | 20.0" in rows[0]
    assert rows[1].startswith("|  | bbr | 5.00") and rows[1].endswith("| 2 | - |")
