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


def sender_side(sends: Sequence[Tuple[float, int]], acks: Sequence[Tuple[float, int]]) -> Flow:
    """A capture next to a data sender b without SACK or timestamps: `sends` are (time, segment)
    of b's data, `acks` (time, segments acknowledged) of the receiver's ACKs, from just after a
    handshake with a 1 ms round trip."""
    f = Flow(sack_permitted=False)
    t0 = f.handshake(0.0, 5000, ISN_B, 0.001, 0.00001, ttl_a=63, ttl_b=64)
    rows = [(t0 + t, "data", k) for t, k in sends] + [(t0 + t, "ack", k) for t, k in acks]
    for when, kind, k in sorted(rows, key=lambda r: r[0]):
        if kind == "data":
            f.add(when, 1, BASE + k * MSS, 5001, length=MSS, ttl=64, flags=TCP_ACK | TCP_PSH)
        else:
            f.add(when, 0, 5001, BASE + k * MSS, ttl=63)
    return f


def partial_acks_while_the_queue_drains(resent: Sequence[int]) -> Flow:
    """Segments 0-9 over a 1 ms path whose bottleneck passes one segment per 0.1 ms, 2 lost; the
    duplicate ACKs at 2 have it repaired at 1.75 ms, and new data 10-15 follows the repair. The
    repair fills the hole (ACK at 10); 10-15 arrive one by one, each acknowledged on its own,
    and the sender resends at the partial ACK the segments in `resent` (NewReno), whose first
    copies the queue is about to deliver."""
    sends = [(0.0001 * k, k) for k in range(10)] + [(0.00175, 2)]
    sends += [(0.00185 + 0.0001 * j, 10 + j) for j in range(6)]
    acks = [(0.001 + 0.0001 * k, 2 if k > 2 else k + 1) for k in range(10) if k != 2]
    acks += [(0.00285, 10)] + [(0.00295 + 0.0001 * j, 11 + j) for j in range(6)]
    for k in resent:
        sends.append((0.00285 + 0.0001 * (k - 10) + 0.00001, k))
    return sender_side(sends, acks)


def test_without_sack_a_repair_whose_ack_stopped_below_data_sent_before_it_was_not_needed():
    # 10, 11 and 12 resent at their partial ACKs: each ACK that covered one stopped at the next,
    # whose first copy left before that repair; on a path that keeps order the copy that filled
    # it left before the next one's, so the first copy did: not needed. Segment 2's repair,
    # which the ACK covered with 3-9 held above it, was
    r = row_of(analyze(partial_acks_while_the_queue_drains(resent=(10, 11, 12)))[2], 0, 1)
    assert r["vantage"] == "sender"
    assert r["retransmissions"] == 4 and r["spurious_retransmissions"] == 3
    assert r["lost_segments"] == 1


def window_lost_whole_resent_by_the_timer() -> Flow:
    """Segments 0-9, 5-9 lost (the tail of the window, no duplicate ACK); the timer resends 5-9
    back to back 200 ms later and the receiver acknowledges each repair on its own."""
    sends = [(0.0001 * k, k) for k in range(10)] + [(0.201 + 0.0001 * j, 5 + j) for j in range(5)]
    acks = [(0.001 + 0.0001 * k, k + 1) for k in range(5)] + [(0.202 + 0.0001 * j, 6 + j) for j in range(5)]
    return sender_side(sends, acks)


def test_without_sack_a_window_lost_whole_and_resent_by_the_timer_stays_needed():
    # each ACK stops at the next segment, but that one was resent right after, before its ACK:
    # what filled it may be that repair, so nothing shows the one below was not needed
    r = row_of(analyze(window_lost_whole_resent_by_the_timer())[2], 0, 1)
    assert r["retransmissions"] == 5 and r["spurious_retransmissions"] == 0
    assert r["lost_segments"] == 5
