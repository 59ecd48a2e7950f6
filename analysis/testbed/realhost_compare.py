"""Compare `spline-analyze`'s figures of real-host captures with what the hosts counted.

One row per transfer and capture point: lost segments against the data segments that
left the sender and never reached the receiver (counted by both hosts' firewalls);
retransmissions (with the SYNs sent again, `handshake_retransmissions`) against the sender's TCP_INFO twice: iperf3's per-stream total_retrans at
its timer's end against `retransmissions` (spline-analyze applies iperf3's test window when
iperf3.json sits beside the capture), and total_retrans as each socket closed against
`retransmissions_in_capture`; goodput against what the receiver's TCP took in
over the span the receiver was receiving (`delivery_rate_bps`: iperf3's clock, less the round
trip before its first data arrived; spline-analyze's runs from the first data to the last
delivery). A transfer of several flows is measured as a whole on both sides: the truth is
every stream's bytes over the test's one clock, and the analyzer's is its transfer goodput
(`transfer.transfer_goodput`: the flows' bytes over the time any of them was delivering),
not the flows' goodputs added, which counts each flow over its own, shorter span;
delivered bytes against what the receiver acknowledged (the sender's bytes_acked as each
socket closed), for the transfer and for each flow against its own socket's; warnings against what the conditions explain. Works on the `truth.json` a run left, so a finished matrix can be
compared again after the analyzer changes (`spline-testbed realhost --reanalyse`).
"""

from __future__ import annotations

import csv
import ipaddress
import math
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from dataclasses import asdict

import numpy as np

from .._core.transfer import transfer_goodput
from .._core.truth import KIND_SPURIOUS, RETRANSMISSION_KINDS
from .realhost_spec import (
    GOODPUT_TOLERANCE,
    LOST_TOLERANCE,
    RETRANSMISSION_TOLERANCE_AT_SENDER,
    REVERSE_ROLE,
    Transfer,
    ROUTER_BOTH_WAYS_VANTAGES,
    SENDER_VANTAGES,
    expected_warnings,
    recorded_transfer,
    reverse_transfer,
)

# A capture's analysis: the `--json` document, and each data packet's label
# ({(port, seq, payload bytes, TSval): segment kind}; empty when not wanted)
Labels = Dict[Tuple[int, int, int, int], int]
Analyser = Callable[[Path, Optional[Dict[str, Any]]], Tuple[Dict[str, Any], Labels]]


def analyse_with_library(pcap: Path, record: Optional[Dict[str, Any]] = None) -> Tuple[Dict[str, Any], Labels]:
    """The per-file JSON document `spline-analyze --json` prints for `pcap`; with the
    transfer's `record`, also the label spline-analyze gave each of the sender's data packets."""
    from .. import analyze
    from .realhost_retransmissions import client_side_ports, sender_data_rows

    analysis = analyze(pcap)
    labels: Labels = {}
    if record is not None:
        packets, kind = analysis.packets, analysis.directions.segment_kind
        rows = np.flatnonzero(sender_data_rows(packets, record["sender_address"], record["client_ports"]))
        ports = client_side_ports(packets, record["client_ports"])
        columns = (ports, packets["seq"], packets["tcp_payload_len"], packets["opt_tsval"])
        keys = zip(*(np.asarray(c)[rows].tolist() for c in columns))
        labels = dict(zip(keys, np.asarray(kind)[rows].tolist()))
    return analysis.to_json(), labels


def label_agreement(copies: Optional[List[Dict[str, Any]]], labels: Labels) -> Dict[str, Optional[int]]:
    """The analyzer's label of each retransmitted copy against the router's truth, in segments:
    spurious ones it took as needed (each counts as lost), needed ones it took as spurious,
    and copies it did not call retransmissions at all or did not hold."""
    agreement: Dict[str, Optional[int]] = dict.fromkeys(
        ("spurious_taken_as_needed", "needed_taken_as_spurious", "retransmissions_not_labelled")
    )
    if copies is None or not labels:
        return agreement
    agreement = dict.fromkeys(agreement, 0)
    for c in copies:
        kind = labels.get((c["port"], c["seq"], c["payload_bytes"], c["tsval"]))
        spurious_segments = c["segments"] - c["needed_segments"]
        if kind not in RETRANSMISSION_KINDS:
            agreement["retransmissions_not_labelled"] += c["segments"]
        elif kind == KIND_SPURIOUS:
            agreement["needed_taken_as_spurious"] += c["needed_segments"]
        else:
            agreement["spurious_taken_as_needed"] += spurious_segments
    return agreement


