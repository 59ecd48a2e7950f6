"""capture/record.sh against a real iperf3 server in a network namespace, and its error messages.

The live tests build two namespaces joined by a veth (offloads off, server egress shaped to
20 Mbit/s with tbf so traces stay small) and run record.sh in the client namespace, as a user
would on their own machine. They need root, tcpdump and iperf3, and skip otherwise.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import struct
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
from processes import processes_holding_files_under, processes_working_under

REPO = Path(__file__).resolve().parents[1]
RECORD_SH = REPO / "capture" / "record.sh"
SERVER_ADDRESS = "10.203.0.1"
CLIENT_ADDRESS = "10.203.0.2"

IS_ROOT = os.geteuid() == 0
# Debian's default awk is mawk, whose printf "%d" stops at 2^31-1: record.sh runs with awk = mawk
# here whatever this machine's default is, so the tests see what Debian users see.
_MAWK_BIN = Path(tempfile.mkdtemp(prefix="record-sh-mawk-"))
if shutil.which("mawk"):
    (_MAWK_BIN / "awk").symlink_to(shutil.which("mawk"))
MAWK_ENV = {**os.environ, "PATH": f"{_MAWK_BIN}:{os.environ.get('PATH', '/usr/bin:/bin')}"}
HAVE_TOOLS = all(shutil.which(tool) for tool in ("tcpdump", "iperf3", "ip", "tc", "ethtool"))
needs_root = pytest.mark.skipif(not (IS_ROOT and HAVE_TOOLS), reason="needs root, tcpdump, iperf3, iproute2")


def sh(*argv: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(list(argv), capture_output=True, text=True, check=check, timeout=60)


def pcap_packet_count(path: Path) -> int:
    """Records in a classic pcap file, walking the record headers (fails on a truncated file)."""
    data = path.read_bytes()
    assert data[:4] in (b"\xd4\xc3\xb2\xa1", b"\xa1\xb2\xc3\xd4", b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d")
    endian = "<" if data[:4] in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    offset, count = 24, 0
    while offset < len(data):
        assert offset + 16 <= len(data), "truncated record header"
        included = struct.unpack(endian + "I", data[offset + 8 : offset + 12])[0]
        offset += 16 + included
        assert offset <= len(data), "truncated record"
        count += 1
    return count


@pytest.fixture(autouse=True)
def no_run_outlives_its_test(tmp_path):
    """A test that fails before its record.sh stops (a lost signal, a timeout) would leave the
    script and its tcpdump running for good: whatever still works in tmp_path is killed."""
    yield
    for pid in processes_working_under(tmp_path):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


@pytest.fixture(scope="module")
def iperf3_server_namespaces():
    """(client namespace, server namespace) with an iperf3 server listening on SERVER_ADDRESS:5201."""
    if not (IS_ROOT and HAVE_TOOLS):
        pytest.skip("needs root, tcpdump, iperf3, iproute2")
    prefix = f"trs-{os.getpid()}"
    server_ns, client_ns = f"{prefix}-srv", f"{prefix}-cli"
    server = None
    try:
        sh("ip", "netns", "add", server_ns)
        sh("ip", "netns", "add", client_ns)
        sh("ip", "link", "add", "vsrv", "netns", server_ns, "type", "veth", "peer", "name", "vcli", "netns", client_ns)
        for ns, dev, address in ((server_ns, "vsrv", SERVER_ADDRESS), (client_ns, "vcli", CLIENT_ADDRESS)):
            sh("ip", "-n", ns, "addr", "add", f"{address}/24", "dev", dev)
            sh("ip", "netns", "exec", ns, "ethtool", "-K", dev, "tso", "off", "gso", "off", "gro", "off")
            sh("ip", "-n", ns, "link", "set", dev, "up")
            sh("ip", "-n", ns, "link", "set", "lo", "up")
        sh(
            "ip",
            "netns",
            "exec",
            server_ns,
            "tc",
            "qdisc",
            "add",
            "dev",
            "vsrv",
            "root",
            "tbf",
            "rate",
            "20mbit",
            "burst",
            "5000",
            "limit",
            "250000",
        )
        server = subprocess.Popen(
            ["ip", "netns", "exec", server_ns, "iperf3", "-s"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if sh("ip", "netns", "exec", server_ns, "ss", "-Hltn", "sport = :5201").stdout.strip():
                break
            time.sleep(0.05)
        yield client_ns, server_ns
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=10)
        for ns in (client_ns, server_ns):
            sh("ip", "netns", "del", ns, check=False)


def record_in(namespace: str, *args: str, timeout_s: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["ip", "netns", "exec", namespace, str(RECORD_SH), *args],
        capture_output=True,
        text=True,
        timeout=timeout_s,
        env=MAWK_ENV,
    )


def wait_for_staged_file(out: Path, name: str, timeout_s: float = 10) -> Path:
    """record.sh writes into a private DIR/.record.sh-PID-XXXXXX until the run is complete."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = sorted(out.glob(f".record.sh-*/{name}"))
        if found:
            return found[0]
        time.sleep(0.05)
    raise AssertionError(f"record.sh did not create {name} under {out}")


