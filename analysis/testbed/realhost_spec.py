"""Real-host transfers declared as data: what each host does, and what truth to expect.

A real-host matrix file (TOML) holds a `[defaults]` table and a list of `[[transfer]]`
tables; each transfer takes the defaults and overrides some of them:

    [defaults]
    rate = "100mbit"          # tbf on the router's egress to the receiver; "0" = unshaped
    duration_s = 4
    vantages = ["sender", "receiver", "router-any", "router-out"]   # also: "router-in"
    buffer_kib = 8192         # tcpdump -B at every capture point

    [[transfer]]
    name = "gro-v4-p1-cubic-l1"
    offloads = "gro"          # off | gro | tso | tso+gro
    family = 4                # 4 or 6
    flows = 1                 # iperf3 -P
    cca = "cubic"
    data_loss = "1%"          # router FORWARD, sender -> receiver data segments
    ack_loss = "0%"           # router FORWARD, receiver -> sender pure ACKs
    syn_loss = "0%"           # router FORWARD, the sender's SYNs (each lost one is sent again)
    receiver_buffer_kib = 64  # tcpdump -B at the receiver only (makes the kernel drop)
    delay = "40ms"            # netem on the router's egress to the receiver: the data path
    ack_delay = "40ms"        # netem on the router's egress to the sender: the ACK path
    jitter = "10ms"           # the data path's delay varies within delay +- jitter ...
    jitter_reorders = false   # ... in order (as a Wi-Fi link's queue does), or packets pass each other
    queue_ms = 100            # the router's tbf queue, in ms at the rate
    rate_steps = ["100mbit", "20mbit", "60mbit", "5mbit"]  # instead of `rate`: the tbf's rate
                              # changes in place (`tc qdisc change`) through these in turn, cycled
                              # from the transfer's start to its end, as a Wi-Fi or cellular link's
                              # rate adaptation does; the tbf's limit stays queue_ms at the highest
                              # step, in bytes (a driver's or modem's buffer holds bytes or packets,
                              # not time): the queue's delay grows as the rate falls; its bucket
                              # stays the highest step's (rate_schedule.py)
    rate_step_ms = 300        # how long each of rate_steps lasts (50 ms to 60 s)
    sender_timestamps = true  # the sender's net.ipv4.tcp_timestamps (false: as Windows, no TSval/TSecr)
    sender_sack = true        # the sender's net.ipv4.tcp_sack (false: as behind a SACK-stripping middlebox)
    sender_ecn = false        # the sender's net.ipv4.tcp_ecn = 1: it asks for ECN (the receiver's
                              # default, 2, accepts); no qdisc here marks CE, so packets carry ECT(0)
    receiver_rmem_kib = 0     # the receiver's tcp_rmem maximum (0: the kernel's): a window-limited receiver
    app_rate = "0"            # iperf3 -b per flow: an application-limited sender that writes a
                              # block, waits, writes the next ("0": as fast as the path takes)
    app_block_kib = 0         # iperf3 -l: the size of each write in KiB (0: iperf3's, 128 KiB)
    snaplen_bytes = 128       # tcpdump -s at every capture point (96: SACK blocks of IPv6 ACKs cut)
    sender_mtu = 1500         # the sender's interface MTU: below the receiver's, its segments are
                              # shorter than the MSS the receiver announces (a VPN or PPPoE uplink)
    receiver_mtu = 1500       # the receiver's interface MTU: below the sender's, the MSS the
                              # receiver announces sets the segments' size (a PPPoE downlink)
    path_mtu = 1500           # the router's interface MTU towards the receiver (a tunnel in the
                              # path): the sender's first full segments come back as ICMP "packet
                              # too big" and it sends shorter ones from then on (path MTU discovery);
                              # the lost truth is then a few segments off (see the README)
                              # (all three up to 9000: jumbo frames; the router's interface from
                              # the sender takes the sender's MTU, so it accepts what the sender sends)
    capturer = "tcpdump"      # or "dumpcap" (Wireshark's capturer): pcapng with its interface and
                              # statistics blocks (drop counters in the file, no meta.json beside
                              # it), Linux cooked v1 frames for `-i any`; -B in whole MiB
    bridged = ["receiver"]    # hosts whose address sits on a Linux bridge with their veth as its
                              # port (a host of containers or VMs): its `-i any` capture sees each
                              # packet twice, on the port and on the bridge, with one TTL
    connections = 0           # short connections one after the other instead of iperf3 (a web
                              # client's downloads): each writes connection_kib, the receiver reads
                              # it to its FIN, then closes (short_transfers.py); flows must be 1
    connection_kib = 0        # KiB each short connection carries (50 KB - 2 MB in the committed set)
    bidir = false             # iperf3 --bidir: `flows` connections each way at once, each host a sender
                              # and a receiver (its capture holds both roles); the other way gets the
                              # same path: data_loss, ack_loss and a tbf of the same rate and queue on
                              # the router's egress to the sender, `offloads` at both hosts (each
                              # sends TSO, receives GRO), ack_delay as its data path's delay; truth per
                              # direction (the reverse's in the record's `reverse`); not with jitter,
                              # syn_loss, short connections, receiver_rmem_kib or a path_mtu of its own

`cca = "spline"` is the product's own congestion control: its eBPF struct_ops build is
registered for the transfer and unregistered after it (spline_cca.py), selected per socket.

The path's round trip is delay + ack_delay (+ queueing); both halves sit on the router, so
its captures see the path from its middle, the sender's capture sees the whole round trip
after each data segment and the receiver's the whole round trip after each ACK. Delay and
jitter need the netem qdisc: a host whose kernel has none refuses such a transfer (it never
runs one without its delay); `spline-testbed realhost --vm` runs the matrix in a stock kernel
that has it.

The sender's stack settings are per-namespace sysctls (they apply to IPv6 too) set in the
sender only: the receiver's defaults answer what the sender's SYN asks for, so no option is
used on the connection that the sender does not offer. The vantage `receiver-any` is the
receiver's `tcpdump -i any` (SLL2 frames, as users capture on a laptop); `sender-any` the
sender's (an uploading laptop, a server captured on every interface), held to the sender's
tolerances.

Offloads name what is on: `gro` at the receiver's veth (coalesced frames in its capture),
`tso` = TSO and GSO at the sender's veth (super-segments in the sender's capture and through
the router, whose drop counters still count segments: see realhost.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Dict, FrozenSet, List, Optional, Sequence, Set, Tuple

from .errors import TestbedError
from .matrix import parse_duration_s, parse_probability, parse_rate_bps, parse_time_ms, read_toml
from .netns import ETHERNET_FRAME_OVERHEAD_BYTES, tbf_burst_bytes

DEFAULT_VANTAGES = ("sender", "receiver", "router-any", "router-out")
# router-in: the router's interface from the sender, before its drops; receiver-any and
# sender-any: the receiver's and the sender's `tcpdump -i any` (Linux cooked frames, SLL2)
# router-both: Wireshark's dumpcap on both the router's interfaces into one pcapng (two
# interface blocks, Ethernet; `capturer = "dumpcap"` only), read as router-any is
VANTAGES = DEFAULT_VANTAGES + ("router-in", "receiver-any", "sender-any", "router-both")
SENDER_VANTAGES = frozenset({"sender", "sender-any"})  # the sender's own captures, either way
# the router's captures of both its interfaces in one file: each packet seen coming in and leaving
ROUTER_BOTH_WAYS_VANTAGES = frozenset({"router-any", "router-both"})
OFFLOADS = ("off", "gro", "tso", "tso+gro")
FAMILIES = (4, 6)
CCAS = ("cubic", "bbr", "reno")
DEFAULT_BUFFER_KIB = 8192
DEFAULT_QUEUE_MS = 100.0  # the router's tbf queue at the rate: ~1 BDP of a 100 ms path
# A rate schedule's step: long enough for the `tc` that applies it (a few ms, tens on a busy
# host) to be a small part of it; at most a minute (a schedule cycles within a transfer)
MIN_RATE_STEP_MS = 50.0
MAX_RATE_STEP_MS = 60_000.0
DEFAULT_SNAPLEN_BYTES = 128  # Ethernet + IPv6 + the longest TCP header (60) fit
# The shortest snaplen tcpdump is useful with: an SLL2 header (20) and the fixed IPv4 and TCP
# headers (20 + 20); below it the ports or flags themselves would be cut.
MIN_SNAPLEN_BYTES = 60
LONGEST_LINK_HEADER_BYTES = 20  # SLL2 (`-i any`); Ethernet is 14
LONGEST_TCP_HEADER_BYTES = 60
MIN_MTU_BYTES = 1280  # IPv6's minimum link MTU
MTU_BYTES = 1500  # the veths' own
MAX_CONNECTIONS = 200  # short connections one after the other: each takes a port of its own
MAX_CONNECTION_KIB = 65536
MAX_FLOWS = 32  # iperf3 -P: a download manager's or a browser's many connections
MAX_MTU_BYTES = 9000  # jumbo frames: the largest MTU a matrix may give a host or the path
BRIDGEABLE_HOSTS = ("sender", "receiver")
CAPTURERS = ("tcpdump", "dumpcap")
KIB_PER_MIB = 1024  # dumpcap's -B counts MiB, tcpdump's KiB
IP_HEADER_BYTES = {4: 20, 6: 40}
ETHERNET_HEADER_BYTES = 14
TCP_FIXED_HEADER_BYTES = 20
TIMESTAMPS_OPTION_BYTES = 12  # with its two NOPs: every data segment of a connection using them

# Tolerances of issue 8, as fractions of the truth.
LOST_TOLERANCE = {
    "sender": 0.02,
    "sender-any": 0.02,
    "receiver": 0.03,
    "receiver-any": 0.03,
    "router-any": 0.03,
    "router-out": 0.03,
    "router-in": 0.03,
    "router-both": 0.03,
}
RETRANSMISSION_TOLERANCE_AT_SENDER = 0.01
# The fastest shaped rate at which this testbed's veths were seen to keep every flow in order:
# 0 of 62 IPv6 captures at 100 Mbit/s recognised late originals (s27-h8h); above it, first
# copies passed the sender's veth behind data sent after them (s28-hx, router-in against the
# sender's capture: 8 and 0 at 200 Mbit/s, 20 and 32 at 500 Mbit/s), as unshaped paths do.
ORDERLY_RATE_BPS = 100_000_000
GOODPUT_TOLERANCE = 0.02


@dataclass(frozen=True)
class Transfer:
    """One transfer of the matrix: the hosts' settings and where it is captured."""

    name: str
    offloads: str = "off"
    family: int = 4
    flows: int = 1
    cca: str = "cubic"
    data_loss: float = 0.0  # probability per data packet at the router
    ack_loss: float = 0.0  # probability per pure ACK at the router
    syn_loss: float = 0.0  # probability per SYN of the sender's data connections at the router
    rate_bps: int = 100_000_000  # 0: not shaped
    duration_s: float = 4.0
    vantages: Tuple[str, ...] = DEFAULT_VANTAGES
    buffer_kib: int = DEFAULT_BUFFER_KIB
    receiver_buffer_kib: Optional[int] = None
    note: str = ""
    issue_case: int = 0  # 1-4: the row of issue 8's table this transfer remakes
    delay_ms: float = 0.0  # netem, one way, on the data path (router -> receiver)
    ack_delay_ms: float = 0.0  # netem, one way, on the ACK path (router -> sender)
    jitter_ms: float = 0.0  # netem, on the data path: each packet's delay within delay_ms +- jitter_ms
    jitter_reorders: bool = False  # False: packets keep their order (netem `rate` holds it)
    queue_ms: float = DEFAULT_QUEUE_MS
    sender_timestamps: bool = True  # net.ipv4.tcp_timestamps in the sender
    sender_sack: bool = True  # net.ipv4.tcp_sack in the sender
    sender_ecn: bool = False  # net.ipv4.tcp_ecn = 1 in the sender
    receiver_rmem_kib: int = 0  # the receiver's tcp_rmem maximum, KiB (0: the kernel's default)
    app_rate_bps: int = 0  # iperf3 -b per flow, bit/s (0: not limited by the application)
    app_block_kib: int = 0  # iperf3 -l, KiB per write (0: iperf3's default)
    snaplen_bytes: int = DEFAULT_SNAPLEN_BYTES  # tcpdump -s at every capture point
    sender_mtu: int = MTU_BYTES  # the sender's interface MTU, bytes
    receiver_mtu: int = MTU_BYTES  # the receiver's interface MTU, bytes (its SYN announces the MSS it allows)
    path_mtu: int = MTU_BYTES  # the router's interface MTU towards the receiver, bytes (learnt by the sender from ICMP)
    bridged: Tuple[str, ...] = ()  # hosts whose address sits on a bridge, their veth its port
    capturer: str = "tcpdump"  # the program at every capture point: tcpdump or dumpcap
    connections: int = 0  # short connections one after the other (0: one iperf3 test of duration_s)
    connection_kib: int = 0  # KiB each short connection writes
    bidir: bool = False  # iperf3 --bidir: as many connections the other way, receiver -> sender
    # the tbf's rates in turn, each for rate_step_ms, cycled over the transfer (empty: `rate_bps`
    # throughout); rate_bps is then the highest of them, the path's fastest
    rate_steps_bps: Tuple[int, ...] = ()
    rate_step_ms: float = 0.0

    @property
    def initial_rate_bps(self) -> int:
        """The tbf's rate as the hosts are built: the schedule's first step, or the fixed rate."""
        return self.rate_steps_bps[0] if self.rate_steps_bps else self.rate_bps

    @property
    def data_connections(self) -> int:
        """The data connections the transfer opens, each from a client port of its own: the short
        connections one after the other, or iperf3's parallel flows."""
        return self.connections or self.flows

    @property
    def trace_file_name(self) -> str:
        """The capture's file name: dumpcap writes pcapng, tcpdump pcap."""
        return "trace.pcapng" if self.capturer == "dumpcap" else "trace.pcap"

    def captures_bridge_copies(self, vantage: str) -> bool:
        """Whether `vantage` is `-i any` on a bridged host: each packet captured on the bridge's
        port and on the bridge itself, with one TTL (`duplicate_frames`)."""
        return (vantage == "receiver-any" and "receiver" in self.bridged) or (
            vantage == "sender-any" and "sender" in self.bridged
        )

    @property
    def sender_sysctls(self) -> Dict[str, str]:
        """The sysctls the sender's namespace gets (per-namespace; IPv6 reads the same ones)."""
        return {
            "net.ipv4.tcp_timestamps": "1" if self.sender_timestamps else "0",
            "net.ipv4.tcp_sack": "1" if self.sender_sack else "0",
            "net.ipv4.tcp_ecn": "1" if self.sender_ecn else "0",
        }

    @property
    def iperf3_application_args(self) -> List[str]:
        """iperf3 client options that make the sending application the limit: -b (its rate per
        flow; iperf3 writes a block whenever it is behind that rate) and -l (the block)."""
        args = ["-b", str(self.app_rate_bps)] if self.app_rate_bps else []
        return args + (["-l", f"{self.app_block_kib}K"] if self.app_block_kib else [])

    @property
    def receiver_sysctls(self) -> Dict[str, str]:
        """The sysctls the receiver's namespace gets: its receive buffer's ceiling when limited
        (autotuning keeps the minimum and default of Linux: 4 KiB, 128 KiB)."""
        if not self.receiver_rmem_kib:
            return {}
        high = self.receiver_rmem_kib * 1024
        return {"net.ipv4.tcp_rmem": f"4096 {min(131072, high)} {high}"}

    def snaplen_cuts_headers(self, vantage: str) -> bool:
        """Whether this snaplen can cut a TCP header at `vantage` (a pure ACK with SACK blocks
        carries the longest): link header + IP header + 60 bytes."""
        link = LONGEST_LINK_HEADER_BYTES if vantage.endswith("-any") else ETHERNET_HEADER_BYTES
        return self.snaplen_bytes < link + IP_HEADER_BYTES[self.family] + LONGEST_TCP_HEADER_BYTES

    def timestamps_seen_at(self, vantage: str) -> bool:
        """Whether the capture at `vantage` holds the data segments' TCP timestamps: the sender
        sends them and the snaplen keeps the option (link + IP header + 20 + 12 bytes: tcpdump
        -s 80 on Ethernet cuts it from IPv6 data, where 74 bytes reach only the TCP header's 20th)."""
        link = LONGEST_LINK_HEADER_BYTES if vantage.endswith("-any") else ETHERNET_HEADER_BYTES
        needed = link + IP_HEADER_BYTES[self.family] + TCP_FIXED_HEADER_BYTES + TIMESTAMPS_OPTION_BYTES
        return self.sender_timestamps and self.snaplen_bytes >= needed

    @property
    def veths_may_reorder(self) -> bool:
        """Whether the host's veths may deliver this transfer's packets out of order: unshaped,
        or shaped above `ORDERLY_RATE_BPS` (a sender's packets queue on either CPU's backlog)."""
        return self.rate_bps == 0 or self.rate_bps > ORDERLY_RATE_BPS

    @property
    def needs_netem(self) -> bool:
        return self.delay_ms > 0 or self.ack_delay_ms > 0 or self.jitter_ms > 0

    @property
    def added_rtt_ms(self) -> float:
        """The round trip netem adds at its longest (queueing not counted)."""
        return self.delay_ms + self.jitter_ms + self.ack_delay_ms

    @property
    def shaper_releases_bursts(self) -> bool:
        """The router's tbf bucket holds more than two full-size frames of the path (or the path
        is not shaped): frames leave it back to back, for the receiver's GRO to merge."""
        if self.rate_bps == 0:
            return True
        frame_bytes = self.path_mtu + ETHERNET_FRAME_OVERHEAD_BYTES
        return tbf_burst_bytes(self.rate_bps, self.path_mtu) > 2 * frame_bytes

    @property
    def receiver_gro(self) -> bool:
        return "gro" in self.offloads.split("+")

    @property
    def sender_tso(self) -> bool:
        return "tso" in self.offloads.split("+")

    def buffer_at(self, vantage: str) -> int:
        """tcpdump -B (KiB) at `vantage`."""
        if vantage in ("receiver", "receiver-any") and self.receiver_buffer_kib is not None:
            return self.receiver_buffer_kib
        return self.buffer_kib


