"""Capture-integrity warnings: what in a file makes some figure less than exact, and what to
do about it next time.

Every warning is an object `{"code", "message", ...counts}`, with `stream` and `direction`
when it concerns one flow direction. The codes are declared once, here, as data (what the
code means and the fix a user can apply); the README's table is checked against them.
Pure functions over what the stages produced; the CLI only prints.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from .columns import DECODE_TRUNCATED


@dataclass(frozen=True)
class WarningCode:
    code: str
    scope: str  # "file" or "direction"
    meaning: str
    fix: str


WARNING_CODES: Sequence[WarningCode] = (
    WarningCode(
        "file_truncated",
        "file",
        "the file ends in the middle of a record (capture still running, "
        "or the copy was cut); the records before it are read",
        "copy the file after tcpdump has exited",
    ),
    WarningCode(
        "capture_unfinished",
        "file",
        "meta.json beside the capture says the capture did not finish "
        "(`trace_complete` false: an interrupted or failed run); what it holds is read, but the "
        "transfer is not all there (--strict refuses it)",
        "run the capture again to its end",
    ),
    WarningCode(
        "gzip_truncated",
        "file",
        "the gzip stream ends early; what was decompressed is read",
        "compress the file again from the original",
    ),
    WarningCode(
        "sidecar_unreadable",
        "file",
        "meta.json beside the capture cannot be read; its drop counters are not used",
        "rewrite or remove meta.json",
    ),
    WarningCode(
        "capture_drops",
        "file",
        "tcpdump's counters say the kernel or the interface dropped packets "
        "before they were written: the capture misses them (the network did not)",
        "a larger buffer (`tcpdump -B 65536`), headers only (`-s 128`), a filter, a faster disk",
    ),
    WarningCode(
        "snaplen_short",
        "file",
        "frames were cut before the end of their TCP header: those fields are unknown",
        "capture at least the headers: `tcpdump -s 128`",
    ),
    WarningCode(
        "time_backwards",
        "file",
        "timestamps step backwards by more than 1 ms in file order: a clock "
        "change or files joined end to end (durations and rates may be off), or, a few ms at a time, "
        "a busy host writing a frame after one stamped later (the two directions are stamped and "
        "written on different CPUs; harmless)",
        "capture with one clock; merge files with `mergecap`, which orders frames by time; on a "
        "busy host, steps of a few ms need nothing",
    ),
    WarningCode(
        "time_jump",
        "file",
        "consecutive frames more than an hour apart: the file may hold two captures",
        "keep one capture per file",
    ),
    WarningCode(
        "super_segments",
        "direction",
        "frames longer than the segment size: segments coalesced "
        "by the receiving NIC (GRO/LRO) or not yet split by the sender's (TSO/GSO); each is counted "
        "as the segments it holds",
        "to see each segment on the wire: `ethtool -K IFACE gro off "
        "lro off` on a receiver, `ethtool -K IFACE tso off gso off` on a sender",
    ),
    WarningCode(
        "duplicate_frames",
        "direction",
        "the same packets were captured twice: coming in and "
        "going out of a forwarding host (`tcpdump -i any`; the copies coming in are set aside, except "
        "the ACKs of a host that holds them on their way back by more than a millisecond, a delay "
        "line or satellite hop: there the ACKs are read as they came in, and their copies going out "
        "are set aside), or on "
        "two interfaces of a bridge or bond with one TTL (the later copy is set aside), or at two "
        "points of a path merged into one file (`mergecap` of the sender's and the receiver's "
        "captures, any number of hops apart, read like a forwarding host's; segments the receiver's "
        "GRO coalesced pair with the packet they became; the two hosts' clocks may differ, and "
        "each side's times are then read on its own clock: round trips are off by the difference); "
        "never counted as retransmissions",
        "capture on one interface: `tcpdump -i IFACE`",
    ),
    WarningCode(
        "forwarding_drops",
        "direction",
        "packets came into the capturing host and never left it, "
        "although later ones did: this host dropped them (queue or filter); they are part of the "
        "loss. In two captures of a path merged into one file: packets the near end saw that never "
        "reached the far end",
        "none needed: this is the network's behaviour, reported as such",
    ),
    WarningCode(
        "capture_gaps",
        "direction",
        "the receiver acknowledged data this capture never saw, or a hole in it was never "
        "filled while the capture missed the receiver's ACKs: the capture missed it; loss and "
        "goodput count it as delivered (past the last captured ACK, estimated)",
        "a larger buffer (`tcpdump -B 65536`), headers only (`-s 128`)",
    ),
    WarningCode(
        "no_handshake",
        "direction",
        "the connection's SYN is not in the capture: window scaling and "
        "the announced segment size are unknown (segment size estimated from the payloads). A "
        "capture that starts during a recovery opens on repairs whose data above reached the "
        "receiver before it began: what the receiver had reported received by the first ACK of "
        "data in the file is read as preceding the file, not as a capture gap",
        "start the capture before the connection",
    ),
    WarningCode(
        "ip_id_unusable",
        "direction",
        "the sender does not number its IPv4 packets one by one per "
        "connection (random, zero or shared IP IDs): loss is counted from sequence holes only",
        "none needed; a capture at the sender counts loss exactly",
    ),
    WarningCode(
        "ip_id_contradicted",
        "direction",
        "the loss counted from IPv4 IDs disagrees with the "
        "sequence holes: the IDs are not trusted and loss is counted from the holes",
        "none needed; a capture at the sender counts loss exactly",
    ),
    WarningCode(
        "loss_floor",
        "direction",
        "below the sender, without IP IDs that count loss (IPv6 has "
        "none; IPv4 with `ip_id_unusable` or `ip_id_contradicted`), loss is counted from sequence "
        "holes, and the holes found some (more than a forwarding host's own drops, which a capture of "
        "both its sides counts exactly): `lost_segments` is a floor. A burst's tail dropped at a full "
        "queue and repaired in order leaves no hole, and no capture below the sender can tell its "
        "repair from new data (3-22% low where a full queue drops burst tails, up to 5% at random "
        "loss). A repair lost and sent again leaves no hole either: with SACK, those its hole's age and "
        "order do not show are estimated (`lost_inferred`, `loss_estimated` where that matters). "
        "Only with TCP timestamps: without them the count is no floor (`no_timestamps`). On an "
        "ECN connection (`loss_method` `ecn`) the first copies that never came are counted by their "
        "codepoint, tails too; a repair lost and resent again may still leave no trace (-6.3% to -9.0% "
        "on IPv6 BBR at a 2-5 ms queue)",
        "capture at the sender, whose retransmissions count loss exactly; below it, an IPv4 sender "
        "that numbers its IP IDs per connection (as Linux does) has its loss counted exactly; or let "
        "the connection negotiate ECN (`sysctl -w net.ipv4.tcp_ecn=1` on a Linux client; Apple's ask for "
        "it by default, Linux servers accept it): then every first copy lost is counted, tails too",
    ),
    WarningCode(
        "loss_not_floor",
        "direction",
        "below the sender, loss is counted from sequence holes (as for `loss_floor`), but here the "
        "count is no floor: it may be high as well as low. The path reorders (the capture recognised "
        "10 or more late originals, `reordered_segments`; a busy host lets a few fall behind on a path "
        "that keeps order): a late original it cannot tell from a repair (on a "
        "sub-millisecond path the repair carries the same TSval tick) counts as a loss. Or the "
        "capture's own counters say it dropped packets (`capture_drops`): a repair it missed hides "
        "a loss, a first copy it missed makes a repeat look needed. IPv6 at about 1 Gbit/s, 0.5-1% "
        "loss: a capture that dropped nothing at the router's outgoing interface +33.4% "
        "(361 late originals recognised); receiver captures where tcpdump dropped 2-23% of "
        "the packets -7.4% to +25.5%",
        "capture at the sender, whose retransmissions count loss exactly; at the receiver, a larger "
        "buffer (`tcpdump -B 65536`) or headers only (`-s 128`) so that the capture drops nothing",
    ),
    WarningCode(
        "loss_estimated",
        "direction",
        "at the sender, on a path that reorders: a receiver drops a "
        "late first copy that a retransmission overtook without a D-SACK (PAWS), so no ACK tells whether "
        "some first copies arrived; or on a connection without SACK: after a timeout the sender resends "
        "its window, and no ACK tells whether the first copies of the resent segments arrived, nor whether "
        "resent copies not needed did (no D-SACK). Their part of `lost_segments` is estimated "
        "(`lost_inferred`, spread `lost_inferred_sd`); raised where the estimate, less the last flight's "
        "(`unacknowledged_at_end`), moves the count beyond its own spread, or that spread alone is a "
        "segment or more and over 2% of the count. Or a "
        "connection without SACK closed with a hole open: no repair shows which of the segments sent "
        "since were lost, and only the receiver's answers (one ACK or RST per arriving segment) estimate "
        "them (`tail_lost_at_close` of `tail_copies_at_close`, of which `lost_inferred` takes what nothing "
        "else counted; at 22 IPv4 closes 4,321 for 4,568: low where a queue delays answers to earlier "
        "segments; none where the sender hands over super-segments). Or below the sender, where holes "
        "count the loss (`loss_floor`): a repair lost and sent again leaves no hole of its own, and "
        "with SACK those the holes' signs miss are estimated at the rate of the loss events (holes "
        "opened) among the 2,048 packets either side of each repair (a full queue's burst is one "
        "event)",
        "capture at the receiver as well: its loss count needs no estimate; or let the sender use SACK "
        "(`sysctl -w net.ipv4.tcp_sack=1`; a middlebox may strip it)",
    ),
    WarningCode(
        "unacknowledged_at_end",
        "direction",
        "at the sender (SACK), the capture ended with a flight sent and never acknowledged: first copies "
        "above every ACK and SACK block (`unreported_at_end`), whose fate no ACK told (the receiver "
        "closed, resetting the connection with data in flight, as iperf3's does at the end of a timed "
        "test, or the capture stopped first). No retransmission counts the ones the path dropped. Where "
        "the receiver still lacked data below data it had when its ACKs stopped (a loss episode under "
        "repair) and the flight left faster than the connection's data was delivered (so it added to "
        "the queue that dropped), they are estimated at the loss rate of the first copies sent just "
        "before them (twice their number: `unreported_lost_estimated`, part of `lost_inferred`). Raised "
        "when that estimate is 2 segments or more, or where such a flight (`unreported_at_risk`) less "
        "the estimate is 2 segments and over 2% of the count: a queue that overflows as the flight "
        "arrives (its rate just fallen) drops from it alone, and the segments before it lost none "
        "(84 of 124 lost, estimated 0). A long path holds a large flight: on a 550 ms "
        "satellite path whose queue overflowed at the end, 45 of 195 such segments were dropped, and "
        "the estimate read 48",
        "capture at the receiver as well: its holes count the last flight's losses; or let the "
        "connection close with every byte acknowledged before the capture stops (a transfer of a fixed "
        "size the receiver reads to its end, rather than a timed test that resets the connection)",
    ),
    WarningCode(
        "paws_discards",
        "direction",
        "below the sender, on a path that reorders: segments reached "
        "the receiver and its timestamp check discarded them (PAWS: a first copy that a repair of "
        "lower data overtook carries an older TSval); they are not lost on the path (`lost_segments` "
        "leaves them out) and their repeats were needed (`paws_discards`). Raised when they are at "
        "least 1% of the direction's retransmissions (and 2 segments)",
        "none needed: it is the path's reordering (delay jitter) meeting the receiver's timestamps; "
        "a path that keeps packet order has none",
    ),
    WarningCode(
        "spurious_retransmissions",
        "direction",
        "at the sender (or the router's interface from it, or a capture of both sides of a forwarding "
        "host, for the loss after it), a fifth or more of the retransmissions "
        "repeated data the receiver already had (`spurious_retransmissions`; 20 segments or more): a "
        "path that reorders, a receiver that lags behind a fast sender, or a sender without SACK "
        "resending its window after a timeout. `lost_segments` counts the needed ones only, told "
        "apart by the receiver's D-SACKs, SACK blocks and timestamps; where those go missing (an ACK "
        "carries one D-SACK block, and a receiver that compresses its ACKs drops some; no D-SACK "
        "without SACK) a repeat not needed reads as a loss, or the other way, so the count is no "
        "longer exact. Sender and router-in captures of 52 sets of known truth: 71 of the 109 it was "
        "raised on were outside 2% (1 Gbit/s IPv6 with GRO +24% with no other warning), against 8 of "
        "the 554 it was not; router `-i any` captures: 5 of the 8 it was raised on outside 3%, 5 of "
        "the 497 it was not (4 where tcpdump dropped packets)",
        "capture at the receiver as well: its holes count loss without telling repeats apart (IPv4 "
        "IDs exactly); on a Linux receiver keep D-SACKs on (`net.ipv4.tcp_dsack=1`, the default)",
    ),
    WarningCode(
        "no_timestamps",
        "direction",
        "below the sender, a connection without TCP timestamps (Windows' default, or a "
        "middlebox stripped them; or a snaplen that cut the data segments' TCP options, so the "
        "capture holds none: `cut_data_frames`) whose loss is counted from sequence holes (IPv6, or IPv4 IDs "
        "that cannot count): a repair lost again leaves no hole of its own, and without the TSecr "
        "of the data after it only a repair that comes late or below a higher one shows it; and "
        "a first copy that arrives late (reordered on the way) looks like the repair of its hole "
        "unless it comes within a fraction of the handshake's round trip. So `lost_segments` may "
        "run a few percent low, or high on a path that reorders (IPv6 captures of the committed "
        "matrix with timestamps taken out: -3.5% to +9%)",
        "capture at the sender, whose count needs no timestamps; or turn them on at the sender "
        "(`netsh int tcp set global timestamps=enabled` on Windows, `sysctl -w net.ipv4.tcp_timestamps=1`); "
        "where the snaplen cut them, capture the whole TCP header (`tcpdump -s 128`)",
    ),
    WarningCode(
        "one_direction_missing",
        "direction",
        "data in one direction and no packet at all in the "
        "other: the return path bypasses this capture point (asymmetric routing), so ACK-based "
        "figures are unknown",
        "capture where both directions pass, or on both paths",
    ),
)
CODES = {w.code: w for w in WARNING_CODES}

# Decoder messages (strings) and the code each starts with.
_DECODE_MESSAGE_CODES = (
    ("file cut mid-record", "file_truncated"),
    ("gzip stream ends early", "gzip_truncated"),
    ("meta.json: unreadable", "sidecar_unreadable"),
    ("capture unfinished", "capture_unfinished"),
)
TIME_JUMP_NS = 3600 * 1_000_000_000
# A sender's estimated loss is worth a warning when it moves the count by at least this many
# segments and by more than this many of its own standard deviations (a smaller estimate is
# indistinguishable from none: a path that barely reorders).
LOSS_ESTIMATE_MIN_SEGMENTS = 2
LOSS_ESTIMATE_SPREADS = 2.0
# It is worth one too when its spread alone makes the count uncertain: at least a whole segment
# and more than this share of the count (the 2% within which a sender's count is read as exact;
# a few dozen losses on a path that reorders: +-2 segments of 30 is 7%).
LOSS_ESTIMATE_MIN_SPREAD_SEGMENTS = 1.0
LOSS_ESTIMATE_SPREAD_SHARE = 0.02
# A PAWS discard is a segment that reached the receiver, was thrown away and sent again: a
# retransmission the path did not cause. Fewer than this share of the direction's
# retransmissions moves neither the loss nor the retransmission figure by more than their 1%
# tolerance, and a few can be the capture's own doing: a busy host writes frames milliseconds
# out of time order (`time_backwards`), past the one TSval tick PAWS allows, and a capture
# that drops packets (`capture_gaps`) may miss the data that moved TS.Recent. Issue 8's
# 1 Gbit/s receiver capture (91,125 packets dropped) read 9 discards among 10,145
# retransmissions; a 50 ms path whose jitter reorders, 83-88 among 135.
PAWS_DISCARDS_MIN_SHARE = 0.01
PAWS_DISCARDS_MIN_SEGMENTS = 2
# A sender's loss count is its needed retransmissions: where many repeat data the receiver
# had, its count rests on the evidence that tells them apart (D-SACKs, SACK blocks, TSecr),
# and goes wrong where that evidence goes missing. At this share of the retransmissions (and
# this many segments) the count stopped being exact on the testbed's captures: over 52 sets,
# 71 of the 109 sender and router-in captures at or above it were outside 2%, 8 of 554 below.
SPURIOUS_RETRANSMISSIONS_MIN_SHARE = 0.2
SPURIOUS_RETRANSMISSIONS_MIN_SEGMENTS = 20
# Captures on several CPUs step back by microseconds now and then; that changes no figure.
TIME_BACKWARDS_TOLERANCE_NS = 1_000_000


def _warning(code: str, message: str, **counts: Any) -> Dict[str, Any]:
    assert code in CODES, code
    return {"code": code, "message": message, **counts}


def decode_warnings(messages: Sequence[str]) -> List[Dict[str, Any]]:
    """The decoder's messages as coded warnings."""
    out = []
    for message in messages:
        code = next((c for prefix, c in _DECODE_MESSAGE_CODES if message.startswith(prefix)), "file_truncated")
        out.append(_warning(code, message))
    return out


