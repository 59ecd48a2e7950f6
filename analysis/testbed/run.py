"""One testbed run: build sender -> router -> receiver, shape, drop, transfer, capture, count.

Topology (each box a network namespace of our own, named `<prefix>-snd` etc.):

    sender snd0 10.201.1.1 --veth-- rtr-s 10.201.1.2 router rtr-r 10.201.2.1 --veth-- rcv0 10.201.2.2 receiver
                                                       egress rtr-r: [netem] + tbf rate
                                                       FORWARD: per-flow random drop

Flows with the same CCA and start time form a client group: one `iperf3 -c -P N` in the
sender (data flows sender -> receiver, `-C` picks the CCA) whose N data connections bind
consecutive client ports (`--cport`), to one `iperf3 -s` in the receiver, so the N flows
start together as the studies' `iperf3 -P` did (one process per flow started them over
8-20 s of a 10 s run under QEMU TCG). Client ports run from FIRST_CLIENT_PORT over the
groups in order; each flow keeps its own row, client port, counters and figures (iperf3's
per-stream figures, matched by port). Ground truth per flow, data segments only
(IP length >= DATA_SEGMENT_MIN_IP_BYTES, so handshakes and pure ACKs are never dropped):
  random drops   = packets of the router's statistic DROP rule for that flow,
  forwarded      = packets that passed it (they enter the tbf queue),
  arrived        = packets the receiver's INPUT chain saw,
  queue drops    = forwarded - arrived (tbf overflow on the router),
plus the qdisc's own drop count and the sender's TCP_INFO retransmissions (iperf3 JSON).
"""

from __future__ import annotations

import json
import re
import signal
import time
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from . import netns
from .errors import TestbedError
from .matrix import RunSpec

SENDER_ADDRESS = "10.201.1.1"
ROUTER_SENDER_SIDE_ADDRESS = "10.201.1.2"
ROUTER_RECEIVER_SIDE_ADDRESS = "10.201.2.1"
RECEIVER_ADDRESS = "10.201.2.2"
FIRST_SERVER_PORT = 5201
FIRST_CLIENT_PORT = 40001
DATA_SEGMENT_MIN_IP_BYTES = 100  # above any SYN or pure ACK (<= 80 bytes), below any full segment
ROUTER_QUEUE_MS = 100.0  # tbf queue: 100 ms at the rate
CAPTURE_BUFFER_KIB = 8192
IPERF3_INTERVAL_S = 0.1  # per-interval throughput and cwnd, as the seed studies used
IPERF3_GRACE_S = 60.0  # connect + end-of-test exchange beyond the duration (a full
# router queue drops handshakes: backoff 1+2+4+8 s, slower under TCG)
CAPTURE_TAIL_S = 0.3  # keep capturing briefly after iperf3 ends (FIN exchange)


@dataclass
class FlowRecord:
    """What one flow's run left behind: ports, iperf3 figures and router counters."""

    flow: int
    cca: str
    client_port: int
    server_port: int
    iperf3_json: Path
    iperf3_exit_status: int
    iperf3_error: Optional[str]
    iperf3_sent_bytes: Optional[int]
    iperf3_received_bytes: Optional[int]
    iperf3_sender_bps: Optional[float]
    iperf3_receiver_bps: Optional[float]
    tcpinfo_retransmissions: Optional[int]
    cca_reported: Optional[str]
    router_random_drops: int
    router_forwarded: int
    receiver_arrived: int
    start_s: float = 0.0  # after the run's first flow started
    # the receiving iperf3's intervals: (start_s, end_s) from this flow's own start, bytes received
    receiver_intervals: List[Tuple[float, float, int]] = field(default_factory=list)

    @property
    def router_queue_drops(self) -> int:
        return max(0, self.router_forwarded - self.receiver_arrived)

    @property
    def router_drops(self) -> int:
        return self.router_random_drops + self.router_queue_drops


@dataclass
class RunRecord:
    """A finished run: its spec, files and ground truth."""

    spec: RunSpec
    run_dir: Path
    netem_applied: bool
    sender_pcap: Path
    receiver_pcap: Path
    sender_capture: Dict[str, Optional[int]]
    receiver_capture: Dict[str, Optional[int]]
    qdisc_drops: int
    flows: List[FlowRecord] = field(default_factory=list)
    wall_time_s: float = 0.0