@dataclass
class Matrix:
    """The transfers of a matrix file, in file order."""

    transfers: List[Transfer] = field(default_factory=list)

    def select(self, names: Sequence[str]) -> "Matrix":
        """The transfers whose name is in `names` or starts with one of them followed by nothing else."""
        wanted = [n for n in names if n]
        chosen = [t for t in self.transfers if any(t.name == n or re.fullmatch(n, t.name) for n in wanted)]
        if wanted and not chosen:
            raise TestbedError(f"no transfer matches {', '.join(wanted)}")
        return Matrix(chosen if wanted else list(self.transfers))


KNOWN_KEYS = {
    "name",
    "offloads",
    "family",
    "flows",
    "cca",
    "data_loss",
    "ack_loss",
    "syn_loss",
    "rate",
    "duration_s",
    "vantages",
    "buffer_kib",
    "receiver_buffer_kib",
    "note",
    "issue_case",
    "delay",
    "ack_delay",
    "jitter",
    "jitter_reorders",
    "queue_ms",
    "sender_timestamps",
    "sender_sack",
    "sender_ecn",
    "receiver_rmem_kib",
    "app_rate",
    "app_block_kib",
    "snaplen_bytes",
    "sender_mtu",
    "receiver_mtu",
    "path_mtu",
    "bridged",
    "capturer",
    "connections",
    "connection_kib",
    "bidir",
    "rate_steps",
    "rate_step_ms",
}


