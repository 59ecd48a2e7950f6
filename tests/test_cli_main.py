"""spline-analyze: output modes, exit codes, one-line errors, no tracebacks, fast start."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

import pcapbuild as pb
from spline_analysis._core import cli
from spline_analysis.schema import SCHEMA_VERSION

FLOW = pb.tcp_flow_frames(4)
PYTHON = sys.executable


@pytest.fixture
def capture(tmp_path) -> Path:
    path = tmp_path / "flow.pcap"
    path.write_bytes(pb.pcap_file([(t, pb.ethernet(p)) for t, p in FLOW]))
    return path


def run_cli(*args: str):
    return subprocess.run([PYTHON, "-m", "spline_analysis", *args], capture_output=True, text=True, timeout=60)


def test_json_for_one_file_is_the_report_at_top_level(capture, capsys):
    assert cli.main([str(capture), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["schema"] == SCHEMA_VERSION == 4 and doc["file"] == str(capture)
    assert (doc["packets"], doc["tcp_packets"], doc["tcp_streams"]) == (len(FLOW), len(FLOW), 1)
    assert doc["tcp_payload_bytes"] == 4 * 1448
    assert doc["capture_drops"] == {"kernel": None, "interface": None, "source": "none"}
    assert doc["link_types"] == ["Ethernet"] and doc["warnings"] == []
    assert doc["duration_s"] == pytest.approx((FLOW[-1][0] - FLOW[0][0]) / 1e9)


def test_json_for_several_files_lists_them(capture, tmp_path, capsys):
    other = tmp_path / "other.pcap"
    other.write_bytes(capture.read_bytes())
    assert cli.main([str(capture), str(other), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["schema"] == SCHEMA_VERSION == 4 and [f["file"] for f in doc["files"]] == [str(capture), str(other)]


def test_summary_names_the_file_and_aligns_the_run_summary(capture, capsys):
    assert cli.main([str(capture)]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].startswith(f"{capture}: pcap, Ethernet, {len(FLOW)} packets")
    block = lines[lines.index("Run summary (main data direction, truth-seeking)") + 1 :]
    block = block[: block.index("")]
    labels = [line.split("  ")[1].strip() for line in block]
    assert labels[:5] == ["Flow", "Speed", "Time", "Packet loss", "Retransmissions"]
    value_columns = {len(line) - len(line.split("  ", 2)[2].lstrip()) for line in block}
    assert len(value_columns) == 1
    assert "Flow directions carrying data" in out and "Wireshark-compatible flags" in out


def test_csv_has_one_row_per_data_carrying_direction(capture, capsys):
    assert cli.main([str(capture), "--csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert len(rows) == 1
    assert (rows[0]["src"], rows[0]["sport"], rows[0]["dst"], rows[0]["dport"]) == (
        "10.0.0.1",
        "40000",
        "10.0.0.2",
        "5201",
    )
    assert int(rows[0]["payload_bytes"]) == 4 * 1448 and rows[0]["ws_retransmission"] == "0"


JITTER_SAMPLE = Path(__file__).resolve().parents[1] / "samples" / "bbr-d200ms-j50ms-1pct-10mbit" / "trace.pcap"


@pytest.mark.skipif(not JITTER_SAMPLE.exists(), reason="bundled sample missing from this checkout")
def test_csv_carries_the_inferred_part_of_the_lost_count_and_its_spread(capsys):
    assert cli.main([str(JITTER_SAMPLE), "--json"]) == 0
    directions = {(d["stream"], d["direction"]): d for d in json.loads(capsys.readouterr().out)["directions"]}
    assert cli.main([str(JITTER_SAMPLE), "--csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert any(int(r["lost_inferred"]) != 0 for r in rows)
    for r in rows:
        d = directions[(int(r["stream"]), int(r["direction"]))]
        assert int(r["lost_inferred"]) == d["lost_inferred"]
        assert float(r["lost_inferred_sd"]) == pytest.approx(d["lost_inferred_sd"])


def test_interval_prints_a_time_series_csv(capture, capsys):
    assert cli.main([str(capture), "--interval", "5ms"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert rows and {"time_s", "throughput_bps", "rtt_ms", "bytes_in_flight"} <= set(rows[0])
    assert sum(float(r["throughput_bps"]) for r in rows) > 0


def test_bad_interval_is_a_usage_error(capture, capsys):
    with pytest.raises(SystemExit) as exited:
        cli.main([str(capture), "--interval", "soon"])
    assert exited.value.code == 2 and "--interval" in capsys.readouterr().err


@pytest.mark.parametrize(
    "content,needle",
    [
        (b"\x00" * 64, "at byte offset 0"),
        (pb.pcap_file([(0, pb.ethernet(b""))], version=(2, 5)), "unsupported pcap version 2.5 at byte offset 4"),
    ],
)
def test_unreadable_file_exits_2_with_one_line(tmp_path, content, needle):
    path = tmp_path / "bad.pcap"
    path.write_bytes(content)
    result = run_cli(str(path), "--json")
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert result.stderr.startswith(f"spline-analyze: {path}: ") and needle in result.stderr


def test_damaged_pcapng_block_exits_2_naming_the_offset(tmp_path):
    data = bytearray(
        pb.pcapng_file([pb.Section([pb.Interface(1)], [pb.Packet(0, t, pb.ethernet(p)) for t, p in FLOW])])
    )
    offset = data.index(b"\x06\x00\x00\x00")
    data[offset + 4 : offset + 8] = (7).to_bytes(4, "little")
    path = tmp_path / "bad.pcapng"
    path.write_bytes(bytes(data))
    result = run_cli(str(path))
    assert result.returncode == 2 and f"at byte offset {offset}" in result.stderr and "Traceback" not in result.stderr


def test_missing_file_exits_2(tmp_path):
    result = run_cli(str(tmp_path / "nope.pcap"))
    assert result.returncode == 2 and "nope.pcap" in result.stderr and "Traceback" not in result.stderr


def test_cut_file_warns_and_exits_0_unless_strict(capture):
    data = capture.read_bytes()
    capture.write_bytes(data[:-5])
    result = run_cli(str(capture), "--json")
    assert result.returncode == 0
    doc = json.loads(result.stdout)
    assert doc["truncated_at"] is not None and f"byte offset {doc['truncated_at']}" in doc["warnings"][0]["message"]
    assert doc["warnings"][0]["code"] == "file_truncated"
    assert "warning" in result.stderr and f"byte offset {doc['truncated_at']}" in result.stderr
    assert doc["packets"] == len(FLOW) - 1
    strict = run_cli(str(capture), "--json", "--strict")
    assert strict.returncode == 2 and strict.stderr.count("\n") == 1 and "Traceback" not in strict.stderr
    quiet = run_cli(str(capture), "--quiet")
    assert quiet.returncode == 0 and quiet.stderr == ""


def test_one_bad_file_does_not_stop_the_others(capture, tmp_path, capsys):
    bad = tmp_path / "bad.pcap"
    bad.write_bytes(b"nonsense" * 10)
    assert cli.main([str(bad), str(capture), "--json"]) == 2
    captured = capsys.readouterr()
    assert [f["file"] for f in json.loads(captured.out)["files"]] == [str(capture)]
    assert str(bad) in captured.err


def test_internal_error_is_one_line_and_exit_3(capture, capsys, monkeypatch):
    from spline_analysis import report

    def broken(*args, **kwargs):
        raise ZeroDivisionError("boom")

    monkeypatch.setattr(report, "capture_keys", broken)
    assert cli.main([str(capture)]) == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "internal error" in err and "boom" in err


def test_cli_json_does_not_import_pandas(capture):
    code = (
        "import sys; from spline_analysis._core import cli; rc = cli.main([%r, '--json']); "
        "sys.stderr.write(str('pandas' in sys.modules)); sys.exit(rc)" % str(capture)
    )
    result = subprocess.run([PYTHON, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and result.stderr.strip() == "False"


def test_progress_bar_only_for_large_files_on_a_terminal():
    from spline_analysis._core.progress import MIN_BYTES_FOR_BAR, bar_for

    class FakeTerminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    assert bar_for("x", MIN_BYTES_FOR_BAR, io.StringIO()) is None
    assert bar_for("x", MIN_BYTES_FOR_BAR - 1, FakeTerminal()) is None
    terminal = FakeTerminal()
    bar = bar_for("x", MIN_BYTES_FOR_BAR, terminal)
    bar(50, 100)
    bar(100, 100)
    bar.close()
    assert "100%" in terminal.getvalue()