def same_address(a: Any, b: Any) -> bool:
    try:
        return ipaddress.ip_address(str(a)) == ipaddress.ip_address(str(b))
    except ValueError:
        return str(a) == str(b)


def data_directions(document: Dict[str, Any], sender_address: str, client_ports: Sequence[int]) -> List[Dict[str, Any]]:
    """The directions carrying the transfer's data (sender -> receiver on a data connection: from a
    client port, or to one where the sender is the server, the way back of iperf3 --bidir)."""
    ports = set(int(p) for p in client_ports)
    return [
        d
        for d in document.get("directions") or []
        if same_address(d.get("src"), sender_address)
        and (int(d.get("sport", -1)) in ports or int(d.get("dport", -1)) in ports)
    ]


def relative_error(measured: Optional[float], truth: Optional[float]) -> Optional[float]:
    """(measured - truth) / truth; 0 when both are 0; None when unknown or truth is 0 alone."""
    if measured is None or truth is None or (isinstance(measured, float) and math.isnan(measured)):
        return None
    if truth == 0:
        return 0.0 if measured == 0 else None
    return (measured - truth) / truth


def within(error: Optional[float], tolerance: float) -> bool:
    return error is not None and abs(error) <= tolerance + 1e-12


def total(directions: List[Dict[str, Any]], key: str) -> Optional[float]:
    values = [d.get(key) for d in directions]
    known = [v for v in values if v is not None]
    if not values or len(known) != len(values):
        return None
    return sum(known)


def per_flow_errors(
    directions: List[Dict[str, Any]], at_close: Dict[Any, Dict[str, int]], key: str, truth_key: str
) -> List[float]:
    """Each data direction's `key` against its own socket's `truth_key` at close (TCP_INFO):
    whole-capture retransmissions against total_retrans, delivered bytes against bytes_acked."""
    errors = []
    for d in directions:
        sample = at_close.get(str(d.get("sport"))) or at_close.get(d.get("sport"))
        error = relative_error(d.get(key), (sample or {}).get(truth_key))
        if error is not None:
            errors.append(error)
    return errors


def added(value: Optional[float], more: float) -> Optional[float]:
    """`value` + `more`, unknown where `value` is."""
    return None if value is None else value + more


def whole_capture_retransmissions(directions: List[Dict[str, Any]]) -> Optional[float]:
    """The retransmissions of the whole capture: `retransmissions_in_capture` beside iperf3's
    window, or `retransmissions` itself where no direction had an iperf3 test to window it (the
    short connections' own sender and receiver, `connections`)."""
    if directions and all(d.get("retransmissions_in_capture") is None for d in directions):
        return total(directions, "retransmissions")
    return total(directions, "retransmissions_in_capture")


def delivered_bytes_truth(truth: Dict[str, Any]) -> int:
    """What the receiver's TCP took in: the sender's bytes_acked as each data socket closed
    (iperf3's received bytes where a run has no such record)."""
    return int(truth.get("bytes_acked_at_close") or truth["delivered_bytes"])


def delivery_rate_bps(truth: Dict[str, Any], transfer: Transfer) -> float:
    """What the receiver delivered over the span it was delivering (bit/s): the bytes its TCP
    took in (`delivered_bytes_truth`) over iperf3's receiving seconds less the round trip netem
    adds. iperf3's own rate counts only what its server read before it stopped: on a busy host
    the server lags behind its socket, and what it left there was delivered and acknowledged
    all the same (352 kB of 31.5 MB in one run at load ~8, which read its rate 1.1% low); its
    seconds still end after the last data arrived. The server's clock starts as it announces
    the test, and the first data reaches it a round trip later (the announcement's way to the
    client, the data's way back), while goodput in a capture runs from the first data's
    arrival; without added delay the two starts agree to a few milliseconds. Where the server
    read nothing for longer than that round trip at the start (`server_idle_head_s`: the start
    message held up on a slow host), the wait lasted at least that long: the first data came
    no earlier than those intervals' end, bar a first copy lost and read later."""
    # short connections: the receiving application's own reads, first to last, per connection
    round_trip_s = (transfer.delay_ms + transfer.ack_delay_ms) / 1000.0
    wait_s = 0.0 if transfer.connections else max(round_trip_s, float(truth.get("server_idle_head_s") or 0.0))
    seconds = float(truth.get("delivered_seconds") or 0.0)
    if seconds <= 0:
        return float(truth["delivered_bps"])
    if 0 < wait_s < seconds:
        seconds -= wait_s
    # the way back of a bidir transfer: its data went on arriving after the client's clock
    seconds += float(truth.get("unread_at_end_s") or 0.0)
    return 8.0 * delivered_bytes_truth(truth) / seconds