def min_snaplen_bytes(family: int) -> int:
    """The shortest snaplen tcpdump is useful with for `family`: an SLL2 header and the fixed IP
    and TCP headers (IPv4: MIN_SNAPLEN_BYTES, 60; IPv6: 80). Below it the ports or the flags
    are cut: `-s 64` over IPv6 kept 10 bytes of TCP header and no file held a direction."""
    return LONGEST_LINK_HEADER_BYTES + IP_HEADER_BYTES[family] + TCP_FIXED_HEADER_BYTES


def _whole_number(value: Any) -> bool:
    """An integer in the TOML (true and false are not numbers here)."""
    return isinstance(value, int) and not isinstance(value, bool)


def recorded_transfer(saved: Dict[str, Any]) -> Transfer:
    """The Transfer a run wrote into its truth.json (`asdict`: its vantages a list)."""
    return Transfer(
        **{
            **saved,
            "vantages": tuple(saved["vantages"]),
            "bridged": tuple(saved.get("bridged", ())),
            "rate_steps_bps": tuple(saved.get("rate_steps_bps", ())),
        }
    )


def transfer_from_mapping(values: Dict[str, Any], defaults: Dict[str, Any]) -> Transfer:
    """A Transfer from one `[[transfer]]` table over the `[defaults]` table; raises TestbedError."""
    merged = {**defaults, **values}
    unknown = set(merged) - KNOWN_KEYS
    if unknown:
        raise TestbedError(f"unknown key(s) {', '.join(sorted(unknown))}; known: {', '.join(sorted(KNOWN_KEYS))}")
    name = str(merged.get("name") or "")
    if not re.fullmatch(r"[A-Za-z0-9_.+-]+", name):
        raise TestbedError(f"transfer name {name!r}: use letters, digits and _.+- (it names a directory)")
    offloads = str(merged.get("offloads", "off"))
    if offloads not in OFFLOADS:
        raise TestbedError(f"{name}: offloads {offloads!r}: one of {', '.join(OFFLOADS)}")
    family = int(merged.get("family", 4))
    if family not in FAMILIES:
        raise TestbedError(f"{name}: family {family}: 4 or 6")
    flows = int(merged.get("flows", 1))
    if not 1 <= flows <= MAX_FLOWS:
        raise TestbedError(f"{name}: flows {flows}: 1 to {MAX_FLOWS}")
    vantages = tuple(str(v) for v in merged.get("vantages", DEFAULT_VANTAGES))
    if not vantages or any(v not in VANTAGES for v in vantages):
        raise TestbedError(f"{name}: vantages {list(vantages)}: a list of {', '.join(VANTAGES)}")
    rate_text = str(merged.get("rate", "100mbit"))
    rate_bps = 0 if rate_text.strip() in ("0", "unshaped", "") else int(parse_rate_bps(rate_text).value)
    rate_steps_bps, rate_step_ms = rate_schedule(name, values, merged)
    if rate_steps_bps:
        rate_bps = max(rate_steps_bps)
    receiver_buffer = merged.get("receiver_buffer_kib")
    delay_ms = parse_time_ms(str(merged.get("delay", "0ms"))).value
    jitter_ms = parse_time_ms(str(merged.get("jitter", "0ms"))).value
    if jitter_ms > delay_ms:
        raise TestbedError(
            f"{name}: jitter {jitter_ms:g} ms above delay {delay_ms:g} ms: netem would cut the delays at 0"
        )
    jitter_reorders = merged.get("jitter_reorders", False)
    if not isinstance(jitter_reorders, bool):
        raise TestbedError(f"{name}: jitter_reorders: true or false")
    queue_ms = float(merged.get("queue_ms", DEFAULT_QUEUE_MS))
    if not queue_ms > 0:
        raise TestbedError(f"{name}: queue_ms {queue_ms:g}: above 0")
    switches = {}
    for key, default in (("sender_timestamps", True), ("sender_sack", True), ("sender_ecn", False)):
        switches[key] = merged.get(key, default)
        if not isinstance(switches[key], bool):
            raise TestbedError(f"{name}: {key}: true or false")
    receiver_rmem_kib = merged.get("receiver_rmem_kib", 0)
    if not _whole_number(receiver_rmem_kib) or receiver_rmem_kib < 0:
        raise TestbedError(f"{name}: receiver_rmem_kib {receiver_rmem_kib!r}: a whole number of KiB, 0 for the default")
    if 0 < receiver_rmem_kib < 8:
        raise TestbedError(f"{name}: receiver_rmem_kib {receiver_rmem_kib}: at least 8 (Linux's floor is 4 KiB)")
    app_rate_text = str(merged.get("app_rate", "0"))
    app_rate_bps = 0 if app_rate_text.strip() in ("0", "") else int(parse_rate_bps(app_rate_text).value)
    app_block_kib = merged.get("app_block_kib", 0)
    if not _whole_number(app_block_kib) or not 0 <= app_block_kib <= 1024:
        raise TestbedError(f"{name}: app_block_kib {app_block_kib!r}: a whole number of KiB up to 1024, 0 for iperf3's")
    snaplen = merged.get("snaplen_bytes", DEFAULT_SNAPLEN_BYTES)
    shortest = min_snaplen_bytes(family)
    if not _whole_number(snaplen) or not shortest <= snaplen <= 262144:
        raise TestbedError(f"{name}: snaplen_bytes {snaplen!r}: {shortest} to 262144 for IPv{family}")
    mtus = {key: merged.get(key, MTU_BYTES) for key in ("sender_mtu", "receiver_mtu", "path_mtu")}
    for key, mtu in mtus.items():
        if not _whole_number(mtu) or not MIN_MTU_BYTES <= mtu <= MAX_MTU_BYTES:
            raise TestbedError(f"{name}: {key} {mtu!r}: {MIN_MTU_BYTES} to {MAX_MTU_BYTES} (jumbo frames)")
    capturer = merged.get("capturer", "tcpdump")
    if capturer not in CAPTURERS:
        raise TestbedError(f"{name}: capturer {capturer!r}: one of {', '.join(CAPTURERS)}")
    buffers = [merged.get("buffer_kib", DEFAULT_BUFFER_KIB), merged.get("receiver_buffer_kib") or KIB_PER_MIB]
    if "router-both" in vantages and capturer != "dumpcap":
        raise TestbedError(f'{name}: router-both (two interfaces in one file) needs capturer = "dumpcap"')
    if capturer == "dumpcap" and any(int(b) % KIB_PER_MIB for b in buffers):
        raise TestbedError(f"{name}: dumpcap's buffer counts whole MiB: buffer_kib and receiver_buffer_kib in 1024s")
    bridged = merged.get("bridged", [])
    if not isinstance(bridged, list) or any(h not in BRIDGEABLE_HOSTS for h in bridged):
        raise TestbedError(f"{name}: bridged {bridged!r}: a list of {', '.join(BRIDGEABLE_HOSTS)}")
    connections, connection_kib = short_connections(name, merged, flows)
    bidir = both_ways(name, merged, connections)
    return Transfer(
        name=name,
        offloads=offloads,
        family=family,
        flows=flows,
        cca=str(merged.get("cca", "cubic")),
        data_loss=parse_probability(str(merged.get("data_loss", "0%")), "data_loss").value,
        ack_loss=parse_probability(str(merged.get("ack_loss", "0%")), "ack_loss").value,
        syn_loss=parse_probability(str(merged.get("syn_loss", "0%")), "syn_loss").value,
        rate_bps=rate_bps,
        duration_s=parse_duration_s(merged.get("duration_s", 4)),
        vantages=vantages,
        buffer_kib=int(merged.get("buffer_kib", DEFAULT_BUFFER_KIB)),
        receiver_buffer_kib=int(receiver_buffer) if receiver_buffer is not None else None,
        note=str(merged.get("note", "")),
        issue_case=int(merged.get("issue_case", 0)),
        delay_ms=delay_ms,
        ack_delay_ms=parse_time_ms(str(merged.get("ack_delay", "0ms"))).value,
        jitter_ms=jitter_ms,
        jitter_reorders=jitter_reorders,
        queue_ms=queue_ms,
        receiver_rmem_kib=receiver_rmem_kib,
        app_rate_bps=app_rate_bps,
        app_block_kib=app_block_kib,
        snaplen_bytes=snaplen,
        bridged=tuple(sorted(set(str(h) for h in bridged))),
        capturer=capturer,
        connections=connections,
        connection_kib=connection_kib,
        bidir=bidir,
        rate_steps_bps=rate_steps_bps,
        rate_step_ms=rate_step_ms,
        **mtus,
        **switches,
    )


