"""One real-host transfer: hosts with their ordinary offloads, captured where users capture.

Topology, three network namespaces of our own (`rhsnd-<tag>`, `rhrtr-<tag>`, `rhrcv-<tag>`):

    sender rhs0 --veth-- rhr0 router rhr1 --veth-- rhc0 receiver
    10.72.1.1           10.72.1.2   10.72.2.2      10.72.2.1
    fd72:1::1           fd72:1::2   fd72:2::2      fd72:2::1
                        egress rhr0: [netem ack_delay]    egress rhr1: [netem delay +- jitter] + tbf
                        FORWARD: random drop of data (rhr0 -> rhr1) and of pure ACKs (rhr1 -> rhr0)

Delay sits on the router's two egresses (data path to the receiver, ACK path to the
sender), after its FORWARD drops: the router's captures see the path from its middle.
Jitter is on the data path; netem keeps the packets in order unless the transfer lets
them pass each other (`jitter_reorders`): with a `rate` set, netem sends no packet before
the one queued ahead of it (a packet delayed longer holds back those behind it, and they
leave in a burst, as behind a Wi-Fi link's retries), so it gets a rate far above any
link here, which then costs each packet a fraction of a microsecond. The tbf bottleneck
is netem's child: the queue forms after the delay, at the rate.

iperf3 -P N runs in the sender (data flows sender -> receiver) from client ports
CLIENT_PORT .. CLIENT_PORT + N - 1, so the rules can tell its data connections from
its control connection; with `bidir` (iperf3 --bidir) N more from the ports after them carry
data the other way, receiver -> sender, with chains, drops and a tbf of their own (the record's
`reverse`). Offloads: every veth starts with TSO, GSO and GRO off; `gro`
turns GRO on at the receiver's rhc0 (its capture then holds coalesced frames), `tso`
turns TSO and GSO on at the sender's rhs0 (its capture holds the unsplit packets, and
the router forwards them whole: veth passes GSO packets on unsplit).

Ground truth, in segments:
  lost         data segments that left the sender (its OUTPUT chain) and never reached
               the receiver (its INPUT chain). Each chain counts a packet in a length
               bucket: bucket k counts packets carrying k segments (payload in
               ((k-1)*MSS, k*MSS]), so the counts are in segments also where GSO packets
               (TSO at the sender) or GRO packets (at the receiver) pass whole;
  data drops   of those, what the router dropped at random (iptables/ip6tables statistic),
               counted by the same buckets; the rest is the router's queue and the veths
               (`tc -s qdisc` is kept too, but counts a GSO packet it drops as one);
  ACK drops    pure ACKs dropped at random in the other direction (packets);
  SYN drops    the sender's SYNs dropped at random (`syn_loss`, packets): each is sent again,
               and TCP_INFO's total_retrans counts it;
               both kinds of drop stop LOSS_ENDS_BEFORE_TEST_END_S before iperf3's test
               ends, so the endpoints learn of every segment lost (see run_transfer);
  TCP_INFO     iperf3's per-stream retransmissions (total_retrans at the sender's timer end)
               and `ss -tiE` at the sender, which prints each socket's TCP_INFO as the
               kernel destroys it (total_retrans, segs_out, bytes_acked at the very end);
  delivered    iperf3's receiver figures (bytes the receiving application read);
  capture      each tcpdump's own counters (captured, dropped by kernel);
  retransmissions  each one needed or spurious, from the router's captures of both its sides
               (realhost_retransmissions): a sender retransmits spuriously too (a loss
               probe, a timer, a segment reordered on the way), so TCP_INFO's count is the
               needed ones plus those, and the segments lost are the needed ones plus the
               spurious copies dropped as well.
Every capture point writes `<vantage>/trace.pcap` and `<vantage>/meta.json`; iperf3's
JSON sits in the run folder as `iperf3.json`, where `spline-analyze` finds it.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from contextlib import ExitStack
from dataclasses import asdict, dataclass
from dataclasses import fields as dataclass_fields
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple, TypedDict

from . import netns
from .errors import TestbedError
from .realhost_retransmissions import retransmission_truth
from .rate_schedule import RateSchedule, rate_schedule_running, schedule_record, tbf_arguments
from .realhost_spec import BRIDGEABLE_HOSTS, IP_HEADER_BYTES, KIB_PER_MIB, MTU_BYTES, REVERSE_ROLE, Transfer
from .receiver_resends import receiver_resends_not_dsacked
from .stack_drops import (
    LINK_COUNTERS,
    STACK_COUNTERS,
    counter_deltas,
    parse_link_json,
    parse_mib_text,
    receiver_ofo_prunes,
    receiver_tcp_drop_packets,
)
from .spline_cca import SPLINE_CCA, spline_registered
from .run import iperf3_receiver_intervals, parse_tcpdump_counters, read_json_document, utc_now

SERVER_PORT = 5201
CLIENT_PORT = 41001
TCP_HEADER_BYTES = 20
TIMESTAMPS_OPTION_BYTES = 12  # with its padding: on every data segment of a connection that uses them
MAX_IP_LENGTH_BYTES = 65535  # the IP length field's ceiling: no GSO or GRO packet is longer
PURE_ACK_MAX_IP_BYTES = {4: 80, 6: 100}  # IP + TCP header with every option (SACK blocks)
NETEM_ORDER_RATE = "100gbit"  # netem's `rate` only to keep order: ~0.1 us per 1500-byte packet
NETEM_LIMIT_PACKETS = 100_000  # > a 200 ms path's flight at 1 Gbit/s (~17k packets): netem never drops
IPERF3_GRACE_S = 25.0
LOSS_CHAIN = "RHLOSS"
SYN_DROP_CHAIN = "RHSYNDROP"
LOSS_ENDS_BEFORE_TEST_END_S = 0.5  # the last flight is never dropped: see run_transfer
# ... plus this many of the path's added round trips, for a drop's repair (an RTO is
# srtt + 4 rttvar, at least 200 ms) and the repair of a dropped repair to pass the router
LOSS_ENDS_BEFORE_TEST_END_RTTS = 4.0
CAPTURE_TAIL_S = 1.5  # > tcpdump's 1 s buffer timeout, so its last block is written
# iperf3's server reports what it read this often: its idle tail (no data, waiting for the
# client's end of test) is trimmed from its seconds to within one such interval
SERVER_INTERVAL_S = 0.1
# short connections (`connections`): the receiver's and the sender's records, and how long all
# of them may take (a SYN or a tail lost several times waits out timeouts of 1 s and more)
SHORT_SERVE_JSON = "short-serve.json"
SHORT_SEND_JSON = "short-send.json"
SHORT_SEND_LOG = "short-send.stderr"
SHORT_CONNECTIONS_TIMEOUT_S = 300.0

ADDRESSES: Dict[int, Dict[str, Any]] = {
    4: {"sender": "10.72.1.1", "router_s": "10.72.1.2", "router_r": "10.72.2.2", "receiver": "10.72.2.1", "prefix": 24},
    6: {"sender": "fd72:1::1", "router_s": "fd72:1::2", "router_r": "fd72:2::2", "receiver": "fd72:2::1", "prefix": 64},
}
DEVICES = {"sender": "rhs0", "router_s": "rhr0", "router_r": "rhr1", "receiver": "rhc0"}
# a bridged host's bridge (`bridged`): its veth is the bridge's port, its address on the bridge
BRIDGE_DEVICE = "rhbr0"
# namespace role -> the device whose drop counters its truth keeps (towards the receiver)
STACK_DEVICES = {"rcv": "receiver", "rtr": "router_r"}
# ... and towards the sender, for the way back's truth (`bidir`)
REVERSE_STACK_DEVICES = {"snd": "sender", "rtr": "router_s"}
# capture point -> (namespace role, tcpdump -i)
CAPTURE_POINTS = {
    "sender": ("snd", "rhs0"),
    "receiver": ("rcv", "rhc0"),
    "router-any": ("rtr", "any"),
    "router-out": ("rtr", "rhr1"),
    "router-in": ("rtr", "rhr0"),
    "receiver-any": ("rcv", "any"),
    "sender-any": ("snd", "any"),
    "router-both": ("rtr", f"{DEVICES['router_s']},{DEVICES['router_r']}"),  # dumpcap -i rhr0 -i rhr1
}


def sum_of_all(values: List[Optional[int]]) -> Optional[int]:
    """The sum of `values`, or None when there are none or one is unknown."""
    known = [v for v in values if v is not None]
    return sum(known) if known and len(known) == len(values) else None


def data_header_bytes(family: int, timestamps: bool = True) -> int:
    """IP + TCP header of a data segment: Linux's data segments carry no option but timestamps
    (SACK blocks ride on ACKs; ECN takes header bits, not options)."""
    return IP_HEADER_BYTES[family] + TCP_HEADER_BYTES + (TIMESTAMPS_OPTION_BYTES if timestamps else 0)


def mss_bytes(family: int, timestamps: bool = True, mtu: int = MTU_BYTES) -> int:
    """Payload bytes of a full segment (on a 1500-byte MTU: 1448 with timestamps over IPv4, 1460 without)."""
    return mtu - data_header_bytes(family, timestamps)


def transfer_mtu_bytes(transfer: Transfer) -> int:
    """The MTU the transfer's segments fit: the sender's own, the receiver's through the MSS it
    announces, or the path's once the sender has learnt it (its first full segments, longer,
    the router refuses; the buckets count them as segments of the smaller size)."""
    return min(transfer.sender_mtu, transfer.receiver_mtu, transfer.path_mtu)


def transfer_mss_bytes(transfer: Transfer) -> int:
    """The segment size the transfer's sender uses: that of the smallest MTU on its way."""
    return mss_bytes(transfer.family, transfer.sender_timestamps, transfer_mtu_bytes(transfer))


