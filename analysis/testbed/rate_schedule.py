"""A bottleneck whose rate changes during the transfer (`rate_steps`, `rate_step_ms`).

Wi-Fi rate adaptation and contention, and a cellular scheduler, move a link's rate up and
down every few hundred milliseconds. The router's tbf takes each step in place (`tc qdisc
change`): the packets it holds stay queued, and its counters (sent, dropped, overlimits)
run on across the change (checked on this host's 6.18 kernel: 3,893 drops before a change
and 6,024 after more traffic, the 10 queued packets kept), so `tc -s qdisc` read once at the
end is the transfer's. The change refills the bucket (one bucket's bytes pass at once).

What stays constant is the queue's size in bytes (`limit`, queue_ms at the schedule's highest
rate), as in a driver's or a modem's buffer, which holds packets, not time: when the rate
falls the queue drains more slowly, its delay grows and the round trip swings with it, and
the bytes in flight a faster step built overflow it in a burst. The bucket (`burst`) stays
the highest step's too (~1 ms of it, at least two frames: netns.tbf_burst_bytes): tbf passes
a GSO packet whole when it fits the bucket, and one queued at a fast step must fit it at every
step; a bucket sized to a slower rate never gathers the tokens for it, and the queue behind it
waits for the next fast step (seen with TSO at the sender: 0.9 s with nothing leaving at 5-60
Mbit/s after a 100 Mbit/s step, the sender's timer backing off). At a slow step that bucket
lets a few frames pass back to back, as a Wi-Fi link's aggregate does.

A thread applies the steps on the schedule's own clock (step k at k x rate_step_ms after the
start, whatever the `tc` before it took: a late step is applied late, never shifted), and
records each as applied: the wall-clock time after its `tc` returned (the captures' clock)
and the rate. When the transfer's client is done the schedule stops and the tbf goes back to
the highest rate (recorded as a step `after_transfer`): what its queue still holds drains
within queue_ms, as behind a fixed rate, before the hosts' counters are read. Left at a slow
step, the queue could still hold data then, and the truth (sent less arrived) would count
it lost.
"""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from typing import Any, Dict, Iterator, List, Optional, Tuple

from . import netns
from .realhost_spec import Transfer

ROOT_HANDLE = "1:"
CHILD_HANDLE = "2:"  # the tbf under netem, where the data path has delay or jitter


@dataclass(frozen=True)
class AppliedStep:
    """One step of the schedule as applied: when (s after the schedule's start, and the
    wall clock after `tc` returned), its rate, and how long the `tc` took."""

    index: int  # the step's number from the start (its rate is rate_steps_bps[index % len])
    due_s: float  # when the schedule wanted it, s after the start
    applied_s: float  # when its `tc` returned, s after the start
    applied_epoch_s: float  # ... on the wall clock (the captures' timestamps)
    rate_bps: int
    tc_s: float  # the `tc qdisc change` itself
    after_transfer: bool = False  # the highest rate, set once the client was done (the queue drains)


def tbf_arguments(transfer: Transfer, rate_bps: int) -> List[str]:
    """The tbf's options at `rate_bps`: its bucket and its limit those of the transfer's highest
    rate (`rate_bps` of a schedule: ~1 ms of it, and its queue_ms), the same bytes at every step."""
    return [
        "tbf",
        "rate",
        f"{rate_bps}bit",
        "burst",
        str(netns.tbf_burst_bytes(transfer.rate_bps, transfer.path_mtu)),
        "limit",
        str(netns.tbf_limit_bytes(transfer.rate_bps, transfer.queue_ms, transfer.path_mtu)),
    ]


def tbf_placement(transfer: Transfer) -> List[str]:
    """Where the tbf sits on the router's egress to the receiver: the root, or netem's child."""
    if transfer.delay_ms > 0 or transfer.jitter_ms > 0:
        return ["parent", ROOT_HANDLE, "handle", CHILD_HANDLE]
    return ["root", "handle", ROOT_HANDLE]