def rate_schedule(name: str, values: Dict[str, Any], merged: Dict[str, Any]) -> Tuple[Tuple[int, ...], float]:
    """(rate_steps_bps, rate_step_ms) of a transfer's table (`values`, over the defaults in
    `merged`): none, or two or more shaped rates and the time each lasts. A table that gives
    rate_steps gives no `rate` of its own: the schedule is the rate."""
    steps, step_ms = merged.get("rate_steps"), merged.get("rate_step_ms")
    if steps is None and step_ms is None:
        return (), 0.0
    if not isinstance(steps, list) or len(steps) < 2:
        raise TestbedError(f'{name}: rate_steps {steps!r}: a list of two or more rates (e.g. ["100mbit", "5mbit"])')
    if "rate" in values:
        raise TestbedError(f"{name}: rate and rate_steps: the schedule's steps are the rate, give one of them")
    texts = [str(step).strip() for step in steps]
    if any(text in ("0", "unshaped", "") for text in texts):
        raise TestbedError(f"{name}: rate_steps {steps!r}: every step shaped (a tbf has a rate)")
    if not isinstance(step_ms, (int, float)) or isinstance(step_ms, bool):
        raise TestbedError(f"{name}: rate_steps needs rate_step_ms, the ms each step lasts")
    if not MIN_RATE_STEP_MS <= step_ms <= MAX_RATE_STEP_MS:
        raise TestbedError(f"{name}: rate_step_ms {step_ms!r}: {MIN_RATE_STEP_MS:g} to {MAX_RATE_STEP_MS:g}")
    return tuple(int(parse_rate_bps(text).value) for text in texts), float(step_ms)