# Capture points that see the sender's copies before the router's drops: a copy the receiver's
# capture saw and its TCP never took (lost between the tap and the socket: the input queues, the
# socket's backlog, its receive or out-of-order queue over the buffer, a zero window) left the
# sender and passed the router like any other; the sender resent it, and these points read a
# resend the receiver never answered with a D-SACK as a needed one: a lost segment the router's
# and the receiver's INPUT chain's counters cannot see. The receiver's capture (tcpdump taps the
# frame before IP) and the router's egress (router-out) saw the copy pass: they count the copies
# that never reached them (holes), and to them its resend reads as spurious; the hosts' count
# stays their truth. Measured (12 unshaped transfers, 2-36 such segments each): the sender and
# router-any read the sum, router-out the hosts' count to the segment where nothing else was lost
# after it.
STACK_DROPS_LOST_AT = SENDER_VANTAGES | ROUTER_BOTH_WAYS_VANTAGES | {"router-in"}


def receiver_lost_after_capture(truth: Dict[str, Any]) -> int:
    """Segments lost inside the receiver after its capture point: per segment, the later copies
    no D-SACK covered (`receiver_resends_not_dsacked`, which counts the TCP drop counters' copies
    too), else the receiver TCP's drop counters (one per skb: under GRO a lower bound); 0 for a
    record with neither."""
    per_segment = truth.get("receiver_resends_not_dsacked")
    if per_segment is not None:
        return int(per_segment)
    return int(truth.get("receiver_tcp_drop_packets") or 0)


# A frame the router's receiver-side veth could not hand to the receiver (the receiver's
# backlog full: that link's tx_dropped) was dropped after tcpdump on the router's egress
# (router-out) saw it leave: that capture holds it, and it leaves no hole there; the receiver's
# capture, after the drop, sees the hole, and router-any sees the frame leave and its resend.
# Measured on unshaped TSO transfers: the router's other loss equals that counter to the
# segment (11,433, 4,466, 11,160 and 5,120), and router-out, per segment against the sender's
# copies, saw exactly the random-drop rule's segments pass-less (9,621 read for 9,722).
LOST_AFTER_ROUTER_OUT_AT = frozenset({"router-out"})


def router_egress_drops(truth: Dict[str, Any]) -> int:
    """Segments the router's receiver-side link dropped after router-out's capture point (its
    `tx_dropped`, one per frame), at most the loss neither the router's drop rule nor its queue
    accounts for; 0 for a record made before the router's counters were read."""
    counters = truth.get("router_stack_drops") or {}
    dropped = sum(int(value) for name, value in counters.items() if name.endswith("_tx_dropped"))
    unexplained = (
        int(truth["lost_segments"]) - int(truth.get("data_drop_segments") or 0) - int(truth.get("qdisc_drops") or 0)
    )
    return max(0, min(dropped, unexplained))


def expected_lost_segments(truth: Dict[str, Any], vantage: str) -> int:
    """The lost segments `vantage` should read: the hosts' count (sent less arrived at the
    receiver's INPUT chain), plus at points before the router's drops the segments lost inside
    the receiver after its capture point (`receiver_lost_after_capture`), less at router-out
    the segments its link dropped after that capture saw them leave (`router_egress_drops`)."""
    lost = int(truth["lost_segments"])
    if vantage in STACK_DROPS_LOST_AT:
        lost += receiver_lost_after_capture(truth)
    if vantage in LOST_AFTER_ROUTER_OUT_AT:
        lost -= router_egress_drops(truth)
    return lost


