"""Capture-integrity warnings: coded, documented, raised where the file says so and nowhere else."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from spline_analysis._core import integrity
from spline_analysis._core.columns import DECODE_TRUNCATED
from spline_analysis._core.pipeline import analyze

REPO = Path(__file__).resolve().parents[1]
GROUNDTRUTH = REPO.parent / "shared" / "corpus" / "groundtruth"


def test_readme_documents_every_warning_code_with_its_fix():
    readme = (REPO / "README.md").read_text()
    for warning in integrity.WARNING_CODES:
        assert f"| `{warning.code}` | {warning.meaning} | {warning.fix} |" in readme, warning.code


def clean_captures():
    found = sorted(REPO.glob("samples/*/trace.pcap"))
    if GROUNDTRUTH.is_dir():
        found += sorted(GROUNDTRUTH.glob("*.pcap"))
    return found


# Bundled samples captured at a sender on a path that reorders (200 ms +-50 ms of netem
# jitter): the sender's ACKs leave the fate of many overtaken first copies unknown (cubic's:
# 10 segments lost, +-1.3 estimated, where the router dropped 11).
# Most of their retransmissions repeat data the receiver had (36 of cubic's 45).
REORDERING_SENDER_SAMPLES = {
    "bbr-d200ms-j50ms-1pct-10mbit",
    "cubic-d200ms-j50ms-1pct-10mbit",
    "spline-d200ms-j50ms-1pct-10mbit",
}


@pytest.mark.parametrize("path", clean_captures(), ids=lambda p: p.parent.name + "/" + p.name)
def test_clean_captures_raise_no_integrity_warning(path):
    document = analyze(path).to_json()
    reordering = path.parent.name in REORDERING_SENDER_SAMPLES
    expected = ["loss_estimated", "spurious_retransmissions"] if reordering else []
    assert [w["code"] for w in document["warnings"]] == expected
    assert document["summary"]["warning_codes"] == expected


def test_estimated_sender_loss_is_warned_only_when_it_moves_the_count_beyond_its_spread():
    estimated = direction(lost_segments=28, lost_inferred=11, lost_inferred_sd=3.4)
    within_spread = direction(stream=1, lost_segments=106, lost_inferred=-3, lost_inferred_sd=1.5)
    exact = direction(stream=2, lost_segments=136, lost_inferred=0, lost_inferred_sd=0.0)
    warnings = integrity.direction_warnings([estimated, within_spread, exact], {k: 10 for k in range(6)})
    assert [(w["code"], w["stream"]) for w in warnings] == [("loss_estimated", 0)]
    assert warnings[0]["lost_inferred"] == 11 and warnings[0]["lost_inferred_sd"] == 3.4


def test_an_unacknowledged_flight_at_the_end_is_warned_apart_from_other_estimated_loss():
    # s550 (450 ms path, the queue overflowing at the end): 195 segments unreported, 48
    # estimated lost; the whole estimate is the flight's, so no `loss_estimated` besides
    flight = direction(lost_segments=165, lost_inferred=48, lost_inferred_sd=7.4)
    flight |= {"unreported_at_end": 195, "unreported_lost_estimated": 48.0, "unreported_lost_sd": 7.4}
    # one segment estimated: the rounding of an estimate, not worth a warning
    small = direction(stream=1, lost_segments=30, lost_inferred=1, lost_inferred_sd=0.9)
    small |= {"unreported_at_end": 12, "unreported_lost_estimated": 1.2}
    warnings = integrity.direction_warnings([flight, small], {k: 10 for k in range(4)})
    assert [(w["code"], w["stream"]) for w in warnings] == [("unacknowledged_at_end", 0)]
    assert (warnings[0]["segments"], warnings[0]["lost_estimated"]) == (195, 48)


def test_a_last_flight_sent_into_a_dropping_queue_is_warned_where_its_fate_could_move_the_count_beyond_two_percent():
    # rate steps 100/5/40 Mbit/s, BBR: the queue overflowed as the last flight arrived and the
    # segments before it lost none: 124 unreported into a dropping queue, estimated 0, 84 lost
    fallen = direction(lost_segments=3155) | {"unreported_at_end": 124, "unreported_at_risk": 124}
    # the same flight beside a count it cannot move by 2%, and a flight that went into no dropping queue
    large_count = direction(stream=1, lost_segments=7000) | {"unreported_at_end": 124, "unreported_at_risk": 124}
    calm = direction(stream=2, lost_segments=47) | {"unreported_at_end": 22, "unreported_at_risk": 0}
    warnings = integrity.direction_warnings([fallen, large_count, calm], {k: 10 for k in range(6)})
    assert [(w["code"], w["stream"]) for w in warnings] == [("unacknowledged_at_end", 0)]
    assert (warnings[0]["segments"], warnings[0]["at_risk"], warnings[0]["lost_estimated"]) == (124, 124, 0)
    assert (
        "124 segments sent and never acknowledged (into a queue that was dropping: 0 to 124 lost); 0 of them"
        in (warnings[0]["message"])
    )


def test_where_the_last_flight_is_warned_apart_the_rest_of_the_estimate_is_judged_by_its_own_spread():
    # s550's flight (48 estimated, +-7.37) with 1 more segment estimated before it: +-4.0 of 165
    # lost is over 2% of the count, +-1.85 is not
    flight = {"unreported_at_end": 195, "unreported_lost_estimated": 48.0, "unreported_lost_sd": 7.37}
    uncertain_rest = direction(lost_segments=165, lost_inferred=49, lost_inferred_sd=8.386) | flight
    certain_rest = direction(stream=1, lost_segments=165, lost_inferred=49, lost_inferred_sd=7.6) | flight
    warnings = integrity.direction_warnings([uncertain_rest, certain_rest], {k: 10 for k in range(4)})
    assert [(w["code"], w["stream"]) for w in warnings] == [
        ("unacknowledged_at_end", 0),
        ("loss_estimated", 0),
        ("unacknowledged_at_end", 1),
    ]
    assert "of which +1 estimated (+-4.0)" in warnings[1]["message"]


def test_the_rest_of_a_spread_takes_out_the_parts_variance_and_never_goes_below_zero():
    assert integrity.rest_of_spread(5.0, 3.0) == pytest.approx(4.0)
    assert integrity.rest_of_spread(2.1, 0.0) == pytest.approx(2.1)
    assert integrity.rest_of_spread(7.4, 7.401) == 0.0


def test_estimated_sender_loss_is_warned_when_its_spread_alone_is_a_segment_and_over_two_percent_of_the_count():
    # dl-ho1 w20 (jitter that reorders): 30 lost, +4 estimated +-2.1, where the router's truth
    # reads 61 for the two flows' 66
    small_count = direction(lost_segments=30, lost_inferred=1, lost_inferred_sd=2.1)
    large_count = direction(stream=1, lost_segments=1861, lost_inferred=0, lost_inferred_sd=6.9)
    under_a_segment = direction(stream=2, lost_segments=15, lost_inferred=0, lost_inferred_sd=0.6)
    warnings = integrity.direction_warnings([small_count, large_count, under_a_segment], {k: 10 for k in range(6)})
    assert [(w["code"], w["stream"]) for w in warnings] == [("loss_estimated", 0)]
    assert warnings[0]["lost_inferred_sd"] == 2.1


def test_a_sender_whose_retransmissions_are_a_fifth_or_more_spurious_is_warned_that_its_count_is_not_exact():
    # hx2-run1 r1g-gro-v6-p2-bbr-l1-b2m (1 Gbit/s, GRO, a lagging receiver): 559 of 1,447 in
    # one flow, no estimate; the router's truth read 1,268 lost for the sender's 1,570
    lagging = direction(vantage="sender", spurious_retransmissions=559, retransmissions_in_capture=1447)
    # m4-like random loss: a few spurious among many needed
    random_loss = direction(stream=1, vantage="sender", spurious_retransmissions=12, retransmissions_in_capture=900)
    # a small share by count: fewer than 20 segments
    few = direction(stream=2, vantage="sender", spurious_retransmissions=19, retransmissions_in_capture=40)
    # below the sender the holes count loss: no such warning
    below = direction(stream=3, vantage="receiver", spurious_retransmissions=300, retransmissions_in_capture=400)
    warnings = integrity.direction_warnings([lagging, random_loss, few, below], {k: 10 for k in range(8)})
    assert [(w["code"], w["stream"]) for w in warnings] == [("spurious_retransmissions", 0)]
    assert (warnings[0]["segments"], warnings[0]["retransmissions"]) == (559, 1447)


def test_a_capture_of_both_sides_of_a_router_is_warned_where_its_loss_after_it_rests_on_spurious_repeats():
    # reo-ro2 ro-unshaped-off-v4-p1-bbr-l0.5, tcpdump -i any on the router: its 2,689 drops read
    # exactly, and the 204 repeats of data that had left it counted lost after it, with 1,230 of
    # 4,092 repeats spurious; 2,893 read for 2,777, as the sender's 2,875 (warned there)
    both_sides = direction(
        vantage="in-path", spurious_retransmissions=1230, retransmissions=4092, downstream_retransmissions=204
    )
    # router-out: its holes count loss, repeats of what it saw pass count nothing
    one_side = direction(stream=1, vantage="in-path", spurious_retransmissions=1230, retransmissions=4092)
    warnings = integrity.direction_warnings([both_sides, one_side], {k: 10 for k in range(4)})
    assert [(w["code"], w["stream"]) for w in warnings] == [("spurious_retransmissions", 0)]
    assert (warnings[0]["segments"], warnings[0]["retransmissions"]) == (1230, 4092)


def test_paws_discards_are_warned_only_when_they_are_a_share_of_the_retransmissions():
    # a path whose jitter reorders: 83 of 135 retransmissions repeat discarded segments
    reordering = direction(paws_discards=83, retransmissions=135)
    # issue 8's 1 Gbit/s receiver capture, tcpdump dropping 91k packets: 9 among 10,145
    busy_capture = direction(stream=1, paws_discards=9, retransmissions=10_145)
    one = direction(stream=2, paws_discards=1, retransmissions=3)
    warnings = integrity.direction_warnings([reordering, busy_capture, one], {k: 10 for k in range(6)})
    assert [(w["code"], w["stream"], w["segments"]) for w in warnings] == [("paws_discards", 0, 83)]


def table(ts_ns, flags=None):
    n = len(ts_ns)
    return {
        "ts_ns": np.asarray(ts_ns, dtype=np.int64),
        "ts_valid": np.ones(n, dtype=bool),
        "decode_flags": np.asarray(flags if flags is not None else [0] * n, dtype=np.uint8),
    }


def test_time_stepping_back_more_than_a_millisecond_is_reported_with_its_size():
    packets = table([0, 10_000_000, 5_000_000, 20_000_000, 19_999_000])  # back 5 ms, then 1 us
    warnings = integrity.file_warnings(packets, None)
    assert [w["code"] for w in warnings] == ["time_backwards"]
    assert warnings[0]["steps"] == 1 and warnings[0]["largest_step_s"] == pytest.approx(0.005)


def test_frames_cut_before_their_headers_and_counter_drops_are_file_warnings():
    packets = table([0, 1, 2], flags=[0, DECODE_TRUNCATED, DECODE_TRUNCATED])
    drops = {"kernel": 111_812, "interface": 0, "source": "meta.json"}
    by_code = {w["code"]: w for w in integrity.file_warnings(packets, drops)}
    assert by_code["snaplen_short"]["frames"] == 2
    assert by_code["capture_drops"]["kernel_drops"] == 111_812


def test_unknown_drop_counters_are_not_a_warning():
    assert integrity.file_warnings(table([0, 1]), {"kernel": None, "interface": None, "source": "none"}) == []


def direction(**fields):
    base = {
        "stream": 0,
        "direction": 0,
        "src": "10.0.0.1",
        "sport": 40000,
        "dst": "10.0.0.2",
        "dport": 5201,
        "data_packets": 100,
        "data_segments": 100,
        "super_segment_frames": 0,
        "duplicate_frames": 0,
        "forwarded_drops": 0,
        "capture_gaps": 0,
        "capture_gap_bytes": 0,
        "handshake_seen": True,
    }
    base.update(fields)
    return base


def test_each_direction_fact_raises_its_code_for_that_direction_only():
    records = [
        direction(super_segment_frames=7, data_segments=130),
        direction(stream=1, duplicate_frames=90, forwarded_drops=3),
        direction(stream=2, capture_gaps=12, handshake_seen=False, ip_id_unusable=True),
    ]
    slot_packets = {0: 100, 1: 40, 2: 100, 3: 40, 4: 100}  # stream 2's ACK direction is missing
    warnings = integrity.direction_warnings(records, slot_packets)
    codes = integrity.codes_by_direction(warnings)
    assert codes[(0, 0)] == ["super_segments"]
    assert codes[(1, 0)] == ["duplicate_frames", "forwarding_drops"]
    assert codes[(2, 0)] == ["capture_gaps", "no_handshake", "ip_id_unusable", "one_direction_missing"]
    assert all(w["message"] for w in warnings)


def direction_record(**fields):
    """An IPv6 receiver's direction whose holes counted 30 lost segments (2 lost repairs)."""
    ipv6_receiver = dict(src="fd00::2", dst="fd00::1", vantage="receiver", loss_method="holes", ip_id_policy="none")
    counts = dict(lost_segments=30, hole_lost_segments=30, lost_repairs=2)
    return direction(**{**ipv6_receiver, **counts, **fields})