def short_connections(name: str, merged: Dict[str, Any], flows: int) -> Tuple[int, int]:
    """(connections, connection_kib) of a transfer's table: both 0, or a count of short
    connections one after the other (one flow at a time) and the KiB each carries."""
    connections, size_kib = merged.get("connections", 0), merged.get("connection_kib", 0)
    if not _whole_number(connections) or not 0 <= connections <= MAX_CONNECTIONS:
        raise TestbedError(f"{name}: connections {connections!r}: a whole number up to {MAX_CONNECTIONS}")
    if not _whole_number(size_kib) or not 0 <= size_kib <= MAX_CONNECTION_KIB:
        raise TestbedError(f"{name}: connection_kib {size_kib!r}: a whole number up to {MAX_CONNECTION_KIB}")
    if bool(connections) != bool(size_kib):
        raise TestbedError(f"{name}: connections and connection_kib go together (a count and the KiB of each)")
    if connections and flows != 1:
        raise TestbedError(f"{name}: connections run one after the other: flows must be 1, not {flows}")
    return connections, size_kib


# Settings of one way only, which a transfer in both directions would give the other way too or
# not (`bidir`): jitter on the data path would reorder the other way's ACKs, syn_loss and
# receiver_rmem_kib name one host's role, a path MTU of its own one interface's, and a rate
# schedule (rate_steps) steps the router's queue towards the receiver only.
ONE_WAY_ONLY_KEYS = ("jitter", "syn_loss", "receiver_rmem_kib", "path_mtu", "connections", "rate_steps")


