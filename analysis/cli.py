"""`spline-analyze FILE... [--json] [--csv] [--strict] [--quiet]`: the command line.

The only place that prints. Exit status: 0 success (warnings allowed),
2 a file could not be read (or, with --strict, was cut mid-record),
3 an internal error (a bug: one line, no traceback), 130 interrupted.
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import sys
from typing import Any, Dict, List, Optional, Sequence, TextIO

PROG = "spline-analyze"
EXIT_OK = 0
EXIT_UNREADABLE = 2
EXIT_INTERNAL = 3
EXIT_INTERRUPTED = 130


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=PROG, description="Summarise TCP traffic in packet captures "
                                     "(pcap, pcapng, gzip'd either).")
    parser.add_argument("files", nargs="+", metavar="FILE", help="capture file(s)")
    output = parser.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="print one JSON document (schema 1)")
    output.add_argument("--csv", action="store_true", help="print a per-flow CSV table")
    parser.add_argument("--strict", action="store_true", help="treat a file cut mid-record as an error (exit 2)")
    parser.add_argument("--quiet", action="store_true", help="no warnings or progress bar on stderr")
    return parser


def _format_count(value: Optional[int]) -> str:
    return "unknown" if value is None else f"{value:,}"


def render_summary(report: Dict[str, Any]) -> str:
    """A small aligned table of one file's report."""
    drops = report["capture_drops"]
    rows = [
        ("file", report["file"]),
        ("format", report["format"] + (" (gzip)" if report.get("compressed") else "")),
        ("link types", ", ".join(report["link_types"]) or "-"),
        ("packets", _format_count(report["packets"])),
        ("tcp packets", _format_count(report["tcp_packets"])),
        ("tcp streams", _format_count(report["tcp_streams"])),
        ("tcp payload bytes", _format_count(report["tcp_payload_bytes"])),
        ("duration", f"{report['duration_s']:.6f} s"),
        ("capture drops", f"kernel {_format_count(drops['kernel'])}, interface {_format_count(drops['interface'])}"
                          f" (source: {drops['source']})"),
    ]
    width = max(len(label) for label, _ in rows)
    return "\n".join(f"{label:<{width}}  {value}" for label, value in rows)


def _write_csv(stream_rows: List[Dict[str, Any]], out: TextIO) -> None:
    from .report import STREAM_TABLE_COLUMNS
    writer = csv.DictWriter(out, fieldnames=list(STREAM_TABLE_COLUMNS), lineterminator="\n", extrasaction="ignore")
    writer.writeheader()
    for row in stream_rows:
        writer.writerow(row)


def _analyse(path: str, args: argparse.Namespace) -> Dict[str, Any]:
    """Decode one file; returns {"report": dict, "streams": rows or None}."""
    from .decode import read
    from .progress import bar_for
    from .report import assign_streams, stream_table, summarize_capture

    try:
        size = os.path.getsize(path)
    except OSError:
        size = 0
    bar = None if args.quiet else bar_for(os.path.basename(path), size)
    try:
        capture = read(path, strict=args.strict, progress=bar)
    finally:
        if bar is not None:
            bar.close()
    streams = assign_streams(capture.packets)
    report = summarize_capture(capture, streams)
    return {"report": report, "streams": stream_table(capture, streams) if args.csv else None}


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = _parser().parse_args(argv)
    from .errors import CaptureError

    status = EXIT_OK
    reports: List[Dict[str, Any]] = []
    stream_rows: List[Dict[str, Any]] = []
    for path in args.files:
        try:
            result = _analyse(path, args)
        except CaptureError as exc:
            print(f"{PROG}: {exc}", file=sys.stderr)
            status = max(status, EXIT_UNREADABLE)
            continue
        except KeyboardInterrupt:
            print(f"{PROG}: interrupted", file=sys.stderr)
            return EXIT_INTERRUPTED
        except MemoryError:
            print(f"{PROG}: {path}: out of memory", file=sys.stderr)
            status = max(status, EXIT_INTERNAL)
            continue
        except Exception as exc:  # a bug: say so in one line, never a traceback
            print(f"{PROG}: {path}: internal error ({exc.__class__.__name__}: {exc}); please report it",
                  file=sys.stderr)
            status = max(status, EXIT_INTERNAL)
            continue
        report = result["report"]
        if not args.quiet:
            for warning in report["warnings"]:
                print(f"{PROG}: {path}: warning: {warning}", file=sys.stderr)
        reports.append(report)
        if result["streams"] is not None:
            stream_rows.extend(result["streams"])
    try:
        if args.json:
            from .report import SCHEMA_VERSION
            document: Any = reports[0] if len(args.files) == 1 and reports else {"schema": SCHEMA_VERSION, "files": reports}
            if reports or len(args.files) > 1:
                json.dump(document, sys.stdout, indent=2)
                sys.stdout.write("\n")
        elif args.csv:
            _write_csv(stream_rows, sys.stdout)
        else:
            print("\n\n".join(render_summary(r) for r in reports))
        sys.stdout.flush()
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    return status


if __name__ == "__main__":
    sys.exit(main())