def capture_span_s(path: Path) -> float:
    """Seconds from the first to the last record of a classic little-endian microsecond pcap."""
    data = path.read_bytes()
    offset, stamps = 24, []
    while offset + 16 <= len(data):
        seconds, micros, included = struct.unpack("<IIi", data[offset : offset + 12])
        stamps.append(seconds + micros / 1e6)
        offset += 16 + included
    return stamps[-1] - stamps[0] if stamps else 0.0


@needs_root
def test_record_sh_with_iperf3_and_cca_writes_complete_trace_and_meta(iperf3_server_namespaces, tmp_path):
    client_ns, _ = iperf3_server_namespaces
    out = tmp_path / "bbr-run"
    result = record_in(client_ns, "vcli", SERVER_ADDRESS, "--iperf3", "1", "--cca", "bbr", "-o", str(out))
    assert result.returncode == 0, result.stderr
    meta = json.loads((out / "meta.json").read_text())
    assert meta["interface"] == "vcli" and meta["server"] == SERVER_ADDRESS
    assert meta["cca"] == "bbr" and meta["cca_sender_reported_by_iperf3"] == "bbr"
    assert meta["snaplen_bytes"] == 128 and meta["tcpdump_version"]
    assert meta["kernel"].startswith("Linux ") and meta["start_utc"] < meta["end_utc"]
    assert meta["trace_complete"] is True and not (out / "trace.pcap.part").exists()
    assert meta["capture"]["kernel_drops"] == 0 and meta["capture"]["interface_drops"] == 0
    assert meta["capture"]["captured"] == pcap_packet_count(out / "trace.pcap") > 500
    assert meta["capture"]["received_by_filter"] == meta["capture"]["captured"]
    iperf3 = json.loads((out / "iperf3.json").read_text())
    assert iperf3["end"]["sum_received"]["bytes"] > 1_000_000
    assert iperf3["start"]["test_start"]["reverse"] == 1
    # the system default was not touched
    assert sh("ip", "netns", "exec", client_ns, "cat", "/proc/sys/net/ipv4/tcp_congestion_control").stdout.strip() != ""
    assert processes_holding_files_under(tmp_path) == []


@needs_root
def test_record_sh_stops_after_t_seconds_with_counters(iperf3_server_namespaces, tmp_path):
    client_ns, _ = iperf3_server_namespaces
    out = tmp_path / "timed"
    started = time.monotonic()
    result = record_in(client_ns, "vcli", SERVER_ADDRESS, "-t", "1", "-o", str(out))
    assert result.returncode == 0, result.stderr
    assert time.monotonic() - started < 8
    meta = json.loads((out / "meta.json").read_text())
    assert meta["stop_reason"] == "duration"
    assert meta["capture"]["captured"] == 0 == pcap_packet_count(out / "trace.pcap")
    assert meta["capture"]["received_by_filter"] is not None