def compare_capture(
    record: Dict[str, Any],
    vantage: str,
    document: Dict[str, Any],
    labels: Optional[Labels] = None,
    expected: Optional[Tuple[frozenset, frozenset]] = None,
) -> Dict[str, Any]:
    """One result row: truth vs the analyzer for `vantage` of the transfer in `record` (truth.json);
    `labels`: the analyzer's label of each of the sender's data packets (the sender's capture);
    `expected`: the file's (must, may) warnings where it holds more than this transfer's one
    direction (`file_warnings`), else this capture's own (`expected_warnings`)."""
    transfer = recorded_transfer(record["transfer"])
    truth = record["truth"]
    capture = record["captures"][vantage]
    kernel_drops = int(capture["counters"].get("kernel_drops") or 0)
    directions = data_directions(document, record["sender_address"], record["client_ports"])
    lost = total(directions, "lost_segments")
    # TCP_INFO's total_retrans counts the SYNs sent again as well as the data
    handshake_retransmissions = total(directions, "handshake_retransmissions") or 0
    retransmissions = added(total(directions, "retransmissions"), handshake_retransmissions)
    goodput = transfer_goodput(directions)["goodput_bps"] if directions else None
    summary_transfer = (document.get("summary") or {}).get("transfer") or {}
    lost_truth = expected_lost_segments(truth, vantage)
    lost_error = relative_error(lost, lost_truth)
    retransmission_error = relative_error(retransmissions, truth["tcpinfo_retransmissions"])
    in_capture = added(whole_capture_retransmissions(directions), handshake_retransmissions)
    at_close = truth.get("retransmissions_at_close")
    in_capture_error = relative_error(in_capture, at_close)
    at_close_by_port = truth.get("tcpinfo_at_close") or {}
    per_flow = per_flow_errors(directions, at_close_by_port, "retransmissions_in_capture", "total_retrans")
    goodput_truth = delivery_rate_bps(truth, transfer)
    goodput_error = relative_error(goodput, goodput_truth)
    delivered = total(directions, "delivered_bytes")
    delivered_truth = delivered_bytes_truth(truth)
    delivered_error = relative_error(delivered, delivered_truth)
    per_flow_delivered = per_flow_errors(directions, at_close_by_port, "delivered_bytes", "bytes_acked")
    codes = sorted({w.get("code", "?") for w in document.get("warnings") or [] if isinstance(w, dict)})
    must, may = expected or expected_warnings(
        transfer, vantage, kernel_drops, int(truth["lost_segments"]), in_vm=bool(record.get("in_vm"))
    )
    missing = sorted(must - set(codes))
    unexpected = sorted(set(codes) - must - may)
    lost_ok = within(lost_error, LOST_TOLERANCE[vantage])
    retransmissions_ok = (
        (
            within(retransmission_error, RETRANSMISSION_TOLERANCE_AT_SENDER)
            and (at_close is None or within(in_capture_error, RETRANSMISSION_TOLERANCE_AT_SENDER))
        )
        if vantage in SENDER_VANTAGES
        else None
    )
    goodput_ok = within(goodput_error, GOODPUT_TOLERANCE)
    warnings_ok = not missing and not unexpected
    router = truth.get("retransmissions") or {}
    row = {
        "transfer": transfer.name,
        "vantage": vantage,
        "offloads": transfer.offloads,
        "family": transfer.family,
        "flows": transfer.flows,
        "cca": transfer.cca,
        "data_loss": transfer.data_loss,
        "ack_loss": transfer.ack_loss,
        "rate_bps": transfer.rate_bps,
        "buffer_kib": capture["buffer_kib"],
        "directions_found": len(directions),
        "truth_lost_segments": lost_truth,
        "sent_segments": truth["sent_segments"],
        "router_drop_segments": truth["data_drop_segments"],
        "router_drop_packets": truth["data_drop_packets"],
        "other_drop_segments": truth["other_drop_segments"],
        "receiver_tcp_drop_packets": truth.get("receiver_tcp_drop_packets"),
        "receiver_ofo_prunes": truth.get("receiver_ofo_prunes"),
        "receiver_resends_not_dsacked": truth.get("receiver_resends_not_dsacked"),
        "qdisc_drops": truth["qdisc_drops"],
        "router_ack_drops": truth["ack_drop_packets"],
        "router_syn_drops": truth.get("syn_drop_packets", 0),
        "lost_segments": lost,
        "lost_error": lost_error,
        "lost_tolerance": LOST_TOLERANCE[vantage],
        "lost_ok": lost_ok,
        "truth_retransmissions": truth["tcpinfo_retransmissions"],
        "retransmissions": retransmissions,
        "retransmissions_error": retransmission_error,
        "handshake_retransmissions": handshake_retransmissions,
        "truth_retransmissions_at_close": at_close,
        "retransmissions_in_capture": in_capture,
        "retransmissions_in_capture_error": in_capture_error,
        "retransmissions_ok": retransmissions_ok,
        "per_flow_retransmissions_worst_error": max(per_flow, key=abs) if per_flow else None,
        "truth_needed_retransmissions": router.get("needed"),
        "truth_spurious_retransmissions": router.get("spurious"),
        "truth_dsack_dups": truth.get("dsack_dups_at_close"),
        **label_agreement(truth.get("retransmitted_copies"), labels or {}),
        "truth_goodput_bps": goodput_truth,
        "goodput_bps": goodput,
        "goodput_error": goodput_error,
        "goodput_ok": goodput_ok,
        "summary_goodput_bps": summary_transfer.get("goodput_bps"),
        "summary_flows": summary_transfer.get("flows"),
        "truth_delivered_bytes": delivered_truth,
        "iperf3_received_bytes": truth["delivered_bytes"],
        "delivered_bytes": delivered,
        "delivered_error": delivered_error,
        "delivered_ok": within(delivered_error, GOODPUT_TOLERANCE),
        "per_flow_delivered_worst_error": max(per_flow_delivered, key=abs) if per_flow_delivered else None,
        "tcpdump_captured": capture["counters"].get("captured"),
        "tcpdump_kernel_drops": kernel_drops,
        "analyzer_kernel_drops": (document.get("capture_drops") or {}).get("kernel"),
        "capture_gaps": total(directions, "capture_gaps"),
        "super_segment_frames": total(directions, "super_segment_frames"),
        "duplicate_frames": total(directions, "duplicate_frames"),
        "forwarded_drops": total(directions, "forwarded_drops"),
        "warnings": " ".join(codes),
        "warnings_expected": " ".join(sorted(must)),
        "warnings_missing": " ".join(missing),
        "warnings_unexpected": " ".join(unexpected),
        "warnings_ok": warnings_ok,
    }
    row["ok"] = bool(
        lost_ok
        and goodput_ok
        and warnings_ok
        and retransmissions_ok is not False
        and len(directions) == transfer.data_connections
    )
    return row


