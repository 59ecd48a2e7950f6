#!/usr/bin/env python3
"""mutate_cli.py -- mutation fuzzing of the whole `spline-analyze` path, Python included.

The C walker has its own libFuzzer harness (run.sh); this drives what a user runs:
reading, gzip, decoding, flows, both analyses, the report and JSON output. It makes
variants of real captures (truncations at every offset of the first 2 KB, bit flips,
record and block length fields set to edge values, gzip'd, cut and multi-member gzip) and
runs `spline-analyze --json` on each inside worker processes. A variant is a finding when
the run ends in anything but exit 0 with valid JSON or exit 2 with one line: an internal
error (exit 3), a traceback, a signal death, or a hang (no progress for --hang-s).

    .venv/bin/python fuzz/mutate_cli.py                     # 4,200 variants, 2 workers
    .venv/bin/python fuzz/mutate_cli.py --variants 20000 --seed 7 --keep fuzz/findings

Prints variants tried and outcomes; exit 0 when there are no findings, 1 otherwise.
Reproducible from --seed alone. Not part of the test suite (a short run is).
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import io
import json
import os
import random
import struct
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Callable, Dict, Iterator, List, Tuple

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
SEED_BYTES = 64 * 1024  # each seed capture is cut to its records within this many bytes
TRUNCATE_PREFIX_BYTES = 2048
LENGTH_EDGE_VALUES = (0, 1, 15, 16, 17, 64, 65535, 65536, 262144, 0x7FFFFFFF, 0xFFFFFFFF)
Variant = Tuple[str, bytes]


def seed_captures() -> List[Tuple[str, bytes]]:
    """Real captures to mutate: the samples (cut at a record boundary) and fuzz/seeds."""
    seeds = []
    for path in sorted(REPO.glob("samples/*/trace.pcap")):
        data = path.read_bytes()
        end, offset = 24, 24
        while offset + 16 <= min(len(data), SEED_BYTES):
            captured = struct.unpack_from("<I", data, offset + 8)[0]
            if offset + 16 + captured > SEED_BYTES:
                break
            offset += 16 + captured
            end = offset
        seeds.append((path.parent.name, data[:end]))
    for path in sorted((HERE / "seeds").iterdir()):
        if path.is_file():
            seeds.append((path.name, path.read_bytes()))
    return seeds


def record_length_offsets(data: bytes) -> List[int]:
    """Byte offsets of the length fields a reader trusts: pcap record caplen/origlen, or
    pcapng block total lengths (first and trailing copy)."""
    offsets: List[int] = []
    if data[:4] in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1"):
        offset = 24
        while offset + 16 <= len(data):
            offsets += [offset + 8, offset + 12]
            offset += 16 + struct.unpack_from("<I", data, offset + 8)[0]
    elif data[:4] == b"\x0a\x0d\x0d\x0a":
        offset = 0
        while offset + 12 <= len(data):
            length = struct.unpack_from("<I", data, offset + 4)[0]
            offsets.append(offset + 4)
            if length < 12 or offset + length > len(data):
                break
            offsets.append(offset + length - 4)
            offset += length
    return offsets


def variants(seeds: List[Tuple[str, bytes]], count: int, rng: random.Random) -> Iterator[Variant]:
    """`count` variants: a quarter truncations, a quarter bit flips, a quarter length edits,
    a quarter gzip variants (proportions of the seed-2 KB run)."""
    made = 0
    main_name, main_seed = seeds[0]
    for cut in range(min(TRUNCATE_PREFIX_BYTES, len(main_seed))):
        if made >= count // 4:
            break
        yield f"{main_name}:cut@{cut}", main_seed[:cut]
        made += 1
    kinds: List[Callable[[], Variant]] = []

    def flip() -> Variant:
        name, data = rng.choice(seeds)
        raw = bytearray(data)
        for _ in range(rng.randint(1, 8)):
            at = rng.randrange(len(raw))
            raw[at] ^= 1 << rng.randrange(8)
        return f"{name}:flip", bytes(raw)

    def length_edit() -> Variant:
        name, data = rng.choice(seeds)
        offsets = record_length_offsets(data)
        if not offsets:
            return flip()
        raw = bytearray(data)
        at = rng.choice(offsets)
        struct.pack_into("<I", raw, at, rng.choice(LENGTH_EDGE_VALUES))
        return f"{name}:length@{at}", bytes(raw)

    def gzip_variant() -> Variant:
        name, data = rng.choice(seeds)
        choice = rng.randrange(5)
        if choice == 0:
            return f"{name}:gzip", gzip.compress(data)
        if choice == 1:
            packed = gzip.compress(data)
            return f"{name}:gzip-cut", packed[: rng.randrange(1, len(packed))]
        if choice == 2:
            half = rng.randrange(len(data))
            return f"{name}:gzip-members", gzip.compress(data[:half]) + gzip.compress(data[half:])
        if choice == 3:
            raw = bytearray(gzip.compress(data))
            raw[rng.randrange(10, len(raw))] ^= 0xFF
            return f"{name}:gzip-damaged", bytes(raw)
        _, flipped = flip()
        return f"{name}:gzip-of-flip", gzip.compress(flipped)

    kinds = [flip, length_edit, gzip_variant]
    while made < count:
        yield kinds[made % len(kinds)]()
        made += 1


def run_one(path: str) -> Tuple[str, str]:
    """(outcome, detail) of `spline-analyze --json --quiet path`, in this process."""
    from spline_analysis._core.cli import main

    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = main(["--json", "--quiet", path])
    except SystemExit as exit_:
        return ("usage", str(exit_.code))
    except BaseException:
        return ("traceback", traceback.format_exc(limit=6))
    if "Traceback" in err.getvalue():
        return ("traceback", err.getvalue())
    if status == 0:
        try:
            json.loads(out.getvalue())
        except ValueError as exc:
            return ("bad-json", str(exc))
        return ("ok", "")
    if status == 2 and len(err.getvalue().strip().splitlines()) == 1:
        return ("unreadable", err.getvalue().strip())
    return (f"exit-{status}", err.getvalue().strip())


def worker(directory: str) -> None:
    """Reads variant file names on stdin, answers one JSON line each (after a 'start' line
    so the parent knows which variant a death or hang belongs to)."""
    for line in sys.stdin:
        path = line.strip()
        print(json.dumps({"start": path}), flush=True)
        outcome, detail = run_one(path)
        print(json.dumps({"path": path, "outcome": outcome, "detail": detail[:2000]}), flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--variants", type=int, default=4200)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--hang-s", type=float, default=60.0, help="no answer for this long is a hang")
    parser.add_argument("--keep", type=Path, help="copy findings here")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker)
        return 0

    rng = random.Random(args.seed)
    seeds = seed_captures()
    outcomes: Dict[str, int] = {}
    findings: List[Tuple[str, str, str]] = []
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="spline-mutate-") as scratch:
        queue: List[Tuple[str, str]] = []
        for index, (name, data) in enumerate(variants(seeds, args.variants, rng)):
            path = os.path.join(scratch, f"v{index:06d}.bin")
            with open(path, "wb") as out:
                out.write(data)
            queue.append((path, name))
        names = dict(queue)
        shares = [queue[j :: args.jobs] for j in range(args.jobs)]
        workers = []
        for share in shares:
            child = subprocess.Popen(
                [sys.executable, __file__, "--worker", scratch],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
                bufsize=1,
            )
            workers.append((child, [p for p, _ in share]))
        import threading

        def feed(child: subprocess.Popen, paths: List[str]) -> None:
            for path in paths:
                child.stdin.write(path + "\n")
            child.stdin.close()

        for child, paths in workers:
            threading.Thread(target=feed, args=(child, paths), daemon=True).start()
        for child, paths in workers:
            pending = list(paths)
            current = None
            while pending:
                line = _read_line(child, args.hang_s)
                if line is None:  # died or hung on `current`
                    dead = child.poll()
                    outcome = f"signal-{-dead}" if dead is not None and dead < 0 else "hang"
                    child.kill()
                    victim = current or pending[0]
                    findings.append((names[victim], outcome, ""))
                    outcomes[outcome] = outcomes.get(outcome, 0) + 1
                    _keep(args.keep, victim, names[victim])
                    pending = pending[pending.index(victim) + 1 :]
                    if pending:  # carry on with a fresh worker
                        child = subprocess.Popen(
                            [sys.executable, __file__, "--worker", scratch],
                            stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE,
                            text=True,
                            bufsize=1,
                        )
                        threading.Thread(target=feed, args=(child, list(pending)), daemon=True).start()
                    current = None
                    continue
                message = json.loads(line)
                if "start" in message:
                    current = message["start"]
                    continue
                pending.remove(message["path"])
                outcome = message["outcome"]
                outcomes[outcome] = outcomes.get(outcome, 0) + 1
                if outcome not in ("ok", "unreadable"):
                    findings.append((names[message["path"]], outcome, message["detail"]))
                    _keep(args.keep, message["path"], names[message["path"]])
            child.wait()
    tried = sum(outcomes.values())
    print(f"variants tried: {tried} (seed {args.seed}) in {time.monotonic() - started:.0f} s")
    for outcome, count in sorted(outcomes.items()):
        print(f"  {outcome:12s} {count}")
    print(f"findings: {len(findings)} (internal errors, tracebacks, signal deaths, hangs, bad JSON)")
    for name, outcome, detail in findings[:20]:
        print(f"  {outcome}: {name}: {detail.splitlines()[-1] if detail else ''}")
    return 1 if findings else 0


def _read_line(child: subprocess.Popen, timeout_s: float):
    import select

    ready, _, _ = select.select([child.stdout], [], [], timeout_s)
    if not ready:
        return None
    line = child.stdout.readline()
    return line or None


def _keep(directory, path: str, name: str) -> None:
    if directory is None:
        return
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / (name.replace("/", "_").replace(":", "_") + "-" + os.path.basename(path))
    target.write_bytes(Path(path).read_bytes())


if __name__ == "__main__":
    sys.exit(main())
