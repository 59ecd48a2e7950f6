"""Real-host transfers on delayed paths: the spec's delay keys, the router's netem and tbf
commands, and the refusal to run a delayed transfer where the kernel has no netem."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from spline_analysis.testbed import cli
from spline_analysis.testbed.errors import TestbedError
from spline_analysis.testbed.realhost import (
    loss_ends_before_test_end_s,
    restore_text,
    root_qdisc_drops,
    router_qdisc_commands,
)
from spline_analysis.testbed.realhost_cli import netem_refusal
from spline_analysis.testbed.realhost_spec import Matrix, expected_warnings, load_matrix, matrix_from_document

DELAY_MATRIX = Path(__file__).resolve().parent.parent / "capture" / "experiments" / "realhost-delay.toml"


def transfer(**keys):
    return matrix_from_document({"transfer": [{"name": "t", **keys}]}).transfers[0]


def commands_on(commands, device):
    return [c for c in commands if c[4] == device]


def test_delay_sits_on_both_router_egresses_with_jitter_on_the_data_path_kept_in_order():
    t = transfer(rate="20mbit", delay="50ms", ack_delay="30ms", jitter="10ms", queue_ms=40)
    commands = router_qdisc_commands(t)
    data, ack = commands_on(commands, "rhr1"), commands_on(commands, "rhr0")
    assert data[0][5:] == [
        "root",
        "handle",
        "1:",
        "netem",
        "delay",
        "50ms",
        "10ms",
        "rate",
        "100gbit",
        "limit",
        "100000",
    ]
    assert data[1][5:9] == ["parent", "1:", "handle", "2:"] and data[1][9:12] == ["tbf", "rate", "20000000bit"]
    assert data[1][data[1].index("limit") + 1] == str(20_000_000 // 8 * 40 // 1000)  # queue_ms at the rate
    assert ack == [
        ["tc", "qdisc", "add", "dev", "rhr0", "root", "handle", "1:", "netem", "delay", "30ms", "limit", "100000"]
    ]
    assert t.added_rtt_ms == 90.0 and t.needs_netem


def test_jitter_that_may_reorder_has_no_netem_rate_and_a_plain_path_keeps_its_lone_tbf():
    reordering = router_qdisc_commands(transfer(delay="20ms", jitter="5ms", jitter_reorders=True, rate="0"))
    assert reordering == [
        [
            "tc",
            "qdisc",
            "add",
            "dev",
            "rhr1",
            "root",
            "handle",
            "1:",
            "netem",
            "delay",
            "20ms",
            "5ms",
            "limit",
            "100000",
        ]
    ]
    plain = transfer(rate="100mbit")
    assert not plain.needs_netem
    assert [c[5:9] for c in router_qdisc_commands(plain)] == [["root", "handle", "1:", "tbf"]]
    assert router_qdisc_commands(transfer(rate="0")) == []


def test_spec_refuses_jitter_above_delay_and_a_non_boolean_reorder_flag():
    with pytest.raises(TestbedError, match="jitter 20 ms above delay 10 ms"):
        transfer(delay="10ms", jitter="20ms")
    with pytest.raises(TestbedError, match="jitter_reorders"):
        transfer(delay="10ms", jitter="5ms", jitter_reorders="yes")
    with pytest.raises(TestbedError, match="queue_ms"):
        transfer(queue_ms=0)


def test_loss_stops_earlier_before_the_end_on_a_longer_path():
    assert loss_ends_before_test_end_s(transfer()) == 0.5
    assert loss_ends_before_test_end_s(transfer(delay="100ms", ack_delay="100ms")) == pytest.approx(1.3)


def test_delayed_transfers_are_refused_without_netem_and_named():
    matrix = Matrix([transfer(delay="40ms"), transfer(rate="50mbit")])
    refusal = netem_refusal(matrix, netem_available=False)
    assert refusal is not None and "t cannot be applied" in refusal and "--vm" in refusal
    assert netem_refusal(matrix, netem_available=True) is None
    assert netem_refusal(Matrix([transfer(rate="50mbit")]), netem_available=False) is None


def test_rules_go_in_as_one_restore_with_their_chains_declared_first():
    text = restore_text([["-N", "A"], ["-A", "A", "-j", "DROP"], ["-N", "B"], ["-A", "FORWARD", "-j", "B"]])
    assert text.splitlines() == ["*filter", ":A - [0:0]", ":B - [0:0]", "-A A -j DROP", "-A FORWARD -j B", "COMMIT"]


def test_root_qdisc_drops_are_not_counted_again_for_netems_tbf_child():
    text = (
        "qdisc netem 1: root refcnt 3 limit 100000 delay 5ms\n Sent 10 bytes 4 pkt (dropped 7, overlimits 0 requeues 0)\n"
        "qdisc tbf 2: parent 1: rate 20Mbit\n Sent 10 bytes 4 pkt (dropped 7, overlimits 9 requeues 0)\n"
    )
    assert root_qdisc_drops(text) == 7
    assert root_qdisc_drops("") == 0


def test_committed_delay_matrix_spans_the_held_out_conditions():
    plain = load_matrix(DELAY_MATRIX).transfers
    rtts = [t.delay_ms + t.ack_delay_ms for t in plain]
    assert min(rtts) <= 10 and max(rtts) >= 200
    assert any(t.jitter_ms > 0 for t in plain)
    assert min(t.data_loss for t in plain) <= 0.005 and max(t.data_loss for t in plain) >= 0.05
    assert {t.family for t in plain} == {4, 6} and {t.flows for t in plain} >= {1, 3}
    assert {t.cca for t in plain} == {"cubic", "bbr", "reno"}
    assert any(t.receiver_gro for t in plain) and any(t.sender_tso for t in plain)
    assert any(t.receiver_buffer_kib for t in plain)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root: network namespaces")
def test_cli_refuses_a_delayed_transfer_on_a_kernel_without_netem(tmp_path, capsys):
    if cli.detect_netem(f"rhtest-{os.getpid()}"):
        pytest.skip("this kernel has netem: the refusal is for kernels without it")
    status = cli.main(
        [
            "realhost",
            "--matrix",
            str(DELAY_MATRIX),
            "--only",
            load_matrix(DELAY_MATRIX).transfers[0].name,
            "--out",
            str(tmp_path / "out"),
        ]
    )
    assert status == cli.EXIT_REFUSED
    assert "no netem qdisc" in capsys.readouterr().err
    assert not (tmp_path / "out" / "runs").exists()


def test_a_queue_may_overflow_without_random_loss():
    shaped = transfer(rate="10mbit", delay="10ms")
    must, may = expected_warnings(shaped, "router-any", 0)
    assert "forwarding_drops" in may and "forwarding_drops" not in must
    assert "forwarding_drops" not in set().union(*expected_warnings(transfer(rate="0"), "router-any", 0))


def test_in_the_guest_an_ipv6_capture_below_the_router_may_say_its_holes_are_no_floor():
    tso = transfer(rate="8mbit", delay="300ms", ack_delay="300ms", family=6, offloads="tso+gro", data_loss="1%")
    must, may = expected_warnings(tso, "router-out", 0, 39)
    assert "loss_floor" in must and "loss_not_floor" not in may  # the host's veths keep order at 8 Mbit/s
    must, may = expected_warnings(tso, "router-out", 0, 39, in_vm=True)
    assert not {"loss_floor", "loss_not_floor"} & must and {"loss_floor", "loss_not_floor"} <= may


def test_the_routers_interface_from_the_sender_may_estimate_loss_as_the_sender_does_on_a_reordering_path():
    reorders = transfer(rate="8mbit", delay="25ms", jitter="20ms", jitter_reorders=True, data_loss="1%")
    assert "loss_estimated" in expected_warnings(reorders, "router-in", 0, 61)[1]
    assert "loss_estimated" in expected_warnings(reorders, "sender", 0, 61)[1]
    assert "loss_estimated" not in expected_warnings(reorders, "router-out", 0, 61)[1]
