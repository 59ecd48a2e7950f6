#!/usr/bin/env python3
"""Peer driver: pyshark FileCapture loop (tshark underneath, PDML parsed in Python).

usage: pyshark_flows.py CAPTURE [LIMIT_PACKETS]   -> one JSON line (packets, flows, payload_bytes)
pyshark is slower still than scapy, so the benchmark passes a limit and extrapolates.
"""

from __future__ import annotations

import sys

import pyshark

from _common import FlowTally, parse_args, print_summary


def tally_capture(path: str, limit_packets: int) -> FlowTally:
    tally = FlowTally()
    capture = pyshark.FileCapture(path, keep_packets=False)
    try:
        for packet in capture:
            tally.packets += 1
            try:
                tcp = packet.tcp
                ip = packet.ip if hasattr(packet, "ip") else packet.ipv6
                tally.add((ip.src.encode(), int(tcp.srcport), ip.dst.encode(), int(tcp.dstport)), int(tcp.len))
            except AttributeError:
                tally.undecodable += 1
            if limit_packets and tally.packets >= limit_packets:
                break
    finally:
        capture.close()
    return tally


def main() -> None:
    path, limit_packets = parse_args(sys.argv)
    print_summary(tally_capture(path, limit_packets).summary("pyshark", limit_packets))


if __name__ == "__main__":
    main()
