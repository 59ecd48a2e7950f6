"""spline-analyze against hostile inputs, outputs and signals: a one-line message and a
documented exit status in every case; no signal death, no traceback, no partial output.

Exit statuses (cli.py): 0 ok, 2 unreadable input, 3 internal error, 4 output not written,
130 interrupted.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import signal
import subprocess
import sys
import time
import zlib
from pathlib import Path

import pytest

from pcapbuild import ethernet, ipv4, pcap_file, tcp

from spline_analysis._core import decode
from spline_analysis._core.errors import CaptureError

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "samples" / "bbr-2pct-15mbit" / "trace.pcap"
PYTHON = sys.executable
# what the installed `spline-analyze` runs
CLI = [PYTHON, "-c", "from spline_analysis._console import spline_analyze; spline_analyze()"]


def spline_analyze(*args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *args], capture_output=True, timeout=120, **kwargs)


def one_line(stderr: bytes) -> str:
    """The last line of stderr, which holds no traceback."""
    text = stderr.decode()
    assert "Traceback" not in text
    lines = text.splitlines()
    return lines[-1] if lines else ""


def big_capture(path: Path, packets: int = 400_000) -> Path:
    """A capture large enough that reading it takes a while (one TCP flow)."""
    frames = []
    for i in range(packets):
        segment = tcp(sport=40000, dport=5201, seq=1 + i * 1000, ack=1, flags="A", payload=b"x" * 1000)
        frames.append((1_000_000_000 + i * 10_000, ethernet(ipv4("10.0.0.1", "10.0.0.2", segment, ident=i % 65536))))
    path.write_bytes(pcap_file(frames, nanosecond=True))
    return path


@pytest.fixture(scope="module")
def big(tmp_path_factory) -> Path:
    return big_capture(tmp_path_factory.mktemp("hostile") / "big.pcap")


def test_file_that_shrinks_while_it_is_read_is_an_error_with_an_offset_not_sigbus(tmp_path, monkeypatch):
    capture = big_capture(tmp_path / "shrinking.pcap", 20_000)
    walk = decode._walk

    def truncate_then_walk(path, mapped, size, strict, progress, **options):
        os.truncate(path, 10_000)  # mapped already: the pages past 10 kB are gone
        return walk(path, mapped, size, strict, progress, **options)

    monkeypatch.setattr(decode, "_walk", truncate_then_walk)
    with pytest.raises(CaptureError, match="shrank while it was read") as error:
        decode.read(capture)
    assert error.value.offset is not None


def test_cli_survives_a_capture_truncated_under_it_at_many_moments(big, tmp_path):
    for delay_s in (0.05, 0.15, 0.3, 0.5):
        victim = tmp_path / "victim.pcap"
        victim.write_bytes(big.read_bytes())
        child = subprocess.Popen(
            [*CLI, "--json", "--quiet", str(victim)], stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        time.sleep(delay_s)
        os.truncate(victim, 4096)
        out, err = child.communicate(timeout=120)
        assert child.returncode in (0, 2), (delay_s, child.returncode, err)
        assert b"Traceback" not in err
        if child.returncode == 0:
            json.loads(out)


def test_ctrl_c_leaves_no_partial_json_and_says_interrupted_once(big, tmp_path):
    statuses = set()
    for delay_s in (0.2, 0.5, 0.8, 1.2, 1.6):
        out_path = tmp_path / "x.json"
        with open(out_path, "wb") as out:
            child = subprocess.Popen([*CLI, "--json", "--quiet", str(big)], stdout=out, stderr=subprocess.PIPE)
            time.sleep(delay_s)
            child.send_signal(signal.SIGINT)
            _, err = child.communicate(timeout=120)
        statuses.add(child.returncode)
        assert child.returncode in (0, 130), (delay_s, child.returncode, err)
        assert b"Traceback" not in err and b"internal error" not in err, err
        written = out_path.read_bytes()
        if child.returncode == 130:
            assert err.decode().strip().splitlines()[-1] == "spline-analyze: interrupted"
        if written:
            json.loads(written)  # complete, or nothing at all
    assert 130 in statuses


def tool_frames(stderr: bytes) -> list:
    """The traceback frames in the toolkit's modules past the console entry: the package's
    `__init__` and `_console` run before the entry can hold interrupts (~1 ms)."""
    files = re.findall(rb'File "([^"]*spline_analysis/[^"]*)"', stderr)
    return [f for f in files if not f.endswith((b"spline_analysis/__init__.py", b"spline_analysis/_console.py"))]


def test_ctrl_c_while_the_tool_is_still_starting_is_one_line_not_a_traceback():
    """Importing the CLI takes ~0.05-0.2 s; an interrupt there printed a KeyboardInterrupt traceback
    from spline_analysis/cli.py's imports. Before the interpreter itself is up (site, encodings) the
    signal's default action ends the process silently: not a traceback of ours. The interrupt moves
    in 5 ms steps from the start until the run has answered it three times in a row, so the import
    window (tens of ms, wherever the host's load puts it) is always crossed."""
    answered_in_a_row, delay_s = 0, 0.0
    while answered_in_a_row < 3 and delay_s < 1.0:
        child = subprocess.Popen(
            [*CLI, "--json", "--quiet", str(SAMPLE)], stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        time.sleep(delay_s)
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=60)
        assert not tool_frames(err), (delay_s, err)
        if child.returncode == 130:
            assert err == b"spline-analyze: interrupted\n" and out == b"", (delay_s, err)
            answered_in_a_row += 1
        else:
            assert child.returncode in (-signal.SIGINT, 1, 0) and (out == b"" or json.loads(out)), (
                delay_s,
                child.returncode,
                err,
            )
            answered_in_a_row = 0
        delay_s += 0.005
    assert answered_in_a_row == 3


def test_full_disk_on_stdout_is_one_line_and_status_4():
    with open("/dev/full", "wb") as full:
        result = subprocess.run(
            [*CLI, "--json", "--quiet", str(SAMPLE)], stdout=full, stderr=subprocess.PIPE, timeout=60
        )
    assert result.returncode == 4
    assert result.stderr.decode().strip() == "spline-analyze: cannot write the output: No space left on device"


@pytest.mark.parametrize("where", ["existing file", "inside /proc"])
def test_plot_folder_that_cannot_be_written_keeps_the_report_and_says_so(tmp_path, where):
    target = tmp_path / "taken" if where == "existing file" else Path("/proc/spline-analyze-plots")
    if where == "existing file":
        target.write_text("not a folder")
    result = spline_analyze("--quiet", "--plot", str(target), str(SAMPLE))
    assert result.returncode == 4
    assert b"Run summary" in result.stdout  # the report is not lost
    message = one_line(result.stderr)
    assert message.startswith(f"spline-analyze: {SAMPLE}: cannot write figures into {target}: ")


def test_interrupted_plotting_leaves_no_half_written_png(tmp_path):
    out_dir = tmp_path / "plots"
    for delay_s in (0.8, 1.2, 1.6, 2.0):
        child = subprocess.Popen(
            [*CLI, "--quiet", "--plot", str(out_dir), str(SAMPLE)], stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        time.sleep(delay_s)
        child.send_signal(signal.SIGINT)
        _, err = child.communicate(timeout=60)
        assert child.returncode in (0, 130) and b"Traceback" not in err
        if out_dir.exists():
            for path in out_dir.iterdir():
                assert path.suffix == ".png" and not path.name.startswith("."), path.name
                assert path.read_bytes().startswith(b"\x89PNG") and path.read_bytes().endswith(b"IEND\xaeB`\x82")


def test_standard_input_and_dash_read_a_piped_capture():
    from_file = json.loads(spline_analyze("--json", "--quiet", str(SAMPLE)).stdout)
    with open(SAMPLE, "rb") as stdin:
        piped = spline_analyze("--json", "--quiet", "-", stdin=stdin)
    assert piped.returncode == 0, piped.stderr
    document = json.loads(piped.stdout)
    assert document["file"] == "-"
    # the same figures (the sidecars beside the file, meta.json and iperf3.json, are not read)
    assert document["packets"] == from_file["packets"]
    assert [
        (d["payload_bytes"], d["lost_segments"], d.get("retransmissions_in_capture", d["retransmissions"]))
        for d in document["directions"]
    ] == [
        (d["payload_bytes"], d["lost_segments"], d.get("retransmissions_in_capture", d["retransmissions"]))
        for d in from_file["directions"]
    ]
    gzipped = subprocess.run(
        [*CLI, "--csv", "--quiet", "-"], input=gzip.compress(SAMPLE.read_bytes()), capture_output=True, timeout=60
    )
    assert gzipped.returncode == 0 and gzipped.stdout.count(b"\n") > 1


def test_fifo_is_read_to_its_end_and_waiting_on_it_is_said(tmp_path):
    fifo = tmp_path / "capture.fifo"
    os.mkfifo(fifo)
    child = subprocess.Popen([*CLI, "--json", str(fifo)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    time.sleep(1.0)
    assert child.poll() is None  # waiting for a writer
    with open(fifo, "wb") as writer:
        writer.write(SAMPLE.read_bytes())
    out, err = child.communicate(timeout=60)
    assert child.returncode == 0, err
    assert "reading a FIFO or pipe to its end (waits for its writer)" in err.decode()
    assert json.loads(out)["tcp_streams"] == 1 or json.loads(out)["packets"] > 1000


def test_gzip_of_zeros_is_refused_before_it_inflates(tmp_path):
    bomb = tmp_path / "zeros.pcap.gz"
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
    with open(bomb, "wb") as out:
        for _ in range(64):  # 1 GiB of zeros in ~1 MB
            out.write(compressor.compress(bytes(1 << 24)))
        out.write(compressor.flush())
    started = time.monotonic()
    result = spline_analyze("--quiet", str(bomb))
    assert time.monotonic() - started < 20
    assert result.returncode == 2
    assert "not a pcap or pcapng file (it starts with 00000000)" in one_line(result.stderr)


def test_three_packets_a_day_apart_at_one_millisecond_stay_small(tmp_path):
    frames = []
    for i, t_s in enumerate((0, 43_200, 86_400)):
        segment = tcp(sport=40000, dport=5201, seq=1 + i * 100, ack=1, flags="PA", payload=b"y" * 100)
        frames.append((t_s * 1_000_000_000, ethernet(ipv4("10.0.0.1", "10.0.0.2", segment))))
    capture = tmp_path / "day.pcap"
    capture.write_bytes(pcap_file(frames, nanosecond=True))
    # VmHWM: this process's peak resident set (ru_maxrss would carry pytest's across exec)
    code = (
        "import re, sys; from spline_analysis._core.cli import main; status = main(sys.argv[1:]); "
        "print(re.search(r'VmHWM:\\s+(\\d+)', open('/proc/self/status').read()).group(1), file=sys.stderr); "
        "sys.exit(status)"
    )
    result = subprocess.run(
        [PYTHON, "-c", code, "--quiet", "--interval", "1ms", str(capture)], capture_output=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    rows = result.stdout.decode().strip().splitlines()
    assert 2 <= len(rows) <= 10  # header, packets, idle runs
    max_rss_kib = int(result.stderr.decode().strip().splitlines()[-1])
    assert max_rss_kib < 600 * 1024


def test_clock_stepping_back_gives_no_negative_duration(tmp_path):
    frames = []
    for i, t_s in enumerate((100.0, 100.1, 10.0, 10.1, 100.2)):
        segment = tcp(sport=40000, dport=5201, seq=1 + i * 100, ack=1, flags="PA", payload=b"z" * 100)
        frames.append((int(t_s * 1e9), ethernet(ipv4("10.0.0.1", "10.0.0.2", segment))))
    capture = tmp_path / "back.pcap"
    capture.write_bytes(pcap_file(frames, nanosecond=True))
    result = spline_analyze("--json", str(capture))
    assert result.returncode == 0
    document = json.loads(result.stdout)
    assert document["duration_s"] >= 0
    assert all(d["duration_s"] >= 0 for d in document["directions"])
    assert "time_backwards" in {w["code"] for w in document["warnings"]}


IS_ROOT = os.geteuid() == 0
as_root = pytest.mark.skipif(not IS_ROOT, reason="needs root (setpriv to another user, mount)")


def _unreadable_for_nobody(folder: Path) -> tuple:
    """A capture only root may read, in a folder anyone may enter; run as user nobody."""
    import shutil

    if not shutil.which("setpriv"):
        pytest.skip("needs setpriv")
    from processes import python_runs_as_nobody

    if not python_runs_as_nobody():
        pytest.skip("user nobody cannot reach this checkout's Python (a folder only its owner may enter)")
    capture = folder / "private.pcap"
    capture.write_bytes(SAMPLE.read_bytes())
    capture.chmod(0o600)
    return capture, ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]


def _directory(tmp_path: Path) -> tuple:
    (tmp_path / "a-folder").mkdir()
    return tmp_path / "a-folder", []


def _dangling_symlink(tmp_path: Path) -> tuple:
    (tmp_path / "gone.pcap").symlink_to(tmp_path / "never-made.pcap")
    return tmp_path / "gone.pcap", []


@pytest.mark.parametrize(
    "make,reason",
    [
        pytest.param(_unreadable_for_nobody, "Permission denied", marks=as_root, id="unreadable"),
        pytest.param(_directory, "Is a directory", id="directory"),
        pytest.param(_dangling_symlink, "No such file or directory", id="dangling-symlink"),
    ],
)
def test_input_that_cannot_be_read_is_one_line_naming_it_and_status_2(make, reason):
    import tempfile

    with tempfile.TemporaryDirectory(prefix="hd-input-") as public:  # pytest's tmp_path is 0700: nobody
        os.chmod(public, 0o755)  # could not even reach the file
        path, prefix = make(Path(public))
        result = subprocess.run([*prefix, *CLI, "--json", str(path), str(SAMPLE)], capture_output=True, timeout=120)
    assert result.returncode == 2, result.stderr
    lines = [line for line in result.stderr.decode().splitlines() if "warning" not in line]
    assert lines == [f"spline-analyze: {path}: {reason}"]
    assert json.loads(result.stdout)["files"][0]["file"] == str(SAMPLE)  # the other file's report stays


@as_root
def test_full_disk_under_plot_keeps_the_report_and_leaves_no_partial_figure(tmp_path):
    disk = tmp_path / "tiny"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "hdplot", str(disk)], check=True)
    try:
        result = spline_analyze("--quiet", "--plot", str(disk / "figs"), str(SAMPLE))
        assert result.returncode == 4
        assert b"Run summary" in result.stdout
        assert one_line(result.stderr) == (
            f"spline-analyze: {SAMPLE}: cannot write figures into {disk / 'figs'}: No space left on device"
        )
        assert [p.name for p in (disk / "figs").iterdir()] == []  # no .part, no cut PNG
    finally:
        subprocess.run(["umount", str(disk)], check=True)


def wait_until_it_reads(child: subprocess.Popen, path: Path, timeout_s: float = 60) -> None:
    """Until `child` has `path` open (its signal handlers are in place by then): on a loaded
    machine Python's start-up alone can take most of a second."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and child.poll() is None:
        try:
            if any(
                os.path.realpath(f"/proc/{child.pid}/fd/{fd}") == str(path.resolve())
                for fd in os.listdir(f"/proc/{child.pid}/fd")
            ):
                return
        except OSError:
            pass
        time.sleep(0.01)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_sigterm_and_sighup_mid_run_are_an_interrupt_with_no_partial_output(big, tmp_path, signum):
    out_path = tmp_path / "x.json"
    with open(out_path, "wb") as out:
        child = subprocess.Popen([*CLI, "--json", "--quiet", str(big)], stdout=out, stderr=subprocess.PIPE)
        wait_until_it_reads(child, big)
        child.send_signal(signum)
        _, err = child.communicate(timeout=120)
    assert child.returncode in (0, 130), (child.returncode, err)  # never death by the signal
    if child.returncode == 130:
        assert err.decode().strip() == "spline-analyze: interrupted"
        assert out_path.read_bytes() == b""
    else:
        json.loads(out_path.read_bytes())


def test_reader_that_stops_early_ends_the_output_quietly():
    """`spline-analyze --interval 1ms x.pcap | head -1`: ~70 kB of CSV into a pipe closed after one line."""
    child = subprocess.Popen(
        [*CLI, "--quiet", "--interval", "1ms", str(SAMPLE)], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    first = child.stdout.readline()
    child.stdout.close()  # what head does after its line
    err = child.stderr.read()
    assert child.wait(timeout=120) == 0
    assert first.startswith(b"file,time_s,")
    assert err == b""


def empty_records_gzip(path: Path, frames: int) -> Path:
    """A gzip'd pcap of `frames` records with no bytes at all: ~31 bytes of gzip per 1,000
    frames (16.7 M of them fit in 521 kB)."""
    import struct

    header = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)
    block = struct.pack("<IIII", 1, 0, 0, 0) * 65536
    compressor = zlib.compressobj(6, zlib.DEFLATED, 31)
    with open(path, "wb") as out:
        out.write(compressor.compress(header))
        for _ in range(frames // 65536):
            out.write(compressor.compress(block))
        out.write(compressor.compress(block[: 16 * (frames % 65536)]))
        out.write(compressor.flush())
    return path


PEAK_RSS_CODE = (
    "import re, sys; from spline_analysis._core.cli import main; status = main(sys.argv[1:]); "
    "print(re.search(r'VmHWM:\\s+(\\d+)', open('/proc/self/status').read()).group(1), file=sys.stderr); "
    "sys.exit(status)"
)


def peak_rss_kib(*args: str) -> int:
    result = subprocess.run([PYTHON, "-c", PEAK_RSS_CODE, *args], capture_output=True, timeout=300)
    assert result.returncode == 0, result.stderr
    return int(result.stderr.decode().strip().splitlines()[-1])


def test_memory_per_frame_of_an_analysis_stays_within_what_the_refusal_reckons(tmp_path):
    """Frames cost memory whatever they hold (one row each, as tshark numbers them): empty records
    are the most frames per byte of file. Each frame costs at most ANALYSIS_BYTES_PER_FRAME."""
    from spline_analysis._core.memory import ANALYSIS_BYTES_PER_FRAME

    small = peak_rss_kib("--json", "--quiet", str(empty_records_gzip(tmp_path / "1m.pcap.gz", 1 << 20)))
    large = peak_rss_kib("--json", "--quiet", str(empty_records_gzip(tmp_path / "3m.pcap.gz", 3 << 20)))
    bytes_per_frame = (large - small) * 1024 / (2 << 20)
    assert 100 < bytes_per_frame <= ANALYSIS_BYTES_PER_FRAME


def test_frames_beyond_the_memory_it_may_take_are_refused_in_one_line_before_allocating(tmp_path):
    """Without the check: 2.7 GB taken, then 'out of memory' after three SystemError lines (or,
    without a limit, the OOM killer's SIGKILL); a 2.5 MB gzip holds 100 M empty frames."""
    import resource

    bomb = empty_records_gzip(tmp_path / "empty.pcap.gz", 6 << 20)  # 187 kB, 6.3 M frames

    def one_gib_of_address_space() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    started = time.monotonic()
    result = subprocess.run(
        [*CLI, "--json", "--quiet", str(bomb)], capture_output=True, timeout=120, preexec_fn=one_gib_of_address_space
    )
    assert time.monotonic() - started < 30
    assert result.returncode == 2, result.stderr
    assert re.fullmatch(
        rf"spline-analyze: {re.escape(str(bomb))}: its 6,291,456 frames need about 1\.8 GB of "
        rf"memory, only \d+\.\d [MG]B is available\n",
        result.stderr.decode(),
    ), result.stderr
    assert result.stdout == b""


def test_memory_headroom_is_the_least_known_source():
    from spline_analysis._core.memory import least_headroom, meminfo_available_bytes, status_kib

    assert meminfo_available_bytes("MemTotal: 100 kB\nMemAvailable:    2048 kB\n") == 2 << 20
    assert meminfo_available_bytes("MemTotal: 100 kB\n") is None
    assert status_kib("VmPeak:\t 10 kB\nVmSize:\t   20 kB\n", "VmSize") == 20
    assert least_headroom([None, 5, 3, None]) == 3
    assert least_headroom([None, -7]) == 0  # already past a limit: nothing more
    assert least_headroom([None, None]) is None  # unknown: refuse nothing


def test_dev_stdin_from_a_pipe_is_read_like_dash():
    """`cat x.pcap | spline-analyze /dev/stdin` was "internal error (UnsupportedOperation)"."""
    result = subprocess.run(
        [*CLI, "--json", "--quiet", "/dev/stdin"], input=SAMPLE.read_bytes(), capture_output=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["file"] == "/dev/stdin" and document["packets"] == 6555
