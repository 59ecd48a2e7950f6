"""The report's output schema, declared once as data.

Every key of the JSON document `spline-analyze --json` prints (and `report.document`
builds) is a `Key` here: its name, JSON type, unit, meaning and family. From this one
declaration come the per-direction CSV columns (`DIRECTION_CSV_COLUMNS`), the JSON Schema
file shipped beside the package (`report.schema.json`, `json_schema()`), and the README's
table of JSON keys (`markdown_table()`). A test fails when either generated file is stale.

Vocabulary, one word per thing:
- stream: one TCP connection (Wireshark's tcp.stream index);
- direction: one side of a stream (0: from the side that sent the first packet, 1: back);
- segment: one MSS-sized unit of TCP data (a super-segment frame counts as several);
- interval: one time bin of the `--interval` time series.

Families: "capture" (the file and its counters), "truth-seeking" (docs/metrics.md section 2:
what happened on the wire), "wireshark-compatible" (tshark 4.0's expert flags, frame counts),
"iperf3" (an iperf3 JSON result beside the capture), "kernel" (a tcp_probe trace beside the
capture), "report" (the layout: names, lists).

Regenerate both files after editing (from the source tree, not the installed copy):
`.venv/bin/python analysis/schema.py`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

SCHEMA_VERSION = 4
SCHEMA_FILE = Path(__file__).resolve().parent / "report.schema.json"

FAMILIES = ("capture", "truth-seeking", "wireshark-compatible", "iperf3", "kernel", "report")
TYPES = ("integer", "number", "string", "boolean", "object", "array")


@dataclass(frozen=True)
class Key:
    """One key of the JSON document. `keys`: an object's keys, or an array's item keys
    when the items are objects; `items`: the JSON type of an array's scalar items.
    `nullable`: the value may be null; `optional`: the key may be absent."""

    name: str
    type: str
    unit: str
    meaning: str
    family: str
    nullable: bool = False
    optional: bool = False
    keys: Tuple["Key", ...] = ()
    items: str = ""
    open: bool = False  # objects (or array items) that may hold further keys: a warning's counts


def _stats(unit: str, what: str, family: str, names: Sequence[str] = ("min", "median", "max")) -> Tuple[Key, ...]:
    return tuple(Key(n, "number", unit, f"{n} of {what}", family) for n in names)


_WIRESHARK_FLAGS = (
    ("retransmission", "frames tcp.analysis.retransmission matches (fast and spurious included)"),
    ("fast_retransmission", "frames flagged tcp.analysis.fast_retransmission"),
    ("spurious_retransmission", "frames flagged tcp.analysis.spurious_retransmission"),
    ("out_of_order", "frames flagged tcp.analysis.out_of_order"),
    ("lost_segment", "frames flagged tcp.analysis.lost_segment (previous segment not captured)"),
    ("ack_lost_segment", "frames flagged tcp.analysis.ack_lost_segment (ACKed unseen segment)"),
    ("duplicate_ack", "frames flagged tcp.analysis.duplicate_ack"),
    ("zero_window", "frames flagged tcp.analysis.zero_window"),
    ("zero_window_probe", "frames flagged tcp.analysis.zero_window_probe"),
    ("zero_window_probe_ack", "frames flagged tcp.analysis.zero_window_probe_ack"),
    ("keep_alive", "frames flagged tcp.analysis.keep_alive"),
    ("keep_alive_ack", "frames flagged tcp.analysis.keep_alive_ack"),
    ("window_update", "frames flagged tcp.analysis.window_update"),
    ("window_full", "frames flagged tcp.analysis.window_full"),
)
WIRESHARK_KEYS = tuple(
    Key(name, "integer", "frames", meaning, "wireshark-compatible") for name, meaning in _WIRESHARK_FLAGS
)

T = "truth-seeking"
# The truth-seeking figures of one direction that come straight from the truth stage's
# table (`truth.Directions.table`), in document order.
DIRECTION_TABLE_KEYS: Tuple[Key, ...] = (
    Key("stream", "integer", "", "the stream (TCP connection) index, as tshark's tcp.stream", "report"),
    Key("direction", "integer", "", "0: from the side that sent the stream's first packet; 1: back", "report"),
    Key("src", "string", "", "address the data leave from", "report"),
    Key("sport", "integer", "", "port the data leave from", "report"),
    Key("dst", "string", "", "address the data go to", "report"),
    Key("dport", "integer", "", "port the data go to", "report"),
    Key("vantage", "string", "", "where the capture sat: sender, receiver, in-path or unknown", T),
    Key("data_packets", "integer", "packets", "packets carrying payload", T),
    Key(
        "data_segments",
        "integer",
        "segments",
        "segments carrying payload (a super-segment counts as the segments it holds)",
        T,
    ),
    Key("payload_bytes", "integer", "bytes", "payload bytes captured, repeats included", T),
    Key("unique_bytes", "integer", "bytes", "payload bytes captured once each", T),
    Key(
        "retransmissions",
        "integer",
        "segments",
        "retransmitted segments (within iperf3's test window when an "
        "iperf3 result sits beside the capture; retransmissions_in_capture keeps the whole capture's)",
        T,
    ),
    Key("retrans_fast", "integer", "segments", "retransmissions after duplicate ACKs or SACK", T),
    Key("retrans_rto", "integer", "segments", "retransmissions after a retransmission timeout", T),
    Key("retrans_tlp", "integer", "segments", "tail loss probes", T),
    Key("retrans_other", "integer", "segments", "retransmissions of no other kind", T),
    Key("spurious_retransmissions", "integer", "segments", "retransmissions of data the receiver already had", T),
    Key("reordered_segments", "integer", "segments", "segments that arrived after a later one, not retransmitted", T),
    Key(
        "lost_segments",
        "integer",
        "segments",
        "segments lost: needed retransmissions (sender vantage), "
        "IP-ID gaps or sequence holes (downstream); see loss_method",
        T,
    ),
    Key(
        "loss_method",
        "string",
        "",
        "how lost_segments was counted: retransmissions, ip_id_gaps, ecn (first copies by their ECN codepoint, "
        "with the holes still open and the repairs lost) or holes",
        T,
    ),
    Key(
        "capture_gaps",
        "integer",
        "segments",
        "segments the receiver acknowledged, or that never arrived while the capture missed its ACKs, that the capture lacks",
        T,
    ),
    Key("loss_rate", "number", "fraction", "lost_segments per original segment", T, nullable=True),
    Key("retransmission_rate", "number", "fraction", "retransmissions per data segment", T, nullable=True),
    Key("throughput_bps", "number", "bit/s", "payload bits over the transfer's duration", T, nullable=True),
    Key(
        "goodput_bps",
        "number",
        "bit/s",
        "delivered bits over the span the receiver received them (to the last data it acknowledged)",
        T,
        nullable=True,
    ),
    Key(
        "duration_s",
        "number",
        "s",
        "first to last data segment, less the application's wait after its first message",
        T,
        nullable=True,
    ),
    Key(
        "delivery_start_s",
        "number",
        "s",
        "start of the span goodput_bps runs over, since the capture's first packet",
        T,
    ),
    Key(
        "delivery_end_s",
        "number",
        "s",
        "end of the span goodput_bps runs over, since the capture's first packet",
        T,
    ),
    Key("dup_acks", "integer", "packets", "duplicate ACKs the peer sent", T),
    Key("sack_blocks", "integer", "blocks", "SACK blocks the peer sent", T),
    Key("dsack_blocks", "integer", "blocks", "D-SACK blocks the peer sent", T),
    Key("zero_window_events", "integer", "events", "times the peer advertised a zero window", T),
    Key("window_probes", "integer", "segments", "zero-window probes sent", T),
    Key("mss", "integer", "bytes", "segment size the direction sends with", T),
    Key(
        "delivered_bytes",
        "integer",
        "bytes",
        "payload bytes the receiver acknowledged (or saw, unacknowledged ones excluded; where the capture missed its last ACKs, estimated from their echoes)",
        T,
    ),
    Key("capture_gap_bytes", "integer", "bytes", "bytes of the capture gaps", T),
    Key("super_segment_frames", "integer", "frames", "frames holding several segments (TSO/GSO/GRO)", T),
    Key("duplicate_frames", "integer", "frames", "packets captured twice (forwarding host, two interfaces)", T),
    Key("forwarded_drops", "integer", "segments", "segments that came into a forwarding host and never left", T),
    Key(
        "downstream_retransmissions",
        "integer",
        "segments",
        "repeats of data that passed the capture point (lost after it)",
        T,
    ),
    Key(
        "ip_id_policy",
        "string",
        "",
        "how the sender numbers IPv4 packets: per_connection, shared, random, zero or none",
        T,
    ),
    Key("handshake_seen", "boolean", "", "both SYNs of the stream are in the capture", T),
    Key(
        "handshake_retransmissions",
        "integer",
        "segments",
        "SYNs (SYN/ACKs) this side sent again; not in retransmissions, which count data (TCP_INFO counts both)",
        T,
    ),
    Key(
        "ip_id_lost_segments",
        "integer",
        "segments",
        "segments lost by the IP-ID gaps (-1: IDs do not count this direction's data)",
        T,
    ),
    Key("hole_lost_segments", "integer", "segments", "segments lost by the sequence holes", T),
    Key(
        "ecn",
        "string",
        "",
        "what the ECN codepoints of the data tell: on (first copies ECT, resends not-ECT), off, accurate "
        "(Accurate ECN: resends may be ECT), bleached (negotiated, all not-ECT here), resends_ect (hole "
        "fills ECT), mixed (ECT on under half the data) or unproven (no handshake, too few hole fills)",
        T,
    ),
    Key(
        "ecn_lost_originals",
        "integer",
        "segments",
        "segments of which only not-ECT copies (resends) came past the capture point: first copies lost "
        "before it (-1: the codepoints are not used here)",
        T,
    ),
    Key("lost_repairs", "integer", "segments", "retransmissions that were themselves lost", T),
    Key("ip_id_unusable", "boolean", "", "the IP IDs cannot count loss here (not a per-connection counter)", T),
    Key("ip_id_contradicted", "boolean", "", "the IP-ID count contradicts the sequence holes (holes used)", T),
    Key("spurious_without_dsack", "integer", "segments", "spurious retransmissions no D-SACK reported", T),
    Key("discard_dupacks", "integer", "packets", "duplicate ACKs not counted toward recovery", T),
    Key(
        "paws_discards",
        "integer",
        "segments",
        "segments that reached the receiver and were discarded by its timestamp check (PAWS), below the sender",
        T,
    ),
    Key(
        "lost_inferred",
        "integer",
        "segments",
        "part of lost_segments estimated where the ACKs do not tell; below the sender, where holes count "
        "the loss, the repairs lost and sent again that the holes' signs do not show",
        T,
    ),
    Key("lost_inferred_sd", "number", "segments", "standard deviation of lost_inferred", T),
    Key(
        "unreported_at_end",
        "integer",
        "segments",
        "at the sender (SACK), first copies sent once above every ACK and SACK block when the capture "
        "ends: the last flight, whose fate no ACK told",
        T,
    ),
    Key(
        "unreported_lost_estimated",
        "number",
        "segments",
        "of lost_inferred, the segments of that flight estimated lost, at the loss rate of the first "
        "copies sent just before it (twice its segments), where that loss was still being repaired "
        "when the ACKs stopped and the flight left faster than the data was delivered; else 0",
        T,
    ),
    Key(
        "unreported_lost_sd",
        "number",
        "segments",
        "standard deviation of unreported_lost_estimated (part of lost_inferred_sd)",
        T,
    ),
    Key(
        "unreported_at_risk",
        "integer",
        "segments",
        "unreported_at_end where it went into a queue that was dropping (that loss still under repair "
        "when the ACKs stopped, the flight faster than the data was delivered): how many of it were "
        "lost no ACK tells, whatever unreported_lost_estimated says; else 0",
        T,
    ),
    Key(
        "tail_copies_at_close",
        "integer",
        "segments",
        "at a sender without SACK whose connection closed with a hole open: segments sent from the first "
        "copy of the segment at the final cumulative ACK on (0 elsewhere)",
        T,
    ),
    Key(
        "tail_lost_at_close",
        "integer",
        "segments",
        "of tail_copies_at_close, those lost by the count of the receiver's answers (one ACK or RST per "
        "arriving segment), an estimate: lost_segments (and lost_inferred) take the part that neither the "
        "retransmissions sent since nor lost_inferred count; raised as `loss_estimated`",
        T,
    ),
)

RTT_KEYS = _stats("ms", "the RTT samples", T, ("min", "median", "p95", "max")) + (
    Key("jitter", "number", "ms", "mean absolute difference of consecutive RTT samples", T),
    Key("samples", "integer", "samples", "RTT samples", T, optional=True),
)
RTT_KEYS = tuple(
    Key(k.name, k.type, k.unit, k.meaning, k.family, nullable=k.name != "samples", optional=k.optional)
    for k in RTT_KEYS
)

IPERF3_WINDOW_KEYS = (
    Key("file", "string", "", "the iperf3 JSON file", "iperf3"),
    Key(
        "test_window_s",
        "array",
        "s",
        "start and end of iperf3's test window (since the epoch)",
        "iperf3",
        items="number",
    ),
    Key("retransmissions_in_test", "integer", "segments", "retransmissions within the test window", T),
    Key("retransmissions_after_test", "integer", "segments", "retransmissions after it (teardown)", T),
    Key(
        "sender_retransmits_reported",
        "integer",
        "segments",
        "iperf3's sender retransmits (TCP_INFO)",
        "iperf3",
        nullable=True,
    ),
    Key("receiver_bps_reported", "number", "bit/s", "iperf3's receiver bit rate", "iperf3", nullable=True),
    Key("sender_cca", "string", "", "the sender's congestion control, as iperf3 reports it", "iperf3", nullable=True),
)

KERNEL_KEYS = (
    Key("file", "string", "", "the tcp_probe trace file", "kernel"),
    Key("events", "integer", "events", "tcp_probe events of this direction", "kernel"),
    Key("clock_aligned", "boolean", "", "the probe's clock spans the capture's", "kernel"),
    Key(
        "cwnd_segments",
        "object",
        "segments",
        "the kernel's congestion window",
        "kernel",
        nullable=True,
        keys=_stats("segments", "cwnd", "kernel"),
    ),
    Key(
        "ssthresh_segments",
        "object",
        "segments",
        "the kernel's slow-start threshold (null while infinite)",
        "kernel",
        nullable=True,
        keys=_stats("segments", "ssthresh", "kernel"),
    ),
    Key(
        "srtt_ms",
        "object",
        "ms",
        "the kernel's smoothed RTT",
        "kernel",
        nullable=True,
        keys=_stats("ms", "srtt", "kernel"),
    ),
    Key("cwnd_reductions", "integer", "events", "times cwnd went down", "kernel"),
    Key(
        "capture_tracking",
        "object",
        "",
        "the capture's in-flight estimate against the kernel's (sender vantage)",
        "kernel",
        nullable=True,
        keys=(
            Key("events", "integer", "events", "probe events compared", "kernel"),
            Key(
                "kernel_in_flight_error_segments",
                "object",
                "segments",
                "capture's minus the kernel's in flight",
                "kernel",
                keys=_stats("segments", "the error", "kernel", ("median", "p95")),
            ),
            Key("within_one_segment", "number", "fraction", "share of events within one segment", "kernel"),
            Key(
                "of_cwnd_median",
                "number",
                "fraction",
                "median of the capture's in flight over cwnd",
                "kernel",
                nullable=True,
            ),
        ),
    ),
)

DIRECTION_KEYS: Tuple[Key, ...] = DIRECTION_TABLE_KEYS + (
    Key("rtt_ms", "object", "ms", "RTT samples of this direction's data", T, keys=RTT_KEYS),
    Key(
        "bytes_in_flight",
        "object",
        "bytes",
        "the capture's bytes-in-flight estimate (sender vantage)",
        T,
        nullable=True,
        keys=(Key("max", "integer", "bytes", "largest", T), Key("median", "number", "bytes", "median", T)),
    ),
    Key(
        "wireshark",
        "object",
        "frames",
        "this direction's tshark-compatible flag counts",
        "wireshark-compatible",
        keys=WIRESHARK_KEYS,
    ),
    Key(
        "retransmissions_in_capture",
        "integer",
        "segments",
        "retransmissions in the whole capture (present "
        "when an iperf3 result narrowed retransmissions to its test window)",
        T,
        optional=True,
    ),
    Key(
        "iperf3",
        "object",
        "",
        "the iperf3 test this direction carried",
        "iperf3",
        optional=True,
        keys=IPERF3_WINDOW_KEYS,
    ),
    Key(
        "kernel",
        "object",
        "",
        "the sending kernel's view from probe.csv (null: the probe did not see this direction)",
        "kernel",
        optional=True,
        nullable=True,
        keys=KERNEL_KEYS,
    ),
)

TRANSFER_KEYS: Tuple[Key, ...] = (
    Key("src", "string", "", "address the data leave from", "report"),
    Key("dst", "string", "", "address the data go to", "report"),
    Key("flows", "integer", "", "data directions in the transfer", T),
    Key("delivered_bytes", "integer", "bytes", "the flows' delivered bytes", T),
    Key("time_s", "number", "s", "time at least one flow was delivering (union of their spans)", T, nullable=True),
    Key(
        "goodput_bps", "number", "bit/s", "delivered bits over time_s (not the flows' goodputs added)", T, nullable=True
    ),
    Key("lost_segments", "integer", "segments", "the flows' lost segments", T),
    Key("retransmissions", "integer", "segments", "the flows' retransmissions", T),
)

SUMMARY_KEYS: Tuple[Key, ...] = (
    Key("name", "string", "", "the run's label (the file's name by default)", "report"),
    Key("vantage", "string", "", "vantage of the main data direction", T, nullable=True),
    Key("flow", "string", "", "the main data direction, src:sport -> dst:dport", "report", nullable=True),
    Key("speed_MBps", "number", "MB/s", "goodput in decimal megabytes per second", T, nullable=True),
    Key("speed_Mbps", "number", "Mbit/s", "goodput", T, nullable=True),
    Key("time_s", "number", "s", "the transfer's duration", T, nullable=True),
    Key("packet_loss_pct", "number", "%", "lost segments per original segment", T, nullable=True),
    Key("lost_segments", "integer", "segments", "segments lost (the direction's lost_segments)", T, nullable=True),
    Key(
        "lost_segments_is_floor",
        "boolean",
        "",
        "the loss_floor warning was raised for the main direction: lost_segments is at least that many",
        T,
    ),
    Key("retransmissions_pct", "number", "%", "retransmissions per data segment", T, nullable=True),
    Key("retransmissions", "integer", "segments", "retransmissions (the direction's figure)", T, nullable=True),
    Key("kernel_drops", "integer", "packets", "packets the capturing kernel dropped", "capture", nullable=True),
    Key("kernel_drops_pct", "number", "%", "kernel drops per packet offered to the capture", "capture", nullable=True),
    Key("rtt_median_ms", "number", "ms", "median RTT of the main data direction", T, nullable=True),
    Key(
        "transfer",
        "object",
        "",
        "the main direction's hosts' transfer: its data directions between them the same way "
        "(a control connection's excluded), measured as a whole",
        T,
        nullable=True,
        keys=TRANSFER_KEYS,
    ),
    Key("warning_codes", "array", "", "codes of the capture-integrity warnings", "report", items="string"),
)

WARNING_KEYS: Tuple[Key, ...] = (
    Key("code", "string", "", "what to check (README: capture integrity)", "report"),
    Key("message", "string", "", "one line for a person", "report"),
    Key("stream", "integer", "", "the stream it is about", "report", optional=True),
    Key("direction", "integer", "", "the direction it is about", "report", optional=True),
)

INTERVAL_KEYS: Tuple[Key, ...] = (
    Key("file", "string", "", "the capture file", "report"),
    Key("time_s", "number", "s", "start of the interval since the capture's first packet", "report"),
    Key("stream", "integer", "", "the stream", "report"),
    Key("direction", "integer", "", "the direction", "report"),
    Key("throughput_bps", "number", "bit/s", "payload bits in the interval per second", T),
    Key("goodput_bps", "number", "bit/s", "new payload bits in the interval per second", T),
    Key("retransmissions", "integer", "segments", "retransmissions sent in the interval", T),
    Key(
        "needed_retransmissions",
        "integer",
        "segments",
        "retransmissions in the interval that were not "
        "spurious (at the sender: segments lost; downstream: holes filled by retransmission)",
        T,
    ),
    Key("rtt_ms", "number", "ms", "median RTT sample in the interval", T, nullable=True),
    Key(
        "bytes_in_flight",
        "number",
        "bytes",
        "largest bytes-in-flight estimate in the interval (sender vantage)",
        T,
        nullable=True,
    ),
    Key(
        "cwnd_segments",
        "number",
        "segments",
        "the kernel's last cwnd in the interval (probe.csv)",
        "kernel",
        nullable=True,
        optional=True,
    ),
    Key(
        "ssthresh_segments",
        "number",
        "segments",
        "the kernel's last ssthresh in the interval",
        "kernel",
        nullable=True,
        optional=True,
    ),
    Key("srtt_ms", "number", "ms", "the kernel's last srtt in the interval", "kernel", nullable=True, optional=True),
)

DOCUMENT_KEYS: Tuple[Key, ...] = (
    Key("schema", "integer", "", f"version of this schema ({SCHEMA_VERSION})", "report"),
    Key("file", "string", "", "the capture file as named on the command line", "capture"),
    Key("format", "string", "", "pcap or pcapng", "capture"),
    Key("compressed", "boolean", "", "the file was gzip'd", "capture"),
    Key("packets", "integer", "packets", "records in the file (non-packet records included)", "capture"),
    Key("tcp_packets", "integer", "packets", "frames with a TCP header (not inside an ICMP error)", "capture"),
    Key("tcp_streams", "integer", "streams", "TCP streams (connections)", "capture"),
    Key("tcp_payload_bytes", "integer", "bytes", "TCP payload bytes captured", "capture"),
    Key("duration_s", "number", "s", "last minus first timestamp", "capture"),
    Key("link_types", "array", "", "link types of the file's interfaces", "capture", items="string"),
    Key(
        "capture_drops",
        "object",
        "packets",
        "packets the capture lost (null: unknown, never 0)",
        "capture",
        keys=(
            Key("kernel", "integer", "packets", "dropped by the kernel", "capture", nullable=True),
            Key("interface", "integer", "packets", "dropped by the interface", "capture", nullable=True),
            Key("source", "string", "", "where the counts come from: meta.json, pcapng-isb or none", "capture"),
        ),
    ),
    Key(
        "isb_drops",
        "object",
        "packets",
        "the pcapng Interface Statistics Blocks' counters",
        "capture",
        keys=tuple(
            Key(name, "integer", "packets", meaning, "capture", nullable=True)
            for name, meaning in (
                ("isb_ifdrop", "isb_ifdrop summed over section-local interface ids"),
                ("isb_osdrop", "isb_osdrop summed over section-local interface ids"),
                ("isb_ifdrop_per_interface", "isb_ifdrop summed over every interface of every section"),
                ("isb_osdrop_per_interface", "isb_osdrop summed over every interface of every section"),
            )
        ),
    ),
    Key("truncated_at", "integer", "bytes", "offset where the file is cut mid-record", "capture", nullable=True),
    Key(
        "warnings",
        "array",
        "",
        "capture-integrity warnings; besides the keys below, counts named for what they count",
        "report",
        keys=WARNING_KEYS,
        open=True,
    ),
    Key(
        "wireshark",
        "object",
        "frames",
        "tshark-compatible flag counts over the file",
        "wireshark-compatible",
        keys=WIRESHARK_KEYS,
    ),
    Key("directions", "array", "", "one object per direction that carries data", T, keys=DIRECTION_KEYS),
    Key("summary", "object", "", "the Spline report's figures for the main data direction", T, keys=SUMMARY_KEYS),
    Key(
        "iperf3",
        "array",
        "",
        "iperf3 results found beside the capture",
        "iperf3",
        keys=(
            Key("file", "string", "", "the iperf3 JSON file", "iperf3"),
            Key("sender_cca", "string", "", "the sender's congestion control", "iperf3", nullable=True),
            Key("sender_retransmits", "integer", "segments", "sender retransmits (TCP_INFO)", "iperf3", nullable=True),
            Key("receiver_bps", "number", "bit/s", "receiver bit rate", "iperf3", nullable=True),
            Key("sender_seconds", "number", "s", "length of the sender's test", "iperf3"),
            Key(
                "bidir_reverse",
                "boolean",
                "",
                "the way back of an iperf3 --bidir test (the server's streams; its own figures)",
                "iperf3",
            ),
        ),
    ),
    Key(
        "timeseries",
        "array",
        "",
        "--interval: one object per interval per direction",
        T,
        optional=True,
        keys=INTERVAL_KEYS,
    ),
    Key("plots", "array", "", "--plot: the figures written", "report", optional=True, items="string"),
)

# The CSV's Wireshark columns are the `wireshark` object's flags but for the probe and
# keep-alive answers, which it never carried.
_WIRESHARK_FLAGS_NOT_IN_CSV = ("zero_window_probe", "zero_window_probe_ack", "keep_alive_ack")

# The per-direction CSV: (column, path of its value in a `directions` object), in column order.
# `file` and `warnings` come from the document (its file; the codes raised for the direction).
DIRECTION_CSV: Tuple[Tuple[str, str], ...] = (
    ("file", "/file"),
    *(
        (name, name)
        for name in (
            "stream",
            "direction",
            "src",
            "sport",
            "dst",
            "dport",
            "vantage",
            "data_packets",
            "data_segments",
            "payload_bytes",
            "unique_bytes",
            "retransmissions",
            "retransmissions_in_capture",
            "retrans_fast",
            "retrans_rto",
            "retrans_tlp",
            "spurious_retransmissions",
            "reordered_segments",
            "lost_segments",
            "lost_inferred",
            "lost_inferred_sd",
            "loss_method",
            "capture_gaps",
            "loss_rate",
            "retransmission_rate",
            "throughput_bps",
            "goodput_bps",
            "duration_s",
            "dup_acks",
            "sack_blocks",
            "dsack_blocks",
            "zero_window_events",
            "mss",
        )
    ),
    *((f"rtt_{name}_ms", f"rtt_ms.{name}") for name in ("min", "median", "p95", "max", "jitter")),
    *((f"ws_{name}", f"wireshark.{name}") for name, _ in _WIRESHARK_FLAGS if name not in _WIRESHARK_FLAGS_NOT_IN_CSV),
    *((name, name) for name in ("delivered_bytes", "super_segment_frames", "duplicate_frames", "forwarded_drops")),
    ("warnings", "/warnings"),
)
DIRECTION_CSV_COLUMNS: Tuple[str, ...] = tuple(column for column, _ in DIRECTION_CSV)


def key_at(path: str, keys: Sequence[Key] = DIRECTION_KEYS) -> Key:
    """The key a dotted path names (`rtt_ms.median`) among `keys`; `/name` is a document key."""
    if path.startswith("/"):
        keys, path = DOCUMENT_KEYS, path[1:]
    found: Optional[Key] = None
    for part in path.split("."):
        found = next((k for k in keys if k.name == part), None)
        if found is None:
            raise KeyError(path)
        keys = found.keys
    assert found is not None
    return found


# ---------------------------------------------------------------- JSON Schema


def _type_schema(key: Key) -> Dict[str, Any]:
    schema: Dict[str, Any] = {
        "description": key.meaning + (f" [{key.unit}]" if key.unit else ""),
        "x-family": key.family,
    }
    if key.unit:
        schema["x-unit"] = key.unit
    types: List[str] = [key.type]
    if key.nullable:
        types.append("null")
    schema["type"] = types[0] if len(types) == 1 else types
    if key.type == "object" and key.keys:
        schema.update(_object_schema(key.keys, key.open))
    elif key.type == "array":
        if key.keys:
            schema["items"] = {"type": "object", **_object_schema(key.keys, key.open)}
        elif key.items:
            schema["items"] = {"type": key.items}
    return schema


def _object_schema(keys: Sequence[Key], open_: bool = False) -> Dict[str, Any]:
    out: Dict[str, Any] = {
        "properties": {k.name: _type_schema(k) for k in keys},
        "required": [k.name for k in keys if not k.optional],
        "additionalProperties": False,
    }
    if open_:
        # a warning's counts: named for what they count, numbers, strings or null
        out["additionalProperties"] = {"type": ["integer", "number", "string", "null"]}
    return out


def json_schema() -> Dict[str, Any]:
    """JSON Schema (2020-12) of one file's document; the multi-file document is
    `{"schema", "files": [documents]}`."""
    single = {"type": "object", **_object_schema(DOCUMENT_KEYS)}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"spline-analyze-report-{SCHEMA_VERSION}.json",
        "title": "spline-analyze --json",
        "description": "One capture's report, or {schema, files} for several captures. Generated from "
        "spline_analysis/schema.py; do not edit by hand.",
        "$defs": {"file": single},
        "oneOf": [
            {"$ref": "#/$defs/file"},
            {
                "type": "object",
                "properties": {
                    "schema": {"const": SCHEMA_VERSION},
                    "files": {"type": "array", "items": {"$ref": "#/$defs/file"}},
                },
                "required": ["schema", "files"],
                "additionalProperties": False,
            },
        ],
    }


def json_schema_text() -> str:
    import json

    return json.dumps(json_schema(), indent=2, sort_keys=False) + "\n"


# ---------------------------------------------------------------- README table

README_BEGIN = "<!-- json-keys: generated from analysis/schema.py; do not edit -->"
README_END = "<!-- /json-keys -->"


def _rows(keys: Sequence[Key], prefix: str) -> List[Tuple[str, Key]]:
    rows: List[Tuple[str, Key]] = []
    for key in keys:
        path = f"{prefix}{key.name}"
        rows.append((path, key))
        if key.keys:
            rows.extend(_rows(key.keys, path + ("[]." if key.type == "array" else ".")))
    return rows


def markdown_table() -> str:
    """The README's table of JSON keys: key path, type, unit, family, meaning."""
    lines = ["| key | type | unit | family | meaning |", "|---|---|---|---|---|"]
    for path, key in _rows(DOCUMENT_KEYS, ""):
        kind = key.type + (f" of {key.items}" if key.items else "") + (" or null" if key.nullable else "")
        note = " (optional)" if key.optional else ""
        lines.append(f"| `{path}` | {kind}{note} | {key.unit or '-'} | {key.family} | {key.meaning} |")
    return "\n".join(lines) + "\n"


def readme_with_table(readme: str) -> str:
    """`readme` with the text between the markers replaced by the current table."""
    begin, end = readme.index(README_BEGIN), readme.index(README_END)
    return readme[: begin + len(README_BEGIN)] + "\n" + markdown_table() + readme[end:]


if __name__ == "__main__":  # regenerate the JSON Schema file and the README table
    import sys

    SCHEMA_FILE.write_text(json_schema_text(), encoding="utf-8")
    readme_path = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("README.md")
    readme_path.write_text(readme_with_table(readme_path.read_text(encoding="utf-8")), encoding="utf-8")