def file_warnings(
    packets: Mapping[str, np.ndarray], capture_drops: Optional[Mapping[str, Any]]
) -> List[Dict[str, Any]]:
    """Warnings about the file as a whole: counters, snaplen, clock."""
    out = []
    drops = capture_drops or {}
    kernel, interface = drops.get("kernel"), drops.get("interface")
    if (kernel or 0) > 0 or (interface or 0) > 0:
        out.append(
            _warning(
                "capture_drops",
                f"tcpdump's counters: {kernel or 0:,} packets dropped by the kernel, "
                f"{interface or 0:,} by the interface (from {drops.get('source')})",
                kernel_drops=kernel,
                interface_drops=interface,
            )
        )
    cut = int(np.count_nonzero(np.asarray(packets["decode_flags"]) & DECODE_TRUNCATED))
    if cut:
        out.append(
            _warning("snaplen_short", f"{cut:,} frames end before their headers do (snaplen too short)", frames=cut)
        )
    ts = np.asarray(packets["ts_ns"])
    if "ts_valid" in packets:
        ts = ts[np.asarray(packets["ts_valid"])]
    if len(ts) > 1:
        step = np.diff(ts)
        backwards = int(np.count_nonzero(step < -TIME_BACKWARDS_TOLERANCE_NS))
        if backwards:
            out.append(
                _warning(
                    "time_backwards",
                    f"{backwards:,} timestamps step backwards, by up to {-int(step.min()) / 1e9:.6f} s",
                    steps=backwards,
                    largest_step_s=-int(step.min()) / 1e9,
                )
            )
        jumps = int(np.count_nonzero(step > TIME_JUMP_NS))
        if jumps:
            out.append(
                _warning(
                    "time_jump",
                    f"{jumps:,} gaps of more than an hour between consecutive frames, "
                    f"the longest {int(step.max()) / 1e9:,.0f} s",
                    gaps=jumps,
                    largest_gap_s=int(step.max()) / 1e9,
                )
            )
    return out