def reverse_view(record: Dict[str, Any]) -> Dict[str, Any]:
    """A `bidir` record as its way back's own: the receiver host its sender, its connections'
    client ports and truth, the transfer's hosts swapped (`reverse_transfer`) and each capture
    under the role it plays for that data (`REVERSE_ROLE`: the sender's capture is its receiver's)."""
    reverse = record["reverse"]
    transfer = reverse_transfer(recorded_transfer(record["transfer"]))
    return {
        **record,
        "transfer": {**asdict(transfer), "name": f"{transfer.name}{REVERSE_NAME_SUFFIX}"},
        "sender_address": reverse["sender_address"],
        "client_ports": reverse["client_ports"],
        "truth": {**reverse["truth"], "unread_at_end_s": float(reverse.get("unread_at_end_s") or 0.0)},
        "captures": {REVERSE_ROLE[v]: capture for v, capture in record["captures"].items()},
    }


# The way back's rows (`bidir`) carry the transfer's name with this suffix.
REVERSE_NAME_SUFFIX = ".reverse"


def file_warnings(record: Dict[str, Any], views: List[Tuple[Dict[str, Any], str]]) -> Tuple[frozenset, frozenset]:
    """(must, may) warning codes of one file holding every direction in `views` ((record, the
    capture's role for it)): the file's warnings speak of all the data it holds, so each
    direction's conditions require and allow theirs."""
    must: set = set()
    may: set = set()
    for view, role in views:
        kernel_drops = int(view["captures"][role]["counters"].get("kernel_drops") or 0)
        one_must, one_may = expected_warnings(
            recorded_transfer(view["transfer"]),
            role,
            kernel_drops,
            int(view["truth"]["lost_segments"]),
            in_vm=bool(record.get("in_vm")),
        )
        must |= one_must
        may |= one_may
    return frozenset(must), frozenset(may)


