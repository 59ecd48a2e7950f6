"""The kernel's own view of each run's sender: the tcp:tcp_probe tracepoint, per ACK.

A private tracefs instance (the global buffer and other users' events stay untouched)
records tcp_probe for the testbed's client ports only, with the `tai` clock (CLOCK_TAI:
wall-clock seconds since the epoch, as tcpdump stamps packets, plus the TAI offset, 0
unless something set it), so a trace lines up with the run's captures. Each run clears
the buffer first and writes `probe.csv` beside the sender's capture afterwards, in the
columns `capture/record.sh --probe` writes.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from typing import Dict, Iterable, List, Optional

TRACEFS_MOUNTS = (Path("/sys/kernel/tracing"), Path("/sys/kernel/debug/tracing"))
INSTANCE_PREFIX = "spline-testbed-"
BUFFER_KIB_PER_CPU = 16384  # ~10 s of per-ACK events at 100 Mbit/s (about 100 bytes each)
PROBE_COLUMNS = [
    "time_s",
    "src",
    "dst",
    "data_len_bytes",
    "snd_nxt",
    "snd_una",
    "snd_cwnd_segments",
    "ssthresh_segments",
    "snd_wnd_bytes",
    "srtt_us",
    "rcv_wnd_bytes",
    "sock_cookie",
]
FIELD_OF_COLUMN = {
    "src": "src",
    "dst": "dest",
    "data_len_bytes": "data_len",
    "snd_nxt": "snd_nxt",
    "snd_una": "snd_una",
    "snd_cwnd_segments": "snd_cwnd",
    "ssthresh_segments": "ssthresh",
    "snd_wnd_bytes": "snd_wnd",
    "srtt_us": "srtt",
    "rcv_wnd_bytes": "rcv_wnd",
    "sock_cookie": "sock_cookie",
}
EVENT_LINE = re.compile(r"\s(\d+\.\d+): tcp_probe: (.*)$")
MAPPED_IPV4 = re.compile(r"^\[::ffff:([0-9.]+)\]:(\d+)$")


def tracefs_root() -> Optional[Path]:
    """Where tracefs is mounted, mounting it on /sys/kernel/tracing when it is not; None if unavailable."""
    for root in TRACEFS_MOUNTS:
        if (root / "events").is_dir():
            return root
    root = TRACEFS_MOUNTS[0]
    if root.is_dir():
        subprocess.run(["mount", "-t", "tracefs", "nodev", str(root)], capture_output=True, check=False)
        if (root / "events").is_dir():
            return root
    return None


def unmapped(endpoint: str) -> str:
    """`[::ffff:10.0.0.1]:5201` -> `10.0.0.1:5201` (a dual-stack socket's IPv4 peer)."""
    match = MAPPED_IPV4.match(endpoint)
    return f"{match.group(1)}:{match.group(2)}" if match else endpoint


def parse_trace_lines(lines: Iterable[str]) -> List[Dict[str, str]]:
    """One row (PROBE_COLUMNS) per tcp_probe line of a tracefs `trace` text."""
    rows = []
    for line in lines:
        match = EVENT_LINE.search(line)
        if not match:
            continue
        fields = dict(word.split("=", 1) for word in match.group(2).split() if "=" in word)
        row = {"time_s": match.group(1)}
        for column, name in FIELD_OF_COLUMN.items():
            row[column] = fields.get(name, "")
        row["src"], row["dst"] = unmapped(row["src"]), unmapped(row["dst"])
        rows.append(row)
    return rows


def write_probe_csv(rows: List[Dict[str, str]], path: Path) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(",".join(PROBE_COLUMNS) + "\n")
        for row in rows:
            handle.write(",".join(row[column] for column in PROBE_COLUMNS) + "\n")


def remove_orphaned_instances(root: Path) -> List[str]:
    """Remove the trace instances of spline-testbed processes that are gone (SIGKILLed runs
    cannot remove theirs, and an instance left enabled keeps tracing); their names."""
    removed = []
    for instance in sorted((root / "instances").glob(f"{INSTANCE_PREFIX}*")):
        pid = instance.name[len(INSTANCE_PREFIX) :]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            ProbeTrace._remove(instance)
            if not instance.exists():
                removed.append(instance.name)
    return removed


class ProbeTrace:
    """tcp_probe for source ports `first_port`..`last_port` in a private trace instance."""

    def __init__(self, first_port: int, last_port: int) -> None:
        self.instance: Optional[Path] = None
        self.orphans_removed: List[str] = []
        root = tracefs_root()
        if root is None or not (root / "events" / "tcp" / "tcp_probe").is_dir():
            return
        self.orphans_removed = remove_orphaned_instances(root)
        instance = root / "instances" / f"{INSTANCE_PREFIX}{os.getpid()}"
        try:
            instance.mkdir()
            (instance / "buffer_size_kb").write_text(f"{BUFFER_KIB_PER_CPU}\n")
            (instance / "trace_clock").write_text("tai\n")
            event = instance / "events" / "tcp" / "tcp_probe"
            (event / "filter").write_text(f"sport >= {first_port} && sport <= {last_port}\n")
            (event / "enable").write_text("1\n")
        except OSError:
            self._remove(instance)
            return
        self.instance = instance

    @property
    def available(self) -> bool:
        return self.instance is not None

    def clear(self) -> None:
        if self.instance is not None:
            (self.instance / "trace").write_text("\n")

    def save(self, path: Path) -> Optional[int]:
        """Write what the buffer holds since `clear()` as probe.csv; the number of events, or None."""
        if self.instance is None:
            return None
        with open(self.instance / "trace", encoding="utf-8", errors="replace") as handle:
            rows = parse_trace_lines(handle)
        write_probe_csv(rows, path)
        return len(rows)

    def overruns(self) -> int:
        """Events lost because the buffer was full (0 when it held them all)."""
        if self.instance is None:
            return 0
        total = 0
        for stats in (self.instance / "per_cpu").glob("cpu*/stats"):
            for line in stats.read_text().splitlines():
                if line.startswith("overrun:"):
                    total += int(line.split()[1])
        return total

    @staticmethod
    def _remove(instance: Path) -> None:
        try:
            (instance / "events" / "tcp" / "tcp_probe" / "enable").write_text("0\n")
        except OSError:
            pass
        try:
            instance.rmdir()
        except OSError:
            pass

    def close(self) -> None:
        if self.instance is not None:
            self._remove(self.instance)
            self.instance = None

    def __enter__(self) -> "ProbeTrace":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()