def loss_estimate_matters(inferred: int, spread: float, lost_segments: int) -> bool:
    """Whether a sender's lost count of `lost_segments` with `inferred` segments estimated
    (standard deviation `spread`) needs the `loss_estimated` warning: the estimate moves the count
    beyond its own noise, or its spread alone is a segment or more and over
    LOSS_ESTIMATE_SPREAD_SHARE of the count."""
    if abs(inferred) >= LOSS_ESTIMATE_MIN_SEGMENTS and abs(inferred) > LOSS_ESTIMATE_SPREADS * spread:
        return True
    return spread >= LOSS_ESTIMATE_MIN_SPREAD_SEGMENTS and spread > LOSS_ESTIMATE_SPREAD_SHARE * lost_segments


def flight_fate_matters(at_risk: int, flight_lost: int, lost_segments: int) -> bool:
    """Whether a last flight sent into a queue that was dropping (`at_risk` segments, of which
    `flight_lost` are estimated lost) leaves the sender's count of `lost_segments` open by more than
    LOSS_ESTIMATE_SPREAD_SHARE: the flight less the estimate could all have been lost. A bottleneck
    whose rate fell as the flight arrived drops from it alone, where the segments sent before it lost
    none and the estimate reads 0 (rate steps 100/5/40 Mbit/s, BBR: 84 of 124 lost, counted 0)."""
    unestimated = at_risk - flight_lost
    return unestimated >= LOSS_ESTIMATE_MIN_SEGMENTS and unestimated > LOSS_ESTIMATE_SPREAD_SHARE * lost_segments


