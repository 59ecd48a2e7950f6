"""Receiver-side captures of connections without SACK and without TCP timestamps (Windows'
defaults behind a box that strips SACK): what the order of arrival and the receiver's own ACKs
tell of late originals and of lost copies, where no TSval does.

The data sender is b (direction 1); the capture sits at the receiver a, whose ACKs leave
20 us after the data they answer. IPv4 IDs are random, so they tell nothing either.
"""

from __future__ import annotations

from typing import Iterable, Optional, Sequence, Tuple

import numpy as np

from test_truth_crafted import MSS, TCP_ACK, TCP_PSH, Flow, analyze, row_of

ISN_B = 1000
BASE = ISN_B + 1
ACK_AFTER_S = 0.00002


class Receiver:
    """A no-SACK, no-timestamp receiver-side capture: `arrive` adds one data segment and the
    receiver's cumulative ACK (a duplicate when it fills nothing) unless told to stay silent."""

    def __init__(self) -> None:
        self.flow = Flow(sack_permitted=False)
        # a 40 us handshake round trip: the path is short, queues make the data's delay
        self.start_s = self.flow.handshake(0.0, 5000, ISN_B, 0.00002, 0.00002, ttl_a=64, ttl_b=61)
        self.received: set = set()
        self.rng = np.random.default_rng(11)

    def cumulative(self) -> int:
        k = 0
        while k in self.received:
            k += 1
        return k

    def arrive(self, when_s: float, k: int, ack: bool = True) -> None:
        ip_id = int(self.rng.integers(0, 65536))
        self.flow.add(
            self.start_s + when_s, 1, BASE + k * MSS, 5001, length=MSS, ttl=61, ip_id=ip_id, flags=TCP_ACK | TCP_PSH
        )
        self.received.add(k)
        if ack:
            self.flow.add(self.start_s + when_s + ACK_AFTER_S, 0, 5001, BASE + self.cumulative() * MSS, ttl=64)

    def in_order(self, first_s: float, segments: Iterable[int], gap_s: float = 0.0001) -> float:
        when = first_s
        for k in segments:
            self.arrive(when, k)
            when += gap_s
        return when


def overtaken_on_the_last_hop(duplicate_acks: int) -> Flow:
    """Segments 30-32 overtaken by 33-36 on the last hop (a veth's per-CPU queues) and arriving
    0.15-0.2 ms later; the receiver answers the four early ones with `duplicate_acks` duplicate
    ACKs (one, as seen: it took them in one batch; or one each)."""
    r = Receiver()
    when = r.in_order(0.001, range(30))
    for n, k in enumerate(range(33, 37)):
        r.arrive(when, k, ack=n < duplicate_acks)
        when += 0.00001
    when += 0.00015
    when = r.in_order(when, [30, 31, 32], gap_s=0.00003)
    r.in_order(when, range(37, 60))
    return r.flow


def test_without_sack_a_fill_before_duplicate_acks_could_ask_for_it_is_the_original_late():
    # a sender without SACK resends the segment at the ACK on DupThresh duplicate ACKs or a
    # partial ACK in a recovery, else at its timeout: with one duplicate ACK sent, none of the
    # three fills can be a repair, whatever the 40 us handshake says of the round trip
    _, _, d = analyze(overtaken_on_the_last_hop(duplicate_acks=1))
    r = row_of(d, 0, 1)
    assert r["vantage"] == "receiver" and r["loss_method"] == "holes"
    assert r["reordered_segments"] == 3
    assert r["retransmissions"] == 0 and r["lost_segments"] == 0


def test_without_sack_a_fill_after_dupthresh_duplicate_acks_stays_a_repair():
    # four duplicate ACKs: the sender may have fast retransmitted 30 (and, on each partial ACK,
    # 31 and 32): without a TSval or an ID nothing shows otherwise, so the fills stay repairs
    _, _, d = analyze(overtaken_on_the_last_hop(duplicate_acks=4))
    r = row_of(d, 0, 1)
    assert r["retransmissions"] == 3 and r["lost_segments"] == 3


