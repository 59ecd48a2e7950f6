"""Shared by the peer drivers: the per-flow payload tally and its one-line summary.

Every peer does the same work so their times compare: walk each packet, decode
Ethernet/IPv4(/IPv6)/TCP, and add the TCP payload length *as sent on the wire*
(IP total length minus IP and TCP headers, so a snaplen-truncated capture still
counts full segments) to a per-flow (5-tuple, direction-sensitive) sum.
"""

from __future__ import annotations

import json
import sys
from typing import Dict, Tuple

FlowKey = Tuple[bytes, int, bytes, int]


class FlowTally:
    def __init__(self) -> None:
        self.packets = 0
        self.tcp_packets = 0
        self.undecodable = 0
        self.payload_bytes_by_flow: Dict[FlowKey, int] = {}

    def add(self, key: FlowKey, payload_bytes: int) -> None:
        self.tcp_packets += 1
        self.payload_bytes_by_flow[key] = self.payload_bytes_by_flow.get(key, 0) + payload_bytes

    def summary(self, tool: str, limit: int) -> dict:
        return {
            "tool": tool,
            "packets": self.packets,
            "tcp_packets": self.tcp_packets,
            "undecodable": self.undecodable,
            "flows": len(self.payload_bytes_by_flow),
            "payload_bytes": sum(self.payload_bytes_by_flow.values()),
            "limit": limit,
        }


def parse_args(argv: list) -> Tuple[str, int]:
    """usage: DRIVER CAPTURE [LIMIT]   (LIMIT 0 = whole file)"""
    if len(argv) < 2:
        sys.exit(f"usage: {argv[0]} CAPTURE [LIMIT_PACKETS]")
    return argv[1], int(argv[2]) if len(argv) > 2 else 0


def print_summary(summary: dict) -> None:
    print(json.dumps(summary))