def rest_of_spread(whole_sd: float, part_sd: float) -> float:
    """The standard deviation of an estimate less an independent part of it: the whole's
    (`whole_sd`) with the part's variance (`part_sd`) taken out, never below 0 (both are
    rounded to a thousandth of a segment)."""
    return math.sqrt(max(whole_sd * whole_sd - part_sd * part_sd, 0.0))


def spurious_retransmissions_matter(spurious: int, retransmissions: int) -> bool:
    """Whether a sender's retransmissions are spurious often enough that its loss count, their
    needed part, depends on evidence that may be missing (SPURIOUS_RETRANSMISSIONS_MIN_*)."""
    return (
        spurious >= SPURIOUS_RETRANSMISSIONS_MIN_SEGMENTS
        and spurious >= SPURIOUS_RETRANSMISSIONS_MIN_SHARE * retransmissions
    )


def counts_loss_from_repeats(direction: Mapping[str, Any]) -> bool:
    """Whether part of a direction's lost count is its needed repeats, told from the spurious
    ones by the receiver's word: at the sender (its own capture, the router's interface from
    it), and where one capture holds both sides of a forwarding host, for the loss after it
    (`downstream_retransmissions`: repeats of data that had left it)."""
    return direction.get("vantage") == "sender" or int(direction.get("downstream_retransmissions") or 0) > 0