def floor_codes(record) -> list:
    warnings = integrity.hole_count_warnings([record], {0: 1000})
    return [w["code"] for w in warnings if w["code"] == "loss_floor"]


def test_loss_counted_by_retransmissions_or_ip_ids_is_no_floor():
    assert floor_codes(direction_record()) == ["loss_floor"]
    at_sender = direction_record(vantage="sender", loss_method="retransmissions")
    by_ids = direction_record(src="10.0.0.2", loss_method="ip_id_gaps", ip_id_policy="per_connection")
    assert floor_codes(at_sender) == [] and floor_codes(by_ids) == []


def test_no_floor_without_loss_or_where_a_forwarding_host_counted_its_own_drops():
    assert floor_codes(direction_record(lost_segments=0, hole_lost_segments=0, lost_repairs=0)) == []
    # `-i any` on the router that dropped: its drops (186) are exact and the holes (all 186, one
    # repair lost) add nothing before it
    forwarding = direction_record(vantage="in-path", lost_segments=186, hole_lost_segments=187, lost_repairs=1)
    assert floor_codes({**forwarding, "forwarded_drops": 186}) == []
    # holes beyond this host's drops: loss before it, counted from holes
    assert floor_codes({**forwarding, "forwarded_drops": 150}) == ["loss_floor"]


