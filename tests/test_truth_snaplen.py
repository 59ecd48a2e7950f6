"""Captures whose snaplen cut the SACK option off the ACKs: loss at the sender still reads right.

tests/captures/ipv6-sender-snaplen96.pcap.gz: the first 3,000 frames of a testbed transfer
(IPv6, CUBIC, 2% random loss at a router, a sub-millisecond path), captured at the sender and
cut as `tcpdump -s 96` cuts them: Ethernet + IPv6 + a TCP header with timestamps end at byte
86, so an ACK's SACK option loses its first block. With the whole headers the same frames read
29 retransmissions, 29 lost and none spurious.
"""

from __future__ import annotations

from pathlib import Path

from spline_analysis._core.pipeline import analyze

CAPTURE = Path(__file__).resolve().parent / "captures" / "ipv6-sender-snaplen96.pcap.gz"
# The first 11,500 frames of one BBR flow of a held-out testbed transfer (s28-hx,
# snap72-v4-p2-bbr-l1-rany: IPv4, 1% random loss at a router, a sub-millisecond path) as
# `tcpdump -s 72` wrote them at the sender: 18 bytes of TCP options, so the ACKs keep their
# timestamps and the SACK option's kind, length and half a block, never a whole block. The
# router's truth for the whole transfer: 293 retransmissions, every one needed.
CAPTURE_NO_SACK_BLOCK = Path(__file__).resolve().parent / "captures" / "ipv4-sender-snaplen72.pcap.gz"


def test_duplicate_acks_whose_sack_blocks_were_cut_still_show_the_first_copies_lost():
    """Each duplicate ACK says data above the hole arrived, whether or not its SACK block is
    readable; read as saying nothing, the repairs were taken for ones the receiver may not have
    needed (26 lost and 3 spurious here; the committed matrix's IPv6 senders at -s 96 read 92 to
    1,067 lost for 147 to 1,331)."""
    document = analyze(CAPTURE).to_json()
    data = max(document["directions"], key=lambda d: d["payload_bytes"])
    assert data["vantage"] == "sender"
    assert data["retransmissions"] == 29 and data["spurious_retransmissions"] == 0
    assert data["lost_segments"] == 29
    assert "snaplen_short" in {w["code"] for w in document["warnings"]}


def test_repairs_stay_needed_where_the_snaplen_cut_every_sack_block():
    """With no SACK block readable, the data each duplicate ACK reports is assigned in send
    order, a guess: a lost first copy, covered only together with its repair after guessed
    arrivals above it, looked like a late original, and its needed repair like a spurious one
    (39 of these 52; 151 of 163 in the whole flow, which read 58 lost for 163)."""
    document = analyze(CAPTURE_NO_SACK_BLOCK).to_json()
    data = max(document["directions"], key=lambda d: d["payload_bytes"])
    assert data["vantage"] == "sender" and data["sack_blocks"] == 0
    assert data["retransmissions"] == 52 and data["spurious_retransmissions"] == 0
    assert data["lost_segments"] == 52
    assert {w["code"] for w in document["warnings"]} == {"snaplen_short"}
