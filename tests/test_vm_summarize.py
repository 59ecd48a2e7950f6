"""How the VM harness judges a run (module/vm/summarize.py), on files shaped like the guest's."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("vm_summarize", REPO / "module" / "vm" / "summarize.py")
summarize_mod = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(summarize_mod)

BENIGN_DMESG = """\
[    0.669453] PCI: Using host bridge windows from ACPI; if necessary, use "pci=nocrs" and report a bug
[    1.352701] AMD-Vi: AMD IOMMUv2 functionality not available on this system - This is not a bug.
[    3.030814] tcp_spline: loading out-of-tree module taints kernel.
[    3.031054] tcp_spline: module verification failed: signature and/or required key missing - tainting kernel
"""
WARN_DMESG = """\
[   12.000001] ------------[ cut here ]------------
[   12.000002] WARNING: CPU: 1 PID: 230 at net/ipv4/tcp_cong.c:100 tcp_spline_cong_control+0x1/0x2 [tcp_spline]
[   12.000003] CPU: 1 PID: 230 Comm: iperf3 Tainted: G           OE      6.1.0-56-amd64 #1  Debian
[   12.000004] Call Trace:
[   12.000005] BUG: kernel NULL pointer dereference, address: 0000000000000000
[   12.000006] Oops: 0000 [#1] PREEMPT SMP NOPTI
"""


def iperf3_report(cca: str, bps: float, retransmits: int) -> dict:
    return {
        "end": {
            "sum_sent": {"retransmits": retransmits, "bits_per_second": bps},
            "sum_received": {"bits_per_second": bps, "bytes": int(bps)},
            "sender_tcp_congestion": cca,
        }
    }


def write_guest_files(
    out: Path,
    ccas=("spline", "bbr", "cubic"),
    dmesg=BENIGN_DMESG,
    available="reno cubic bbr spline",
    rmmod="rmmod=ok refcnt_before=0 waited_s=0 still_loaded=no",
):
    (out / "available.txt").write_text(available + "\n")
    (out / "dmesg.txt").write_text(dmesg)
    (out / "rmmod.txt").write_text(rmmod + "\n")
    for cca in ccas:
        (out / f"{cca}-r1.json").write_text(json.dumps(iperf3_report(cca, 8e6, 100)))
        (out / f"{cca}-r1.rc").write_text("0\n")


def run_summary(out: Path, ccas="spline bbr cubic", module="tcp_spline") -> dict:
    return summarize_mod.summarize(out, ccas.split(), 1, ["spline"], module)


def test_out_of_tree_and_unsigned_module_taint_lines_are_not_kernel_warnings():
    assert summarize_mod.kernel_warning_lines(BENIGN_DMESG) == []


def test_warn_bug_oops_and_tainted_lines_each_count_as_kernel_warnings():
    lines = summarize_mod.kernel_warning_lines(BENIGN_DMESG + WARN_DMESG)
    assert len(lines) == 5  # WARNING, Tainted, Call Trace, BUG, Oops; not the "cut here" line
    assert any("WARNING: CPU" in line for line in lines)


def test_a_clean_run_has_no_failures_and_reports_throughput_and_retransmits(tmp_path):
    write_guest_files(tmp_path)
    summary = run_summary(tmp_path)
    assert summary["failures"] == []
    assert summary["kernel_warnings"] == 0
    assert summary["module_unloaded"] is True
    assert [(r["cca"], r["throughput_bps"], r["retransmits"]) for r in summary["runs"]] == [
        ("spline", 8e6, 100),
        ("bbr", 8e6, 100),
        ("cubic", 8e6, 100),
    ]


def test_spline_missing_from_the_available_list_is_a_failure(tmp_path):
    write_guest_files(tmp_path, available="reno cubic bbr")
    assert "spline is not available" in run_summary(tmp_path)["failures"]


def test_a_run_whose_sender_used_another_cca_fails(tmp_path):
    write_guest_files(tmp_path)
    (tmp_path / "spline-r1.json").write_text(json.dumps(iperf3_report("cubic", 8e6, 100)))
    summary = run_summary(tmp_path)
    assert not summary["runs"][0]["ok"]
    assert any("sender used 'cubic'" in f for f in summary["failures"])


def test_an_iperf3_error_or_a_missing_run_fails(tmp_path):
    write_guest_files(tmp_path, ccas=("spline", "bbr"))
    (tmp_path / "bbr-r1.json").write_text(json.dumps({"error": "unable to set TCP_CONGESTION"}))
    (tmp_path / "bbr-r1.rc").write_text("1\n")
    errors = {r["cca"]: r.get("error") for r in run_summary(tmp_path)["runs"]}
    assert errors["spline"] is None
    assert "unable to set TCP_CONGESTION" in errors["bbr"]
    assert "did not happen" in errors["cubic"]


def test_kernel_warnings_in_dmesg_fail_the_run(tmp_path):
    write_guest_files(tmp_path, dmesg=BENIGN_DMESG + WARN_DMESG)
    summary = run_summary(tmp_path)
    assert summary["kernel_warnings"] == 5
    assert "5 kernel warning line(s)" in summary["failures"]


def test_a_module_that_did_not_unload_fails(tmp_path):
    write_guest_files(
        tmp_path,
        rmmod="rmmod: can't unload module 'tcp_spline': Resource temporarily unavailable\n"
        "rmmod=failed refcnt_before=1 waited_s=30 still_loaded=yes",
    )
    summary = run_summary(tmp_path)
    assert summary["module_unloaded"] is False
    assert "module tcp_spline did not unload" in summary["failures"]


def test_without_a_module_the_unload_is_not_judged(tmp_path):
    write_guest_files(tmp_path, rmmod="")
    assert run_summary(tmp_path, module="")["module_unloaded"] is None


def test_a_run_carries_the_headline_of_spline_analyze_when_the_host_ran_it(tmp_path):
    write_guest_files(tmp_path)
    (tmp_path / "spline-r1.analysis.json").write_text(
        json.dumps(
            {
                "schema": 1,
                "tcp_packets": 13527,
                "tcp_streams": 2,
                "tcp_payload_bytes": 11373441,
                "duration_s": 10.68,
                "warnings": [],
            }
        )
    )
    (tmp_path / "bbr-r1.analysis.json").write_text("Traceback (most recent call last):")
    runs = {r["cca"]: r for r in run_summary(tmp_path)["runs"]}
    assert runs["spline"]["analysis"]["tcp_packets"] == 13527
    assert runs["bbr"]["analysis"]["error"] == "not JSON"
    assert "analysis" not in runs["cubic"]


TC_STATS = """\
qdisc netem 1: root refcnt 3 limit 100000 delay 50ms loss 2%
 Sent 33803468 bytes 22410 pkt (dropped 512, overlimits 0 requeues 0)
 backlog 0b 0p requeues 0
qdisc tbf 10: parent 1:1 rate 10Mbit burst 5000b lat 46ms
 Sent 33803468 bytes 22410 pkt (dropped 61, overlimits 9041 requeues 0)
 backlog 0b 0p requeues 0
"""


def test_router_drops_split_into_random_loss_and_queue_overflow():
    assert summarize_mod.path_drops(TC_STATS) == {
        "random_loss_drops": 451,
        "queue_drops": 61,
        "delivered_pkts": 22410,
        "bottleneck_bytes": 33803468,
    }


def test_a_run_carries_its_router_drops_when_the_guest_recorded_them(tmp_path):
    write_guest_files(tmp_path)
    (tmp_path / "spline-r1.qdisc.txt").write_text(TC_STATS)
    runs = {r["cca"]: r for r in run_summary(tmp_path)["runs"]}
    assert runs["spline"]["path"]["queue_drops"] == 61
    assert "path" not in runs["bbr"]


def test_when_the_guest_died_before_saving_dmesg_its_console_is_searched_for_the_oops(tmp_path):
    write_guest_files(tmp_path)
    (tmp_path / "dmesg.txt").unlink()
    (tmp_path / "console.log").write_text(
        "vm-test: run spline-r1: iperf3 -C spline -t 5\n"
        + WARN_DMESG
        + "[   12.100000] Kernel panic - not syncing: Fatal exception\n"
    )
    summary = run_summary(tmp_path)
    assert summary["kernel_warnings"] == 6
    assert "no dmesg from the guest" in summary["failures"]


def test_flows_sharing_the_bottleneck_are_one_run_with_each_flow_and_their_sums(tmp_path):
    write_guest_files(tmp_path, ccas=())
    for i, (cca, bps) in enumerate((("spline", 6e6), ("cubic", 4e6)), 1):
        report = iperf3_report(cca, bps, 10 * i)
        report["server_output_json"] = {"intervals": [{"sum": {"start": 0.0, "end": 1.0, "bits_per_second": bps}}]}
        (tmp_path / f"spline+cubic-r1.f{i}.json").write_text(json.dumps(report))
        (tmp_path / f"spline+cubic-r1.f{i}.rc").write_text("0\n")
    run = run_summary(tmp_path, ccas="spline+cubic")["runs"][0]
    assert run["ok"] and (run["throughput_bps"], run["retransmits"]) == (10e6, 30)
    assert [(f["cca"], f["throughput_bps"]) for f in run["flows"]] == [("spline", 6e6), ("cubic", 4e6)]
    assert run["flows"][0]["receiver_intervals"] == [[0.0, 1.0, 6e6]]


def test_a_shared_run_fails_when_one_of_its_flows_did(tmp_path):
    write_guest_files(tmp_path, ccas=())
    (tmp_path / "spline+cubic-r1.f1.json").write_text(json.dumps(iperf3_report("spline", 6e6, 1)))
    (tmp_path / "spline+cubic-r1.f1.rc").write_text("0\n")
    summary = run_summary(tmp_path, ccas="spline+cubic")
    assert not summary["runs"][0]["ok"]
    assert any("flow 2 (cubic)" in f for f in summary["failures"])


def test_receiver_intervals_come_from_the_servers_text_report_too():
    text = (
        "[  5] local 10.0.2.1 port 5201 connected to 10.0.1.1 port 48114\n"
        "[  5]   0.00-1.00   sec  1.08 MBytes  9.00 Mbits/sec                  \n"
        "[  5]   1.00-2.07   sec   640 KBytes  4.90 Mbits/sec                  \n"
        "[  5]   0.00-2.07  sec  1.70 MBytes  6.90 Mbits/sec                  receiver\n"
    )
    assert summarize_mod.receiver_intervals({"server_output_text": text}) == [[0.0, 1.0, 9.0e6], [1.0, 2.07, 4.9e6]]
    assert summarize_mod.receiver_intervals({}) is None


def test_tcp_counters_of_a_run_are_the_differences_of_each_namespace(tmp_path):
    mib = (
        "## snd before\nTcpExt: TCPDSACKRecv TCPOFODrop\nTcpExt: 5 0\nTcp: RetransSegs\nTcp: 10\n"
        "## rcv before\nTcpExt: TCPDSACKOldSent TCPOFODrop\nTcpExt: 0 0\n"
        "## snd after\nTcpExt: TCPDSACKRecv TCPOFODrop\nTcpExt: 45 0\nTcp: RetransSegs\nTcp: 910\n"
        "## rcv after\nTcpExt: TCPDSACKOldSent TCPOFODrop\nTcpExt: 40 700\n"
    )
    assert summarize_mod.mib_deltas(mib) == {
        "rcv": {"TcpExt.TCPDSACKOldSent": 40, "TcpExt.TCPOFODrop": 700},
        "snd": {"TcpExt.TCPDSACKRecv": 40, "Tcp.RetransSegs": 900},
    }
    write_guest_files(tmp_path)
    (tmp_path / "spline-r1.mib.txt").write_text(mib)
    run = run_summary(tmp_path)["runs"][0]
    assert run["mib"]["rcv"]["TcpExt.TCPOFODrop"] == 700
