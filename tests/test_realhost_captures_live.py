"""Captures made the way real hosts make them, against the router's own drop counter.

sender -- router -- receiver in three namespaces; the router drops 2% of the data at random
(iptables statistic, FORWARD chain: its counter is the truth, in segments, because the
sender's TSO/GSO is off). The receiver's veth has GRO on, as every NIC has by default, so
tcpdump there sees coalesced super-segments; the router captures with `-i any`, so it sees
every packet twice. Needs root, iperf3, tcpdump, iptables; skips otherwise.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from spline_analysis._core.pipeline import analyze

NEEDED = ("ip", "tc", "ethtool", "iptables", "iperf3", "tcpdump")
pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or not all(shutil.which(t) for t in NEEDED),
    reason="needs root, iproute2, ethtool, iptables, iperf3, tcpdump",
)
LOSS = 0.02
SECONDS = 4


def sh(*argv: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(list(argv), capture_output=True, text=True, check=check, timeout=60)


def in_ns(ns: str, *argv: str, check: bool = True) -> subprocess.CompletedProcess:
    return sh("ip", "netns", "exec", ns, *argv, check=check)


@pytest.fixture(scope="module")
def transfer(tmp_path_factory):
    """One 4 s cubic transfer at 100 Mbit/s; yields (folder, router drops of data segments)."""
    out = tmp_path_factory.mktemp("realhost")
    tag = f"rhl{os.getpid() % 100000}"
    snd, rtr, rcv = f"{tag}-s", f"{tag}-r", f"{tag}-c"
    captures = []
    try:
        for ns in (snd, rtr, rcv):
            sh("ip", "netns", "add", ns)
            sh("ip", "-n", ns, "link", "set", "lo", "up")
        sh("ip", "link", "add", "s0", "netns", snd, "type", "veth", "peer", "name", "r0", "netns", rtr)
        sh("ip", "link", "add", "r1", "netns", rtr, "type", "veth", "peer", "name", "c0", "netns", rcv)
        for ns, dev, address in (
            (snd, "s0", "10.71.1.1/24"),
            (rtr, "r0", "10.71.1.2/24"),
            (rtr, "r1", "10.71.2.2/24"),
            (rcv, "c0", "10.71.2.1/24"),
        ):
            sh("ip", "-n", ns, "addr", "add", address, "dev", dev)
            sh("ip", "-n", ns, "link", "set", dev, "up")
            in_ns(ns, "ethtool", "-K", dev, "tso", "off", "gso", "off", "gro", "off", check=False)
        in_ns(rcv, "ethtool", "-K", "c0", "gro", "on")
        sh("ip", "-n", snd, "route", "add", "default", "via", "10.71.1.2")
        sh("ip", "-n", rcv, "route", "add", "default", "via", "10.71.2.2")
        in_ns(rtr, "sysctl", "-qw", "net.ipv4.ip_forward=1")
        in_ns(
            rtr,
            "tc",
            "qdisc",
            "add",
            "dev",
            "r1",
            "root",
            "tbf",
            "rate",
            "100mbit",
            "burst",
            "100kb",
            "limit",
            "3000000",
        )
        in_ns(
            rtr,
            "iptables",
            "-A",
            "FORWARD",
            "-i",
            "r0",
            "-m",
            "statistic",
            "--mode",
            "random",
            "--probability",
            str(LOSS),
            "-j",
            "DROP",
        )
        server = subprocess.Popen(
            ["ip", "netns", "exec", rcv, "iperf3", "-s", "-1"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        for ns, argv, name in ((rcv, ["-i", "c0"], "receiver.pcap"), (rtr, ["-i", "any"], "router-any.pcap")):
            captures.append(
                subprocess.Popen(
                    ["ip", "netns", "exec", ns, "tcpdump", *argv, "-n", "-s", "128", "-w", str(out / name)],
                    stderr=subprocess.PIPE,
                    text=True,
                )
            )
        time.sleep(1.5)
        client = in_ns(snd, "iperf3", "-c", "10.71.2.1", "-t", str(SECONDS), "-C", "cubic", "-J")
        (out / "iperf3-sender.json").write_text(client.stdout)
        time.sleep(0.5)
        for capture in captures:
            capture.send_signal(2)
            capture.communicate(timeout=20)
        server.wait(timeout=20)
        rules = in_ns(rtr, "iptables", "-L", "FORWARD", "-v", "-n", "-x").stdout
        drops = int(next(line.split()[0] for line in rules.splitlines() if "DROP" in line))
        qdisc = in_ns(rtr, "tc", "-s", "qdisc", "show", "dev", "r1").stdout
        queue_drops = int(re.search(r"dropped (\d+)", qdisc).group(1))
        retransmits = json.loads(client.stdout)["end"]["sum_sent"]["retransmits"]
        yield out, drops + queue_drops, retransmits
    finally:
        for capture in captures:
            if capture.poll() is None:
                capture.kill()
        for ns in (snd, rtr, rcv):
            sh("ip", "netns", "del", ns, check=False)


def data_direction(path: Path):
    document = analyze(path).to_json()
    main = max(document["directions"], key=lambda d: d["payload_bytes"])
    return document, main


def test_receiver_capture_with_gro_counts_segments_and_loss_within_3_percent(transfer):
    out, dropped, _ = transfer
    document, d = data_direction(out / "receiver.pcap")
    assert dropped > 200
    assert d["super_segment_frames"] > 0 and d["data_segments"] > d["data_packets"], "GRO did not coalesce"
    assert abs(d["lost_segments"] - dropped) <= 0.03 * dropped, (d["lost_segments"], dropped)
    codes = {w["code"] for w in document["warnings"]}
    assert "super_segments" in codes
    assert codes <= {"super_segments"}, document["warnings"]


def test_router_capture_on_any_interface_is_not_read_as_retransmissions(transfer):
    out, dropped, retransmits = transfer
    document, d = data_direction(out / "router-any.pcap")
    assert d["duplicate_frames"] > 0.9 * d["data_packets"]
    assert abs(d["forwarded_drops"] - dropped) <= 0.01 * dropped, (d["forwarded_drops"], dropped)
    assert abs(d["lost_segments"] - dropped) <= 0.03 * dropped, (d["lost_segments"], dropped)
    assert d["retransmissions"] <= 1.03 * retransmits
    codes = {w["code"] for w in document["warnings"]}
    assert {"duplicate_frames", "forwarding_drops"} <= codes


def without_first_records(source: Path, target: Path, skip: int) -> None:
    """Copy a pcap without its first `skip` records: a capture started mid-transfer."""
    raw = source.read_bytes()
    offset, kept = 24, bytearray(raw[:24])
    for _ in range(skip):
        offset += 16 + int.from_bytes(raw[offset + 8 : offset + 12], "little")
    kept += raw[offset:]
    target.write_bytes(bytes(kept))


def test_receiver_capture_started_mid_transfer_reads_the_segment_size_through_gro(transfer, tmp_path):
    out, _, _ = transfer
    _, whole = data_direction(out / "receiver.pcap")
    without_first_records(out / "receiver.pcap", tmp_path / "mid.pcap", 2000)
    document, d = data_direction(tmp_path / "mid.pcap")
    assert d["mss"] == whole["mss"]
    assert d["super_segment_frames"] > 0 and d["data_segments"] > d["data_packets"]
    assert 0 < d["lost_segments"] <= whole["lost_segments"]
    assert {"no_handshake", "super_segments"} <= {w["code"] for w in document["warnings"]}
