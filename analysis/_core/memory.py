"""How much memory this process may still take, so that a capture too large for it is refused in
one line before its columns are allocated, instead of the kernel's OOM killer ending the run
with SIGKILL and no message (a 2.5 MB gzip of 100 M empty records needs ~24 GB).

The headroom is the least of: the system's MemAvailable, the memory cgroup's limit minus its
usage (v2 `memory.max`, v1 `memory.limit_in_bytes`), and the address-space and data rlimits
minus what the process already maps. Each source that cannot be read is left out; with none,
the headroom is unknown (None) and nothing is refused.
"""

from __future__ import annotations

import re
import resource
from pathlib import Path
from typing import Iterable, Optional

# Bytes per frame a whole analysis peaks at (decode's columns: 134; stream assignment: 24;
# the tshark-compatible pass: 32; the truth-seeking pass, transiently: ~60), measured on 16.7 M
# frames (tests/test_hostile_inputs_analyze.py keeps it above what a run takes).
ANALYSIS_BYTES_PER_FRAME = 280
CGROUP_ROOT = Path("/sys/fs/cgroup")
# A cgroup limit this large means "no limit" (v1 prints LONG_MAX rounded down to a page).
NO_LIMIT_BYTES = 1 << 60


def meminfo_available_bytes(meminfo_text: str) -> Optional[int]:
    """MemAvailable of /proc/meminfo text, in bytes."""
    match = re.search(r"^MemAvailable:\s+(\d+) kB", meminfo_text, re.MULTILINE)
    return int(match.group(1)) * 1024 if match else None


def status_kib(status_text: str, field: str) -> Optional[int]:
    """A `Vm...` field of /proc/self/status text, in KiB."""
    match = re.search(rf"^{field}:\s+(\d+) kB", status_text, re.MULTILINE)
    return int(match.group(1)) if match else None


def least_headroom(candidates: Iterable[Optional[int]]) -> Optional[int]:
    """The smallest known headroom (never below 0), or None when none is known."""
    known = [max(0, c) for c in candidates if c is not None]
    return min(known) if known else None


def _read(path: Path) -> Optional[str]:
    try:
        return path.read_text()
    except OSError:
        return None


def _cgroup_headroom_bytes() -> Optional[int]:
    text = _read(Path("/proc/self/cgroup")) or ""
    for line in text.splitlines():
        _, controllers, group = line.split(":", 2)
        if controllers == "":  # v2
            limit = _read(CGROUP_ROOT / group.lstrip("/") / "memory.max")
            usage = _read(CGROUP_ROOT / group.lstrip("/") / "memory.current")
        elif "memory" in controllers.split(","):  # v1
            limit = _read(CGROUP_ROOT / "memory" / group.lstrip("/") / "memory.limit_in_bytes")
            usage = _read(CGROUP_ROOT / "memory" / group.lstrip("/") / "memory.usage_in_bytes")
        else:
            continue
        if limit and usage and limit.strip().isdigit() and usage.strip().isdigit() and int(limit) < NO_LIMIT_BYTES:
            return int(limit) - int(usage)
    return None


def _rlimit_headroom_bytes(status_text: str) -> Iterable[Optional[int]]:
    for limit, field in ((resource.RLIMIT_AS, "VmSize"), (resource.RLIMIT_DATA, "VmData")):
        soft, _ = resource.getrlimit(limit)
        used_kib = status_kib(status_text, field)
        if soft != resource.RLIM_INFINITY and used_kib is not None:
            yield soft - used_kib * 1024


def headroom_bytes() -> Optional[int]:
    """Bytes this process may still allocate, as far as the system says; None when unknown."""
    status = _read(Path("/proc/self/status")) or ""
    return least_headroom(
        [
            meminfo_available_bytes(_read(Path("/proc/meminfo")) or ""),
            _cgroup_headroom_bytes(),
            *_rlimit_headroom_bytes(status),
        ]
    )


def human_bytes(n_bytes: int) -> str:
    """1.2 GB, 350 MB, 12 kB (decimal units, as the README's figures)."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n_bytes >= scale:
            return f"{n_bytes / scale:.1f} {unit}"
    return f"{n_bytes} bytes"
