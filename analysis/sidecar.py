"""Capture drop counts from the capture's own counters and from `meta.json`.

`capture/record.sh` writes `meta.json` beside the capture with
`capture.kernel_drops` / `capture.interface_drops` (tcpdump's "dropped by
kernel" / "dropped by interface" lines). pcapng files may carry the same
counters in Interface Statistics Blocks: dumpcap stores libpcap's ps_drop
(kernel buffer drops) as `isb_ifdrop` and ps_ifdrop as `isb_osdrop`.
The sidecar wins when present. Unknown is None, never 0.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

SIDECAR_NAME = "meta.json"


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


def read_sidecar(capture_path: Path) -> Tuple[Optional[Dict[str, Optional[int]]], List[str]]:
    """The drop counters of `meta.json` beside `capture_path`, or None; plus warnings."""
    meta_path = Path(capture_path).resolve().parent / SIDECAR_NAME
    if not meta_path.is_file():
        return None, []
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return None, [f"{meta_path.name}: unreadable ({exc.__class__.__name__}); drop counts not taken from it"]
    capture = meta.get("capture") if isinstance(meta, dict) else None
    if not isinstance(capture, dict) or not ({"kernel_drops", "interface_drops"} & capture.keys()):
        return None, []
    return {"kernel": _count_or_none(capture.get("kernel_drops")),
            "interface": _count_or_none(capture.get("interface_drops"))}, []


def capture_unfinished(capture_path: Path) -> bool:
    """meta.json beside the capture says the capture did not finish (`trace_complete`
    false): a testbed run or record.sh interrupted before it wrote its final meta.json."""
    meta_path = Path(capture_path).resolve().parent / SIDECAR_NAME
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(meta, dict) and meta.get("trace_complete") is False


def capture_drops(capture_path: Path, interfaces: List[Dict[str, Any]],
                  isb_by_local_id: Tuple[Optional[int], Optional[int]] = (None, None)
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
    sidecar, warnings = read_sidecar(capture_path)
    if sidecar is not None:
        drops = {"kernel": sidecar["kernel"], "interface": sidecar["interface"], "source": "meta.json"}
    elif ifdrop is not None or osdrop is not None:
        drops = {"kernel": ifdrop, "interface": osdrop, "source": "pcapng-isb"}
    else:
        drops = {"kernel": None, "interface": None, "source": "none"}
    drops["isb_ifdrop"] = ifdrop
    drops["isb_osdrop"] = osdrop
    drops["isb_ifdrop_per_interface"] = per_interface_ifdrop
    drops["isb_osdrop_per_interface"] = per_interface_osdrop
    return drops, warnings
