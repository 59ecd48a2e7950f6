#!/usr/bin/env python3
"""Run real TCP transfers through a shaped, lossy path between network namespaces.

    sender ns --veth-- router ns --veth-- receiver ns
                       tbf (rate, queue) on the router's egress to the receiver
                       iptables statistic DROP in the router's FORWARD chain

No netem is needed (this host has none): the path has a rate, a tail-drop queue
and random loss, and a propagation delay of about zero, so the RTT is the queueing
delay a CCA builds. Offloads are off on every veth, so a drop is one MTU packet.

    python3 module/netns_bench.py --ccas spline,cubic,bbr --rate-mbit 20 --loss-pct 2

registers module/spline.bpf.o when `spline` is not available yet (and unregisters
it afterwards), prints one line per run and a JSON summary as the last line.
Root only. Everything it creates is removed on exit, also on failure.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

MODULE_DIR = Path(__file__).resolve().parent
BPF_OBJ = MODULE_DIR / "spline.bpf.o"
SUBNET_A = "10.77.1"
SUBNET_B = "10.77.2"
RECEIVER_IP = f"{SUBNET_B}.2"


def sh(*args: str, check: bool = True, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(list(args), check=check, capture_output=True, text=True, **kw)


def available_ccas() -> list[str]:
    return Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text().split()


def struct_ops_registered(name: str = "spline") -> bool:
    out = sh("bpftool", "struct_ops", "list", check=False).stdout
    return any(line.split()[1:2] == [name] for line in out.splitlines() if line.strip())


def register_spline_bpf() -> None:
    if not BPF_OBJ.exists():
        sh("make", "-s", "-C", str(MODULE_DIR), "bpf")
    sh("bpftool", "struct_ops", "register", str(BPF_OBJ))


def unregister_spline_bpf() -> None:
    sh("bpftool", "struct_ops", "unregister", "name", "spline", check=False)


class Path3:
    """Three namespaces joined by two veth pairs; removed by close()."""

    def __init__(self, rate_mbit: float, loss_pct: float, queue_bytes: int, tag: str | None = None):
        tag = tag or f"spl-{os.getpid()}"
        self.snd, self.rtr, self.rcv = f"{tag}-s", f"{tag}-r", f"{tag}-d"
        self.procs: list[subprocess.Popen] = []
        self.rate_mbit, self.loss_pct, self.queue_bytes = rate_mbit, loss_pct, queue_bytes
        try:
            self._build()
        except BaseException:
            self.close()
            raise

    def ns(self, name: str, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        return sh("ip", "netns", "exec", name, *args, check=check)

    def _build(self) -> None:
        for n in (self.snd, self.rtr, self.rcv):
            sh("ip", "netns", "add", n)
            self.ns(n, "ip", "link", "set", "lo", "up")
        sh("ip", "link", "add", "s0", "netns", self.snd, "type", "veth", "peer", "r0", "netns", self.rtr)
        sh("ip", "link", "add", "r1", "netns", self.rtr, "type", "veth", "peer", "d0", "netns", self.rcv)
        for n, dev, addr in (
            (self.snd, "s0", f"{SUBNET_A}.1/24"),
            (self.rtr, "r0", f"{SUBNET_A}.2/24"),
            (self.rtr, "r1", f"{SUBNET_B}.1/24"),
            (self.rcv, "d0", f"{SUBNET_B}.2/24"),
        ):
            self.ns(n, "ip", "addr", "add", addr, "dev", dev)
            self.ns(n, "ip", "link", "set", dev, "up")
            self.ns(n, "ethtool", "-K", dev, "tso", "off", "gso", "off", "gro", "off", check=False)
        self.ns(self.snd, "ip", "route", "add", "default", "via", f"{SUBNET_A}.2")
        self.ns(self.rcv, "ip", "route", "add", "default", "via", f"{SUBNET_B}.1")
        self.ns(self.rtr, "sysctl", "-qw", "net.ipv4.ip_forward=1")
        # bottleneck: tbf on the router's egress to the receiver
        burst = max(16000, int(self.rate_mbit * 1e6 / 8 / 250) + 3000)
        self.ns(
            self.rtr,
            "tc",
            "qdisc",
            "add",
            "dev",
            "r1",
            "root",
            "tbf",
            "rate",
            f"{self.rate_mbit}mbit",
            "burst",
            str(burst),
            "limit",
            str(self.queue_bytes),
        )
        if self.loss_pct > 0:
            self.ns(
                self.rtr,
                "iptables",
                "-A",
                "FORWARD",
                "-i",
                "r0",
                "-o",
                "r1",
                "-m",
                "statistic",
                "--mode",
                "random",
                "--probability",
                f"{self.loss_pct / 100:.4f}",
                "-j",
                "DROP",
            )

    def start(self, ns_name: str, *args: str, **kw) -> subprocess.Popen:
        p = subprocess.Popen(["ip", "netns", "exec", ns_name, *args], **kw)
        self.procs.append(p)
        return p

    def close(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(timeout=3)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        self.procs.clear()
        for n in (self.snd, self.rtr, self.rcv):
            sh("ip", "netns", "del", n, check=False)


def run_iperf(path: Path3, cca: str, seconds: float, port: int = 5201, pcap: Path | None = None) -> dict:
    server = path.start(
        path.rcv, "iperf3", "-s", "-1", "-p", str(port), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    dump = None
    if pcap is not None:
        dump = path.start(
            path.rcv,
            "tcpdump",
            "-i",
            "d0",
            "-s",
            "128",
            "-U",
            "-w",
            str(pcap),
            "tcp",
            "port",
            str(port),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    time.sleep(0.5)
    try:
        out = path.ns(
            path.snd, "iperf3", "-c", RECEIVER_IP, "-p", str(port), "-C", cca, "-t", str(seconds), "-J", check=False
        )
    finally:
        server.wait(timeout=10) if server.poll() is None else None
        if dump is not None:
            time.sleep(0.3)
            dump.send_signal(signal.SIGINT)
            dump.wait(timeout=5)
    data = json.loads(out.stdout)
    if "error" in data:
        raise RuntimeError(f"iperf3 -C {cca}: {data['error']}")
    end = data["end"]
    sent = end["sum_sent"]
    return {
        "cca": cca,
        "sender_tcp_congestion": end.get("sender_tcp_congestion"),
        "throughput_bps": sent["bits_per_second"],
        "received_bps": end["sum_received"]["bits_per_second"],
        "retransmits": sent.get("retransmits"),
        "bytes": sent["bytes"],
        "mean_rtt_ms": end["streams"][0]["sender"].get("mean_rtt", 0) / 1000.0,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ccas", default="spline,cubic,bbr")
    ap.add_argument("--rate-mbit", type=float, default=20)
    ap.add_argument("--loss-pct", type=float, default=2)
    ap.add_argument("--queue-bytes", type=int, default=100000)
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--pcap-dir", type=Path, help="capture each run at the receiver (snaplen 128)")
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("needs root", file=sys.stderr)
        return 2
    for tool in ("iperf3", "tc", "iptables", "bpftool", "ethtool"):
        if not shutil.which(tool):
            print(f"missing {tool}", file=sys.stderr)
            return 2
    ccas = args.ccas.split(",")
    registered_here = False
    results = []
    try:
        if "spline" in ccas and "spline" not in available_ccas():
            register_spline_bpf()
            registered_here = True
        for run in range(args.runs):
            for cca in ccas:
                path = Path3(args.rate_mbit, args.loss_pct, args.queue_bytes)
                try:
                    pcap = None
                    if args.pcap_dir:
                        args.pcap_dir.mkdir(parents=True, exist_ok=True)
                        pcap = args.pcap_dir / f"{cca}-run{run + 1}.pcap"
                    r = run_iperf(path, cca, args.seconds, pcap=pcap)
                finally:
                    path.close()
                r["run"] = run + 1
                results.append(r)
                print(
                    f"run {run + 1} {cca:7s} {r['throughput_bps'] / 1e6:7.2f} Mbit/s sent, "
                    f"{r['received_bps'] / 1e6:7.2f} received, {r['retransmits']} retransmits, "
                    f"mean RTT {r['mean_rtt_ms']:.1f} ms",
                    flush=True,
                )
    finally:
        if registered_here:
            unregister_spline_bpf()
    print(
        json.dumps(
            {
                "rate_mbit": args.rate_mbit,
                "loss_pct": args.loss_pct,
                "queue_bytes": args.queue_bytes,
                "seconds": args.seconds,
                "runs": results,
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
