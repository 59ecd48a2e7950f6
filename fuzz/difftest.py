#!/usr/bin/env python3
"""difftest.py -- differential testing of our Wireshark-compatible TCP analysis against tshark 4.0.

    .venv/bin/python fuzz/difftest.py                              # 20,000 conversations, seed 1
    .venv/bin/python fuzz/difftest.py --conversations 300 --seed 3 --keep /work/data/dt/found

Draws conversations with fuzz/tcpgen.py (reproducible from --seed and the index alone), writes
them in batches (one pcap per link type), runs tshark and spline_analysis on each, and compares
every frame: tcp.stream, tcp.len, every tcp.analysis flag, ack_rtt and bytes_in_flight. Each
conversation with a difference is shrunk to a minimal one; with --keep it is written as a JSON
regression case (conversation + tshark's per-frame answer) that tests/test_difftest.py replays.
Prints conversations tried, frames compared and differences by field; exit 1 if any.

Acceptance run (issue 10), tshark 4.0.17: `--seed 1 --conversations 20000` compares 725,502
frames with no difference (about 6 minutes on two shared cores).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Dict, List

sys.path.insert(0, str(Path(__file__).resolve().parent))
import tcpgen  # noqa: E402
import tsharkdiff  # noqa: E402


def regression_case(conv: tcpgen.Conversation, workdir: Path, origin: str) -> Dict:
    """A shrunk conversation with tshark's answer stored beside it."""
    diffs, theirs = tsharkdiff.compare_bytes(tcpgen.pcap_bytes([conv]), workdir)
    return {
        "origin": origin,
        "conversation": conv.to_json(),
        "tshark": {k: v.tolist() for k, v in theirs.items()},
        "differences_when_found": [list(d) for d in diffs],
    }


def run(seed: int, count: int, batch: int, workdir: Path, keep: Path | None, shrink: bool, out=sys.stdout) -> int:
    by_field: Counter = Counter()
    frames = 0
    failing: List[int] = []
    for start in range(0, count, batch):
        convs = [tcpgen.generate(seed, i) for i in range(start, min(count, start + batch))]
        groups: Dict[str, List[int]] = {}
        for k, conv in enumerate(convs):
            groups.setdefault(conv.link, []).append(k)
        for members in groups.values():
            group = [convs[k] for k in members]
            diffs, _ = tsharkdiff.compare_bytes(tcpgen.pcap_bytes(group), workdir)
            bounds, total = [], 0
            for conv in group:
                bounds.append((total, total + len(conv.segments)))
                total += len(conv.segments)
            frames += total
            if diffs and diffs[0][1] == "frames":
                suspects = members  # frame counts differ: look at each conversation alone
            else:
                suspects = sorted(
                    {members[j] for (f, _, _, _) in diffs for j, (lo, hi) in enumerate(bounds) if lo <= f < hi}
                )
                for d in diffs:
                    by_field[d[1]] += 1
            for k in suspects:
                index = start + k
                own = tsharkdiff.conversation_differences(convs[k], workdir)
                if not own:
                    continue
                if diffs and diffs[0][1] == "frames":
                    for d in own:
                        by_field[d[1]] += 1
                failing.append(index)
                fields = sorted({d[1] for d in own})
                print(f"seed {seed} conversation {index}: {len(own)} differences ({', '.join(fields)})", file=out)
                if shrink:
                    wanted = set(fields)
                    small = tsharkdiff.shrink(
                        convs[k],
                        lambda c, wanted=wanted: bool(
                            wanted & {d[1] for d in tsharkdiff.conversation_differences(c, workdir)}
                        ),
                    )
                    print(f"   shrunk to {len(small.segments)} segments:", file=out)
                    for d in tsharkdiff.conversation_differences(small, workdir):
                        print(f"     frame {d[0] + 1} {d[1]}: ours {d[2]} tshark {d[3]}", file=out)
                    if keep:
                        keep.mkdir(parents=True, exist_ok=True)
                        case = regression_case(small, workdir, f"tcpgen seed {seed} conversation {index}")
                        (keep / f"seed{seed}_conv{index}.json").write_text(json.dumps(case, indent=1) + "\n")
        out.flush()
    print(f"conversations tried: {count}", file=out)
    print(f"frames compared: {frames}", file=out)
    print(f"conversations with differences: {len(failing)}", file=out)
    print("differences by field:" + ("" if by_field else " none"), file=out)
    for name, n in sorted(by_field.items()):
        print(f"   {name:26s} {n}", file=out)
    return 1 if failing else 0


def main(argv: List[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--conversations", type=int, default=20_000)
    parser.add_argument("--batch", type=int, default=500, help="conversations per tshark run")
    parser.add_argument("--keep", type=Path, help="write shrunk differences here as JSON regression cases")
    parser.add_argument("--no-shrink", action="store_true", help="report differences without shrinking them")
    args = parser.parse_args(argv)
    if tsharkdiff.TSHARK is None:
        print("tshark not found", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="difftest") as tmp:
        return run(args.seed, args.conversations, args.batch, Path(tmp), args.keep, not args.no_shrink)


if __name__ == "__main__":
    sys.exit(main())
