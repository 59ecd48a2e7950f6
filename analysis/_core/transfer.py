"""A transfer: one host's data to another, over one connection or several at once
(iperf3 -P, a download manager, a browser's parallel fetches), measured as a whole.

The flows' goodputs do not add up to the transfer's. Each flow's goodput is its delivered
bytes over its own delivery span, and flows of one transfer start and end at different
times: a stream whose first flight was lost starts a timeout later, one that drained its
queue ends earlier. Their sum counts every flow as if it had run the whole time (+2-5% on
150 ms paths at under 1 Mbit/s a flow, where spans differed by up to 1.6 s). The transfer's
goodput is the bytes all its flows delivered over the time at least one of them was
delivering: the union of their delivery spans, so that a flow that ran alone counts its own
time and simultaneous flows count theirs once. That is what a receiver's application sees
(iperf3's sum: every stream's bytes over the test's seconds).

Which flows: the data directions between the main direction's two hosts, the same way, that
carried at least TRANSFER_FLOW_MIN_SHARE of the largest one's bytes. A control or signalling
connection beside the bulk flows (iperf3's own, on the same port) delivers hundreds of bytes
while spanning the whole test; its span would stand for the transfer's.
"""

from __future__ import annotations

from typing import Any, Dict, Mapping, Optional, Sequence, Tuple

# A flow carrying less than this share of the transfer's largest flow is a control
# connection's, not the transfer's (iperf3's carries ~1 kB beside megabytes).
TRANSFER_FLOW_MIN_SHARE = 0.01


def union_seconds(spans_s: Sequence[Tuple[float, float]]) -> float:
    """The time covered by at least one of the spans (start, end), in seconds."""
    covered_s = 0.0
    open_span: Optional[Tuple[float, float]] = None
    for start_s, end_s in sorted(s for s in spans_s if s[1] > s[0]):
        if open_span is not None and start_s <= open_span[1]:
            open_span = (open_span[0], max(open_span[1], end_s))
            continue
        if open_span is not None:
            covered_s += open_span[1] - open_span[0]
        open_span = (start_s, end_s)
    if open_span is not None:
        covered_s += open_span[1] - open_span[0]
    return covered_s


def transfer_goodput(flows: Sequence[Mapping[str, Any]]) -> Dict[str, Any]:
    """The transfer of `flows` (direction records: delivered_bytes, delivery_start_s,
    delivery_end_s, lost_segments, retransmissions): its flow count, delivered bytes, time_s
    (the union of the flows' delivery spans), goodput_bps (None where no flow has a span), and
    the flows' lost segments and retransmissions added up."""
    delivered_bytes = int(sum(int(f["delivered_bytes"]) for f in flows))
    spans_s = [
        (float(f["delivery_start_s"]), float(f["delivery_end_s"]))
        for f in flows
        if f.get("delivery_start_s") is not None and f.get("delivery_end_s") is not None
    ]
    time_s = union_seconds(spans_s)
    return {
        "flows": len(flows),
        "delivered_bytes": delivered_bytes,
        "time_s": time_s if time_s > 0 else None,
        "goodput_bps": 8.0 * delivered_bytes / time_s if time_s > 0 else None,
        "lost_segments": int(sum(int(f["lost_segments"]) for f in flows)),
        "retransmissions": int(sum(int(f["retransmissions"]) for f in flows)),
    }


def transfer_flows(records: Sequence[Mapping[str, Any]], main: int) -> Sequence[Mapping[str, Any]]:
    """The records of the transfer the main direction belongs to: same source and
    destination host, and at least TRANSFER_FLOW_MIN_SHARE of the largest one's bytes."""
    src, dst = records[main]["src"], records[main]["dst"]
    same_hosts = [r for r in records if r["src"] == src and r["dst"] == dst]
    largest = max(int(r["delivered_bytes"]) for r in same_hosts)
    return [r for r in same_hosts if int(r["delivered_bytes"]) >= TRANSFER_FLOW_MIN_SHARE * largest]


def transfer_of(records: Sequence[Mapping[str, Any]], main: Optional[int]) -> Optional[Dict[str, Any]]:
    """The summary's transfer: the main direction's hosts, and `transfer_goodput` of its flows."""
    if main is None:
        return None
    flows = transfer_flows(records, main)
    return {"src": records[main]["src"], "dst": records[main]["dst"], **transfer_goodput(flows)}