@needs_root
@pytest.mark.parametrize("to_group", [False, True], ids=["kill-INT-pid", "ctrl-c-to-process-group"])
def test_record_sh_sigint_stops_tcpdump_and_iperf3_cleanly(iperf3_server_namespaces, tmp_path, to_group):
    """SIGINT to the script, or to its whole process group as a terminal's Ctrl-C does."""
    client_ns, _ = iperf3_server_namespaces
    out = tmp_path / "interrupted"
    proc = subprocess.Popen(
        ["ip", "netns", "exec", client_ns, str(RECORD_SH), "vcli", SERVER_ADDRESS, "--iperf3", "30", "-o", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    wait_for_staged_file(out, "iperf3.json")
    time.sleep(1.0)
    if to_group:
        os.killpg(proc.pid, signal.SIGINT)
    else:
        proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=20)
    assert proc.returncode == 0, stderr
    meta = json.loads((out / "meta.json").read_text())
    assert meta["stop_reason"] == "SIGINT"
    assert meta["iperf3"]["stopped_early"] is True
    assert meta["trace_complete"] is True
    assert meta["capture"]["captured"] == pcap_packet_count(out / "trace.pcap") > 100
    assert meta["capture"]["unread_at_stop"] == 0
    assert processes_holding_files_under(tmp_path) == []


@needs_root
def test_record_sh_probe_writes_tcp_probe_csv_and_removes_its_trace_instance(iperf3_server_namespaces, tmp_path):
    client_ns, _ = iperf3_server_namespaces
    out = tmp_path / "probe"
    result = record_in(client_ns, "vcli", SERVER_ADDRESS, "--iperf3", "1", "--cca", "cubic", "--probe", "-o", str(out))
    assert result.returncode == 0, result.stderr
    lines = (out / "probe.csv").read_text().splitlines()
    header = lines[0].split(",")
    assert header[:3] == ["time_s", "src", "dst"] and "snd_cwnd_segments" in header and "srtt_us" in header
    sender_rows = [
        dict(zip(header, line.split(","))) for line in lines[1:] if line.split(",")[1] == f"{SERVER_ADDRESS}:5201"
    ]
    assert len(sender_rows) > 100
    assert max(int(row["snd_cwnd_segments"]) for row in sender_rows) > 10
    assert json.loads((out / "meta.json").read_text())["probe"]["rows"] == len(lines) - 1
    # wall-clock times (the tai trace clock), within the capture's span: the analysis lines them up
    times = [float(line.split(",")[0]) for line in lines[1:]]
    assert abs(min(times) - time.time()) < 600
    instances = Path("/sys/kernel/tracing/instances")
    if instances.is_dir():
        assert not [p for p in instances.iterdir() if p.name.startswith("record-sh-")]


# --- errors, all reported before anything starts -------------------------------------------


def run_record(*args: str, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([str(RECORD_SH), *args], capture_output=True, text=True, timeout=30, env=env or MAWK_ENV)


def test_record_sh_help_exits_zero_and_names_options():
    result = run_record("-h")
    assert result.returncode == 0
    for option in ("-o DIR", "-t SECONDS", "--iperf3", "--cca", "--probe"):
        assert option in result.stdout


def test_record_sh_run_with_sh_says_it_needs_bash():
    result = subprocess.run(["sh", str(RECORD_SH), "lo", "127.0.0.1"], capture_output=True, text=True, timeout=30)
    assert result.returncode == 2
    assert "needs bash" in result.stderr


@needs_root
def test_record_sh_rejects_unknown_interface():
    result = run_record("no-such-if0", "192.0.2.1", "-t", "1")
    assert result.returncode == 2
    assert "unknown interface 'no-such-if0'" in result.stderr and "lo" in result.stderr


@needs_root
@pytest.mark.parametrize(
    "address",
    [
        "256.1.1.1",
        "192.0.2",
        "1.2.3.4.5",
        "2001:db8::1::2",
        "2001:db8:::1",
        "12345::1",
        "1:2:3:4:5:6:7:8:9",
        "example.org",
        "::ffff:1.2.3.256",
    ],
)
def test_record_sh_rejects_malformed_ip(address):
    result = run_record("lo", address, "-t", "1")
    assert result.returncode == 2
    assert f"'{address}' is not an IPv4 or IPv6 address" in result.stderr


@needs_root
@pytest.mark.parametrize(
    "address", ["192.0.2.1", "2001:db8::1", "::1", "fe80::1%lo", "::ffff:192.0.2.1", "1:2:3:4:5:6:7:8"]
)
def test_record_sh_accepts_wellformed_ip_and_then_checks_the_cca(address):
    # the CCA is checked after the address: reaching its message proves the address passed
    result = run_record("lo", address, "--iperf3", "1", "--cca", "no-such-cca")
    assert result.returncode == 2
    assert "unknown congestion control 'no-such-cca'" in result.stderr


@needs_root
def test_record_sh_rejects_unknown_cca_listing_available_ones():
    available = Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text().split()
    result = run_record("lo", "127.0.0.1", "--iperf3", "1", "--cca", "vegasx")
    assert result.returncode == 2
    assert "unknown congestion control 'vegasx'" in result.stderr
    assert all(name in result.stderr for name in available)


@needs_root
def test_record_sh_rejects_cca_without_iperf3():
    result = run_record("lo", "127.0.0.1", "--cca", "cubic", "-t", "1")
    assert result.returncode == 2 and "needs --iperf3" in result.stderr


@needs_root
def test_record_sh_without_root_or_cap_net_raw_says_so(tmp_path):
    if shutil.which("setpriv") is None:
        pytest.skip("setpriv (util-linux) missing")
    # The unprivileged user must be able to reach the script: the clone (and pytest's tmp_path)
    # may sit in a private 0700 directory, so run a copy from a world-readable one.
    with tempfile.TemporaryDirectory() as public:
        os.chmod(public, 0o755)
        script = Path(public) / RECORD_SH.name
        shutil.copy2(RECORD_SH, script)
        result = subprocess.run(
            [
                "setpriv",
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                "--inh-caps=-all",
                str(script),
                "lo",
                "127.0.0.1",
                "-t",
                "1",
                "-o",
                str(tmp_path / "x"),
            ],
            capture_output=True,
            text=True,
            timeout=30,
        )
    assert result.returncode == 2
    assert "needs root or CAP_NET_RAW" in result.stderr
    assert not (tmp_path / "x").exists()


@needs_root
def test_record_sh_without_tcpdump_says_how_to_install_it(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for directory in ("/usr/local/bin", "/usr/bin", "/bin", "/usr/sbin", "/sbin"):
        for tool in Path(directory).iterdir() if Path(directory).is_dir() else []:
            target = bin_dir / tool.name
            if tool.name != "tcpdump" and not target.exists() and not target.is_symlink():
                target.symlink_to(tool)
    result = run_record("lo", "127.0.0.1", "-t", "1", env={**os.environ, "PATH": str(bin_dir)})
    assert result.returncode == 2
    assert "tcpdump is not installed" in result.stderr


@needs_root
def test_record_sh_probe_without_iperf3_keeps_every_connection_with_the_server(iperf3_server_namespaces, tmp_path):
    """A transfer record.sh did not start (any port) is still in probe.csv, other hosts are not."""
    client_ns, _ = iperf3_server_namespaces
    out = tmp_path / "probe-any-port"
    recorder = subprocess.Popen(
        [
            "ip",
            "netns",
            "exec",
            client_ns,
            str(RECORD_SH),
            "vcli",
            SERVER_ADDRESS,
            "--probe",
            "-t",
            "3",
            "-o",
            str(out),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    wait_for_staged_file(out, "tcpdump.log")
    time.sleep(0.5)
    sh("ip", "netns", "exec", client_ns, "iperf3", "-c", SERVER_ADDRESS, "-R", "-t", "1")
    _, stderr = recorder.communicate(timeout=30)
    assert recorder.returncode == 0, stderr
    rows = [line.split(",") for line in (out / "probe.csv").read_text().splitlines()[1:]]
    assert sum(1 for row in rows if row[1] == f"{SERVER_ADDRESS}:5201") > 100
    assert all(SERVER_ADDRESS in row[1] or SERVER_ADDRESS in row[2] for row in rows)


@needs_root
def test_record_sh_reports_a_failed_iperf3_transfer_and_still_saves_the_trace(iperf3_server_namespaces, tmp_path):
    client_ns, _ = iperf3_server_namespaces
    out = tmp_path / "no-server"
    result = record_in(client_ns, "vcli", SERVER_ADDRESS, "--iperf3", "1", "-p", "5999", "-o", str(out))
    assert result.returncode == 1
    assert "iperf3 exited with status" in result.stderr and "transfer failed" in result.stderr
    meta = json.loads((out / "meta.json").read_text())
    assert meta["trace_complete"] is True and "connect" in meta["iperf3"]["error"]
    assert "error" in json.loads((out / "iperf3.json").read_text())


# --- durations, addresses, files and processes a privileged run must get right -------------


@needs_root
def test_record_sh_t_5_captures_for_5_seconds_with_mawk(iperf3_server_namespaces, tmp_path):
    """mawk printed 5e9 ns as 2147483647: `-t 30` (and -t 3, -t 5) stopped after 2.1 s."""
    assert shutil.which("mawk"), "Debian's default awk must be present for this test"
    client_ns, _ = iperf3_server_namespaces
    out = tmp_path / "five-seconds"
    started = time.monotonic()
    result = record_in(client_ns, "vcli", SERVER_ADDRESS, "--iperf3", "10", "-t", "5", "-o", str(out))
    elapsed_s = time.monotonic() - started
    assert result.returncode == 0, result.stderr
    meta = json.loads((out / "meta.json").read_text())
    assert meta["stop_reason"] == "duration"
    assert 5.0 <= elapsed_s < 10
    assert 4.5 <= capture_span_s(out / "trace.pcap") <= 6.0


@needs_root
@pytest.mark.parametrize("duration", ["", "0", "0.0", "-1", "abc", "1e3", "5d", "1.", ".5", "10000000000", "700000"])
def test_record_sh_refuses_a_duration_it_cannot_honour(duration, tmp_path):
    result = run_record("lo", "127.0.0.1", "-t", duration, "-o", str(tmp_path / "x"))
    assert result.returncode == 2
    assert (
        f"-t needs a duration such as 30, 1.5, 500ms or 2m (positive, at most 604800 s), got '{duration}'"
        in result.stderr
    )
    assert not (tmp_path / "x").exists()


@needs_root
@pytest.mark.parametrize("duration,expected_s", [("1", 1.0), ("0.5", 0.5), ("500ms", 0.5), ("1.5s", 1.5)])
def test_record_sh_stops_after_the_duration_written_with_a_unit(duration, expected_s, tmp_path):
    started = time.monotonic()
    result = run_record("lo", "127.0.0.1", "-t", duration, "-o", str(tmp_path / "x"))
    elapsed_s = time.monotonic() - started
    assert result.returncode == 0, result.stderr
    assert json.loads((tmp_path / "x" / "meta.json").read_text())["stop_reason"] == "duration"
    assert expected_s <= elapsed_s < expected_s + 3.0


@needs_root
@pytest.mark.parametrize("address", ["010.077.000.002", "192.0.2.01", "00.0.0.1"])
def test_record_sh_rejects_ipv4_octets_with_leading_zeros(address):
    """tcpdump reads 010.077.000.002 as 10.77.0.2, iperf3 as octal 8.63.0.2: neither is safe."""
    result = run_record("lo", address, "-t", "1")
    assert result.returncode == 2
    assert f"'{address}' is not an IPv4 or IPv6 address" in result.stderr


@needs_root
def test_record_sh_as_root_never_follows_a_symlink_planted_in_the_output_folder(tmp_path):
    """An unprivileged user owning DIR plants links at every name record.sh writes, old and new."""
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    out = tmp_path / "shared-folder"
    out.mkdir()
    for name in ("meta.json.part", "trace.pcap.part.tmp", "probe.raw", "iperf3.stderr.part"):
        (out / name).symlink_to(victim)
    result = run_record("lo", "127.0.0.1", "-t", "0.5", "-o", str(out))
    assert result.returncode == 0, result.stderr
    assert victim.read_text() == "precious\n"
    assert json.loads((out / "meta.json").read_text())["trace_complete"] is True
    assert not (out / "meta.json").is_symlink() and not (out / "trace.pcap").is_symlink()
    assert not list(out.glob(".record.sh-*")), "the private directory is removed after a run"


@needs_root
@pytest.mark.parametrize(
    "name", ["trace.pcap", "trace.pcap.part", "meta.json", "tcpdump.log", "iperf3.json", "probe.csv"]
)
def test_record_sh_refuses_a_folder_holding_an_output_name_even_as_a_symlink(name, tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    out = tmp_path / "d"
    out.mkdir()
    (out / name).symlink_to(victim)
    result = run_record("lo", "127.0.0.1", "-t", "0.5", "-o", str(out))
    assert result.returncode == 2 and f"'{out.resolve()}/{name}' exists" in result.stderr
    assert victim.read_text() == "precious\n"
    assert sorted(p.name for p in out.iterdir()) == [name]


@needs_root
def test_record_sh_killed_with_sigkill_takes_tcpdump_and_iperf3_with_it(iperf3_server_namespaces, tmp_path):
    """SIGKILL runs no trap: the children must die by themselves, and the next run says what is left."""
    client_ns, _ = iperf3_server_namespaces
    out = tmp_path / "killed"
    proc = subprocess.Popen(
        ["ip", "netns", "exec", client_ns, str(RECORD_SH), "vcli", SERVER_ADDRESS, "--iperf3", "30", "-o", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=MAWK_ENV,
    )
    wait_for_staged_file(out, "iperf3.json")
    time.sleep(1.0)
    proc.kill()
    proc.communicate(timeout=10)
    deadline = time.monotonic() + 5
    while processes_holding_files_under(tmp_path) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert processes_holding_files_under(tmp_path) == []
    stage = next(out.glob(".record.sh-*"))
    assert pcap_packet_count(stage / "trace.pcap.part") > 100, "tcpdump stopped cleanly on SIGTERM"
    again = record_in(client_ns, "vcli", SERVER_ADDRESS, "-t", "0.5", "-o", str(out))
    assert again.returncode == 0, again.stderr
    assert f"was killed before it finished; its partial files are in {stage.resolve()}" in again.stderr


def _public_copy_of_record_sh(public: Path) -> Path:
    script = public / RECORD_SH.name
    shutil.copy2(RECORD_SH, script)
    return script


@needs_root
@pytest.mark.parametrize(
    "kind,message",
    [
        ("a file", "-o '{out}' exists and is not a directory"),
        ("a dangling symlink", "-o '{out}' is a symlink to nothing (dangling)"),
        ("inside a folder only root may write", "cannot create output directory '{out}': Permission denied"),
        ("a folder only root may write", "cannot write into output directory '{out}': permission denied"),
    ],
)
def test_record_sh_output_folder_it_cannot_use_is_one_line_and_status_2(kind, message, tmp_path):
    if shutil.which("setpriv") is None:
        pytest.skip("setpriv (util-linux) missing")
    with tempfile.TemporaryDirectory() as public:
        os.chmod(public, 0o755)
        out, prefix = Path(public) / "out", []
        if kind == "a file":
            out.write_text("taken\n")
        elif kind == "a dangling symlink":
            out.symlink_to(Path(public) / "never-made")
        else:
            locked = Path(public) / "locked"
            locked.mkdir(mode=0o555)
            out = locked / "out" if kind.startswith("inside") else locked
            # a user with CAP_NET_RAW only, so that record.sh gets as far as the folder
            prefix = [
                "setpriv",
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                "--inh-caps=+net_raw",
                "--ambient-caps=+net_raw",
            ]
        script = _public_copy_of_record_sh(Path(public))
        result = subprocess.run(
            [*prefix, str(script), "lo", "127.0.0.1", "-t", "0.5", "-o", str(out)],
            capture_output=True,
            text=True,
            timeout=30,
            env=MAWK_ENV,
        )
    assert result.returncode == 2, result.stderr
    assert result.stderr.splitlines() == [f"record.sh: error: {message.format(out=out)}"]


def _flood_loopback_with_udp(seconds: float) -> None:
    import socket

    sender = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        sender.sendto(b"x" * 500, ("127.0.0.1", 9))
        time.sleep(0.001)
    sender.close()


@needs_root
def test_record_sh_on_a_full_disk_says_so_in_one_line_and_publishes_no_meta_json(tmp_path):
    """tcpdump does not check its writes: a cut trace must not be published as a finished run."""
    import threading

    disk = tmp_path / "tiny"
    disk.mkdir()
    sh("mount", "-t", "tmpfs", "-o", "size=64k", "hdrecord", str(disk))
    try:
        out = disk / "run"
        flood = threading.Thread(target=_flood_loopback_with_udp, args=(2.5,))
        proc = subprocess.Popen(
            [str(RECORD_SH), "lo", "127.0.0.1", "-t", "3", "-o", str(out)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=MAWK_ENV,
        )
        wait_for_staged_file(out, "tcpdump.log")
        flood.start()
        _, err = proc.communicate(timeout=60)
        flood.join()
        assert proc.returncode == 1, err
        lines = [line for line in err.splitlines() if not line.startswith("record.sh: capturing on")]
        assert (
            len(lines) == 1
            and lines[0].startswith("record.sh: error: ")
            and "No space left on device; the partial files are in" in lines[0]
        ), err
        left = sorted(p.name for p in out.iterdir())
        assert "meta.json" not in left and "trace.pcap" not in left and "trace.pcap.part" in left, left
    finally:
        sh("umount", str(disk))


@needs_root
def test_record_sh_sighup_stops_the_capture_as_cleanly_as_ctrl_c(tmp_path):
    out = tmp_path / "hup"
    proc = subprocess.Popen(
        [str(RECORD_SH), "lo", "127.0.0.1", "-o", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=MAWK_ENV,
    )
    wait_for_staged_file(out, "tcpdump.log")
    time.sleep(1.0)
    proc.send_signal(signal.SIGHUP)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    meta = json.loads((out / "meta.json").read_text())
    assert meta["stop_reason"] == "SIGHUP" and meta["trace_complete"] is True
    assert processes_holding_files_under(tmp_path) == []


@needs_root
def test_record_sh_whose_stderr_reader_has_gone_still_finishes_the_capture(tmp_path):
    """`record.sh ... 2>&1 | head -1`: the messages after the first line go nowhere, the run goes on."""
    out = tmp_path / "piped"
    result = subprocess.run(
        ["bash", "-c", f"'{RECORD_SH}' lo 127.0.0.1 -t 1 -o '{out}' 2>&1 | head -1; exit ${{PIPESTATUS[0]}}"],
        capture_output=True,
        text=True,
        timeout=30,
        env=MAWK_ENV,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith("record.sh: capturing on lo")
    assert json.loads((out / "meta.json").read_text())["trace_complete"] is True


# One table for every tool's durations: (as written, seconds; None = refused). record.sh takes
# fractions of a second; spline-testbed only whole seconds (iperf3's -t), the rest alike.
DURATIONS = [
    ("30", 30.0),
    ("30s", 30.0),
    ("2m", 120.0),
    ("2min", 120.0),
    ("3000ms", 3.0),
    ("1.5", 1.5),
    ("500ms", 0.5),
    ("604800", 604800.0),
    ("", None),
    ("0", None),
    ("0.0", None),
    ("-1", None),
    ("abc", None),
    ("5d", None),
    ("1e3", None),
    (".5", None),
    ("1.", None),
    ("604801", None),
    ("10000000000", None),
]


def record_sh_duration_ns(text: str):
    """record.sh's own duration_to_ns, run alone."""
    script = f'source <(sed -n "/^duration_to_ns()/,/^}}/p" "{RECORD_SH}"); MAX_DURATION_S=604800; duration_to_ns "$1"'
    result = subprocess.run(["bash", "-c", script, "_", text], capture_output=True, text=True, timeout=10)
    return int(result.stdout) if result.returncode == 0 else None


@pytest.mark.parametrize("text,seconds", DURATIONS)
def test_record_sh_and_spline_testbed_read_a_duration_by_the_same_rules(text, seconds):
    from spline_analysis.testbed.errors import TestbedError
    from spline_analysis.testbed.matrix import parse_duration_s

    assert record_sh_duration_ns(text) == (None if seconds is None else round(seconds * 1e9))
    if seconds is None or not seconds.is_integer():
        with pytest.raises(TestbedError):
            parse_duration_s(text)
    else:
        assert parse_duration_s(text) == seconds