def parse_tcpdump_counters(stderr_text: str) -> Dict[str, Optional[int]]:
    """tcpdump's closing counters; None for a line it did not print.

    tcpdump >= 4.99 omits "dropped by interface" when it is zero, so it is 0 when the
    kernel line is there (a veth is a real device; libpcap reads its drop counters).
    """

    def count(phrase: str) -> Optional[int]:
        found = re.findall(rf"^(\d+) packets? {phrase}$", stderr_text, flags=re.MULTILINE)
        return int(found[-1]) if found else None

    counters = {
        "captured": count("captured"),
        "received_by_filter": count("received by filter"),
        "kernel_drops": count("dropped by kernel"),
        "interface_drops": count("dropped by interface"),
    }
    if counters["interface_drops"] is None and counters["kernel_drops"] is not None:
        counters["interface_drops"] = 0
    return counters


@dataclass(frozen=True)
class ClientGroup:
    """The flows one iperf3 client carries: same CCA, same start, consecutive client ports."""

    index: int
    flows: Tuple[int, ...]
    cca: str
    start_s: float
    server_port: int
    first_client_port: int

    @property
    def client_ports(self) -> List[int]:
        return [self.first_client_port + i for i in range(len(self.flows))]


def client_groups(spec: RunSpec) -> List[ClientGroup]:
    """Group the run's flows by (CCA, start time), groups in order of start and then of first flow."""
    members: Dict[Tuple[str, float], List[int]] = {}
    for flow in range(spec.flows):
        members.setdefault((spec.flow_ccas[flow], spec.start_s(flow)), []).append(flow)
    ordered = sorted(members.items(), key=lambda item: (item[0][1], item[1][0]))
    groups, next_port = [], FIRST_CLIENT_PORT
    for index, ((cca, start_s), flows) in enumerate(ordered):
        groups.append(
            ClientGroup(
                index=index,
                flows=tuple(flows),
                cca=cca,
                start_s=start_s,
                server_port=FIRST_SERVER_PORT + index,
                first_client_port=next_port,
            )
        )
        next_port += len(flows)
    return groups


def flow_client_ports(groups: List[ClientGroup]) -> Dict[int, int]:
    return {flow: port for group in groups for flow, port in zip(group.flows, group.client_ports)}


def stream_of_port(document: dict, port: int, key: str) -> Optional[int]:
    """The socket number of the data connection whose `key` (local_port/remote_port) is `port`."""
    for connection in (document.get("start") or {}).get("connected") or []:
        if isinstance(connection, dict) and connection.get(key) == port:
            return connection.get("socket")
    return None


def iperf3_flow_figures(document: dict, client_port: Optional[int] = None) -> Dict[str, Any]:
    """Sender/receiver bytes and bit/s, TCP_INFO retransmissions and CCA from an iperf3 -J client
    document: of the data connection from `client_port` (a -P test's one stream), else of the test."""
    end = document.get("end") or {}
    sent = end.get("sum_sent") or {}
    received = end.get("sum_received") or {}
    if client_port is not None and len(end.get("streams") or []) > 1:
        socket = stream_of_port(document, client_port, "local_port")
        stream: Dict[str, Any] = next(
            (s for s in end.get("streams") or [] if (s.get("sender") or {}).get("socket") == socket), {}
        )
        sent, received = stream.get("sender") or {}, stream.get("receiver") or {}
    return {
        "iperf3_sent_bytes": sent.get("bytes"),
        "iperf3_received_bytes": received.get("bytes"),
        "iperf3_sender_bps": sent.get("bits_per_second"),
        "iperf3_receiver_bps": received.get("bits_per_second"),
        "tcpinfo_retransmissions": sent.get("retransmits"),
        "cca_reported": end.get("sender_tcp_congestion"),
        "iperf3_error": document.get("error"),
    }


def iperf3_receiver_intervals(document: dict, client_port: Optional[int] = None) -> List[Tuple[float, float, int]]:
    """(start_s, end_s, bytes) of each interval of an iperf3 -s -J document, from its test's start:
    of the data connection from `client_port` when the test had several, else the interval's sum."""
    socket = stream_of_port(document, client_port, "remote_port") if client_port is not None else None
    intervals = []
    for interval in document.get("intervals") or []:
        total = interval.get("sum") or {}
        if socket is not None and len(interval.get("streams") or []) > 1:
            total = next((s for s in interval["streams"] if s.get("socket") == socket), {})
        start_s, end_s, size = total.get("start"), total.get("end"), total.get("bytes")
        if (
            isinstance(start_s, (int, float))
            and isinstance(end_s, (int, float))
            and isinstance(size, (int, float))
            and end_s > start_s
        ):
            intervals.append((float(start_s), float(end_s), int(size)))
    return intervals


def read_json_document(path: Path) -> Optional[dict]:
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return document if isinstance(document, dict) else None