def both_ways(name: str, merged: Dict[str, Any], connections: int) -> bool:
    """The `bidir` switch of a transfer's table; refused beside a setting of one way only."""
    bidir = merged.get("bidir", False)
    if not isinstance(bidir, bool):
        raise TestbedError(f"{name}: bidir: true or false")
    if bidir:
        neutral = {
            "jitter": "0ms",
            "syn_loss": "0%",
            "receiver_rmem_kib": 0,
            "path_mtu": MTU_BYTES,
            "connections": 0,
            "rate_steps": [],
        }
        given = [key for key in ONE_WAY_ONLY_KEYS if key in merged and str(merged[key]) not in (str(neutral[key]), "0")]
        if given or connections:
            raise TestbedError(f"{name}: bidir runs iperf3 both ways on one path: not with {', '.join(given)}")
    return bool(bidir)


# The role a capture point plays for the data going the other way (`bidir`): the sender's own
# capture is that data's receiver, the router's interface from the sender its way out.
REVERSE_ROLE = {
    "sender": "receiver",
    "receiver": "sender",
    "sender-any": "receiver-any",
    "receiver-any": "sender-any",
    "router-in": "router-out",
    "router-out": "router-in",
    "router-any": "router-any",
    "router-both": "router-both",
}
REVERSE_HOST = {"sender": "receiver", "receiver": "sender"}


def reverse_transfer(transfer: Transfer) -> Transfer:
    """The transfer as its other way's data sees it (`bidir`): sender and receiver swapped, with
    their MTUs and bridges, the ACK path's delay its data path's, the capture points' roles
    (`REVERSE_ROLE`). The TCP options are the client's (it opens both ways' connections)."""
    return replace(
        transfer,
        delay_ms=transfer.ack_delay_ms,
        ack_delay_ms=transfer.delay_ms,
        sender_mtu=transfer.receiver_mtu,
        receiver_mtu=transfer.sender_mtu,
        bridged=tuple(sorted(REVERSE_HOST[h] for h in transfer.bridged)),
        vantages=tuple(REVERSE_ROLE[v] for v in transfer.vantages),
    )


