"""What every figure shares: units, an empty matplotlib Figure without pyplot, the colour cycle,
flow labels, capture-warning titles and an atomic PNG write."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List, Tuple, Union

BITS_PER_MBIT = 1e6
BYTES_PER_KB = 1e3
US_PER_MS = 1e3
NS_PER_S = 1e9
FlowKey = Tuple[int, int]


def _figure(width_in: float, height_in: float):
    from matplotlib.figure import Figure

    return Figure(figsize=(width_in, height_in), layout="constrained")


def _colors() -> List[Tuple[float, float, float, float]]:
    from matplotlib import colormaps

    return [colormaps["tab10"](k) for k in range(10)]


# ----------------------------------------------------------------------------- labels and intervals


def flow_label(directions: Any, row: int) -> str:
    """'src:port -> dst:port' of one row of a `Directions` table (IPv6 in brackets)."""
    t = directions.table

    def endpoint(address: Any, port: Any) -> str:
        text = str(address)
        return f"[{text}]:{int(port)}" if ":" in text else f"{text}:{int(port)}"

    return f"{endpoint(t['src'][row], t['sport'][row])} -> {endpoint(t['dst'][row], t['dport'][row])}"


def flow_labels(directions: Any) -> Dict[FlowKey, str]:
    """{(stream, direction): 'src:port -> dst:port'} for every data direction."""
    t = directions.table
    return {(int(t["stream"][r]), int(t["direction"][r])): flow_label(directions, r) for r in range(len(directions))}


def save_figure_atomically(fig: Any, path: Union[str, Path], **savefig_kwargs: Any) -> Path:
    """Write a figure to `path` through a temporary name in the same folder, renamed when
    complete: an interrupt or a full disk never leaves a half-written PNG under `path`."""
    import os
    import tempfile

    path = Path(path)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as stream:
            fig.savefig(stream, format="png", **savefig_kwargs)
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise
    return path


def with_warning_codes(title: str, warnings: Any) -> str:
    """The title with a second line naming the capture-integrity warnings (codes, as in the
    report), so a figure shown alone still says what to distrust. `warnings`: the coded
    warning objects, or a callable returning them (Analysis.warnings), or None."""
    if callable(warnings):
        warnings = warnings()
    codes = sorted({w["code"] for w in warnings or ()})
    return f"{title}\ncapture warnings: {', '.join(codes)}" if codes else title