def paws_discards_matter(paws_discards: int, retransmissions: int) -> bool:
    """Whether a direction's PAWS discards are enough of its retransmissions to warn of."""
    return paws_discards >= PAWS_DISCARDS_MIN_SEGMENTS and paws_discards >= PAWS_DISCARDS_MIN_SHARE * retransmissions


def loss_is_floor(d: Mapping[str, Any]) -> bool:
    """Whether a direction's `lost_segments` is a floor: counted from sequence holes below the
    sender (`loss_method` holes: no IP IDs that count loss), and the holes found loss beyond
    a forwarding host's own drops, which a capture of both its sides counts exactly (the
    larger of the two is the count, truth.py)."""
    if d.get("loss_method") == "ecn":
        # first copies that never came, by their ECN codepoint: repairs lost again may hide
        return int(d.get("ecn_lost_originals") or 0) > int(d.get("forwarded_drops") or 0)
    if d.get("loss_method") != "holes":
        return False
    holes_seen = int(d.get("hole_lost_segments") or 0) - int(d.get("lost_repairs") or 0)
    return holes_seen > int(d.get("forwarded_drops") or 0)


# Late originals a capture recognises before its path counts as one that reorders: a busy host's
# veth backlogs let a few first copies fall behind their repairs on a path that keeps order (2-5
# per flow on in-order jitter paths; 2 of 125 lost in a 100 Mbit/s IPv6 flow whose count stayed
# 2 under the router's drops), where a path that reorders shows hundreds (361 and 546-3,654 on
# ~1 Gbit/s IPv6 paths whose counts ran up to +33% high).
REORDERING_PATH_MIN_SEGMENTS = 10