def matrix_from_document(document: Dict[str, Any]) -> Matrix:
    """A Matrix from a parsed TOML document with `[defaults]` and `[[transfer]]`."""
    defaults = dict(document.get("defaults") or {})
    tables = document.get("transfer") or []
    if not isinstance(tables, list) or not tables:
        raise TestbedError("a real-host matrix needs at least one [[transfer]] table")
    transfers = [transfer_from_mapping(dict(t), defaults) for t in tables]
    names = [t.name for t in transfers]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise TestbedError(f"transfer names must be unique: {', '.join(duplicates)}")
    return Matrix(transfers)


def load_matrix(path: Path) -> Matrix:
    """Read a real-host matrix file (TOML)."""
    document = read_toml(path, "real-host matrix")
    return matrix_from_document(document)


def with_duration(matrix: Matrix, duration_s: Optional[float]) -> Matrix:
    """The matrix with every transfer's duration replaced (for quick runs)."""
    if duration_s is None:
        return matrix
    return Matrix([replace(t, duration_s=duration_s) for t in matrix.transfers])


def expected_warnings(
    transfer: Transfer, vantage: str, capture_kernel_drops: int, path_lost_segments: int = 0, in_vm: bool = False
) -> Tuple[FrozenSet[str], FrozenSet[str]]:
    """(codes that must be raised, codes that may be raised) for one capture of `transfer`;
    `path_lost_segments`: the segments the router dropped (the truth); `in_vm`: made in the
    guest (`--vm`), whose veths reorder.

    Anything outside the union is a warning the conditions do not explain. `capture_gaps`
    needs the capture to have missed data the receiver acknowledged, which small kernel
    drop counts (or drops of ACKs only) need not cause, so it is allowed, not required.
    """
    must: Set[str] = set()
    may: Set[str] = set()
    if vantage in ("receiver", "receiver-any") and transfer.receiver_gro:
        # GRO merges only frames that reach the receiver back to back; a shaper whose bucket
        # holds two jumbo frames releases them one or two at a time (9,000-byte MTU at
        # 100 Mbit/s: 0 merged packets in one hx2 run, some in the other)
        (must if transfer.shaper_releases_bursts else may).add("super_segments")
    if (vantage in SENDER_VANTAGES or vantage == "router-in") and transfer.sender_tso:
        must.add("super_segments")  # the sender's GSO packets cross the veth whole
    if transfer.captures_bridge_copies(vantage):
        must.add("duplicate_frames")
    if vantage in ROUTER_BOTH_WAYS_VANTAGES:
        must.add("duplicate_frames")
        if transfer.data_loss > 0 or transfer.ack_loss > 0 or transfer.rate_bps > 0:
            may.add("forwarding_drops")  # random drops, or the bottleneck's queue overflowing
        if transfer.data_loss > 0 and path_lost_segments > 0:
            # the router drops from the first data on and stops half a second before iperf3's
            # end: a 1 s transfer whose connections took that long to open (4 flows on a busy
            # host, s28-hx) lost nothing, and no capture can show drops that never were
            must.add("forwarding_drops")
        if transfer.sender_tso:
            may.add("super_segments")  # the GSO packets coming in are set aside, but seen
    if (
        vantage in SENDER_VANTAGES or vantage == "router-in" or vantage in ROUTER_BOTH_WAYS_VANTAGES
    ) and transfer.path_mtu < min(transfer.sender_mtu, transfer.receiver_mtu):
        # the first flight, at the size the sender had before it learnt the path's MTU, is
        # longer than the segments after it, and counted as the segments of that size it holds
        may.add("super_segments")
    # Every capture point holds both directions, stamped on one CPU and written to the ring
    # on another: on a busy host a frame stamped milliseconds earlier is written after one
    # stamped later. The file then does step back: an ACK stamped 2.3 ms before the data
    # frame written ahead of it (router, `-i any`, 2 of 4 eight-second TSO runs); a receiver's
    # ACK 3.2 ms and 1.7 ms behind (issue4's receiver at 1 Gbit/s, 1 of 2 fresh runs, load
    # ~8); 3 steps of up to 10.6 ms in a sender capture under QEMU TCG (a vCPU descheduled
    # between stamping and writing). Never required: a quiet host writes in time order.
    may.add("time_backwards")
    if not transfer.timestamps_seen_at(vantage) and vantage not in SENDER_VANTAGES:
        # below the sender, loss from holes (IPv6: no IP ID) misses repairs lost again (none
        # sent, or the snaplen cut them: the capture cannot tell a lost repair from a late one)
        if transfer.family == 6 and transfer.data_loss > 0 and vantage in ("receiver", "receiver-any", "router-out"):
            must.add("no_timestamps")
        else:
            may.add("no_timestamps")  # congestive loss may leave no hole; IPv4 IDs count it unless contradicted
    if transfer.snaplen_cuts_headers(vantage):
        may.add("snaplen_short")  # only ACKs with SACK blocks reach past it: loss decides how many
    # first copies a repair overtook: their fate no ACK tells. Jitter that reorders, and an
    # unshaped path: no tbf queue serializes the router's egress, and at several Gbit/s the
    # veths' packets pass each other across CPUs (s27-h8h, unshaped-tso-gro-v4-p1-bbr-l1 at
    # 3.8 Gbit/s: reord_seen 516 and 982 in the sender's TCP_INFO, 717 and 1,513 spurious
    # retransmissions in the router's truth in two runs; `+4 estimated (+-1.9)` in the second).
    # Without SACK, those resent with a window after a timeout and the resent copies not
    # needed (no D-SACK tells whether they arrived)
    # The router's interface from the sender (router-in) is read as the sender's own capture.
    if (vantage in SENDER_VANTAGES or vantage == "router-in") and (
        transfer.jitter_reorders or transfer.veths_may_reorder or not transfer.sender_sack
    ):
        may.add("loss_estimated")
        # the same paths make the sender repeat data the receiver had: a fifth or more of the
        # retransmissions on a path that reorders or a fast one whose receiver lags (r1g: 887 of
        # 2,457), and a window resent after a timeout without SACK
        may.add("spurious_retransmissions")
    if transfer.bidir and (vantage in SENDER_VANTAGES or vantage in ("router-in", *ROUTER_BOTH_WAYS_VANTAGES)):
        # both ways at once: each connection's ACKs queue behind the other's data (up to
        # queue_ms), so its round trip jumps and its timers fire before the ACKs come: a live
        # 3 s bbr run resent 113 of its 466 segments spuriously (its loss read 353 for 353)
        may.add("spurious_retransmissions")
    if vantage in ROUTER_BOTH_WAYS_VANTAGES and (
        transfer.jitter_reorders or transfer.veths_may_reorder or not transfer.sender_sack
    ):
        # with both sides of the router in one file, the loss after it is the repeats of data
        # that had left it, needed or not as the sender's are (ro-unshaped-off-v4: 560 of
        # 2,776 spurious at router-any; 2,240 read for 2,174)
        may.add("spurious_retransmissions")
    if (vantage in SENDER_VANTAGES or vantage == "router-in") and path_lost_segments > 0:
        # iperf3's receiver resets the connection with its last flight in flight: where the
        # router's queue overflows in the round trips before (the random drops stop before the
        # end; the queue's do not), part of that flight is estimated lost from them (s550: 45 of
        # 195 dropped at a 450 ms path's full queue)
        may.add("unacknowledged_at_end")
    if vantage not in SENDER_VANTAGES:
        # a repair that overtakes first copies sent before it makes the receiver discard them
        # by PAWS: jitter that reorders, and also a busy host's veth backlogs or TCG's two
        # vCPUs on the way into the router (2-5 segments per flow on in-order jitter paths)
        may.add("paws_discards")
    if capture_kernel_drops > 0:
        must.add("capture_drops")
        may.add("capture_gaps")
        if vantage in SENDER_VANTAGES or vantage == "router-in":
            # the retransmissions among the segments a sender's capture missed are estimated at
            # their share of those it saw (a receiving host's capture that holds its own sending
            # too, iperf3 --bidir): said where that moves the count beyond its noise
            may.add("loss_estimated")
    if transfer.family == 6 and transfer.timestamps_seen_at(vantage):
        # IPv6 has no IP IDs: after the router's drops (its interface towards the receiver,
        # the receiver) loss is counted from sequence holes, a floor. Before them (router-in)
        # there are no holes to count; with `-i any` the router's own drops are counted
        # exactly, though the outgoing copies' holes may come to a few more than the drops
        # (3 of 189 in one congestive run) and then stand for the count. Without timestamps
        # the holes' count is no floor: `no_timestamps` says what it is instead. Nor where
        # the capture dropped packets (a repair it missed hides a loss) or the path reorders
        # (a late original taken for a repair counts as one): `loss_not_floor` instead. An
        # unlimited rate (~1 Gbit/s on the veths), or one above ORDERLY_RATE_BPS, reorders by
        # chance, as a busy host's veth backlogs do on in-order jitter paths (paws_discards
        # above): either may be raised (late originals recognised in 6 of 6 unlimited IPv6
        # captures, 0 of 62 at 100 Mbit/s; at 500 Mbit/s 2 of 2 non-TSO captures counted +0.4%
        # to +1.6% over the drops and said `loss_not_floor`)
        if capture_kernel_drops > 0 or transfer.jitter_reorders:
            expected, possible = {"loss_not_floor"}, set()
        elif transfer.veths_may_reorder or transfer.bidir or transfer.jitter_ms > 0 or in_vm:
            # in the guest under TCG a descheduled vCPU holds its veth backlog: a 2-segment TSO
            # packet that left the sender 8 ms before the next reached the router 3 ms after it,
            # 43 ms on the way (18 late originals in a 600 ms transfer without jitter). Both ways
            # at once, each host sends and receives on both CPUs: a fresh run of the bidir
            # matrix at 100 Mbit/s recognised late originals in 6 of its 8 transfers (3 to 29 a
            # capture; 27 and 12 in bd-off-v6-p1-bbr-l2, which said `loss_not_floor`)
            expected, possible = set(), {"loss_floor", "loss_not_floor"}
        else:
            expected, possible = {"loss_floor"}, set()
        if vantage in ("receiver", "receiver-any", "router-out") and path_lost_segments > 0:
            must.update(expected)
            may.update(possible)
            # repairs lost and sent again, which leave no hole of their own: estimated at the
            # rate of the loss events around each repair, and warned of where that matters
            may.add("loss_estimated")
        if vantage in ROUTER_BOTH_WAYS_VANTAGES and path_lost_segments > 0:
            may.update(expected | possible)
        if vantage not in SENDER_VANTAGES and capture_kernel_drops > 0:
            may.add("loss_not_floor")  # holes the capture made, where no ACK tells them apart
    if (
        transfer.family == 4
        and transfer.rate_bps > 0
        and path_lost_segments > 0
        and vantage in ("receiver", "receiver-any", "router-out")
    ):
        # iperf3's control connection shares the bottleneck's queue: where it overflows, the
        # client's few messages may lose a segment, and their IDs, mostly the client's pure
        # ACKs, count no data loss: its holes do, a floor (p16-v4-reno-q2: 2 segments at 2 ms
        # of queue, 16 flows; the data connections' IDs counted theirs exactly)
        may.add("loss_floor")
    return frozenset(must), frozenset(may)