def segment_buckets(family: int, timestamps: bool = True, mtu: int = MTU_BYTES) -> List[Tuple[int, int, int]]:
    """(segments, lowest IP length, highest IP length) of packets carrying 1, 2, ... segments,
    up to the longest IP length there is.

    iptables' length match reads the IP length: IPv4 total length, IPv6 payload length
    plus the 40-byte header; for a GSO packet that is the whole unsplit packet, whose one
    header stands for those of its segments, so the buckets depend on the header's size.
    The buckets run to MAX_IP_LENGTH_BYTES whatever the segment size: a 64 KiB GSO packet
    carries 46 segments of 1,428 bytes but 54 of 1,208 (a 1280-byte MTU), and a packet
    beyond the last bucket would leave the segment counts short.
    """
    header = data_header_bytes(family, timestamps)
    mss = mss_bytes(family, timestamps, mtu)
    buckets = []
    k = 1
    while header + (k - 1) * mss + 1 <= MAX_IP_LENGTH_BYTES:
        buckets.append((k, header + (k - 1) * mss + 1, min(MAX_IP_LENGTH_BYTES, header + k * mss)))
        k += 1
    return buckets


def rule_listing_counts(text: str) -> Dict[str, Tuple[int, int]]:
    """`{comment: (packets, bytes)}` for the rules of an `iptables -L -v -x -n` listing that carry a comment."""
    counts: Dict[str, Tuple[int, int]] = {}
    for line in text.splitlines():
        words = line.split()
        if "/*" in line and len(words) > 1 and words[0].isdigit() and words[1].isdigit():
            counts[line.split("/*", 1)[1].split("*/", 1)[0].strip()] = (int(words[0]), int(words[1]))
    return counts


def chain_listing(rules_text: str, chain: str) -> str:
    """The part of a record's `rules_text` (several listings joined) that lists `chain`."""
    found = re.search(rf"^Chain {re.escape(chain)} \(.*?(?=^Chain |\Z)", rules_text, re.M | re.S)
    return found.group(0) if found else ""