def _reordered(d: Mapping[str, Any]) -> bool:
    """Whether a direction's capture recognised enough late originals to call its path one that
    reorders (REORDERING_PATH_MIN_SEGMENTS). With ECN (`loss_method` ecn) a late original is
    told by its codepoint, but repairs that overtake each other still read as repairs lost."""
    return int(d.get("reordered_segments") or 0) >= REORDERING_PATH_MIN_SEGMENTS


def _not_floor_reason(d: Mapping[str, Any], capture_dropped_packets: int) -> str:
    """Why a direction's hole count may be high as well as low, with the figures."""
    reasons = []
    if _reordered(d):
        reasons.append(
            f"the path reorders ({int(d['reordered_segments']):,} late originals recognised; "
            "one not recognised counts as a loss)"
        )
    if capture_dropped_packets > 0:
        reasons.append(
            f"the capture dropped {capture_dropped_packets:,} packets (a repair it missed hides a loss, "
            "a first copy it missed makes a repeat look needed)"
        )
    return "; ".join(reasons)


def _holes_reason(d: Mapping[str, Any]) -> str:
    """Why a direction's loss is counted from sequence holes, in a few words."""
    if d.get("loss_method") == "ecn":
        return "first copies that never came, by their ECN codepoint, and sequence holes"
    if ":" in str(d.get("src", "")):
        return "IPv6 has no IP IDs"
    if d.get("ip_id_contradicted"):
        return "its IPv4 IDs contradict the holes"
    if d.get("ip_id_unusable"):
        return f"its IPv4 IDs are {d.get('ip_id_policy')}"
    if d.get("ip_id_policy") == "per_connection":
        return "its IPv4 IDs number more pure ACKs than data"
    return "too few packets to read its IPv4 IDs"


def _flow_and_where(d: Mapping[str, Any]) -> Tuple[str, Dict[str, Any]]:
    """A direction record's 'src:port -> dst:port', and the keys that tie a warning to it."""
    return f"{d['src']}:{d['sport']} -> {d['dst']}:{d['dport']}", {"stream": d["stream"], "direction": d["direction"]}


def direction_warnings(records: Sequence[Mapping[str, Any]], slot_packets: Mapping[int, int]) -> List[Dict[str, Any]]:
    """Warnings per flow direction, from the `directions` records of the report.
    `slot_packets`: packets per slot (stream * 2 + direction), to see a missing reverse direction."""
    out = []
    for d in records:
        flow, where = _flow_and_where(d)
        if d.get("super_segment_frames"):
            out.append(
                _warning(
                    "super_segments",
                    f"{flow}: {d['super_segment_frames']:,} of {d['data_packets']:,} "
                    f"data frames hold several segments ({d['data_segments']:,} segments counted)",
                    frames=d["super_segment_frames"],
                    segments=d["data_segments"],
                    **where,
                )
            )
        if d.get("duplicate_frames"):
            out.append(
                _warning(
                    "duplicate_frames",
                    f"{flow}: {d['duplicate_frames']:,} packets captured twice "
                    f"(in and out of this host, or on two interfaces); one copy of each is analysed",
                    frames=d["duplicate_frames"],
                    **where,
                )
            )
        if d.get("forwarded_drops"):
            out.append(
                _warning(
                    "forwarding_drops",
                    f"{flow}: {d['forwarded_drops']:,} segments came into this host and never left it",
                    segments=d["forwarded_drops"],
                    **where,
                )
            )
        if d.get("capture_gaps"):
            out.append(
                _warning(
                    "capture_gaps",
                    f"{flow}: {d['capture_gaps']:,} segments the receiver acknowledged, or that never arrived while "
                    "the capture missed its ACKs, are not in the capture",
                    segments=d["capture_gaps"],
                    bytes=d.get("capture_gap_bytes"),
                    **where,
                )
            )
        if not d.get("handshake_seen", True):
            out.append(_warning("no_handshake", f"{flow}: no SYN captured; window scale unknown", **where))
        if d.get("ip_id_contradicted"):
            out.append(
                _warning(
                    "ip_id_contradicted",
                    f"{flow}: IP IDs say {d.get('ip_id_lost_segments')} segments "
                    f"lost, sequence holes {d.get('hole_lost_segments')}: holes used",
                    ip_id_lost_segments=d.get("ip_id_lost_segments"),
                    hole_lost_segments=d.get("hole_lost_segments"),
                    **where,
                )
            )
        elif d.get("ip_id_unusable"):
            out.append(
                _warning(
                    "ip_id_unusable",
                    f"{flow}: IP IDs are not a per-connection counter "
                    f"({d.get('ip_id_policy')}); loss from sequence holes",
                    ip_id_policy=d.get("ip_id_policy"),
                    **where,
                )
            )
        flight_lost = round(float(d.get("unreported_lost_estimated") or 0.0))
        at_risk = int(d.get("unreported_at_risk") or 0)
        if flight_lost >= LOSS_ESTIMATE_MIN_SEGMENTS or flight_fate_matters(
            at_risk, flight_lost, int(d.get("lost_segments") or 0)
        ):
            out.append(_unacknowledged_at_end_warning(d, flow, flight_lost, where))
        # the rest of the estimate: first copies whose fate the ACKs left untold before the end,
        # judged by its own spread (the flight's variance taken out of the whole estimate's)
        inferred = int(d.get("lost_inferred") or 0) - flight_lost
        spread = rest_of_spread(float(d.get("lost_inferred_sd") or 0.0), float(d.get("unreported_lost_sd") or 0.0))
        tail_lost = int(d.get("tail_lost_at_close") or 0)
        inferred_matters = loss_estimate_matters(inferred, spread, int(d.get("lost_segments") or 0))
        if inferred_matters or tail_lost >= LOSS_ESTIMATE_MIN_SEGMENTS:
            estimate = (inferred, spread) if inferred_matters else None
            out.append(_loss_estimated_warning(d, flow, estimate, tail_lost, where))
        if paws_discards_matter(int(d.get("paws_discards") or 0), int(d.get("retransmissions") or 0)):
            out.append(
                _warning(
                    "paws_discards",
                    f"{flow}: the receiver discarded {d['paws_discards']:,} segments that reached it "
                    f"(PAWS: older timestamps than a repair that overtook them); not lost on the path",
                    segments=d["paws_discards"],
                    **where,
                )
            )
        if counts_loss_from_repeats(d):
            spurious = int(d.get("spurious_retransmissions") or 0)
            resent = int(d.get("retransmissions_in_capture") or d.get("retransmissions") or 0)
            if spurious_retransmissions_matter(spurious, resent):
                out.append(
                    _warning(
                        "spurious_retransmissions",
                        f"{flow}: {spurious:,} of {resent:,} retransmissions repeated data the receiver "
                        f"had; lost_segments counts the rest, as far as D-SACKs, SACKs and timestamps "
                        f"tell them apart: capture at the receiver as well to check it",
                        segments=spurious,
                        retransmissions=resent,
                        **where,
                    )
                )
        peer = 2 * int(d["stream"]) + (1 - int(d["direction"]))
        if slot_packets.get(peer, 0) == 0:
            out.append(
                _warning("one_direction_missing", f"{flow}: no packet of the reverse direction in the capture", **where)
            )
    return out