def test_ipv4_with_unusable_ids_names_the_cause_once_and_the_floor_once():
    record = direction_record(src="10.0.0.2", dst="10.0.0.1", ip_id_policy="random", ip_id_unusable=True)
    warnings = integrity.direction_warnings([record], {0: 1000, 1: 500}) + integrity.hole_count_warnings(
        [record], {0: 1000}
    )
    assert [w["code"] for w in warnings] == ["ip_id_unusable", "loss_floor"]
    unusable, floor = warnings
    assert "floor" not in unusable["message"] and "at least" not in unusable["message"]
    assert "at least 30 segments lost (its IPv4 IDs are random)" in floor["message"]
    contradicted = direction_record(src="10.0.0.2", ip_id_policy="per_connection", ip_id_contradicted=True)
    assert "floor" not in integrity.CODES["ip_id_contradicted"].meaning
    assert [w["code"] for w in integrity.direction_warnings([contradicted], {0: 1000, 1: 500})] == [
        "ip_id_contradicted"
    ]
    assert floor_codes(contradicted) == ["loss_floor"]


def test_holes_counted_where_the_capture_dropped_or_the_path_reorders_are_no_floor():
    """A repair the capture missed hides a loss; a late original it could not tell from a
    repair (same TSval tick on a sub-millisecond path) adds one. IPv6 at ~1 Gbit/s: a router-out
    capture that dropped nothing read +33.4% with 361 late originals recognised; receiver
    captures where tcpdump dropped 2-23%, -7.4% to +25.5%. Not "at least": `loss_not_floor`."""
    record = direction_record()
    dropped = integrity.hole_count_warnings([record], {0: 1000}, capture_dropped_packets=316_284)
    assert [w["code"] for w in dropped] == ["loss_not_floor"]
    (warning,) = dropped
    assert warning["lost_segments"] == 30 and warning["capture_dropped_packets"] == 316_284
    assert "316,284" in warning["message"] and "at least" not in warning["message"]
    assert "not a floor" in warning["message"] and "reorders" not in warning["message"]
    reordering = direction_record(reordered_segments=361)
    (warning,) = integrity.hole_count_warnings([reordering], {0: 1000}, capture_dropped_packets=0)
    assert warning["code"] == "loss_not_floor" and warning["reordered_segments"] == 361
    assert "361 late originals" in warning["message"] and "dropped" not in warning["message"]
    # a capture that dropped nothing on a path that kept order keeps the floor, and so does one
    # where a busy host let a few first copies fall behind their repairs
    chance = direction_record(reordered_segments=integrity.REORDERING_PATH_MIN_SEGMENTS - 1)
    assert [w["code"] for w in integrity.hole_count_warnings([chance], {0: 1000}, capture_dropped_packets=0)] == [
        "loss_floor"
    ]
    assert [w["code"] for w in integrity.hole_count_warnings([record], {0: 1000}, capture_dropped_packets=0)] == [
        "loss_floor"
    ]
    # loss not from holes has neither
    by_ids = direction_record(src="10.0.0.2", loss_method="ip_id_gaps", ip_id_policy="per_connection")
    assert integrity.hole_count_warnings([by_ids], {0: 1000}, capture_dropped_packets=316_284) == []
    # without timestamps no_timestamps already says the count is no floor: one warning, not two
    unstamped = integrity.hole_count_warnings([reordering], {}, capture_dropped_packets=316_284)
    assert [w["code"] for w in unstamped] == ["no_timestamps"]


