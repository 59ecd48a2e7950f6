"""The experiment matrix: parse rate/delay/loss/CCA specs and expand them into runs.

Specs follow tc's spelling: rates `10mbit`, `500kbit`, `1gbit` (bit/s; a bare
number is bit/s); times `50ms`, `1s`, `200us` (a bare number is ms); loss
`2%` or a bare number of percent (netem's convention: `2` is 2%). A CCA entry
may mix algorithms with `+` (`cubic+bbr`): its flows take them in turn, which
is how fairness runs are declared. A CCA in such an entry may join late: `bbr+cubic@10s`
starts the bbr flows at once and the cubic flows 10 s later (whole seconds, a bare number is
seconds), so the first CCA is the incumbent; every flow ends when the run does.
"""

from __future__ import annotations

import itertools
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .errors import TestbedError

RATE_UNITS_BPS = {
    "bit": 1,
    "kbit": 10**3,
    "mbit": 10**6,
    "gbit": 10**9,
    "tbit": 10**12,
    "bps": 8,
    "kbps": 8 * 10**3,
    "mbps": 8 * 10**6,
    "gbps": 8 * 10**9,
}
TIME_UNITS_MS = {"us": 1e-3, "usec": 1e-3, "ms": 1.0, "msec": 1.0, "s": 1000.0, "sec": 1000.0}


@dataclass(frozen=True)
class Quantity:
    """A value as the user wrote it and in base units."""

    text: str
    value: float


@dataclass(frozen=True)
class RunSpec:
    """One run of the matrix: the link, the flows and their CCAs."""

    index: int
    cca: str  # as given, e.g. "cubic" or "cubic+bbr"
    flow_ccas: Tuple[str, ...]  # one per flow
    rate: Quantity  # bit/s
    delay: Quantity  # ms (one way, added at the router)
    jitter: Quantity  # ms
    loss: Quantity  # probability 0..1 per data packet of each flow
    reorder: Quantity  # probability 0..1 (netem only)
    duration_s: float
    flow_start_s: Tuple[float, ...] = ()  # one per flow: seconds after the run's first flow; () = all at 0

    def start_s(self, flow: int) -> float:
        """When flow `flow` starts, in seconds after the run's first flow."""
        return self.flow_start_s[flow] if self.flow_start_s else 0.0

    def transfer_s(self, flow: int) -> float:
        """How long flow `flow` sends: until the run's end, whenever it started."""
        return self.duration_s - self.start_s(flow)

    @property
    def flows(self) -> int:
        return len(self.flow_ccas)

    @property
    def run_id(self) -> str:
        """A directory-safe name saying what the run is."""
        loss_text = self.loss.text.replace("%", "pct")
        name = (
            f"{self.index:03d}-{self.cca}-{self.rate.text}-d{self.delay.text}-"
            f"j{self.jitter.text}-l{loss_text}-f{self.flows}"
        )
        return re.sub(r"[^A-Za-z0-9_.+-]", "_", name)


@dataclass
class MatrixSpec:
    """Lists of values; every combination is one run."""

    cca: List[str] = field(default_factory=lambda: ["cubic"])
    rate: List[str] = field(default_factory=lambda: ["10mbit"])
    delay: List[str] = field(default_factory=lambda: ["0ms"])
    jitter: List[str] = field(default_factory=lambda: ["0ms"])
    loss: List[str] = field(default_factory=lambda: ["0%"])
    reorder: List[str] = field(default_factory=lambda: ["0%"])
    flows: List[int] = field(default_factory=lambda: [1])
    duration_s: float = 10.0


def parse_rate_bps(text: str) -> Quantity:
    match = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]*)\s*", text)
    unit = match.group(2).lower() if match else ""
    if not match or unit not in RATE_UNITS_BPS and unit != "":
        raise TestbedError(f"rate {text!r}: expected a number with unit {', '.join(RATE_UNITS_BPS)} (e.g. 10mbit)")
    value_bps = float(match.group(1)) * RATE_UNITS_BPS.get(unit, 1)
    if value_bps < 8000:
        raise TestbedError(f"rate {text!r} is below 8 kbit/s; tbf cannot shape that usefully")
    return Quantity(text.strip(), value_bps)