def compare_record(record: Dict[str, Any], analyser: Analyser = analyse_with_library) -> List[Dict[str, Any]]:
    """Rows for every capture point of one transfer; a capture the analyzer cannot read is a failed row.
    The sender's capture is also held to the router's truth retransmission by retransmission.
    A `bidir` transfer has two rows per capture point, one per direction, each against its own
    truth at the role the point plays for it (`direction`, `capture_point`)."""
    rows = []
    back = reverse_view(record) if record.get("reverse") else None
    for vantage, capture in record["captures"].items():
        views = [(record, vantage)] + ([(back, REVERSE_ROLE[vantage])] if back else [])
        labelled = next((view for view, role in views if role in SENDER_VANTAGES), None)
        labels: Labels = {}
        try:
            document, labels = analyser(Path(capture["pcap"]), labelled)
        except Exception as exc:  # noqa: BLE001 - one bad capture must not stop the matrix
            document = {"directions": [], "warnings": [{"code": f"analysis_failed:{exc.__class__.__name__}"}]}
        expected = file_warnings(record, views) if back else None
        for view, role in views:
            row = compare_capture(view, role, document, labels if view is labelled else {}, expected)
            if back:
                row.update(direction="reverse" if view is back else "forward", capture_point=vantage)
            rows.append(row)
    return rows


def percent(value: Optional[float]) -> str:
    return "-" if value is None else f"{100 * value:+.2f}%"


def mark(ok: Optional[bool]) -> str:
    return "" if ok is None else ("ok" if ok else "MISS")


def format_table(rows: List[Dict[str, Any]]) -> str:
    """The agreement table, one line per transfer and capture point.

    lost/truth: lost segments; retr/tcpinfo: retransmissions against TCP_INFO at iperf3's
    timer end; goodput/truth: the transfer's Mbit/s (all its flows' bytes over the time any
    was delivering) against what the receiver took in over iperf3's seconds; deliv: delivered bytes against the sender's bytes_acked at close (reported, not
    judged); kdrops: tcpdump's "dropped by kernel"."""
    header = (
        f"{'transfer':<32} {'vantage':<10} {'lost':>6} {'truth':>6} {'err':>8} {'':<4} "
        f"{'retr':>6} {'tcpinfo':>7} {'err':>8} {'':<4} {'goodput':>8} {'truth':>8} {'err':>8} {'':<4} "
        f"{'deliv':>8} {'kdrops':>7}  warnings"
    )
    lines = [header, "-" * len(header)]
    for r in rows:
        goodput = "-" if r["goodput_bps"] is None else f"{r['goodput_bps'] / 1e6:.2f}"
        warnings = r["warnings"] or "-"
        if r["warnings_missing"]:
            warnings += f"  MISSING {r['warnings_missing']}"
        if r["warnings_unexpected"]:
            warnings += f"  UNEXPECTED {r['warnings_unexpected']}"
        lines.append(
            f"{r['transfer']:<32} {r['vantage']:<10} {fmt_count(r['lost_segments']):>6} "
            f"{r['truth_lost_segments']:>6} {percent(r['lost_error']):>8} {mark(r['lost_ok']):<4} "
            f"{fmt_count(r['retransmissions']):>6} {r['truth_retransmissions']:>7} "
            f"{percent(r['retransmissions_error']):>8} {mark(r['retransmissions_ok']):<4} "
            f"{goodput:>8} {r['truth_goodput_bps'] / 1e6:>8.2f} {percent(r['goodput_error']):>8} "
            f"{mark(r['goodput_ok']):<4} {percent(r['delivered_error']):>8} {r['tcpdump_kernel_drops']:>7}  {warnings}"
        )
    passed = sum(1 for r in rows if r["ok"])
    lines.append(
        f"{passed}/{len(rows)} captures within every tolerance "
        f"(lost {', '.join(f'{v} {100 * t:g}%' for v, t in LOST_TOLERANCE.items())}; "
        f"retransmissions at the sender {100 * RETRANSMISSION_TOLERANCE_AT_SENDER:g}%; "
        f"goodput {100 * GOODPUT_TOLERANCE:g}%; expected warnings only)"
    )
    return "\n".join(lines)


def fmt_count(value: Optional[float]) -> str:
    return "-" if value is None else f"{value:.0f}"