def test_decoder_messages_become_coded_warnings():
    coded = integrity.decode_warnings(
        [
            "file cut mid-record at byte offset 10 (3 trailing bytes ignored)",
            "gzip stream ends early at compressed byte offset 7 (file cut)",
        ]
    )
    assert [w["code"] for w in coded] == ["file_truncated", "gzip_truncated"]


def test_no_timestamps_is_raised_below_the_sender_only_where_holes_count_the_loss():
    """A repair lost again leaves no hole, and a late original looks like a repair: without TSvals
    and TSecrs little tells (the committed matrix's IPv6 captures with timestamps taken out read
    -3.5% to +9%). IPv4 IDs and the sender's retransmissions count loss without them, and a
    direction with no hole has nothing to miss."""
    below = dict(vantage="receiver", loss_method="holes", hole_lost_segments=40, lost_segments=42)
    records = [
        direction(**below),
        direction(stream=1, **below),  # its data carries timestamps
        direction(stream=2, **{**below, "loss_method": "ip_id_gaps"}),
        direction(stream=3, **{**below, "vantage": "sender", "loss_method": "retransmissions"}),
        direction(stream=4, **{**below, "vantage": "in-path", "forwarded_drops": 40}),
        direction(stream=5, **{**below, "vantage": "in-path", "hole_lost_segments": 0}),
    ]
    stamped = {2: 500}
    warnings = integrity.hole_count_warnings(records, stamped)
    # with timestamps the holes' count is a floor; without them it is not (no loss_floor there)
    assert [(w["stream"], w["code"]) for w in warnings] == [
        (0, "no_timestamps"),
        (1, "loss_floor"),
        (4, "no_timestamps"),
    ]
    assert warnings[0]["lost_segments"] == 42 and "42" in warnings[0]["message"]