def parse_time_ms(text: str) -> Quantity:
    match = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]*)\s*", text)
    unit = match.group(2).lower() if match else ""
    if not match or unit not in TIME_UNITS_MS and unit != "":
        raise TestbedError(f"time {text!r}: expected a number with unit us, ms or s (e.g. 50ms)")
    return Quantity(text.strip(), float(match.group(1)) * TIME_UNITS_MS.get(unit, 1.0))


def parse_probability(text: str, what: str = "loss") -> Quantity:
    match = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*(%?)\s*", text)
    if not match:
        raise TestbedError(f"{what} {text!r}: expected a percentage such as 2% (a bare number is percent)")
    probability = float(match.group(1)) / 100.0
    if probability > 1.0:
        raise TestbedError(f"{what} {text!r} is above 100%")
    return Quantity(text.strip(), probability)


def parse_cca_name(part: str) -> Tuple[str, float]:
    """`cubic` -> ("cubic", 0.0); `cubic@10s` -> ("cubic", 10.0): the name and its start, in seconds."""
    name, at, start_text = part.partition("@")
    name = name.strip()
    if not name:
        raise TestbedError(f"congestion control entry {part!r} has no name before '@'")
    if not at:
        return name, 0.0
    start_text = start_text.strip()
    try:
        start_s = (
            float(start_text)
            if re.fullmatch(r"[0-9]+(?:\.[0-9]+)?", start_text)
            else parse_time_ms(start_text).value / 1000.0
        )
    except TestbedError:
        raise TestbedError(f"{part!r}: the start after '@' must be a time such as 10s") from None
    if not start_s.is_integer():
        raise TestbedError(f"{part!r}: flows start at whole seconds (iperf3 runs whole seconds)")
    return name, start_s


def parse_cca_entry(entry: str, flows: int) -> Tuple[str, ...]:
    """The CCA of each of `flows` flows: `cubic` -> all cubic; `cubic+bbr` -> alternating."""
    return tuple(name for name, _ in parse_cca_flows(entry, flows))


def parse_cca_flows(entry: str, flows: int) -> Tuple[Tuple[str, float], ...]:
    """(CCA, start in seconds) of each of `flows` flows: `cubic+bbr@10s` -> cubic at 0, bbr at 10, ..."""
    parts = [part.strip() for part in entry.split("+") if part.strip()]
    if not parts:
        raise TestbedError(f"empty congestion control entry {entry!r}")
    named = [parse_cca_name(part) for part in parts]
    return tuple(named[i % len(named)] for i in range(flows))


def split_list(value: Any) -> List[str]:
    """`"a,b"` or `["a", "b"]` or a scalar -> list of strings."""
    if isinstance(value, (list, tuple)):
        return [str(v).strip() for v in value if str(v).strip()]
    return [part.strip() for part in str(value).split(",") if part.strip()]