def recovery_repairing_behind_new_data() -> Flow:
    """A NewReno recovery: 10 lost with 15-17 behind 11-14 (four duplicate ACKs); the repair of 10
    draws the partial ACK at 15, whose repair arrives in order (it reads as new data) and is
    acknowledged only once new data sent in the recovery (18) arrived and opened a hole at 16;
    that ACK at 16 is a partial ACK: 16, then 17, are repaired one partial ACK at a time."""
    r = Receiver()
    when = r.in_order(0.001, range(10))
    when = r.in_order(when, range(11, 15))
    r.arrive(when + 0.0015, 10)
    r.arrive(when + 0.003, 15, ack=False)
    r.arrive(when + 0.0033, 18)
    r.arrive(when + 0.0048, 16)
    r.arrive(when + 0.0063, 17)
    r.in_order(when + 0.0065, range(19, 40))
    return r.flow


def test_without_sack_a_fill_after_a_partial_ack_reached_it_stays_a_repair():
    # the holes at 16 and 17 had no duplicate ACKs of their own, but the ACK moved on to each
    # after it opened, from data that was no late original: partial ACKs, so repairs (15's loss,
    # repaired in order, leaves no hole: 3 of the 4 lost are seen)
    _, _, d = analyze(recovery_repairing_behind_new_data())
    r = row_of(d, 0, 1)
    assert r["reordered_segments"] == 0
    assert r["retransmissions"] == 3 and r["lost_segments"] == 3


def timeout_sweep(sweep_arrivals: Optional[Sequence[Tuple[int, float]]] = None) -> Flow:
    """Segment 20 lost, 21-29 arrive (duplicate ACKs at 20); 0.3 s later the timeout resends 20
    (the receiver then acknowledges 30) and, before that ACK reaches the sender, goes on
    resending 21-29 in order (go-back-N): `sweep_arrivals` lists which of those copies arrive
    here and when (all, 0.1 ms apart, by default)."""
    r = Receiver()
    when = r.in_order(0.001, range(20))
    when = r.in_order(when + 0.0001, range(21, 30))
    r.arrive(when + 0.3, 20)
    copies = sweep_arrivals if sweep_arrivals is not None else [(k, 0.0001 * (k - 20)) for k in range(21, 30)]
    for k, after_s in copies:
        r.arrive(when + 0.3 + after_s, k)
    r.in_order(when + 0.3 + 0.002, range(30, 50))
    return r.flow


def test_without_sack_a_copy_missing_from_a_timeouts_go_back_n_sweep_was_lost_on_the_way():
    # the receiver had 21-29: the copies leave no hole, but the sweep resends them in order and
    # skips only what an ACK had covered, and no ACK stood at 25: the copy of 24 was lost
    whole = row_of(analyze(timeout_sweep())[2], 0, 1)
    missing = [(k, 0.0001 * (k - 20)) for k in range(21, 30) if k != 24]
    one_lost = row_of(analyze(timeout_sweep(missing))[2], 0, 1)
    assert whole["spurious_retransmissions"] == 9 and one_lost["spurious_retransmissions"] == 8
    assert one_lost["lost_segments"] == whole["lost_segments"] + 1


def test_without_sack_a_sweeps_copy_arriving_after_the_next_one_is_no_loss():
    # 24's copy overtaken by 25's on the way: late, not lost
    whole = row_of(analyze(timeout_sweep())[2], 0, 1)
    late = [(k, 0.0001 * (k - 20)) for k in range(21, 30) if k != 24] + [(24, 0.00055)]
    late.sort(key=lambda c: c[1])
    swapped = row_of(analyze(timeout_sweep(late))[2], 0, 1)
    assert swapped["spurious_retransmissions"] == 9
    assert swapped["lost_segments"] == whole["lost_segments"]