def test_no_timestamps_names_the_snaplen_where_it_cut_the_data_frames_options():
    """The same hole count without timestamps: the sender's stack sent none, or the capture kept
    none (its data frames end before their options); the cause decides the fix."""
    record = direction(vantage="receiver", loss_method="holes", hole_lost_segments=40, lost_segments=42)
    on_the_wire = integrity.hole_count_warnings([record], {}, {})
    cut = integrity.hole_count_warnings([record], {}, {0: 2_000})
    assert [w["code"] for w in on_the_wire] == [w["code"] for w in cut] == ["no_timestamps"]
    assert "no TCP timestamps" in on_the_wire[0]["message"] and "cut_data_frames" not in on_the_wire[0]
    assert cut[0]["cut_data_frames"] == 2_000 and "snaplen cut the options of 2,000 data frames" in cut[0]["message"]


def test_a_tail_lost_at_close_without_sack_is_warned_as_an_estimate_even_where_nothing_else_is_estimated():
    tail = direction(lost_segments=298, lost_inferred=1, lost_inferred_sd=1.2)
    tail |= {"tail_copies_at_close": 484, "tail_lost_at_close": 168}
    small = direction(stream=1, lost_segments=417, lost_inferred=0, lost_inferred_sd=0.0)
    small |= {"tail_copies_at_close": 7, "tail_lost_at_close": 1}
    warnings = integrity.direction_warnings([tail, small], {k: 10 for k in range(6)})
    assert [(w["code"], w["stream"]) for w in warnings] == [("loss_estimated", 0)]
    assert warnings[0]["tail_copies_at_close"] == 484 and warnings[0]["tail_lost_at_close"] == 168
    assert "about 168" in warnings[0]["message"] and "estimated (+-" not in warnings[0]["message"]