def netem_arguments(spec: RunSpec) -> List[str]:
    """netem options for delay, jitter and reordering (loss is always the router's firewall rule)."""
    arguments: List[str] = []
    if spec.delay.value > 0 or spec.jitter.value > 0 or spec.reorder.value > 0:
        arguments += ["delay", f"{spec.delay.value}ms"]
        if spec.jitter.value > 0:
            arguments += [f"{spec.jitter.value}ms"]
        if spec.reorder.value > 0:
            arguments += ["reorder", f"{spec.reorder.value * 100}%"]
        arguments += ["limit", "100000"]
    return arguments


def write_capture_meta(
    path: Path,
    interface: str,
    namespace_name: str,
    snaplen_bytes: int,
    counters: Dict[str, Optional[int]],
    start_utc: str,
    end_utc: Optional[str],
    cca: str,
) -> None:
    """meta.json beside a testbed capture, in the same schema capture/record.sh writes
    (`trace_complete` false until tcpdump's final counters are in)."""
    meta = {
        "schema": "spline-capture-meta/1",
        "tool": "spline-testbed",
        "interface": interface,
        "namespace": namespace_name,
        "server": RECEIVER_ADDRESS,
        "filter": "tcp",
        "cca": cca,
        "snaplen_bytes": snaplen_bytes,
        "start_utc": start_utc,
        "end_utc": end_utc,
        "trace_file": "trace.pcap",
        "trace_complete": counters.get("captured") is not None,
        "capture": counters,
    }
    path.write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")


def utc_now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def build_topology(stack: ExitStack, prefix: str) -> Dict[str, str]:
    """Create the three namespaces and their links; everything goes when `stack` closes."""
    names = {role: stack.enter_context(netns.namespace(f"{prefix}-{role}")) for role in ("snd", "rtr", "rcv")}
    # one process per step where the tools allow it: under QEMU TCG each exec costs ~1 s
    netns.ip_batch(
        [
            [
                "link",
                "add",
                "snd0",
                "netns",
                names["snd"],
                "type",
                "veth",
                "peer",
                "name",
                "rtr-s",
                "netns",
                names["rtr"],
            ],
            [
                "link",
                "add",
                "rtr-r",
                "netns",
                names["rtr"],
                "type",
                "veth",
                "peer",
                "name",
                "rcv0",
                "netns",
                names["rcv"],
            ],
        ]
    )
    netns.configure_devices(names["snd"], {"snd0": f"{SENDER_ADDRESS}/24"}, gateway=ROUTER_SENDER_SIDE_ADDRESS)
    netns.configure_devices(
        names["rtr"], {"rtr-s": f"{ROUTER_SENDER_SIDE_ADDRESS}/24", "rtr-r": f"{ROUTER_RECEIVER_SIDE_ADDRESS}/24"}
    )
    netns.configure_devices(names["rcv"], {"rcv0": f"{RECEIVER_ADDRESS}/24"}, gateway=ROUTER_RECEIVER_SIDE_ADDRESS)
    netns.enable_forwarding(names["rtr"])
    return names


def flow_rules(flow: int, client_port: int, loss_probability: float) -> Dict[str, List[List[str]]]:
    """Random drop (when loss > 0) and counting rules for one flow's data segments, per namespace
    role (`rtr`, `rcv`), each as `[chain, *iptables arguments]`."""
    match = ["-p", "tcp", "--sport", str(client_port), "-m", "length", "--length", f"{DATA_SEGMENT_MIN_IP_BYTES}:65535"]
    path = ["-i", "rtr-s", "-o", "rtr-r"]
    router = []
    if loss_probability > 0:
        router.append(
            [
                "FORWARD",
                *path,
                *match,
                "-m",
                "statistic",
                "--mode",
                "random",
                "--probability",
                f"{loss_probability:.6f}",
                "-m",
                "comment",
                "--comment",
                f"flow{flow}-random-drop",
                "-j",
                "DROP",
            ]
        )
    router.append(["FORWARD", *path, *match, "-m", "comment", "--comment", f"flow{flow}-forwarded"])
    receiver = [["INPUT", "-i", "rcv0", *match, "-m", "comment", "--comment", f"flow{flow}-arrived"]]
    return {"rtr": router, "rcv": receiver}


def install_flow_rules(names: Dict[str, str], client_ports: List[int], loss_probability: float) -> None:
    """Every flow's rules, one iptables-restore per namespace."""
    per_role: Dict[str, List[List[str]]] = {"rtr": [], "rcv": []}
    for flow, client_port in enumerate(client_ports):
        for role, rules in flow_rules(flow, client_port, loss_probability).items():
            per_role[role].extend(rules)
    for role, rules in per_role.items():
        netns.add_iptables_rules(names[role], rules)


