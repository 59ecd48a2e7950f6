"""probe.csv (the sending kernel's tcp_probe trace) read beside a capture like meta.json:
cwnd/ssthresh/srtt per direction in the JSON, per interval in --interval, tracking of the
capture's in-flight estimate against the kernel's own count."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from spline_analysis._core import kernel_probe

HEADER = ",".join(
    [
        "time_s",
        "src",
        "dst",
        "data_len_bytes",
        "snd_nxt",
        "snd_una",
        "snd_cwnd_segments",
        "ssthresh_segments",
        "snd_wnd_bytes",
        "srtt_us",
        "rcv_wnd_bytes",
        "sock_cookie",
    ]
)


def probe_file(tmp_path, rows):
    path = tmp_path / "probe.csv"
    path.write_text(HEADER + "\n" + "\n".join(rows) + "\n")
    return path


def test_rows_are_read_with_in_flight_from_sequence_numbers_across_the_wrap(tmp_path):
    path = probe_file(
        tmp_path,
        [
            "100.000000100,10.0.0.1:40001,10.0.0.2:5201,0,0x00000010,0xfffffff0,10,2147483647,65535,50000,64256,3",
            "100.5,[2001:db8::1]:40002,[2001:db8::2]:5202,0,0x2000,0x1000,20,15,65535,60000,64256,4",
            "garbage,row",
        ],
    )
    probe = kernel_probe.read_probe(path)
    assert len(probe) == 2
    assert probe.time_ns.tolist() == [100_000_000_100, 100_500_000_000]
    assert probe.in_flight_bytes.tolist() == [0x20, 0x1000]
    assert probe.src.tolist() == ["10.0.0.1", "2001:db8::1"] and probe.dport.tolist() == [5201, 5202]
    assert kernel_probe.events_of(probe, "2001:db8::1", 40002, "2001:db8::2", 5202).tolist() == [1]


def test_summary_leaves_out_the_infinite_ssthresh_and_counts_window_reductions(tmp_path):
    rows = [
        f"{100 + i / 10:.6f},10.0.0.1:40001,10.0.0.2:5201,0,0x{1000 + i * 1448:x},0x1000,{c},{s},1,{50000 + i},1,3"
        for i, (c, s) in enumerate([(10, 2147483647), (20, 2147483647), (14, 14), (15, 14), (10, 10)])
    ]
    probe = kernel_probe.read_probe(probe_file(tmp_path, rows))
    events = np.arange(len(probe))
    summary = kernel_probe.direction_summary(probe, events, 1448, aligned=False)
    assert summary["cwnd_segments"] == {"min": 10.0, "median": 14.0, "max": 20.0}
    assert summary["ssthresh_segments"] == {"min": 10.0, "median": 14.0, "max": 14.0}
    assert summary["cwnd_reductions"] == 2
    assert summary["capture_tracking"] is None  # another clock: nothing to compare


def test_tracking_compares_the_latest_capture_estimate_before_each_event():
    probe_ns = np.array([10, 20, 30], dtype=np.int64)
    kernel_flight = np.array([1448, 2896, 4344], dtype=np.int64)
    cwnd_bytes = np.array([2896, 2896, 5792], dtype=np.int64)
    packet_ns = np.array([5, 15, 25, 35], dtype=np.int64)
    capture_flight = np.array([1448, 2896, 1448, -1], dtype=np.int64)
    result = kernel_probe.tracking(probe_ns, kernel_flight, cwnd_bytes, packet_ns, capture_flight, 1448)
    assert result["events"] == 3
    assert result["within_one_segment"] == pytest.approx(2 / 3)
    assert result["kernel_in_flight_error_segments"]["median"] == 0.0
    assert result["of_cwnd_median"] == pytest.approx(0.5)


def test_last_value_per_interval_and_nan_where_no_event_fell():
    probe = kernel_probe.KernelProbe(
        path=None,
        time_ns=np.array([0, 40, 90, 250], dtype=np.int64),
        src=np.array(["a"] * 4, dtype=object),
        sport=np.ones(4, np.int64),
        dst=np.array(["b"] * 4, dtype=object),
        dport=np.ones(4, np.int64),
        cwnd_segments=np.array([10, 12, 14, 30]),
        ssthresh_segments=np.array([2147483647, 2147483647, 9, 9]),
        srtt_us=np.array([1000, 2000, 3000, 4000]),
        in_flight_bytes=np.zeros(4, np.int64),
    )
    values = kernel_probe.interval_values(probe, np.arange(4), 0, 100.0, np.array([0, 1, 2]))
    assert values["cwnd_segments"][0] == 14 and np.isnan(values["cwnd_segments"][1])
    assert values["cwnd_segments"][2] == 30 and values["ssthresh_segments"][0] == 9
    assert values["srtt_ms"][2] == 4.0


PROBE_SAMPLES = sorted(
    p
    for p in (Path(__file__).resolve().parents[1] / "samples").glob("*/trace.pcap")
    if (p.parent / "probe.csv").exists()
)


@pytest.mark.skipif(not PROBE_SAMPLES, reason="no bundled sample with a probe.csv")
def test_a_sample_with_probe_csv_gets_the_kernel_view_in_json_and_interval_csv():
    sample = PROBE_SAMPLES[0]
    cli = [sys.executable, "-m", "spline_analysis"]
    document = json.loads(
        subprocess.run([*cli, "--json", str(sample)], capture_output=True, text=True, check=True).stdout
    )
    data = max(document["directions"], key=lambda d: d["data_packets"])
    kernel = data["kernel"]
    assert kernel["clock_aligned"] is True and kernel["events"] > 100
    assert kernel["cwnd_segments"]["max"] >= kernel["cwnd_segments"]["median"] >= kernel["cwnd_segments"]["min"] > 0
    tracking = kernel["capture_tracking"]
    assert tracking["events"] > 100 and 0 <= tracking["within_one_segment"] <= 1
    series = subprocess.run(
        [*cli, "--interval", "500ms", str(sample)], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    header = series[0].split(",")
    assert {"cwnd_segments", "ssthresh_segments", "srtt_ms"} <= set(header)
    cwnd = [row.split(",")[header.index("cwnd_segments")] for row in series[1:]]
    assert sum(1 for value in cwnd if value) >= 10