def tbf_change_command(transfer: Transfer, device: str, rate_bps: int) -> List[str]:
    """`tc` argv that sets the tbf on `device` to `rate_bps` in place (its queue and counters kept)."""
    return ["tc", "qdisc", "change", "dev", device, *tbf_placement(transfer), *tbf_arguments(transfer, rate_bps)]


def step_due(elapsed_s: float, step_ms: float) -> int:
    """The number of the step the schedule is in `elapsed_s` after its start."""
    return int(elapsed_s * 1000.0 // step_ms)


def step_rate_bps(rates_bps: Tuple[int, ...], index: int) -> int:
    """The rate of step `index`: the schedule's rates in turn, cycled."""
    return int(rates_bps[index % len(rates_bps)])


class RateSchedule:
    """The thread that steps the tbf's rate through `transfer.rate_steps_bps` until stopped."""

    def __init__(self, transfer: Transfer, namespace_name: str, device: str) -> None:
        self.transfer = transfer
        self.namespace_name = namespace_name
        self.device = device
        self.applied: List[AppliedStep] = []
        self.error: Optional[BaseException] = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rate-schedule", daemon=True)
        self._start_s = 0.0
        self._start_epoch_s = 0.0

    def start(self) -> None:
        """Begin step 0 now (the tbf was built at its rate) and the later ones on time."""
        self._start_s = time.monotonic()
        self._start_epoch_s = time.time()
        self.applied.append(AppliedStep(0, 0.0, 0.0, self._start_epoch_s, self.transfer.initial_rate_bps, 0.0))
        self._thread.start()

    def stop(self) -> List[AppliedStep]:
        """Stop stepping, set the highest rate (the queue drains) and return the steps applied;
        raises the error a `tc` met, if any."""
        self._halt()
        if self.error is not None:
            raise self.error
        index = self.applied[-1].index + 1
        self._apply(index, time.monotonic() - self._start_s, self.transfer.rate_bps, after_transfer=True)
        return list(self.applied)

    def _halt(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def _run(self) -> None:
        step_ms = self.transfer.rate_step_ms
        index = 0
        try:
            while True:
                index += 1
                due_s = index * step_ms / 1000.0
                if self._stop.wait(max(0.0, self._start_s + due_s - time.monotonic())):
                    return
                # a step whose time passed while the last `tc` ran is skipped: the rate due now
                index = max(index, step_due(time.monotonic() - self._start_s, step_ms))
                self._apply(index, index * step_ms / 1000.0, step_rate_bps(self.transfer.rate_steps_bps, index))
        except BaseException as exc:  # raised again by stop(), in the caller's thread
            self.error = exc

    def _apply(self, index: int, due_s: float, rate_bps: int, after_transfer: bool = False) -> None:
        before_s = time.monotonic()
        netns.run_command(tbf_change_command(self.transfer, self.device, rate_bps), namespace=self.namespace_name)
        after_s = time.monotonic()
        self.applied.append(
            AppliedStep(
                index=index,
                due_s=due_s,
                applied_s=after_s - self._start_s,
                applied_epoch_s=self._start_epoch_s + (after_s - self._start_s),
                rate_bps=rate_bps,
                tc_s=after_s - before_s,
                after_transfer=after_transfer,
            )
        )


@contextmanager
def rate_schedule_running(transfer: Transfer, namespace_name: str, device: str) -> Iterator[Optional[RateSchedule]]:
    """The transfer's rate schedule, running from entry (None where it has none); stopped on exit
    if the caller has not stopped it."""
    if not transfer.rate_steps_bps:
        yield None
        return
    schedule = RateSchedule(transfer, namespace_name, device)
    schedule.start()
    try:
        yield schedule
    finally:
        schedule._halt()


def schedule_record(steps: List[AppliedStep]) -> List[Dict[str, Any]]:
    """The applied steps as truth.json keeps them."""
    return [asdict(step) for step in steps]