def launch_capture(
    stack: ExitStack, namespace_name: str, device: str, pcap_path: Path, snaplen_bytes: int
) -> netns.Process:
    """tcpdump on `device` writing `pcap_path`, started (see await_capture)."""
    return stack.enter_context(
        netns.process(
            [
                "tcpdump",
                "-i",
                device,
                "--immediate-mode",
                "-n",
                "-s",
                str(snaplen_bytes),
                "-B",
                str(CAPTURE_BUFFER_KIB),
                "-Z",
                "root",
                "-w",
                str(pcap_path),
                "tcp",
            ],
            namespace_name,
            pcap_path.with_name("tcpdump.stdout"),
            pcap_path.with_name("tcpdump.log"),
        )
    )


def await_capture(proc: netns.Process, namespace_name: str, device: str, pcap_path: Path) -> None:
    """Return once the tcpdump of launch_capture is listening; TestbedError when it is not."""
    log_path = pcap_path.with_name("tcpdump.log")
    if not netns.wait_until(
        lambda: "listening on" in log_path.read_text(errors="replace") or not proc.running(), timeout_s=10
    ):
        raise TestbedError(f"tcpdump did not start on {device} in {namespace_name}")
    if not proc.running():
        raise TestbedError(f"tcpdump failed on {device}: {log_path.read_text(errors='replace').strip()}")