ISSUE_CASE_CAPTURE = {
    "receiver": "receiver side",
    "router-any": "tcpdump -i any on the router",
    "sender": "sender side",
    "sender-any": "tcpdump -i any on the sender",
    "router-out": "router, egress interface",
    "router-in": "router, ingress interface",
    "receiver-any": "tcpdump -i any on the receiver",
    "router-both": "dumpcap on both the router's interfaces",
}


def format_issue_cases(rows: List[Dict[str, Any]], records: Dict[str, Dict[str, Any]]) -> str:
    """The issue's table remade: capture, truth in segments, what spline-analyze says."""
    lines = ["| transfer | capture | truth (segments dropped) | spline-analyze | warnings |", "|---|---|---|---|---|"]
    for r in rows:
        note = records[r["transfer"]]["transfer"].get("note") or r["transfer"]
        truth = f"{r['truth_lost_segments']:,}"
        if r["tcpdump_kernel_drops"]:
            truth += f" (tcpdump dropped {r['tcpdump_kernel_drops']:,} packets)"
        figures = (
            f"lost {fmt_count(r['lost_segments'])} ({percent(r['lost_error'])}), "
            f"retransmissions {fmt_count(r['retransmissions'])} vs TCP_INFO {r['truth_retransmissions']}, "
            f"goodput {(r['goodput_bps'] or 0) / 1e6:.1f} vs {r['truth_goodput_bps'] / 1e6:.1f} Mbit/s "
            f"delivered"
        )
        if r["forwarded_drops"] is not None and r["vantage"] == "router-any":
            figures += f", forwarded drops {fmt_count(r['forwarded_drops'])}"
        lines.append(f"| {note} | {ISSUE_CASE_CAPTURE[r['vantage']]} | {truth} | {figures} | {r['warnings'] or '-'} |")
    return "\n".join(lines)


CSV_COLUMNS = [
    "transfer",
    "vantage",
    "offloads",
    "family",
    "flows",
    "cca",
    "data_loss",
    "ack_loss",
    "rate_bps",
    "buffer_kib",
    "directions_found",
    "truth_lost_segments",
    "sent_segments",
    "router_drop_segments",
    "router_drop_packets",
    "other_drop_segments",
    "receiver_tcp_drop_packets",
    "receiver_ofo_prunes",
    "receiver_resends_not_dsacked",
    "qdisc_drops",
    "router_ack_drops",
    "router_syn_drops",
    "lost_segments",
    "lost_error",
    "lost_tolerance",
    "lost_ok",
    "truth_retransmissions",
    "retransmissions",
    "retransmissions_error",
    "handshake_retransmissions",
    "truth_retransmissions_at_close",
    "retransmissions_in_capture",
    "retransmissions_in_capture_error",
    "retransmissions_ok",
    "per_flow_retransmissions_worst_error",
    "truth_needed_retransmissions",
    "truth_spurious_retransmissions",
    "truth_dsack_dups",
    "spurious_taken_as_needed",
    "needed_taken_as_spurious",
    "retransmissions_not_labelled",
    "truth_goodput_bps",
    "goodput_bps",
    "goodput_error",
    "goodput_ok",
    "summary_goodput_bps",
    "summary_flows",
    "truth_delivered_bytes",
    "iperf3_received_bytes",
    "delivered_bytes",
    "delivered_error",
    "delivered_ok",
    "per_flow_delivered_worst_error",
    "tcpdump_captured",
    "tcpdump_kernel_drops",
    "analyzer_kernel_drops",
    "capture_gaps",
    "super_segment_frames",
    "duplicate_frames",
    "forwarded_drops",
    "warnings",
    "warnings_expected",
    "warnings_missing",
    "warnings_unexpected",
    "warnings_ok",
    "ok",
]


# Columns of a table with rows of `bidir` transfers (only then: a one-way table keeps its shape):
# which way the row's data went, and the capture point whose file it read (`vantage` is the role
# that point plays for that data).
BIDIR_COLUMNS = ["direction", "capture_point"]


def write_csv(rows: List[Dict[str, Any]], path: Path) -> None:
    columns = CSV_COLUMNS + (BIDIR_COLUMNS if any("direction" in row for row in rows) else [])
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns, extrasaction="ignore")
        writer.writeheader()
        for row in rows:
            writer.writerow({k: ("" if row.get(k) is None else row.get(k)) for k in columns})