def _unacknowledged_at_end_warning(
    d: Mapping[str, Any], flow: str, flight_lost: int, where: Mapping[str, Any]
) -> Dict[str, Any]:
    """`unacknowledged_at_end` for one direction: the last flight no ACK reported, and the part of
    it estimated lost (`flight_lost` segments, rounded)."""
    flight = int(d.get("unreported_at_end") or 0)
    at_risk = int(d.get("unreported_at_risk") or 0)
    risk = f" (into a queue that was dropping: 0 to {at_risk:,} lost)" if at_risk else ""
    return _warning(
        "unacknowledged_at_end",
        f"{flow}: the capture ended with {flight:,} segments sent and never acknowledged{risk}; "
        f"{flight_lost:,} of them estimated lost (in lost_segments), at the loss rate of the "
        f"segments sent just before them: capture at the receiver to count them",
        segments=flight,
        lost_estimated=flight_lost,
        at_risk=at_risk,
        **where,
    )


def _loss_estimated_warning(
    d: Mapping[str, Any],
    flow: str,
    estimate: Optional[Tuple[int, float]],
    tail_lost: int,
    where: Mapping[str, Any],
) -> Dict[str, Any]:
    """`loss_estimated` for one direction: the part of `lost_segments` estimated (`estimate`:
    lost_inferred and its spread, None where it is too small to matter), and, where a sender
    without SACK closed with a hole open, the segments sent since (`tail_copies_at_close`) and
    those the count of the receiver's answers says were lost (`tail_lost_at_close`)."""
    message = f"{flow}: {d['lost_segments']:,} segments lost"
    fields: Dict[str, Any] = {
        "lost_inferred": int(d.get("lost_inferred") or 0),
        "lost_inferred_sd": round(float(d.get("lost_inferred_sd") or 0.0), 3),
    }
    if estimate is not None and d.get("vantage") != "sender":
        inferred, spread = estimate
        message += (
            f", of which {inferred:+,} estimated (+-{spread:.1f}): repairs lost and sent again leave "
            f"no hole of their own, and those the holes do not show are estimated at the rate of "
            f"the loss events around each repair"
        )
    elif estimate is not None:
        inferred, spread = estimate
        message += (
            f", of which {inferred:+,} estimated (+-{spread:.1f}): the ACKs do not tell the fate of "
            f"every first copy a retransmission overtook or, without SACK, a window resent"
        )
        if d.get("capture_gaps"):
            message += (
                f"; and where the capture dropped packets, the retransmissions among the "
                f"{d['capture_gaps']:,} segments it missed, at their share of those it saw"
            )
    if tail_lost > 0:
        copies = int(d.get("tail_copies_at_close") or 0)
        message += (
            f"; the connection closed with a hole open and no SACK: of the {copies:,} segments sent "
            f"since, about {tail_lost:,} were lost by the count of the receiver's answers (one per "
            f"arriving segment); `lost_segments` holds what the repairs since and the rest of the "
            f"estimate did not count already"
        )
        fields.update(tail_copies_at_close=copies, tail_lost_at_close=tail_lost)
    return _warning("loss_estimated", message, **fields, **where)