def execute_run(
    spec: RunSpec, run_dir: Path, prefix: str, netem_available: bool, snaplen_bytes: int = 128
) -> RunRecord:
    """Run `spec` once inside fresh namespaces named `<prefix>-snd|rtr|rcv`; leave files in `run_dir`."""
    started_s = time.monotonic()
    run_dir.mkdir(parents=True, exist_ok=True)
    sender_dir, receiver_dir = run_dir / "sender", run_dir / "receiver"
    sender_dir.mkdir(exist_ok=True)
    receiver_dir.mkdir(exist_ok=True)
    netem_args = netem_arguments(spec) if netem_available else []
    groups = client_groups(spec)
    port_of_flow = flow_client_ports(groups)
    client_ports = [port_of_flow[flow] for flow in range(spec.flows)]
    server_ports = [group.server_port for group in groups]

    with ExitStack() as stack:
        names = build_topology(stack, prefix)
        netns.shape_egress(names["rtr"], "rtr-r", int(spec.rate.value), ROUTER_QUEUE_MS, netem_args)
        install_flow_rules(names, client_ports, spec.loss.value)
        netns.reserve_client_ports(names["snd"], client_ports)

        capture_start_utc = utc_now()
        # meta.json says "unfinished" until the run completes: an interrupted run's captures
        # are marked as such (spline-analyze warns, and --strict refuses them)
        for directory, device, role in ((sender_dir, "snd0", "sender"), (receiver_dir, "rcv0", "receiver")):
            write_capture_meta(
                directory / "meta.json", device, role, snaplen_bytes, {}, capture_start_utc, None, spec.cca
            )
        # both captures and every server start at once, then we wait for all of them
        captures = [
            (
                launch_capture(stack, names[role], device, directory / "trace.pcap", snaplen_bytes),
                names[role],
                device,
                directory / "trace.pcap",
            )
            for role, device, directory in (("snd", "snd0", sender_dir), ("rcv", "rcv0", receiver_dir))
        ]
        for group in groups:
            stack.enter_context(
                netns.process(
                    ["iperf3", "-s", "-1", "-p", str(group.server_port), "-J"],
                    names["rcv"],
                    run_dir / f"iperf3-server-group{group.index}.json",
                    run_dir / f"iperf3-server-group{group.index}.stderr",
                    stop_signal=signal.SIGTERM,
                )
            )
        for capture in captures:
            await_capture(*capture)
        sender_tcpdump, receiver_tcpdump = (capture[0] for capture in captures)
        if not netns.wait_until(lambda: set(server_ports) <= netns.listening_tcp_ports(names["rcv"]), 10):
            missing = sorted(set(server_ports) - netns.listening_tcp_ports(names["rcv"]))
            raise TestbedError(f"iperf3 server on port {', '.join(map(str, missing))} did not start")

        clients: Dict[int, netns.Process] = {}
        first_start_s = time.monotonic()
        for group in groups:  # incumbents first, joiners at their time
            time.sleep(max(0.0, first_start_s + group.start_s - time.monotonic()))
            clients[group.index] = stack.enter_context(
                netns.process(
                    [
                        "iperf3",
                        "-c",
                        RECEIVER_ADDRESS,
                        "-p",
                        str(group.server_port),
                        "-P",
                        str(len(group.flows)),
                        "--cport",
                        str(group.first_client_port),
                        "-C",
                        group.cca,
                        "-t",
                        f"{spec.transfer_s(group.flows[0]):g}",
                        "-i",
                        f"{IPERF3_INTERVAL_S:g}",
                        "-J",
                    ],
                    names["snd"],
                    run_dir / f"iperf3-group{group.index}.json",
                    run_dir / f"iperf3-group{group.index}.stderr",
                )
            )
        deadline_s = first_start_s + spec.duration_s + IPERF3_GRACE_S
        waited = [clients[group.index].wait(max(0.1, deadline_s - time.monotonic())) for group in groups]
        group_statuses = [status for status in waited if status is not None]
        if len(group_statuses) != len(waited):
            raise TestbedError(f"iperf3 did not finish within {spec.duration_s + IPERF3_GRACE_S:g} s")

        time.sleep(CAPTURE_TAIL_S)
        sender_tcpdump.stop(signal.SIGINT)
        receiver_tcpdump.stop(signal.SIGINT)
        capture_end_utc = utc_now()

        router_counters = netns.iptables_counters(names["rtr"], "FORWARD")
        receiver_counters = netns.iptables_counters(names["rcv"], "INPUT")
        qdisc = netns.qdisc_statistics(names["rtr"], "rtr-r")

    sender_counters = parse_tcpdump_counters((sender_dir / "tcpdump.log").read_text(errors="replace"))
    receiver_counters_capture = parse_tcpdump_counters((receiver_dir / "tcpdump.log").read_text(errors="replace"))
    write_capture_meta(
        sender_dir / "meta.json",
        "snd0",
        "sender",
        snaplen_bytes,
        sender_counters,
        capture_start_utc,
        capture_end_utc,
        spec.cca,
    )
    write_capture_meta(
        receiver_dir / "meta.json",
        "rcv0",
        "receiver",
        snaplen_bytes,
        receiver_counters_capture,
        capture_start_utc,
        capture_end_utc,
        spec.cca,
    )

    record = RunRecord(
        spec=spec,
        run_dir=run_dir,
        netem_applied=bool(netem_args),
        sender_pcap=sender_dir / "trace.pcap",
        receiver_pcap=receiver_dir / "trace.pcap",
        sender_capture=sender_counters,
        receiver_capture=receiver_counters_capture,
        qdisc_drops=qdisc["dropped"],
    )
    group_of_flow = {flow: group for group in groups for flow in group.flows}
    for flow, (cca, client_port) in enumerate(zip(spec.flow_ccas, client_ports)):
        group = group_of_flow[flow]
        json_path = run_dir / f"iperf3-group{group.index}.json"
        try:
            document = json.loads(json_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            document = {
                "error": (run_dir / f"iperf3-group{group.index}.stderr").read_text(errors="replace").strip()
                or "iperf3 wrote no JSON"
            }
        figures = iperf3_flow_figures(document, client_port)
        if group_statuses[group.index] != 0 or figures["iperf3_error"]:
            raise TestbedError(f"iperf3 flow {flow} ({cca}) failed: {figures['iperf3_error']}")
        server_document = read_json_document(run_dir / f"iperf3-server-group{group.index}.json") or {}
        record.flows.append(
            FlowRecord(
                flow=flow,
                cca=cca,
                client_port=client_port,
                server_port=group.server_port,
                iperf3_json=json_path,
                iperf3_exit_status=group_statuses[group.index],
                **figures,
                router_random_drops=router_counters.get(f"flow{flow}-random-drop", 0),
                router_forwarded=router_counters.get(f"flow{flow}-forwarded", 0),
                receiver_arrived=receiver_counters.get(f"flow{flow}-arrived", 0),
                start_s=spec.start_s(flow),
                receiver_intervals=iperf3_receiver_intervals(server_document, client_port),
            )
        )
    record.wall_time_s = time.monotonic() - started_s
    (run_dir / "router.json").write_text(
        json.dumps(
            {
                "forward_chain_packets": router_counters,
                "receiver_input_packets": receiver_counters,
                "qdisc_drops": qdisc["dropped"],
                "tc_s_qdisc": qdisc["text"],
                "netem_arguments": netem_args,
                "data_segment_min_ip_bytes": DATA_SEGMENT_MIN_IP_BYTES,
            },
            indent=2,
        )
        + "\n",
        encoding="utf-8",
    )
    return record