def segments_from_buckets(counts: Dict[str, Tuple[int, int]], header_bytes: int, segment_bytes: int) -> int:
    """Segments a chain counted: each `seg<k>` bucket's packets weigh k; packets the chain's
    `packets` rule saw in no bucket (a record made when the buckets stopped at 46 segments,
    short of a 64 KiB GSO packet of smaller segments) weigh their payload bytes in segments."""
    bucketed_packets = bucketed_bytes = segments = 0
    for name, (packets, size_bytes) in counts.items():
        if re.fullmatch(r"seg\d+", name):
            segments += int(name[3:]) * packets
            bucketed_packets += packets
            bucketed_bytes += size_bytes
    all_packets, all_bytes = counts.get("packets", (bucketed_packets, bucketed_bytes))
    unbucketed_packets = all_packets - bucketed_packets
    if unbucketed_packets > 0:
        payload_bytes = all_bytes - bucketed_bytes - unbucketed_packets * header_bytes
        segments += -(-payload_bytes // segment_bytes)
    return segments


class SegmentCounts(TypedDict):
    """The hosts' own chain counts of one transfer (`TransferTruth`'s first fields)."""

    sent_segments: int
    arrived_segments: int
    data_drop_packets: int
    data_drop_segments: int
    ack_drop_packets: int
    sent_packets: int
    arrived_packets: int
    syn_drop_packets: int


# The chains counting one direction's data (`counted_segments`): sent, dropped at random by the
# router, arrived, its pure ACKs dropped, its SYNs dropped; the way back (`bidir`) has its own
# (no SYN drops: syn_loss is one way's).
FORWARD_CHAINS = ("RHSENT", "RHDROP", "RHARRIVED", "RHACKDROP", SYN_DROP_CHAIN)
REVERSE_CHAINS = ("RHRSENT", "RHRDROP", "RHRARRIVED", "RHRACKDROP", "RHRSYNDROP")


def counted_segments(rules_text: str, transfer: Transfer, chains: Tuple[str, ...] = FORWARD_CHAINS) -> SegmentCounts:
    """`TransferTruth`'s counts from the hosts' own chains, read from their listings
    (`rules_text`, as a record keeps them, so a record's truth can be read again); `chains`:
    the direction's (REVERSE_CHAINS for the way back of a `bidir` transfer)."""
    header = data_header_bytes(transfer.family, transfer.sender_timestamps)
    segment_bytes = transfer_mss_bytes(transfer)
    sent, drops, arrived, ack_drops, syn_drops = (
        rule_listing_counts(chain_listing(rules_text, chain)) for chain in chains
    )
    return {
        "sent_segments": segments_from_buckets(sent, header, segment_bytes),
        "arrived_segments": segments_from_buckets(arrived, header, segment_bytes),
        "data_drop_packets": drops.get("packets", (0, 0))[0],
        "data_drop_segments": segments_from_buckets(drops, header, segment_bytes),
        "ack_drop_packets": ack_drops.get("ack-drop", (0, 0))[0],
        "sent_packets": sent.get("packets", (0, 0))[0],
        "arrived_packets": arrived.get("packets", (0, 0))[0],
        "syn_drop_packets": syn_drops.get("syn-drop", (0, 0))[0],
    }


@dataclass
class CaptureRecord:
    """One capture point's file and tcpdump's own counters."""

    vantage: str
    pcap: str
    buffer_kib: int
    counters: Dict[str, Optional[int]]


@dataclass
class TransferTruth:
    """What the hosts themselves counted during one transfer."""

    sent_segments: int  # data segments that left the sender (its OUTPUT chain)
    arrived_segments: int  # data segments that reached the receiver (its INPUT chain)
    data_drop_packets: int  # the router's random drops of data, packets
    data_drop_segments: int  # ... in segments
    ack_drop_packets: int
    qdisc_drops: int  # `tc -s qdisc` of the router's egress (packets, not segments)
    sent_packets: int
    arrived_packets: int
    tcpinfo_retransmissions: int  # iperf3, summed over streams (sender's timer end)
    tcpinfo_per_stream: Dict[int, int]  # client port -> iperf3 retransmissions
    tcpinfo_at_close: Dict[int, Dict[str, int]]  # client port -> `ss -ti` as the socket was destroyed
    delivered_bytes: int  # iperf3 receiver, summed over streams
    delivered_seconds: float  # iperf3's receiving seconds, less the server's idle tail
    delivered_bps: float
    sent_bytes: int
    cca_reported: Optional[str]
    server_idle_tail_s: float = 0.0  # trimmed from iperf3's seconds: see server_idle_tail_s
    server_idle_head_s: float = 0.0  # iperf3's seconds before its first data: see server_idle_head_s
    # each retransmission needed or spurious, from the router's two sides (None: no capture
    # there): `RetransmissionTruth.summary()` and the retransmitted copies
    retransmissions: Optional[Dict[str, Any]] = None
    retransmitted_copies: Optional[List[Dict[str, Any]]] = None
    # the receiver's and the router's stack drop counters over the transfer (stack_drops;
    # None: a record made before they were read)
    receiver_stack_drops: Optional[Dict[str, int]] = None
    router_stack_drops: Optional[Dict[str, int]] = None
    # segments of later copies the receiver's capture saw that no D-SACK of its TCP covered
    # (receiver_resends; None: no receiver capture, no SACK, or the capture dropped packets)
    receiver_resends_not_dsacked: Optional[int] = None
    # the sender's SYNs the router dropped at random (`syn_loss`; 0 in records made before it):
    # each is sent again, and TCP_INFO's total_retrans counts it
    syn_drop_packets: int = 0
    # the router's tbf rate as the schedule applied it (`rate_steps`; None: a fixed rate), each
    # step's rate and when it took effect (rate_schedule.AppliedStep)
    rate_schedule: Optional[List[Dict[str, Any]]] = None

    @property
    def lost_segments(self) -> int:
        """Data segments that left the sender and never reached the receiver."""
        return self.sent_segments - self.arrived_segments

    @property
    def other_drop_segments(self) -> int:
        """Lost segments the random-drop rule did not take: the router's queue, the veths."""
        return self.lost_segments - self.data_drop_segments

    def summed_at_close(self, key: str) -> Optional[int]:
        """TCP_INFO `key` summed over the data sockets as they closed; None where the record
        misses the close of one of iperf3's streams (a socket still resending after a timeout
        as the watch stopped): the sum of the others is not the transfer's figure."""
        closed_ports = {int(port) for port in self.tcpinfo_at_close}
        if not closed_ports.issuperset(int(port) for port in self.tcpinfo_per_stream):
            return None
        return sum_of_all([s.get(key) for s in self.tcpinfo_at_close.values()])

    @property
    def retransmissions_at_close(self) -> Optional[int]:
        """The sender's TCP_INFO total_retrans summed over the data sockets as they closed."""
        return self.summed_at_close("total_retrans")

    @property
    def dsack_dups_at_close(self) -> Optional[int]:
        """D-SACK blocks the sender received (TCP_INFO dsack_dups) summed over the data sockets."""
        return self.summed_at_close("dsack_dups")

    @property
    def bytes_acked_at_close(self) -> Optional[int]:
        """What the receiver acknowledged (TCP_INFO bytes_acked) summed over the data sockets."""
        return self.summed_at_close("bytes_acked")

    @property
    def receiver_tcp_drop_packets(self) -> Optional[int]:
        """Data packets the receiver's TCP dropped after its INPUT chain counted them arrived."""
        return None if self.receiver_stack_drops is None else receiver_tcp_drop_packets(self.receiver_stack_drops)

    @property
    def receiver_ofo_prunes(self) -> Optional[int]:
        """Times the receiver pruned its out-of-order queue (segments thrown away, not counted)."""
        return None if self.receiver_stack_drops is None else receiver_ofo_prunes(self.receiver_stack_drops)

    def to_json(self) -> Dict[str, Any]:
        """The fields and the figures derived from them, as truth.json holds them."""
        document = asdict(self)
        document["receiver_tcp_drop_packets"] = self.receiver_tcp_drop_packets
        document["receiver_ofo_prunes"] = self.receiver_ofo_prunes
        document["lost_segments"] = self.lost_segments
        document["other_drop_segments"] = self.other_drop_segments
        document["retransmissions_at_close"] = self.retransmissions_at_close
        document["bytes_acked_at_close"] = self.bytes_acked_at_close
        document["dsack_dups_at_close"] = self.dsack_dups_at_close
        return document


def recounted_truth(
    record: Dict[str, Any],
    transfer: Transfer,
    chains: Tuple[str, ...] = FORWARD_CHAINS,
    receiver_document: Optional[Dict[str, Any]] = None,
) -> Dict[str, Any]:
    """A record's truth with its segment counts read again from the chains' listings it keeps
    (records made before the buckets reached 64 KiB for every segment size read short), and
    the iperf3 server's idle tail (`server_idle_tail_s`) left out of its receiving seconds
    again wherever the record's folder still has the server's JSON (at the intervals it was
    made with): records trimmed by an older rule, or never, are trimmed by today's, once.
    The way back of a `bidir` transfer: its `chains` and its receiver's intervals
    (`receiver_document`, `reverse_receiver_document` of the client's JSON)."""
    truth = record["truth"]
    fields = {field.name: truth[field.name] for field in dataclass_fields(TransferTruth) if field.name in truth}
    fields.update(counted_segments(record["rules_text"], transfer, chains))
    server_document = receiver_document
    if server_document is None and record.get("run_dir"):
        server_document = read_json_document(Path(record["run_dir"]) / "server.json")
    if server_document is not None:
        fields.update(server_timing(fields, server_document))
    fields["tcpinfo_at_close"] = {int(port): sample for port, sample in fields["tcpinfo_at_close"].items()}
    return {**truth, **TransferTruth(**fields).to_json()}


@dataclass
class TransferRecord:
    """A finished transfer: its spec, folder, captures and truth."""

    transfer: Transfer
    run_dir: str
    sender_address: str
    client_ports: List[int]
    captures: Dict[str, CaptureRecord]
    truth: TransferTruth
    rules_text: str
    qdisc_text: str
    wall_time_s: float = 0.0
    in_vm: bool = False  # made in a guest kernel under QEMU (realhost --vm)
    # the way back of a `bidir` transfer: its data's sender (the receiver host), the client ports
    # of its connections (their data comes from SERVER_PORT to them) and its truth
    reverse: Optional["ReverseRecord"] = None

    def to_json(self) -> Dict:
        document = asdict(self)
        document["transfer"] = asdict(self.transfer)
        document["truth"] = self.truth.to_json()
        if self.reverse is None:
            del document["reverse"]
        else:
            document["reverse"] = {**asdict(self.reverse), "truth": self.reverse.truth.to_json()}
        return document


@dataclass
class ReverseRecord:
    """The other direction of a `bidir` transfer: receiver -> sender on connections of its own."""

    sender_address: str
    client_ports: List[int]
    truth: TransferTruth
    # seconds the client's TCP went on taking in data after its iperf3 clock ended (`unread_at_end_s`)
    unread_at_end_s: float = 0.0


def firewall_binary(family: int) -> str:
    return "iptables" if family == 4 else "ip6tables"


def rule_listing(namespace_name: str, family: int, chain: str) -> str:
    """`iptables -L -v -x -n` of `chain`: its rules with exact packet and byte counters."""
    return netns.run_command(
        [firewall_binary(family), "-w", "-L", chain, "-v", "-x", "-n"], namespace=namespace_name
    ).stdout


def stack_counters(namespace_name: str, device: str) -> Dict[str, int]:
    """The namespace's MIB counters (/proc/net/netstat, snmp, snmp6: per network namespace)
    and `device`'s drop counters, as `stack_drops` names them."""
    # one process for the three tables (each exec counts under QEMU TCG)
    tables = ["/proc/net/netstat", "/proc/net/snmp", "/proc/net/snmp6"]
    counters = parse_mib_text(netns.run_command(["cat", *tables], namespace=namespace_name, check=False).stdout)
    link = netns.run_command(["ip", "-j", "-s", "link", "show", "dev", device], namespace=namespace_name, check=False)
    counters.update({f"{device}_{name}": value for name, value in parse_link_json(link.stdout).items()})
    return counters


def stack_counter_deltas(before: Dict[str, int], after: Dict[str, int], device: str) -> Dict[str, int]:
    """The counters' growth over the transfer (`stack_counters` read before and after): the drop
    counters always (0 included, so a record tells "none" from "not read"), any other that moved."""
    kept = [*STACK_COUNTERS, *(f"{device}_{name}" for name in LINK_COUNTERS)]
    moved = [name for name in after if name not in kept and after[name] != before.get(name, 0)]
    return counter_deltas(before, after, [*kept, *moved])


def host_device(host: str, bridged: Sequence[str] = ()) -> str:
    """The device that holds `host`'s address (sender or receiver): its veth, or the bridge
    whose port the veth is when the host is `bridged` (where its IP stack sends and receives)."""
    return BRIDGE_DEVICE if host in bridged else DEVICES[host]


def skip_duplicate_address_detection(namespace_name: str, device: str) -> None:
    """No IPv6 duplicate address detection on `device` (set before it comes up): its link-local
    address is usable at once. Otherwise it stays tentative for 1-2 s after the link comes up,
    neighbour discovery from it waits as long, and the router held an IPv6 transfer's first SYN
    until it was sent again: every IPv6 transfer's data began 1.0-2.0 s after iperf3 did,
    where a v4 one's began within 2 ms, so the random drops, stopped on iperf3's clock 0.5 s
    before its end, stopped 1.5-2.5 s before a 4 s test's data ended (the global addresses already
    take nodad)."""
    netns.run_command(["sysctl", "-q", "-w", f"net.ipv6.conf.{device}.accept_dad=0"], namespace=namespace_name)


def add_bridge(namespace_name: str, port: str) -> None:
    """A bridge with `port` as its only port and every offload off (set_offloads turns them on
    as on its port); up before the address goes on it."""
    netns.run_command(["ip", "link", "add", BRIDGE_DEVICE, "type", "bridge"], namespace=namespace_name)
    netns.run_command(["ip", "link", "set", port, "master", BRIDGE_DEVICE], namespace=namespace_name)
    netns.run_command(
        ["ethtool", "-K", BRIDGE_DEVICE, "tso", "off", "gso", "off", "gro", "off"], namespace=namespace_name
    )
    skip_duplicate_address_detection(namespace_name, BRIDGE_DEVICE)
    netns.run_command(["ip", "link", "set", BRIDGE_DEVICE, "up"], namespace=namespace_name)


def build_hosts(stack: ExitStack, tag: str, bridged: Sequence[str] = ()) -> Dict[str, str]:
    """The three namespaces, both address families, every offload off; the hosts in `bridged`
    with their address on a bridge whose port is their veth; removed when `stack` closes."""
    names = {role: stack.enter_context(netns.namespace(f"rh{role}-{tag}")) for role in ("snd", "rtr", "rcv")}
    netns.add_veth_pair(names["snd"], DEVICES["sender"], names["rtr"], DEVICES["router_s"])
    netns.add_veth_pair(names["rtr"], DEVICES["router_r"], names["rcv"], DEVICES["receiver"])
    placement = {"sender": "snd", "router_s": "rtr", "router_r": "rtr", "receiver": "rcv"}
    for role, device in DEVICES.items():
        ns = names[placement[role]]
        netns.run_command(["ethtool", "-K", device, "tso", "off", "gso", "off", "gro", "off"], namespace=ns)
        skip_duplicate_address_detection(ns, device)
        netns.run_command(["ip", "link", "set", device, "up"], namespace=ns)
        if role in bridged:
            add_bridge(ns, device)
        for family, addresses in ADDRESSES.items():
            extra = ["nodad"] if family == 6 else []
            netns.run_command(
                [
                    "ip",
                    f"-{family}",
                    "addr",
                    "add",
                    f"{addresses[role]}/{addresses['prefix']}",
                    "dev",
                    host_device(role, bridged) if role in BRIDGEABLE_HOSTS else device,
                    *extra,
                ],
                namespace=ns,
            )
    for family, addresses in ADDRESSES.items():
        netns.run_command(
            ["ip", f"-{family}", "route", "add", "default", "via", addresses["router_s"]], namespace=names["snd"]
        )
        netns.run_command(
            ["ip", f"-{family}", "route", "add", "default", "via", addresses["router_r"]], namespace=names["rcv"]
        )
    netns.run_command(["sysctl", "-q", "-w", "net.ipv4.ip_forward=1"], namespace=names["rtr"])
    netns.run_command(["sysctl", "-q", "-w", "net.ipv6.conf.all.forwarding=1"], namespace=names["rtr"])
    return names


def router_qdisc_commands(transfer: Transfer) -> List[List[str]]:
    """`tc` argv (run in the router) for the transfer's path: netem delay (and jitter) on each
    egress that has any, the tbf bottleneck towards the receiver (netem's child when both)."""
    commands: List[List[str]] = []
    data_device, ack_device = DEVICES["router_r"], DEVICES["router_s"]
    # a rate schedule's first step; its limit is the bytes of queue_ms at the highest step
    tbf = tbf_arguments(transfer, transfer.initial_rate_bps) if transfer.rate_bps > 0 else []
    if transfer.delay_ms > 0 or transfer.jitter_ms > 0:
        netem = ["netem", "delay", f"{transfer.delay_ms:g}ms"]
        if transfer.jitter_ms > 0:
            netem.append(f"{transfer.jitter_ms:g}ms")
            if not transfer.jitter_reorders:
                netem += ["rate", NETEM_ORDER_RATE]
        netem += ["limit", str(NETEM_LIMIT_PACKETS)]
        commands.append(["tc", "qdisc", "add", "dev", data_device, "root", "handle", "1:", *netem])
        if tbf:
            commands.append(["tc", "qdisc", "add", "dev", data_device, "parent", "1:", "handle", "2:", *tbf])
    elif tbf:
        commands.append(["tc", "qdisc", "add", "dev", data_device, "root", "handle", "1:", *tbf])
    back_tbf = tbf if transfer.bidir else []  # the way back's data queues as the way there's does
    if transfer.ack_delay_ms > 0:
        netem = ["netem", "delay", f"{transfer.ack_delay_ms:g}ms", "limit", str(NETEM_LIMIT_PACKETS)]
        commands.append(["tc", "qdisc", "add", "dev", ack_device, "root", "handle", "1:", *netem])
        if back_tbf:
            commands.append(["tc", "qdisc", "add", "dev", ack_device, "parent", "1:", "handle", "2:", *back_tbf])
    elif back_tbf:
        commands.append(["tc", "qdisc", "add", "dev", ack_device, "root", "handle", "1:", *back_tbf])
    return commands


def root_qdisc_drops(text: str) -> int:
    """The drops `tc -s qdisc show` gives its first (root) qdisc: netem counts its tbf child's
    drops as its own, so a sum over both would count each twice."""
    found = re.search(r"\bdropped (\d+)", text)
    return int(found.group(1)) if found else 0


def loss_ends_before_test_end_s(transfer: Transfer) -> float:
    """How long before iperf3's end the router stops dropping: every drop is repaired in time."""
    return LOSS_ENDS_BEFORE_TEST_END_S + LOSS_ENDS_BEFORE_TEST_END_RTTS * transfer.added_rtt_ms / 1000.0


def set_stacks(names: Dict[str, str], transfer: Transfer) -> None:
    """The sender's TCP options, the MTUs of the two hosts and of the router's way to the receiver,
    and the receiver's buffer ceiling (per-namespace sysctls)."""
    for role, sysctls in (("snd", transfer.sender_sysctls), ("rcv", transfer.receiver_sysctls)):
        for key, value in sysctls.items():
            netns.run_command(["sysctl", "-q", "-w", f"{key}={value}"], namespace=names[role])
    for role, device, mtu in (
        ("snd", DEVICES["sender"], transfer.sender_mtu),
        ("rcv", DEVICES["receiver"], transfer.receiver_mtu),
        ("rtr", DEVICES["router_r"], transfer.path_mtu),
        # a veth refuses frames longer than its peer's MTU: the router takes what the sender sends
        ("rtr", DEVICES["router_s"], max(MTU_BYTES, transfer.sender_mtu)),
    ):
        if mtu != MTU_BYTES:
            netns.run_command(["ip", "link", "set", device, "mtu", str(mtu)], namespace=names[role])
    for host, role, mtu in (("sender", "snd", transfer.sender_mtu), ("receiver", "rcv", transfer.receiver_mtu)):
        if host in transfer.bridged and mtu != MTU_BYTES:
            netns.run_command(["ip", "link", "set", BRIDGE_DEVICE, "mtu", str(mtu)], namespace=names[role])


def set_offloads(names: Dict[str, str], transfer: Transfer) -> None:
    """GRO at the receiver's veth, TSO and GSO at the sender's; a bridged host's bridge as its port
    (the stack hands the bridge super-segments only where the bridge offers TSO). A `bidir`
    transfer's hosts both send and receive: each gets both."""
    receiving = [("receiver", "rcv")] + ([("sender", "snd")] if transfer.bidir else [])
    sending = [("sender", "snd")] + ([("receiver", "rcv")] if transfer.bidir else [])
    if transfer.receiver_gro:
        for host, role in receiving:
            for device in {DEVICES[host], host_device(host, transfer.bridged)}:
                netns.run_command(["ethtool", "-K", device, "gro", "on"], namespace=names[role])
    if transfer.sender_tso:
        for host, role in sending:
            for device in {DEVICES[host], host_device(host, transfer.bridged)}:
                netns.run_command(["ethtool", "-K", device, "tso", "on", "gso", "on"], namespace=names[role])


def add_segment_chain(rules: List[List[str]], transfer: Transfer, chain: str, final: List[str]) -> None:
    """A chain counting each packet in the bucket of its segment count, ending in `final` (e.g. DROP)."""
    rules.append(["-N", chain])
    for k, low, high in segment_buckets(transfer.family, transfer.sender_timestamps, transfer_mtu_bytes(transfer)):
        rules.append(
            ["-A", chain, "-m", "length", "--length", f"{low}:{high}", "-m", "comment", "--comment", f"seg{k}"],
        )
    rules.append(["-A", chain, "-m", "comment", "--comment", "packets", *final])


def data_connections_match(client_ports: List[int]) -> List[str]:
    """The transfer's data connections, sender -> receiver: TCP from its client ports to the server."""
    return ["-p", "tcp", "--sport", f"{client_ports[0]}:{client_ports[-1]}", "--dport", str(SERVER_PORT)]


def reverse_connections_match(client_ports: List[int]) -> List[str]:
    """The way back's connections (`bidir`) as their data flows, receiver -> sender: TCP from the
    server to the client ports of those connections."""
    return ["-p", "tcp", "--sport", str(SERVER_PORT), "--dport", f"{client_ports[0]}:{client_ports[-1]}"]


def data_match(family: int, client_ports: List[int], timestamps: bool = True, reverse: bool = False) -> List[str]:
    """The transfer's data packets, sender -> receiver: its data connections, payload > 0, no SYN or
    RST; `reverse`: the way back's (`bidir`), receiver -> sender on its own connections."""
    header = data_header_bytes(family, timestamps)
    return [
        *(reverse_connections_match(client_ports) if reverse else data_connections_match(client_ports)),
        "--tcp-flags",
        "SYN,RST",
        "NONE",
        "-m",
        "length",
        "--length",
        f"{header + 1}:65535",
    ]


def install_rules(
    names: Dict[str, str], transfer: Transfer, client_ports: List[int], reverse_ports: Sequence[int] = ()
) -> None:
    """Segment counters where the data leaves the sender and reaches the receiver, random drops between.

    The sender's OUTPUT and the receiver's INPUT see whole GSO and GRO packets; the length
    buckets count them as the segments they are on the wire. What left and never arrived
    is the network's loss: the router's random drops, its queue's drops, and any a veth
    dropped; the random drops have their own counter.
    """
    family = transfer.family
    data = data_match(family, client_ports, transfer.sender_timestamps)
    batch: Dict[str, List[List[str]]] = {name: [] for name in names.values()}
    router = batch[names["rtr"]]
    add_counting_chains(batch, names, transfer, data, ("snd", "sender", "RHSENT"), ("rcv", "receiver", "RHARRIVED"))
    add_segment_chain(router, transfer, "RHDROP", ["-j", "DROP"])
    add_drop_chain(router, "RHACKDROP", "ack-drop")
    add_drop_chain(router, SYN_DROP_CHAIN, "syn-drop")
    router.append(["-N", LOSS_CHAIN])
    router.append(["-A", "FORWARD", "-j", LOSS_CHAIN])
    if transfer.data_loss > 0:
        router.append([*ROUTER_WAY_THERE, *data, *random_drop(transfer.data_loss), "-j", "RHDROP"])
    if transfer.syn_loss > 0:
        router.append(syn_drop_rule(transfer, client_ports))
    if transfer.ack_loss > 0:
        acks = pure_ack_match(family, str(SERVER_PORT), f"{client_ports[0]}:{client_ports[-1]}")
        router.append([*ROUTER_WAY_BACK, *acks, *random_drop(transfer.ack_loss), "-j", "RHACKDROP"])
    if reverse_ports:
        add_reverse_rules(batch, names, transfer, list(reverse_ports))
    for namespace_name, rules in batch.items():
        apply_rules(namespace_name, family, rules)


# The router's loss rules, by the way the packets go: from the sender's side to the receiver's,
# and back.
ROUTER_WAY_THERE = ["-A", LOSS_CHAIN, "-i", DEVICES["router_s"], "-o", DEVICES["router_r"]]
ROUTER_WAY_BACK = ["-A", LOSS_CHAIN, "-i", DEVICES["router_r"], "-o", DEVICES["router_s"]]


def random_drop(probability: float) -> List[str]:
    """The match of a random share `probability` of the packets (iptables statistic)."""
    return ["-m", "statistic", "--mode", "random", "--probability", f"{probability:.6f}"]


def pure_ack_match(family: int, source_ports: str, destination_ports: str) -> List[str]:
    """Pure ACKs (no data, no SYN, RST or FIN) between those ports."""
    return [
        "-p",
        "tcp",
        "--sport",
        source_ports,
        "--dport",
        destination_ports,
        "--tcp-flags",
        "SYN,RST,FIN",
        "NONE",
        "-m",
        "length",
        "--length",
        f"0:{PURE_ACK_MAX_IP_BYTES[family]}",
    ]


def add_drop_chain(rules: List[List[str]], chain: str, comment: str) -> None:
    """A chain that counts what it drops (its one rule's packet counter), named for the record."""
    rules.append(["-N", chain])
    rules.append(["-A", chain, "-m", "comment", "--comment", comment, "-j", "DROP"])


def add_counting_chains(
    batch: Dict[str, List[List[str]]],
    names: Dict[str, str],
    transfer: Transfer,
    data: List[str],
    sent: Tuple[str, str, str],
    arrived: Tuple[str, str, str],
) -> None:
    """Segment counters of `data` leaving one host and reaching the other: `sent` and `arrived`
    each name the namespace's key in `names`, the host's role and the counting chain."""
    for (namespace_key, host, chain), hook, direction in ((sent, "OUTPUT", "-o"), (arrived, "INPUT", "-i")):
        add_segment_chain(batch[names[namespace_key]], transfer, chain, [])
        batch[names[namespace_key]].append(
            ["-A", hook, direction, host_device(host, transfer.bridged), *data, "-j", chain]
        )


def add_reverse_rules(
    batch: Dict[str, List[List[str]]], names: Dict[str, str], transfer: Transfer, reverse_ports: List[int]
) -> None:
    """The way back's counters and drops (`bidir`), as the way there's with the hosts' roles
    swapped: segments leaving the receiver (RHRSENT) and reaching the sender (RHRARRIVED), the
    router's random drops of that data from its interface to the receiver onto the one to the
    sender (RHRDROP), and of the sender's pure ACKs of it the other way (RHRACKDROP)."""
    data = data_match(transfer.family, reverse_ports, transfer.sender_timestamps, reverse=True)
    add_counting_chains(batch, names, transfer, data, ("rcv", "receiver", "RHRSENT"), ("snd", "sender", "RHRARRIVED"))
    router = batch[names["rtr"]]
    add_segment_chain(router, transfer, "RHRDROP", ["-j", "DROP"])
    add_drop_chain(router, "RHRACKDROP", "ack-drop")
    if transfer.data_loss > 0:
        router.append([*ROUTER_WAY_BACK, *data, *random_drop(transfer.data_loss), "-j", "RHRDROP"])
    if transfer.ack_loss > 0:
        acks = pure_ack_match(transfer.family, f"{reverse_ports[0]}:{reverse_ports[-1]}", str(SERVER_PORT))
        router.append([*ROUTER_WAY_THERE, *acks, *random_drop(transfer.ack_loss), "-j", "RHRACKDROP"])


def syn_drop_rule(transfer: Transfer, client_ports: List[int]) -> List[str]:
    """The router's rule that drops the sender's SYNs at random (`syn_loss`): its data
    connections' SYNs on their way to the receiver, counted in SYN_DROP_CHAIN."""
    syns = ["--tcp-flags", "SYN,ACK", "SYN"]
    return [
        *ROUTER_WAY_THERE,
        *data_connections_match(client_ports),
        *syns,
        *random_drop(transfer.syn_loss),
        "-j",
        SYN_DROP_CHAIN,
    ]


def restore_text(rules: List[List[str]]) -> str:
    """`iptables-restore --noflush` input for the filter table: each `-N` a chain declared
    (before any rule, as the format wants), each other rule a line, in order."""
    chains = [f":{rule[1]} - [0:0]" for rule in rules if rule[0] == "-N"]
    lines = [" ".join(rule) for rule in rules if rule[0] != "-N"]
    return "\n".join(["*filter", *chains, *lines, "COMMIT", ""])


def apply_rules(namespace_name: str, family: int, rules: List[List[str]]) -> None:
    """All of `rules` in one `iptables-restore` (~140 rules: one process instead of one
    each, which took ~2 minutes of a transfer's set-up in a guest under QEMU TCG)."""
    if not rules:
        return
    argv = netns.in_namespace([f"{firewall_binary(family)}-restore", "-w", "--noflush"], namespace_name)
    completed = subprocess.run(argv, input=restore_text(rules), capture_output=True, text=True, timeout=60.0)
    if completed.returncode != 0:
        raise TestbedError(f"{' '.join(argv)} failed: {completed.stderr.strip() or completed.stdout.strip()}")


def stop_loss(router: str, family: int) -> None:
    """Stop the random drops (their counters stay): flush the chain that jumps to them."""
    netns.run_command([firewall_binary(family), "-w", "-F", LOSS_CHAIN], namespace=router)


def capture_argv(capturer: str, interface: str, pcap: Path, buffer_kib: int, snaplen_bytes: int) -> List[str]:
    """The capturer's command line as users run it (no immediate mode), TCP only: tcpdump (-B in
    KiB) or Wireshark's dumpcap (-B in MiB; its `-i any` takes libpcap's first link type,
    Linux cooked v1, where tcpdump picks v2)."""
    if capturer == "dumpcap":
        # several interfaces (comma-separated): one -i each, into one pcapng
        interfaces = [arg for name in interface.split(",") for arg in ("-i", name)]
        buffer = ["-B", str(max(1, buffer_kib // KIB_PER_MIB))]
        return ["dumpcap", *interfaces, "-s", str(snaplen_bytes), *buffer, "-f", "tcp", "-w", str(pcap)]
    buffer = ["-B", str(buffer_kib)]
    return ["tcpdump", "-i", interface, "-n", "-s", str(snaplen_bytes), *buffer, "-Z", "root", "-w", str(pcap), "tcp"]


# what each capturer writes to stderr once it captures
CAPTURE_STARTED = {"tcpdump": "listening on", "dumpcap": "Capturing on"}


def start_capture(
    stack: ExitStack,
    namespace_name: str,
    interface: str,
    pcap: Path,
    buffer_kib: int,
    snaplen_bytes: int,
    capturer: str = "tcpdump",
) -> netns.Process:
    """The capturer on `interface`, writing `pcap`; returns once it listens. Its stderr (the
    closing counters) goes to `<capturer>.log` beside the file."""
    log = pcap.with_name(f"{capturer}.log")
    proc = stack.enter_context(
        netns.process(
            capture_argv(capturer, interface, pcap, buffer_kib, snaplen_bytes),
            namespace_name,
            pcap.with_name(f"{capturer}.stdout"),
            log,
        )
    )
    started = CAPTURE_STARTED[capturer]
    if not netns.wait_until(lambda: started in log.read_text(errors="replace") or not proc.running(), 10):
        raise TestbedError(f"{capturer} did not start on {interface} in {namespace_name}")
    if not proc.running():
        raise TestbedError(f"{capturer} failed on {interface}: {log.read_text(errors='replace').strip()}")
    return proc


def parse_dumpcap_counters(stderr_text: str) -> Dict[str, Optional[int]]:
    """dumpcap's closing counters in tcpdump's keys; None where it printed none. Its per-interface
    line "received/dropped ... (pcap:A/dumpcap:B/flushed:C/ps_ifdrop:D)": A + B + C are the
    packets the capture lost on the host (the kernel's ring, dumpcap's own buffer), D the
    interface's."""
    captured = re.findall(r"Packets captured: (\d+)", stderr_text)
    lines = re.findall(
        r"Packets received/dropped on interface .*?: (\d+)/\d+ "
        r"\(pcap:(\d+)/dumpcap:(\d+)/flushed:(\d+)/ps_ifdrop:(\d+)\)",
        stderr_text,
    )
    if not lines:
        return {"captured": None, "received_by_filter": None, "kernel_drops": None, "interface_drops": None}
    numbers = [[int(n) for n in line] for line in lines]
    return {
        "captured": int(captured[-1]) if captured else None,
        "received_by_filter": sum(n[0] for n in numbers),
        "kernel_drops": sum(n[1] + n[2] + n[3] for n in numbers),
        "interface_drops": sum(n[4] for n in numbers),
    }


def capture_counters(capturer: str, stderr_text: str) -> Dict[str, Optional[int]]:
    """The capturer's closing counters (tcpdump's keys) from its stderr."""
    return parse_dumpcap_counters(stderr_text) if capturer == "dumpcap" else parse_tcpdump_counters(stderr_text)


def parse_ss_info(text: str, by_peer_port: bool = False) -> Dict[int, Dict[str, int]]:
    """`{local port: {total_retrans, segs_out, bytes_acked, ...}}` from `ss -tinH` output; keyed by
    the peer's port instead with `by_peer_port` (the server's sockets, all on one local port)."""
    samples: Dict[int, Dict[str, int]] = {}
    port: Optional[int] = None
    for line in text.splitlines():
        head = re.match(r"^\S+\s+\d+\s+\d+\s+(\S+):(\d+)\s+(\S+):(\d+)", line)
        if head:
            port = int(head.group(4 if by_peer_port else 2))
            continue
        if port is None:
            continue
        sample: Dict[str, int] = {}
        retrans = re.search(r"\bretrans:\d+/(\d+)", line)
        sample["total_retrans"] = int(retrans.group(1)) if retrans else 0
        for key in ("segs_out", "data_segs_out", "bytes_acked", "bytes_sent", "bytes_retrans"):
            found = re.search(rf"\b{key}:(\d+)", line)
            if found:
                sample[key] = int(found.group(1))
        for key in ("dsack_dups", "reord_seen"):  # printed only when not 0
            found = re.search(rf"\b{key}:(\d+)", line)
            sample[key] = int(found.group(1)) if found else 0
        if "segs_out" in sample:
            samples[port] = sample
        port = None
    return samples


def iperf3_truth(document: Dict, reverse: bool = False) -> Dict[str, Any]:
    """Sender retransmissions per stream and the receiver's delivered bytes from an iperf3 -J client
    result; `reverse`: the way back's (`--bidir`: the server's streams sending to the client, their
    sums under `*_bidir_reverse`)."""
    end = document.get("end") or {}
    per_stream = {}
    suffix = "_bidir_reverse" if reverse else ""
    for stream in end.get("streams") or []:
        sender = stream.get("sender") or {}
        if reverse and sender.get("sender", True):  # a stream of the way there
            continue
        if not reverse and sender.get("sender") is False:  # a stream of the way back (--bidir)
            continue
        if isinstance(sender.get("retransmits"), int):
            port = next(
                (
                    c["local_port"]
                    for c in (document.get("start") or {}).get("connected") or []
                    if c.get("socket") == sender.get("socket")
                ),
                sender.get("socket"),
            )
            if port is not None:
                per_stream[int(port)] = int(sender["retransmits"])
    received = end.get(f"sum_received{suffix}") or {}
    sent = end.get(f"sum_sent{suffix}") or {}
    return {
        "tcpinfo_retransmissions": int(sent.get("retransmits") or 0),
        "tcpinfo_per_stream": per_stream,
        "delivered_bytes": int(received.get("bytes") or 0),
        "delivered_seconds": float(received.get("seconds") or 0.0),
        "delivered_bps": float(received.get("bits_per_second") or 0.0),
        "sent_bytes": int(sent.get("bytes") or 0),
        "cca_reported": end.get("receiver_tcp_congestion" if reverse else "sender_tcp_congestion"),
    }


def reverse_receiver_document(client_document: Optional[Dict[str, Any]]) -> Optional[Dict[str, Any]]:
    """The way back's receiving intervals (`--bidir`) in the shape of an iperf3 server's document:
    the client receives them, and its intervals hold them under `sum_bidir_reverse`."""
    if client_document is None:
        return None
    intervals = [
        {"sum": interval.get("sum_bidir_reverse") or {}}
        for interval in client_document.get("intervals") or []
        if isinstance(interval, dict)
    ]
    return {"intervals": intervals}


def short_transfers_process(
    role: str, transfer: Transfer, namespace_name: str, run_dir: Path, addresses: Dict[str, Any]
) -> Any:
    """The short connections' receiver (`serve`) or sender (`send`) in `namespace_name`, as a
    context manager (short_transfers.py); its record in SHORT_SERVE_JSON or SHORT_SEND_JSON."""
    count = str(transfer.connections)
    if role == "serve":
        argv = ["serve", addresses["receiver"], str(SERVER_PORT), count, str(run_dir / SHORT_SERVE_JSON)]
    else:
        size_bytes = str(transfer.connection_kib * 1024)
        target = [addresses["receiver"], str(SERVER_PORT), str(CLIENT_PORT), count, size_bytes, transfer.cca]
        argv = ["send", *target, str(run_dir / SHORT_SEND_JSON)]
    return netns.process(
        [sys.executable, "-m", f"{__package__}.short_transfers", *argv],
        namespace_name,
        run_dir / f"short-{role}.stdout",
        run_dir / f"short-{role}.stderr",
        stop_signal=signal.SIGTERM,
    )


def union_span_s(spans: List[Tuple[float, float]]) -> float:
    """Seconds covered by at least one of the (start, end) spans."""
    covered_s, reach_s = 0.0, float("-inf")
    for start_s, end_s in sorted(spans):
        if end_s > reach_s:
            covered_s += end_s - max(start_s, reach_s)
            reach_s = end_s
    return covered_s


def short_connections_truth(
    served: Optional[Dict[str, Any]], sent: Optional[Dict[str, Any]], at_close: Dict[int, Dict[str, int]]
) -> Dict[str, Any]:
    """`iperf3_truth`'s fields for short connections: per connection the sender's total_retrans as
    its socket closed (`ss -E`: the connection's whole life, its tail included), the bytes the
    receiving application read, over the seconds it was reading (the union of each connection's
    first to last read; the pauses between connections are no part of it)."""
    reads = (served or {}).get("connections") or []
    writes = (sent or {}).get("connections") or []
    per_stream = {int(w["port"]): int(at_close.get(int(w["port"]), {}).get("total_retrans", 0)) for w in writes}
    delivered_bytes = sum(int(r["bytes"]) for r in reads)
    seconds = union_span_s([(float(r["first_read_s"]), float(r["last_read_s"])) for r in reads if r["bytes"]])
    return {
        "tcpinfo_retransmissions": sum(per_stream.values()),
        "tcpinfo_per_stream": per_stream,
        "delivered_bytes": delivered_bytes,
        "delivered_seconds": seconds,
        "delivered_bps": 8.0 * delivered_bytes / seconds if seconds > 0 else 0.0,
        "sent_bytes": sum(int(w["bytes"]) for w in writes),
        "cca_reported": writes[0]["cca"] if writes else None,
    }


def last_interval_idle_s(before: Tuple[float, float, int], last: Tuple[float, float, int]) -> float:
    """The part of the server's last interval with data in which it read nothing: its length
    less the time its bytes took at the rate of the interval `before` it (the bottleneck's
    rate holds to the end: the router stops dropping half a second before it). 0 where the
    last interval read as fast or faster."""
    before_s, last_s = before[1] - before[0], last[1] - last[0]
    if before[2] <= 0 or before_s <= 0:
        return 0.0
    return max(0.0, last_s - last[2] * before_s / before[2])


def released_interval_idle_s(last: Tuple[float, float, int]) -> float:
    """The idle part of the server's last interval with data where the interval before it read
    nothing: those bytes were released at once when a repair filled the hole that held them (a
    stalled, loss-limited transfer), at a moment the interval does not tell; half of it, the
    expected idle part, off by at most half an interval (the rate of an empty interval is no
    rate, and counting the whole interval read such transfers' goodput 2-4% high)."""
    return (last[1] - last[0]) / 2.0


def server_idle_tail_s(server_document: Optional[Dict[str, Any]]) -> float:
    """Seconds at the end of the iperf3 server's test in which it read nothing: the trailing
    intervals of no bytes, and the idle part of the last one with data (`last_interval_idle_s`).
    The server's clock runs until the client's end-of-test message reaches it over the control
    connection, which shares the bottleneck's queue: at a queue that stays full (BBR at a few ms
    of queue) that message is dropped and waits out its own retransmission timeouts (3.4 s after
    the last data in one run at 10 Mbit/s), while the receiver had long stopped receiving. The
    data stops inside an interval: at 1 ms of queue at 100 Mbit/s (s28-hx, q1-tso-v4-p2-cubic)
    the last data came 13 ms into the server's interval 4.0-4.1 s, the message ~200 ms (one
    minimum RTO) after it, and the 87 ms of that interval with no data had read the rate 2.2%
    low."""
    intervals = iperf3_receiver_intervals(server_document or {})
    idle_s = 0.0
    while intervals and intervals[-1][2] <= 0:
        start_s, end_s, _ = intervals.pop()
        idle_s += end_s - start_s
    if idle_s > 0 and len(intervals) >= 2:
        # only after empty intervals: the end message came late, and the data had stopped
        # (where it came in time, the last interval's few bytes are the flows' slower tail:
        # 16 BBR flows sent 28 kB in their last 25 ms, and reading that as idle made the rate
        # 0.5% high)
        before, last = intervals[-2], intervals[-1]
        idle_s += last_interval_idle_s(before, last) if before[2] > 0 else released_interval_idle_s(last)
    return idle_s


def server_idle_head_s(server_document: Optional[Dict[str, Any]]) -> float:
    """Seconds at the start of the iperf3 server's test in which it read nothing: its leading
    intervals of no bytes. The server's clock starts as it sends TEST_START, and the client
    sends its first data only once TEST_RUNNING reaches it; on a slow host that message waits
    behind the first one's delayed ACK (Nagle), 208 ms on a VM with 50 ms of path delay, and
    the first data came 341 ms into the test, where the round trip alone is 50 ms."""
    head_s = 0.0
    for _start_s, end_s, size in iperf3_receiver_intervals(server_document or {}):
        if size > 0:
            break
        head_s = end_s
    return head_s


def receiving_seconds(truth: Dict[str, Any], server_document: Optional[Dict[str, Any]]) -> Dict[str, float]:
    """`delivered_seconds` (iperf3's receiving seconds less the server's idle tail) and the
    rate over them; the tail as `server_idle_tail_s`. A truth already trimmed (it has
    `server_idle_tail_s`) is trimmed again from iperf3's own seconds, not twice."""
    idle_s = server_idle_tail_s(server_document)
    seconds = float(truth["delivered_seconds"]) + float(truth.get("server_idle_tail_s") or 0.0)
    if not 0 < idle_s < seconds:
        if not truth.get("server_idle_tail_s"):
            return {"server_idle_tail_s": 0.0}
        return {
            "server_idle_tail_s": 0.0,
            "delivered_seconds": seconds,
            "delivered_bps": 8.0 * int(truth["delivered_bytes"]) / seconds,
        }
    seconds -= idle_s
    return {
        "server_idle_tail_s": idle_s,
        "delivered_seconds": seconds,
        "delivered_bps": 8.0 * int(truth["delivered_bytes"]) / seconds,
    }


def server_timing(truth: Dict[str, Any], server_document: Optional[Dict[str, Any]]) -> Dict[str, float]:
    """The truth's fields read from the iperf3 server's intervals: its receiving seconds less the
    idle tail (`receiving_seconds`) and its silent head (`server_idle_head_s`)."""
    return {**receiving_seconds(truth, server_document), "server_idle_head_s": server_idle_head_s(server_document)}


def write_meta(
    path: Path,
    vantage: str,
    interface: str,
    transfer: Transfer,
    buffer_kib: int,
    counters: Dict[str, Optional[int]],
    start_utc: str,
    end_utc: str,
    server: str,
) -> None:
    """meta.json in the schema capture/record.sh writes (spline-analyze reads its drop counters)."""
    path.write_text(
        json.dumps(
            {
                "schema": "spline-capture-meta/1",
                "tool": "spline-testbed realhost",
                "interface": interface,
                "namespace": vantage,
                "server": server,
                "filter": "tcp",
                "cca": transfer.cca,
                "snaplen_bytes": transfer.snaplen_bytes,
                "buffer_kib": buffer_kib,
                "start_utc": start_utc,
                "end_utc": end_utc,
                "trace_file": "trace.pcap",
                "trace_complete": counters.get("captured") is not None,
                "capture": counters,
            },
            indent=2,
        )
        + "\n",
        encoding="utf-8",
    )


def receiver_resends_truth(
    captures: Dict[str, Dict[str, Any]],
    transfer: Transfer,
    sender_address: str,
    client_ports: List[int],
    receiver_stack: Optional[Dict[str, int]] = None,
) -> Optional[int]:
    """`TransferTruth.receiver_resends_not_dsacked` from the receiver's capture (`{vantage:
    {"pcap", "counters"}}`): only where its D-SACKs can be trusted to be all there, so with SACK
    on and a capture that dropped nothing. `receiver_stack`: the receiver's counter deltas
    (`receiver_stack_drops`), for the D-SACKs its TCP set (`dsacks_set_by_receiver`)."""
    capture = captures.get("receiver")
    if capture is None or not transfer.sender_sack or (capture["counters"].get("kernel_drops") or 0) > 0:
        return None
    return receiver_resends_not_dsacked(
        Path(capture["pcap"]),
        sender_address,
        client_ports,
        transfer_mss_bytes(transfer),
        dsacks_set_by_receiver(receiver_stack),
        sack_blocks_kept_by_receiver(receiver_stack),
    )


# Counters every transfer moves at the receiver: a record whose deltas hold one kept the
# counters that moved (a D-SACK counter missing there stayed at 0); older records kept only
# the drop counters.
MOVED_COUNTERS_KEPT_MARK = "TcpInSegs"
DSACK_SET_COUNTERS = ("TcpExtTCPDSACKOldSent", "TcpExtTCPDSACKOfoSent")


# The receiver's counter of out-of-order data it dropped after reporting it (SACK reneging:
# tcp_prune_ofo_queue when the socket's memory runs out).
OUT_OF_ORDER_PRUNED_COUNTER = "TcpExtOfoPruned"


def sack_blocks_kept_by_receiver(receiver_stack: Optional[Dict[str, int]]) -> bool:
    """Whether the receiver kept every out-of-order segment it SACKed (its counters were kept
    and show no out-of-order data pruned), so that its SACK blocks say what its TCP held."""
    if not receiver_stack or MOVED_COUNTERS_KEPT_MARK not in receiver_stack:
        return False
    return int(receiver_stack.get(OUT_OF_ORDER_PRUNED_COUNTER, 0)) == 0


def dsacks_set_by_receiver(receiver_stack: Optional[Dict[str, int]]) -> Optional[int]:
    """The D-SACK blocks the receiver's TCP set over the transfer, from its counter deltas; None
    where the record did not keep the counters that moved."""
    if not receiver_stack or MOVED_COUNTERS_KEPT_MARK not in receiver_stack:
        return None
    return sum(int(receiver_stack.get(name, 0)) for name in DSACK_SET_COUNTERS)


def router_retransmission_truth(
    pcaps: Dict[str, Path], sender_address: str, client_ports: List[int], mss: int
) -> Dict[str, Any]:
    """`TransferTruth`'s retransmission fields from the router's captures (`{vantage: pcap}`,
    see realhost_retransmissions); none when the transfer was not captured at the router."""
    found = retransmission_truth(pcaps, sender_address, client_ports, mss)
    if found is None:
        return {}
    summary: Dict[str, Any] = {"source": found.source, **found.summary()}
    copies = [asdict(c) for connection in found.connections for c in connection.copies]
    return {"retransmissions": summary, "retransmitted_copies": copies}


def run_transfer(transfer: Transfer, run_dir: Path, tag: str, in_vm: bool = False) -> TransferRecord:
    """Build the hosts, run `transfer` once, collect captures and truth, remove the hosts.
    `in_vm`: this is a guest under QEMU, which leaves following the retransmissions through the
    router's captures to the host (TCG is slow; `load_records` does it); the record says so."""
    started_s = time.monotonic()
    run_dir.mkdir(parents=True, exist_ok=True)
    family = transfer.family
    addresses = ADDRESSES[family]
    client_ports = [CLIENT_PORT + i for i in range(transfer.data_connections)]
    reverse_ports = reverse_client_ports(transfer)
    captures: Dict[str, CaptureRecord] = {}
    with ExitStack() as stack:
        if transfer.cca == SPLINE_CCA:
            stack.enter_context(spline_registered())  # entered first: unregistered after the sockets are gone
        names = build_hosts(stack, tag, transfer.bridged)
        set_offloads(names, transfer)
        set_stacks(names, transfer)
        for command in router_qdisc_commands(transfer):
            netns.run_command(command, namespace=names["rtr"])
        install_rules(names, transfer, client_ports, reverse_ports)
        netns.reserve_client_ports(names["snd"], client_ports + reverse_ports)

        stack_before = {role: stack_counters(names[role], DEVICES[device]) for role, device in STACK_DEVICES.items()}
        reverse_devices = REVERSE_STACK_DEVICES if transfer.bidir else {}
        reverse_before = {role: stack_counters(names[role], DEVICES[d]) for role, d in reverse_devices.items()}
        processes = {}
        start_utc = utc_now()
        for vantage in transfer.vantages:
            role, interface = CAPTURE_POINTS[vantage]
            folder = run_dir / vantage
            folder.mkdir(exist_ok=True)
            processes[vantage] = start_capture(
                stack,
                names[role],
                interface,
                folder / transfer.trace_file_name,
                transfer.buffer_at(vantage),
                transfer.snaplen_bytes,
                transfer.capturer,
            )
        if transfer.connections:
            server = stack.enter_context(short_transfers_process("serve", transfer, names["rcv"], run_dir, addresses))
        else:
            stack.enter_context(
                netns.process(
                    ["iperf3", "-s", "-1", "-p", str(SERVER_PORT), "-i", f"{SERVER_INTERVAL_S:g}", "-J"],
                    names["rcv"],
                    run_dir / "server.json",
                    run_dir / "server.stderr",
                    stop_signal=signal.SIGTERM,
                )
            )
        if not netns.wait_until(lambda: netns.tcp_port_listening(names["rcv"], SERVER_PORT), 10):
            raise TestbedError("iperf3 server did not start")
        # `ss -E` prints each socket as the kernel destroys it, with its TCP_INFO at that moment
        closing = stack.enter_context(
            netns.process(
                ["stdbuf", "-oL", "ss", "-tinEH", f"dport = :{SERVER_PORT}"],
                names["snd"],
                run_dir / "ss-closed.txt",
                run_dir / "ss-closed.stderr",
            )
        )
        if transfer.bidir:  # the way back's senders: the server's sockets, told apart by the client's port
            stack.enter_context(
                netns.process(
                    ["stdbuf", "-oL", "ss", "-tinEH", f"sport = :{SERVER_PORT}"],
                    names["rcv"],
                    run_dir / REVERSE_SS_CLOSED,
                    run_dir / "ss-closed-reverse.stderr",
                )
            )
        # the rate steps from here, the transfer's start, to its end (stopped after the client)
        schedule = stack.enter_context(rate_schedule_running(transfer, names["rtr"], DEVICES["router_r"]))
        if transfer.connections:
            # every connection is read to its end: the drops go on to the last, all repaired
            client = stack.enter_context(short_transfers_process("send", transfer, names["snd"], run_dir, addresses))
            status = client.wait(SHORT_CONNECTIONS_TIMEOUT_S)
            if status is None:
                raise TestbedError(f"the short connections did not finish within {SHORT_CONNECTIONS_TIMEOUT_S:g} s")
            server.wait(IPERF3_GRACE_S)
        else:
            client = stack.enter_context(
                netns.process(
                    [
                        "iperf3",
                        "-c",
                        addresses["receiver"],
                        "-p",
                        str(SERVER_PORT),
                        "-P",
                        str(transfer.flows),
                        "--cport",
                        str(client_ports[0]),
                        "-C",
                        transfer.cca,
                        "-t",
                        f"{transfer.duration_s:g}",
                        "-J",
                        *transfer.iperf3_application_args,
                        # the way back's receiving intervals, in the client's JSON, as finely as the server's
                        *(["--bidir", "-i", f"{SERVER_INTERVAL_S:g}"] if transfer.bidir else []),
                    ],
                    names["snd"],
                    run_dir / "iperf3.json",
                    run_dir / "iperf3.stderr",
                )
            )
            # iperf3's receiver closes its sockets when the test ends, resetting the connection
            # while a window of data is still in flight; a segment dropped there is never
            # retransmitted and no capture point but the router could know it was lost. So the
            # router stops dropping half a second before the test's end: every drop is repaired.
            if client.wait(max(0.0, transfer.duration_s - loss_ends_before_test_end_s(transfer))) is None:
                stop_loss(names["rtr"], family)
            status = client.wait(transfer.duration_s + IPERF3_GRACE_S)
            if status is None:
                raise TestbedError(f"iperf3 did not finish within {transfer.duration_s + IPERF3_GRACE_S:g} s")
        applied_steps = stopped_schedule(schedule)
        time.sleep(CAPTURE_TAIL_S)
        closing.stop(signal.SIGINT)
        for proc in processes.values():
            proc.stop(signal.SIGINT)
        end_utc = utc_now()
        listings = [
            rule_listing(names[role], family, chain)
            for role, chain in (
                ("snd", "RHSENT"),
                ("rtr", "RHACKDROP"),
                ("rtr", "RHDROP"),
                ("rcv", "RHARRIVED"),
                ("rtr", SYN_DROP_CHAIN),
                *(
                    (("rcv", "RHRSENT"), ("rtr", "RHRACKDROP"), ("rtr", "RHRDROP"), ("snd", "RHRARRIVED"))
                    if transfer.bidir
                    else ()
                ),
            )
        ]
        reverse_drops = {
            role: stack_counter_deltas(reverse_before[role], stack_counters(names[role], DEVICES[d]), DEVICES[d])
            for role, d in reverse_devices.items()
        }
        reverse_qdisc_text = (
            netns.qdisc_statistics(names["rtr"], DEVICES["router_s"])["text"]
            if transfer.bidir and (transfer.rate_bps > 0 or transfer.ack_delay_ms > 0)
            else ""
        )
        stack_drops = {
            role: stack_counter_deltas(
                stack_before[role], stack_counters(names[role], DEVICES[device]), DEVICES[device]
            )
            for role, device in STACK_DEVICES.items()
        }
        qdisc: Dict[str, Any] = (
            netns.qdisc_statistics(names["rtr"], DEVICES["router_r"])
            if transfer.rate_bps > 0 or transfer.needs_netem
            else {"dropped": 0, "text": ""}
        )
        if transfer.ack_delay_ms > 0:
            qdisc["text"] += netns.qdisc_statistics(names["rtr"], DEVICES["router_s"])["text"]

    if transfer.connections:
        if status != 0:
            raise TestbedError(f"{transfer.name}: the short connections failed ({status}): {run_dir / SHORT_SEND_LOG}")
        received = short_connections_truth(
            read_json_document(run_dir / SHORT_SERVE_JSON),
            read_json_document(run_dir / SHORT_SEND_JSON),
            parse_ss_info((run_dir / "ss-closed.txt").read_text(errors="replace")),
        )
    else:
        try:
            document = json.loads((run_dir / "iperf3.json").read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise TestbedError(f"{transfer.name}: iperf3 wrote no JSON ({exc})") from exc
        if status != 0 or document.get("error"):
            raise TestbedError(f"{transfer.name}: iperf3 failed: {document.get('error') or status}")
        received = iperf3_truth(document)
        received.update(server_timing(received, read_json_document(run_dir / "server.json")))
    for vantage in transfer.vantages:
        role, interface = CAPTURE_POINTS[vantage]
        folder = run_dir / vantage
        log = folder / f"{transfer.capturer}.log"
        counters = capture_counters(transfer.capturer, log.read_text(errors="replace"))
        if transfer.capturer == "tcpdump":
            # capture/record.sh's sidecar; a Wireshark user's pcapng has none: its own blocks count
            write_meta(
                folder / "meta.json",
                vantage,
                interface,
                transfer,
                transfer.buffer_at(vantage),
                counters,
                start_utc,
                end_utc,
                addresses["receiver"],
            )
        pcap = str(folder / transfer.trace_file_name)
        captures[vantage] = CaptureRecord(vantage, pcap, transfer.buffer_at(vantage), counters)
    truth = TransferTruth(
        **counted_segments("\n".join(listings), transfer),
        qdisc_drops=root_qdisc_drops(str(qdisc["text"])),
        tcpinfo_at_close={
            port: sample
            for port, sample in parse_ss_info((run_dir / "ss-closed.txt").read_text(errors="replace")).items()
            if port in client_ports
        },
        **received,
        rate_schedule=applied_steps,
        receiver_stack_drops=stack_drops["rcv"],
        router_stack_drops=stack_drops["rtr"],
        receiver_resends_not_dsacked=(
            receiver_resends_truth(
                {vantage: asdict(c) for vantage, c in captures.items()},
                transfer,
                addresses["sender"],
                client_ports,
                stack_drops["rcv"],
            )
            if not in_vm
            else None
        ),
        **(
            router_retransmission_truth(
                {vantage: Path(c.pcap) for vantage, c in captures.items()},
                addresses["sender"],
                client_ports,
                transfer_mss_bytes(transfer),
            )
            if not in_vm
            else {}
        ),
    )
    reverse = None
    if transfer.bidir:
        back_truth = reverse_truth(
            transfer,
            run_dir,
            "\n".join(listings),
            reverse_qdisc_text,
            reverse_drops,
            {vantage: Path(c.pcap) for vantage, c in captures.items()} if not in_vm else {},
        )
        reverse = ReverseRecord(
            addresses["receiver"],
            reverse_ports,
            back_truth,
            reverse_unread_at_end_s(back_truth.to_json(), read_json_document(run_dir / "iperf3.json")),
        )
    record = TransferRecord(
        transfer=transfer,
        run_dir=str(run_dir),
        sender_address=addresses["sender"],
        client_ports=client_ports,
        captures=captures,
        truth=truth,
        rules_text="\n".join(listings),
        qdisc_text=str(qdisc["text"]),
        wall_time_s=time.monotonic() - started_s,
        in_vm=in_vm,
        reverse=reverse,
    )
    (run_dir / "truth.json").write_text(json.dumps(record.to_json(), indent=2) + "\n", encoding="utf-8")
    return record


REVERSE_SS_CLOSED = "ss-closed-reverse.txt"  # `ss -E` at the receiver: the way back's sockets (`bidir`)
# the span at the end of the client's receiving intervals whose rate the data after its clock kept
END_RATE_SPAN_S = 0.5


def unread_at_end_s(acked_bytes: Optional[int], read_bytes: int, intervals: List[Tuple[float, float, int]]) -> float:
    """Seconds the way back's data went on arriving after the client's iperf3 clock ended
    (`bidir`): what its TCP acknowledged beyond what iperf3 read (`acked_bytes` less
    `read_bytes`) at the rate of its last END_RATE_SPAN_S of receiving (`intervals`, the
    client's). The client stops reading at its timer, while the server's send buffer drains on
    until the client closes its sockets, after the results' exchange: 1.46 MB acknowledged and
    unread at 5% loss both ways, which read the goodput truth 3% high over the clock alone. The
    bottleneck's rate holds to the end (the random drops stop before it)."""
    unread_bytes = (acked_bytes or 0) - read_bytes
    with_data = [interval for interval in intervals if interval[2] > 0]
    if unread_bytes <= 0 or not with_data:
        return 0.0
    end_s = with_data[-1][1]
    tail = [(start_s, stop_s, size) for start_s, stop_s, size in with_data if stop_s > end_s - END_RATE_SPAN_S]
    seconds = sum(stop_s - start_s for start_s, stop_s, _ in tail)
    rate_bytes_per_s = sum(size for _, _, size in tail) / seconds if seconds > 0 else 0.0
    return unread_bytes / rate_bytes_per_s if rate_bytes_per_s > 0 else 0.0


def reverse_unread_at_end_s(truth: Dict[str, Any], client_document: Optional[Dict[str, Any]]) -> float:
    """`unread_at_end_s` of the way back's truth (as truth.json holds it) and the client's JSON."""
    intervals = iperf3_receiver_intervals(reverse_receiver_document(client_document) or {})
    return unread_at_end_s(truth.get("bytes_acked_at_close"), int(truth["delivered_bytes"]), intervals)


def reverse_client_ports(transfer: Transfer) -> List[int]:
    """The client ports of a `bidir` transfer's connections the other way: iperf3 --bidir binds
    its receiving streams after its sending ones (CLIENT_PORT + flows ...); none one way."""
    if not transfer.bidir:
        return []
    return [CLIENT_PORT + transfer.flows + i for i in range(transfer.flows)]


def reverse_truth(
    transfer: Transfer,
    run_dir: Path,
    rules_text: str,
    qdisc_text: str,
    stack_drops: Dict[str, Dict[str, int]],
    pcaps: Dict[str, Path],
) -> TransferTruth:
    """The way back's truth (`bidir`): its chains (REVERSE_CHAINS), the router's queue towards the
    sender, the server's sockets as they closed, iperf3's reverse sums, the client's receiving
    intervals, the sender host's stack as the receiver's; each retransmission followed through
    the router's captures (`pcaps`, by capture point; their roles swapped). The receiver's copies
    it never took (`receiver_resends_not_dsacked`) are not read this way."""
    document = read_json_document(run_dir / "iperf3.json") or {}
    received = iperf3_truth(document, reverse=True)
    received.update(server_timing(received, reverse_receiver_document(document)))
    at_close = parse_ss_info((run_dir / REVERSE_SS_CLOSED).read_text(errors="replace"), by_peer_port=True)
    ports = reverse_client_ports(transfer)
    mss = transfer_mss_bytes(transfer)
    address = ADDRESSES[transfer.family]["receiver"]
    return TransferTruth(
        **counted_segments(rules_text, transfer, REVERSE_CHAINS),
        qdisc_drops=root_qdisc_drops(qdisc_text),
        tcpinfo_at_close={port: sample for port, sample in at_close.items() if port in ports},
        **received,
        receiver_stack_drops=stack_drops.get("snd"),
        router_stack_drops=stack_drops.get("rtr"),
        receiver_resends_not_dsacked=None,
        **(
            router_retransmission_truth({REVERSE_ROLE[v]: p for v, p in pcaps.items()}, address, ports, mss)
            if pcaps
            else {}
        ),
    )


def stopped_schedule(schedule: Optional[RateSchedule]) -> Optional[List[Dict[str, Any]]]:
    """The rate steps applied up to now, the schedule stopped (None: the transfer has none)."""
    return None if schedule is None else schedule_record(schedule.stop())


def transfer_tag(index: int) -> str:
    """A short, per-process name part for the namespaces of transfer `index`."""
    return f"{os.getpid() % 100000}-{index}"
