#!/usr/bin/env python3
"""Peer driver: dpkt loop. Decode Ethernet/IP/TCP, sum on-wire payload per flow.

usage: dpkt_flows.py CAPTURE [LIMIT_PACKETS]   -> one JSON line (packets, flows, payload_bytes)
"""

from __future__ import annotations

import sys

import dpkt

from _common import FlowTally, parse_args, print_summary


def open_reader(handle):
    try:
        return dpkt.pcap.Reader(handle)
    except ValueError:
        handle.seek(0)
        return dpkt.pcapng.Reader(handle)


def tally_capture(path: str, limit_packets: int) -> FlowTally:
    tally = FlowTally()
    with open(path, "rb") as handle:
        for _ts, frame in open_reader(handle):
            tally.packets += 1
            try:
                ip = dpkt.ethernet.Ethernet(frame).data
                tcp = ip.data
                if not isinstance(tcp, dpkt.tcp.TCP):
                    continue
                if isinstance(ip, dpkt.ip.IP):
                    payload_bytes = ip.len - ip.hl * 4 - tcp.off * 4
                else:  # IPv6: payload length excludes the fixed header
                    payload_bytes = ip.plen - tcp.off * 4
                tally.add((ip.src, tcp.sport, ip.dst, tcp.dport), payload_bytes)
            except (dpkt.UnpackError, AttributeError):
                tally.undecodable += 1
            if limit_packets and tally.packets >= limit_packets:
                break
    return tally


def main() -> None:
    path, limit_packets = parse_args(sys.argv)
    print_summary(tally_capture(path, limit_packets).summary("dpkt", limit_packets))


if __name__ == "__main__":
    main()
