#!/usr/bin/env python3
"""Peer driver: scapy PcapReader loop. Decode Ethernet/IP/TCP, sum on-wire payload per flow.

usage: scapy_flows.py CAPTURE [LIMIT_PACKETS]   -> one JSON line (packets, flows, payload_bytes)
scapy dissects every layer eagerly (~3-7 k packets/s), so the benchmark passes a limit
and extrapolates.
"""

from __future__ import annotations

import sys

from scapy.layers.inet import IP, TCP
from scapy.layers.inet6 import IPv6
from scapy.utils import PcapReader

from _common import FlowTally, parse_args, print_summary


def tally_capture(path: str, limit_packets: int) -> FlowTally:
    tally = FlowTally()
    with PcapReader(path) as reader:  # handles pcap and pcapng
        for packet in reader:
            tally.packets += 1
            if TCP in packet:
                tcp = packet[TCP]
                if IP in packet:
                    ip = packet[IP]
                    payload_bytes = ip.len - ip.ihl * 4 - tcp.dataofs * 4
                elif IPv6 in packet:
                    ip = packet[IPv6]
                    payload_bytes = ip.plen - tcp.dataofs * 4
                else:
                    tally.undecodable += 1
                    continue
                tally.add((ip.src.encode(), tcp.sport, ip.dst.encode(), tcp.dport), payload_bytes)
            if limit_packets and tally.packets >= limit_packets:
                break
    return tally


def main() -> None:
    path, limit_packets = parse_args(sys.argv)
    print_summary(tally_capture(path, limit_packets).summary("scapy", limit_packets))


if __name__ == "__main__":
    main()
