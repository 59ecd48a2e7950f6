"""Network namespaces, veth links, qdiscs, firewall rules and processes as context managers.

Everything the testbed creates lives inside namespaces it created itself, so
deleting those namespaces removes the veths, qdiscs and iptables rules with
them; processes started in them are stopped first. Cleanup runs on any exit
(exceptions, KeyboardInterrupt) through `contextlib.ExitStack`.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Callable, Dict, Iterator, List, Optional, Sequence, Set, Tuple

from .errors import TestbedError


def run_command(
    argv: Sequence[str], namespace: Optional[str] = None, check: bool = True, timeout_s: float = 30.0
) -> subprocess.CompletedProcess:
    """Run `argv` (inside `namespace` when given) and return the completed process.

    Raises TestbedError with the command's stderr when it fails and `check` is set.
    """
    full_argv = list(argv) if namespace is None else in_namespace(argv, namespace)
    completed = subprocess.run(full_argv, capture_output=True, text=True, timeout=timeout_s)
    if check and completed.returncode != 0:
        raise TestbedError(
            f"command failed ({completed.returncode}): {' '.join(full_argv)}: "
            f"{completed.stderr.strip() or completed.stdout.strip()}"
        )
    return completed


# Tools that enter a namespace by themselves (`ip -n NS`, `tc -n NS`, `ss -N NS`): one process
# instead of `ip netns exec NS TOOL`'s two, which counts where each exec costs ~0.5 s (QEMU TCG).
SELF_ENTERING_TOOLS = {"ip": "-n", "tc": "-n", "ss": "-N"}


def in_namespace(argv: Sequence[str], namespace: str) -> List[str]:
    """`argv` made to run inside `namespace`."""
    flag = SELF_ENTERING_TOOLS.get(argv[0]) if argv else None
    if flag is not None:
        return [argv[0], flag, namespace, *argv[1:]]
    return ["ip", "netns", "exec", namespace, *argv]


def list_namespaces() -> List[str]:
    """Names of the network namespaces `ip netns` knows."""
    output = run_command(["ip", "netns", "list"]).stdout
    return [line.split()[0] for line in output.splitlines() if line.strip()]


def namespace_pids(namespace: str) -> List[int]:
    """PIDs of processes running in `namespace`."""
    output = run_command(["ip", "netns", "pids", namespace], check=False).stdout
    return [int(word) for word in output.split() if word.isdigit()]


def remove_namespace(name: str) -> List[int]:
    """Kill what runs in namespace `name` and delete it; returns the PIDs killed."""
    pids = namespace_pids(name)
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    run_command(["ip", "netns", "del", name], check=False)
    return pids


def orphaned_namespaces(prefix: str) -> List[str]:
    """Namespaces `<prefix>-<pid>-...` whose creating process <pid> is gone (a SIGKILLed run)."""
    orphans = []
    for name in list_namespaces():
        parts = name.split("-")
        if len(parts) >= 3 and parts[0] == prefix and parts[1].isdigit():
            if not Path(f"/proc/{parts[1]}").exists():
                orphans.append(name)
    return orphans


@contextmanager
def namespace(name: str) -> Iterator[str]:
    """Create network namespace `name` with loopback up; on exit kill what runs in it and delete it."""
    if name in list_namespaces():
        raise TestbedError(f"network namespace {name!r} exists already; refusing to reuse it")
    run_command(["ip", "netns", "add", name])
    try:
        run_command(["ip", "link", "set", "lo", "up"], namespace=name)
        yield name
    finally:
        remove_namespace(name)


def add_veth_pair(namespace_a: str, device_a: str, namespace_b: str, device_b: str) -> None:
    """Join two namespaces with a veth pair (removed when either namespace is deleted)."""
    run_command(
        [
            "ip",
            "link",
            "add",
            device_a,
            "netns",
            namespace_a,
            "type",
            "veth",
            "peer",
            "name",
            device_b,
            "netns",
            namespace_b,
        ]
    )


def ip_batch(commands: Sequence[Sequence[str]], namespace: Optional[str] = None) -> None:
    """Run `ip` commands (each without the leading `ip`) with one `ip -batch` process."""
    argv = ["ip", "-batch", "-"] if namespace is None else ["ip", "-n", namespace, "-batch", "-"]
    completed = subprocess.run(
        argv, input="".join(" ".join(c) + "\n" for c in commands), capture_output=True, text=True, timeout=30.0
    )
    if completed.returncode != 0:
        raise TestbedError(
            f"command failed ({completed.returncode}): {' '.join(argv)}: "
            f"{completed.stderr.strip() or completed.stdout.strip()}"
        )


def configure_devices(namespace_name: str, addresses: Dict[str, str], gateway: Optional[str] = None) -> None:
    """Turn segmentation offloads off on each device (captures then hold real segments), address
    it and bring it up; add the default route via `gateway` when given."""
    for device in addresses:
        run_command(["ethtool", "-K", device, "tso", "off", "gso", "off", "gro", "off"], namespace=namespace_name)
    commands = [["addr", "add", cidr, "dev", device] for device, cidr in addresses.items()]
    commands += [["link", "set", device, "up"] for device in addresses]
    if gateway is not None:
        commands.append(["route", "add", "default", "via", gateway])
    ip_batch(commands, namespace_name)


def enable_forwarding(namespace_name: str) -> None:
    run_command(["sysctl", "-q", "-w", "net.ipv4.ip_forward=1"], namespace=namespace_name)


def reserve_client_ports(namespace_name: str, ports: List[int]) -> None:
    """Keep the kernel from picking `ports` as ephemeral ports in `namespace_name`, so that
    `iperf3 --cport` can bind them: connect() prefers even ports, and another flow's control
    connection took an even client port (iperf3: "unable to connect stream: Address already
    in use"). A bind() to a reserved port still works; IPv6 honours the same list."""
    spans = ",".join(f"{port}" for port in sorted(set(ports)))
    run_command(["sysctl", "-q", "-w", f"net.ipv4.ip_local_reserved_ports={spans}"], namespace=namespace_name)


def kernel_has_netem(scratch_namespace: str) -> bool:
    """Whether the netem qdisc can be created (tried on loopback of a namespace we own)."""
    added = run_command(
        ["tc", "qdisc", "add", "dev", "lo", "root", "netem", "delay", "1ms"], namespace=scratch_namespace, check=False
    )
    if added.returncode == 0:
        run_command(["tc", "qdisc", "del", "dev", "lo", "root"], namespace=scratch_namespace, check=False)
        return True
    return False


ETHERNET_FRAME_OVERHEAD_BYTES = 14


def tbf_burst_bytes(rate_bps: int, mtu_bytes: int = 1500) -> int:
    """A tbf bucket of ~1 ms at the rate, at least 2 full-size frames of `mtu_bytes` (tbf needs
    burst >= MTU, and drops longer frames; jumbo frames of 9,014 bytes need 18,028)."""
    return max(2 * (mtu_bytes + ETHERNET_FRAME_OVERHEAD_BYTES), rate_bps // 8 // 1000)


def tbf_limit_bytes(rate_bps: int, queue_ms: float, mtu_bytes: int = 1500) -> int:
    """Queue size in bytes for `queue_ms` of the rate, at least 10 full-size frames of `mtu_bytes`."""
    return max(10 * (mtu_bytes + ETHERNET_FRAME_OVERHEAD_BYTES), int(rate_bps / 8 * queue_ms / 1000))


def shape_egress(
    namespace_name: str, device: str, rate_bps: int, queue_ms: float, netem_args: Sequence[str] = ()
) -> None:
    """Shape `device` egress: tbf at `rate_bps` (queue of `queue_ms`), below netem when `netem_args`."""
    tbf = [
        "tbf",
        "rate",
        f"{rate_bps}bit",
        "burst",
        str(tbf_burst_bytes(rate_bps)),
        "limit",
        str(tbf_limit_bytes(rate_bps, queue_ms)),
    ]
    if netem_args:
        run_command(
            ["tc", "qdisc", "add", "dev", device, "root", "handle", "1:", "netem", *netem_args],
            namespace=namespace_name,
        )
        run_command(
            ["tc", "qdisc", "add", "dev", device, "parent", "1:", "handle", "2:", *tbf], namespace=namespace_name
        )
    else:
        run_command(["tc", "qdisc", "add", "dev", device, "root", "handle", "1:", *tbf], namespace=namespace_name)


def add_iptables_rules(namespace_name: str, rules: Sequence[Sequence[str]]) -> None:
    """Append each `[chain, *rule]` to the filter table inside `namespace_name`, in order, with one
    iptables-restore (one process, whatever the number of rules)."""
    if not rules:
        return
    lines = ["*filter", *(" ".join(["-A", *rule]) for rule in rules), "COMMIT", ""]
    full_argv = in_namespace(["iptables-restore", "-w", "--noflush"], namespace_name)
    completed = subprocess.run(full_argv, input="\n".join(lines), capture_output=True, text=True, timeout=30.0)
    if completed.returncode != 0:
        raise TestbedError(
            f"command failed ({completed.returncode}): {' '.join(full_argv)}: "
            f"{completed.stderr.strip() or completed.stdout.strip()}"
        )


def iptables_counters(namespace_name: str, chain: str) -> dict:
    """`{comment: packets}` for the rules of `chain` that carry a comment."""
    output = run_command(["iptables", "-w", "-L", chain, "-v", "-x", "-n"], namespace=namespace_name).stdout
    counters = {}
    for line in output.splitlines():
        if "/*" not in line:
            continue
        words = line.split()
        if not words or not words[0].isdigit():
            continue
        comment = line.split("/*", 1)[1].split("*/", 1)[0].strip()
        counters[comment] = int(words[0])
    return counters


def qdisc_statistics(namespace_name: str, device: str) -> dict:
    """`{"text": tc -s qdisc output, "dropped": drops summed over the qdiscs, "overlimits": ...}`."""
    text = run_command(["tc", "-s", "qdisc", "show", "dev", device], namespace=namespace_name).stdout
    dropped = 0
    for line in text.splitlines():
        words = line.replace(",", " ").replace("(", " ").replace(")", " ").split()
        if "dropped" in words:
            dropped += int(words[words.index("dropped") + 1])
    return {"text": text, "dropped": dropped}


PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """In the child before exec: SIGTERM when the process that started it dies, even by
    SIGKILL (prctl PR_SET_PDEATHSIG; kept across `ip netns exec`'s exec)."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


def dying_with_parent(argv: Sequence[str]) -> Tuple[List[str], Optional[Callable[[], None]]]:
    """`argv` and the preexec function that make it die with us: util-linux's `setpriv
    --pdeathsig` where there is one, else die_with_parent. A preexec function makes Python fork
    a child that runs Python code, not vfork: 17 ms per Popen against 2.6 ms through setpriv,
    measured on this host from the testbed's process (100 MB); many times that under QEMU TCG."""
    if shutil.which("setpriv"):
        return ["setpriv", "--pdeathsig", "TERM", *argv], None
    return list(argv), die_with_parent


class Process:
    """A process started in a namespace, in its own session (a terminal Ctrl-C goes to us, not
    it), that dies with us (dying_with_parent)."""

    def __init__(self, argv: Sequence[str], namespace_name: str, stdout: IO, stderr: IO) -> None:
        self.argv, preexec = dying_with_parent(["ip", "netns", "exec", namespace_name, *argv])
        self.popen = subprocess.Popen(
            self.argv, stdout=stdout, stderr=stderr, start_new_session=True, preexec_fn=preexec
        )

    def running(self) -> bool:
        return self.popen.poll() is None

    def stop(self, first_signal: int = signal.SIGINT, grace_s: float = 5.0) -> int:
        """Send `first_signal`, wait up to `grace_s`, then SIGKILL; return the exit status."""
        if self.popen.poll() is None:
            try:
                self.popen.send_signal(first_signal)
                return self.popen.wait(timeout=grace_s)
            except subprocess.TimeoutExpired:
                self.popen.kill()
        return self.popen.wait()

    def wait(self, timeout_s: float) -> Optional[int]:
        try:
            return self.popen.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return None


@contextmanager
def process(
    argv: Sequence[str], namespace_name: str, stdout_path: Path, stderr_path: Path, stop_signal: int = signal.SIGINT
) -> Iterator[Process]:
    """Run `argv` in `namespace_name`, output to files; stopped with `stop_signal` (then SIGKILL) on exit."""
    with open(stdout_path, "wb") as stdout, open(stderr_path, "wb") as stderr:
        proc = Process(argv, namespace_name, stdout, stderr)
        try:
            yield proc
        finally:
            proc.stop(stop_signal)


def wait_until(predicate, timeout_s: float, poll_s: float = 0.05) -> bool:
    """Poll `predicate()` until true or `timeout_s` passes; return its last value."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(poll_s)
    return bool(predicate())


def listening_tcp_ports(namespace_name: str) -> Set[int]:
    """The TCP ports something listens on in `namespace_name` (one `ss`)."""
    output = run_command(["ss", "-Hltn"], namespace=namespace_name, check=False).stdout
    ports = set()
    for line in output.splitlines():
        words = line.split()
        if len(words) >= 4 and words[3].rsplit(":", 1)[-1].isdigit():
            ports.add(int(words[3].rsplit(":", 1)[-1]))
    return ports


def tcp_port_listening(namespace_name: str, port: int) -> bool:
    output = run_command(["ss", "-Hltn", f"sport = :{port}"], namespace=namespace_name, check=False).stdout
    return bool(output.strip())