def read_toml(path: Path, what: str) -> Dict[str, Any]:
    """A TOML file as a mapping; TestbedError naming `what` it is when it cannot be read."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python < 3.11
        try:
            import tomli as tomllib  # type: ignore[no-redef]
        except ImportError as exc:
            raise TestbedError("reading TOML needs Python >= 3.11 or the 'tomli' package") from exc
    try:
        document = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise TestbedError(f"cannot read {what} {path}: {exc}") from exc
    return document


def load_toml(path: Path) -> Dict[str, Any]:
    """The `[matrix]` table (or the top level) of a TOML experiment file."""
    document = read_toml(path, "experiment file")
    return document.get("matrix", document)


def matrix_from_mapping(values: Dict[str, Any], base: Optional[MatrixSpec] = None) -> MatrixSpec:
    """Override `base` with the keys present in `values` (TOML table or CLI flags)."""
    spec = base or MatrixSpec()
    known = {"cca", "rate", "delay", "jitter", "loss", "reorder", "flows", "duration", "duration_s"}
    unknown = set(values) - known
    if unknown:
        raise TestbedError(f"unknown matrix key(s): {', '.join(sorted(unknown))}; known: {', '.join(sorted(known))}")
    for key in ("cca", "rate", "delay", "jitter", "loss", "reorder"):
        if values.get(key) is not None:
            setattr(spec, key, split_list(values[key]))
    if values.get("flows") is not None:
        try:
            spec.flows = [int(v) for v in split_list(values["flows"])]
        except ValueError as exc:
            raise TestbedError(f"flows {values['flows']!r}: expected whole numbers such as 1,10") from exc
        if any(n < 1 or n > 64 for n in spec.flows):
            raise TestbedError("flows must be between 1 and 64")
    duration = values.get("duration_s", values.get("duration"))
    if duration is not None:
        spec.duration_s = parse_duration_s(duration)
    return spec


# iperf3 (3.12) reads -t as whole seconds: -t 0.5 is 0, which it takes as "no limit".
MAX_DURATION_S = 604800


def parse_duration_s(value: Any) -> float:
    """A transfer duration: a bare number is seconds (iperf3's -t), or with a unit (`5s`,
    `2m`, `3000ms`); whole seconds from 1 to MAX_DURATION_S, as iperf3 runs them."""
    text = str(value).strip()
    try:
        if re.fullmatch(r"[0-9]+(?:\.[0-9]+)?", text):
            seconds = float(text)
        elif minutes := re.fullmatch(r"([0-9]+(?:\.[0-9]+)?)\s*m(in)?", text):
            seconds = float(minutes.group(1)) * 60
        else:
            seconds = parse_time_ms(text).value / 1000.0
    except (TestbedError, ValueError):
        raise TestbedError(f"duration: not a duration: {text!r} (examples: 10, 5s, 2m)") from None
    if not seconds.is_integer() or not 1 <= seconds <= MAX_DURATION_S:
        raise TestbedError(f"duration: iperf3 runs whole seconds, from 1 to {MAX_DURATION_S}: got {text!r}")
    return seconds


def expand(spec: MatrixSpec) -> List[RunSpec]:
    """Every combination of the matrix's lists, in a stable order (CCA outermost)."""
    if spec.duration_s <= 0:
        raise TestbedError("duration must be positive")
    rates = [parse_rate_bps(r) for r in spec.rate]
    delays = [parse_time_ms(d) for d in spec.delay]
    jitters = [parse_time_ms(j) for j in spec.jitter]
    losses = [parse_probability(p, "loss") for p in spec.loss]
    reorders = [parse_probability(p, "reorder") for p in spec.reorder]
    runs = []
    combos = itertools.product(spec.cca, rates, delays, jitters, losses, reorders, spec.flows)
    for index, (cca, rate, delay, jitter, loss, reorder, flows) in enumerate(combos):
        named = parse_cca_flows(cca, flows)
        starts_s = tuple(start_s for _, start_s in named)
        late_s = max(starts_s)
        if late_s >= spec.duration_s:
            raise TestbedError(
                f"{cca!r}: a flow starting at {late_s:g} s would not run within the {spec.duration_s:g} s duration"
            )
        if min(starts_s) > 0:
            raise TestbedError(
                f"{cca!r}: every flow starts late; the first CCA of an entry is the incumbent, give it no '@'"
            )
        runs.append(
            RunSpec(
                index=index,
                cca=cca,
                flow_ccas=tuple(name for name, _ in named),
                rate=rate,
                delay=delay,
                jitter=jitter,
                loss=loss,
                reorder=reorder,
                duration_s=spec.duration_s,
                flow_start_s=starts_s if late_s > 0 else (),
            )
        )
    return runs


def ccas_needed(runs: Sequence[RunSpec]) -> List[str]:
    return sorted({cca for run in runs for cca in run.flow_ccas})