def _no_timestamps_warning(d: Mapping[str, Any], cut_data_frames: int) -> Dict[str, Any]:
    """`no_timestamps` for one direction: none on the wire, or none the capture kept (its
    data frames end before their TCP options: a snaplen of 80 bytes holds Ethernet, IPv6 and
    the TCP header's first 26 bytes, and the timestamps option ends at 32)."""
    flow, where = _flow_and_where(d)
    lost = int(d.get("lost_segments") or 0)
    why = (
        f"TCP timestamps unreadable (the snaplen cut the options of {cut_data_frames:,} data frames)"
        if cut_data_frames
        else "no TCP timestamps"
    )
    counts = {"cut_data_frames": cut_data_frames} if cut_data_frames else {}
    return _warning(
        "no_timestamps",
        f"{flow}: {why}, loss from sequence holes: {lost:,} "
        "segments lost may miss repairs lost again, or count late originals as repairs",
        lost_segments=d.get("lost_segments"),
        **counts,
        **where,
    )


def hole_count_warnings(
    records: Sequence[Mapping[str, Any]],
    slot_stamped_data: Mapping[int, int],
    slot_cut_data: Optional[Mapping[int, int]] = None,
    capture_dropped_packets: int = 0,
) -> List[Dict[str, Any]]:
    """What a loss count read from sequence holes below the sender is worth, per direction:
    without TCP timestamps `no_timestamps` (a repair lost again and a late original look alike,
    so the count may be low or high; where holes found some, and a forwarding host's own exact
    drops do not settle it: the larger holes count stands when late originals inflate it);
    with them `loss_floor` where the holes found loss (`loss_is_floor`: at least that many).
    One or the other: without timestamps the count is no floor. Nor where the direction's
    path reorders (late originals recognised: an unrecognised one counts as a loss) or the
    capture's own counters say it dropped packets (`capture_dropped_packets`, kernel and
    interface: a repair it missed hides a loss): `loss_not_floor` instead of `loss_floor`.
    `slot_stamped_data`: data packets with timestamps per slot (stream * 2 + direction);
    `slot_cut_data`: data packets whose headers the snaplen cut, per slot (their options,
    timestamps too, are unknown)."""
    out = []
    for d in records:
        slot = 2 * int(d["stream"]) + int(d["direction"])
        flow, where = _flow_and_where(d)
        if slot_stamped_data.get(slot, 0) == 0:
            if (
                d.get("vantage") in ("receiver", "in-path")
                and d.get("loss_method") in ("holes", "ecn")
                and int(d.get("hole_lost_segments") or 0) + max(int(d.get("ecn_lost_originals") or 0), 0) > 0
            ):
                out.append(_no_timestamps_warning(d, int((slot_cut_data or {}).get(slot, 0))))
        elif loss_is_floor(d) and (_reordered(d) or capture_dropped_packets > 0):
            out.append(
                _warning(
                    "loss_not_floor",
                    f"{flow}: {d['lost_segments']:,} segments lost, counted from sequence holes "
                    f"({_holes_reason(d)}), not a floor: {_not_floor_reason(d, capture_dropped_packets)}",
                    lost_segments=d["lost_segments"],
                    reordered_segments=int(d.get("reordered_segments") or 0),
                    capture_dropped_packets=capture_dropped_packets,
                    **where,
                )
            )
        elif loss_is_floor(d):
            out.append(
                _warning(
                    "loss_floor",
                    f"{flow}: at least {d['lost_segments']:,} segments lost ({_holes_reason(d)}): "
                    + (
                        "a repair lost and resent again may leave no trace here"
                        if d.get("loss_method") == "ecn"
                        else "a burst's tail dropped and repaired in order leaves no hole, and this capture "
                        "cannot count it"
                    ),
                    lost_segments=d["lost_segments"],
                    **where,
                )
            )
    return out


def codes_by_direction(warnings: Sequence[Mapping[str, Any]]) -> Dict[tuple, List[str]]:
    """(stream, direction) -> the codes raised for it."""
    out: Dict[tuple, List[str]] = {}
    for w in warnings:
        if "stream" in w:
            out.setdefault((w["stream"], w["direction"]), []).append(w["code"])
    return out
