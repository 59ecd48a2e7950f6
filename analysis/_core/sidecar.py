"""The files beside a capture, read once next to decode, and the drop counts they give.

`read_sidecars(path)` reads meta.json, iperf3 results and probe.csv beside a capture
(nothing beside standard input); `pipeline.analyze` calls it once and hands `meta` to
decode and the rest to the later stages.

`capture/record.sh` writes `meta.json` beside the capture with
`capture.kernel_drops` / `capture.interface_drops` (tcpdump's "dropped by
kernel" / "dropped by interface" lines). pcapng files may carry the same
counters in Interface Statistics Blocks: dumpcap stores libpcap's ps_drop
(kernel buffer drops) as `isb_ifdrop` and ps_ifdrop as `isb_osdrop`.
The sidecar wins when present. Unknown is None, never 0.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple

if TYPE_CHECKING:
    from .iperf3 import Iperf3Test
    from .kernel_probe import KernelProbe

SIDECAR_NAME = "meta.json"
STDIN_PATH = "-"


def isb_drops(interfaces: List[Dict[str, Any]]) -> Tuple[Optional[int], Optional[int]]:
    """Sum over interfaces of the last ISB's isb_ifdrop and isb_osdrop (None when no ISB has it)."""
    ifdrops = [i["isb_ifdrop"] for i in interfaces if i.get("has_ifdrop")]
    osdrops = [i["isb_osdrop"] for i in interfaces if i.get("has_osdrop")]
    return (sum(ifdrops) if ifdrops else None, sum(osdrops) if osdrops else None)


def _count_or_none(value: Any) -> Optional[int]:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int) and value >= 0:
        return value
    if isinstance(value, float) and value.is_integer() and value >= 0:
        return int(value)
    return None


@dataclass(frozen=True)
class Meta:
    """`meta.json` as read: its whole content (None: absent or unreadable), the drop
    counters decode takes from it (None: it has none), whether it says the capture did
    not finish, and why it could not be read."""

    content: Optional[Dict[str, Any]] = None
    drops: Optional[Dict[str, Optional[int]]] = None
    unfinished: bool = False
    warnings: Tuple[str, ...] = ()


NO_META = Meta()


def read_meta(capture_path: Path) -> Meta:
    """`meta.json` beside `capture_path`, read once (NO_META when there is none)."""
    meta_path = Path(capture_path).resolve().parent / SIDECAR_NAME
    if not meta_path.is_file():
        return NO_META
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return Meta(
            warnings=(f"{meta_path.name}: unreadable ({exc.__class__.__name__}); drop counts not taken from it",)
        )
    if not isinstance(meta, dict):
        return NO_META
    capture = meta.get("capture")
    drops = None
    if isinstance(capture, dict) and {"kernel_drops", "interface_drops"} & capture.keys():
        drops = {
            "kernel": _count_or_none(capture.get("kernel_drops")),
            "interface": _count_or_none(capture.get("interface_drops")),
        }
    return Meta(content=meta, drops=drops, unfinished=meta.get("trace_complete") is False)


@dataclass(frozen=True)
class Sidecars:
    """Every file beside a capture that the analysis reads, each read once: meta.json
    (decode's drop counters), iperf3 results (their test windows) and probe.csv (the
    sending kernel's cwnd, ssthresh and srtt)."""

    meta: Meta = NO_META
    iperf3_tests: Tuple["Iperf3Test", ...] = ()
    probe: Optional["KernelProbe"] = None


def read_sidecars(capture_path: Optional[Path]) -> Sidecars:
    """The sidecars beside `capture_path` (none for standard input or no path)."""
    from .iperf3 import find_tests
    from .kernel_probe import find_probe, read_probe

    if capture_path is None or str(capture_path) == STDIN_PATH:
        return Sidecars()
    capture_path = Path(capture_path)
    probe_path = find_probe(capture_path)
    probe = read_probe(probe_path) if probe_path is not None else None
    return Sidecars(
        meta=read_meta(capture_path),
        iperf3_tests=tuple(find_tests(capture_path)),
        probe=probe if probe is not None and len(probe) else None,
    )


def capture_drops(
    meta: Meta, interfaces: List[Dict[str, Any]], isb_by_local_id: Tuple[Optional[int], Optional[int]] = (None, None)
) -> Tuple[Dict[str, Any], List[str]]:
    """`{"kernel", "interface", "source", "isb_ifdrop", "isb_osdrop", "isb_*_per_interface"}` and warnings.

    `kernel`/`interface` come from meta.json when it has them, else from the
    pcapng ISBs. For the ISBs, `isb_by_local_id` are the sums over
    section-local interface ids of the last ISB of each id in the file: the
    rule of the tshark oracle (make_oracle.sh) that acceptance is judged by.
    It equals the per-interface rule for single-section files; for
    multi-section files, where an interface id of a later section replaces
    the same id of an earlier one, the per-interface sums (every interface
    of every section, its last ISB) are kept as `isb_ifdrop_per_interface`
    and `isb_osdrop_per_interface`.
    """
    per_interface_ifdrop, per_interface_osdrop = isb_drops(interfaces)
    ifdrop, osdrop = isb_by_local_id
    warnings = list(meta.warnings)
    if meta.drops is not None:
        drops = {"kernel": meta.drops["kernel"], "interface": meta.drops["interface"], "source": "meta.json"}
    elif ifdrop is not None or osdrop is not None:
        drops = {"kernel": ifdrop, "interface": osdrop, "source": "pcapng-isb"}
    else:
        drops = {"kernel": None, "interface": None, "source": "none"}
    drops["isb_ifdrop"] = ifdrop
    drops["isb_osdrop"] = osdrop
    drops["isb_ifdrop_per_interface"] = per_interface_ifdrop
    drops["isb_osdrop_per_interface"] = per_interface_osdrop
    return drops, warnings
