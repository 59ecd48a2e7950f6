"""The receiver's and the router's own stack drop counters over one transfer.

The router's firewall counts what arrived at the receiver in its INPUT chain (netfilter's
LOCAL_IN hook, after the receiver's tcpdump tapped the frame). A segment the receiver's TCP
then throws away (its socket backlog full, its receive queue over the buffer, its
out-of-order queue pruned, a zero window) is counted as arrived, yet TCP never acknowledged
it and the sender has to send it again. The kernel counts those drops per network namespace
(/proc/net/netstat's TcpExt, /proc/net/snmp) and per device (`ip -s link`): read before and
after the transfer, their differences go into truth.json, so a row can tell a miss of the
analyzer from a drop the router's counters could not see.
"""

from __future__ import annotations

import json
from typing import Dict, Iterable, Mapping

# TCP's drops of data that had passed the INPUT chain, one count per skb (a GRO super-packet is
# one): tcp_add_backlog, tcp_data_queue (receive queue over rcvbuf; zero window), tcp_data_queue_ofo
RECEIVER_TCP_DROP_COUNTERS = (
    "TcpExtTCPBacklogDrop",
    "TcpExtTCPRcvQDrop",
    "TcpExtTCPOFODrop",
    "TcpExtTCPZeroWindowDrop",
)
# events, not packets: a prune call can free many queued skbs and counts one
RECEIVER_PRUNE_COUNTERS = ("TcpExtPruneCalled", "TcpExtRcvPruned", "TcpExtOfoPruned")
# drops before TCP (routing, checksum, the IP layer's own discards)
IP_DROP_COUNTERS = (
    "IpInDiscards",
    "IpInAddrErrors",
    "IpExtInNoRoutes",
    "IpExtInCsumErrors",
    "TcpInErrs",
    "TcpInCsumErrors",
    "Ip6InDiscards",
    "Ip6InNoRoutes",
)
STACK_COUNTERS = RECEIVER_TCP_DROP_COUNTERS + RECEIVER_PRUNE_COUNTERS + IP_DROP_COUNTERS
LINK_COUNTERS = ("rx_dropped", "tx_dropped", "rx_missed")


def parse_mib_text(text: str) -> Dict[str, int]:
    """/proc/net/netstat or /proc/net/snmp (pairs of `Prefix: names` / `Prefix: values` lines)
    as {PrefixName: value}; /proc/net/snmp6's `Name value` lines also read."""
    counters: Dict[str, int] = {}
    names_of: Dict[str, list] = {}
    for line in text.splitlines():
        prefix, _, rest = line.partition(":")
        words = rest.split()
        if not _ or not words:
            fields = line.split()
            if len(fields) == 2 and fields[1].lstrip("-").isdigit():
                counters[fields[0]] = int(fields[1])
            continue
        if prefix not in names_of:
            names_of[prefix] = words
            continue
        for name, value in zip(names_of.pop(prefix), words):
            if value.lstrip("-").isdigit():
                counters[prefix + name] = int(value)
    return counters


def parse_link_json(text: str) -> Dict[str, int]:
    """`ip -j -s link show dev X`'s drop counters as {rx_dropped, tx_dropped, rx_missed}."""
    try:
        links = json.loads(text or "[]")
    except ValueError:
        return {}
    if not links:
        return {}
    stats = links[0].get("stats64") or links[0].get("stats") or {}
    rx, tx = stats.get("rx") or {}, stats.get("tx") or {}
    return {
        "rx_dropped": int(rx.get("dropped", 0)),
        "tx_dropped": int(tx.get("dropped", 0)),
        "rx_missed": int(rx.get("missed", 0)),
    }


def counter_deltas(before: Mapping[str, int], after: Mapping[str, int], names: Iterable[str]) -> Dict[str, int]:
    """`after - before` for each of `names` `after` holds (a counter absent before counts from 0)."""
    return {name: int(after[name]) - int(before.get(name, 0)) for name in names if name in after}


def receiver_tcp_drop_packets(deltas: Mapping[str, int]) -> int:
    """Data packets (skbs) the receiver's TCP dropped after its INPUT chain counted them arrived."""
    return sum(int(deltas.get(name, 0)) for name in RECEIVER_TCP_DROP_COUNTERS)


def receiver_ofo_prunes(deltas: Mapping[str, int]) -> int:
    """Times the receiver pruned its out-of-order queue: each threw away queued segments the
    kernel does not count one by one (the sender resends them; no per-segment truth)."""
    return int(deltas.get("TcpExtOfoPruned", 0))
