"""`spline-analyze FILE... [--json | --csv] [--interval 100ms] [--plot DIR] [--strict] [--quiet]`.

The only place that prints. One file: its capture line, the run summary (the
figures the Spline report shows), every data-carrying flow direction, and the
tshark-compatible flag counts. Several files: the same per file, then the runs
side by side (report.py makes all three outputs). `--json` one document (schema.py); `--csv` one row per flow
direction; `--interval` a time series (CSV, or `timeseries` in the JSON);
`--plot DIR` PNG figures per file.

FILE `-` reads standard input (`tcpdump -w - | spline-analyze -`); FIFOs and pipes are
read to their end first. Output is assembled whole and written at once (SIGINT held off
while it is written), figures through temporary names: an interrupted run leaves no
partial output file.

Exit status: 0 success (warnings allowed), 2 a file could not be read (or,
with --strict, was cut mid-record; also bad options), 3 an internal error (a bug:
one line, no traceback), 4 the output could not be written (stdout, --plot DIR),
130 interrupted (Ctrl-C, SIGTERM, SIGHUP). A reader that stops early (`| head`) ends the
output quietly; the status is that of the analysis.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import signal
import stat
import sys
from typing import Any, Dict, List, Optional, Sequence, TextIO

PROG = "spline-analyze"
EXIT_OK = 0
EXIT_UNREADABLE = 2
EXIT_INTERNAL = 3
EXIT_OUTPUT = 4
EXIT_INTERRUPTED = 130


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG, description="Summarise TCP traffic in packet captures (pcap, pcapng, gzip'd either)."
    )
    parser.add_argument("files", nargs="+", metavar="FILE", help="capture file(s); - reads standard input")
    output = parser.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="print one JSON document (its keys: README)")
    output.add_argument("--csv", action="store_true", help="print a per-flow CSV table")
    parser.add_argument(
        "--interval",
        metavar="T",
        help="time series at this interval (e.g. 100ms, 1s): CSV on stdout, or a 'timeseries' list with --json",
    )
    parser.add_argument(
        "--plot",
        metavar="DIR",
        help="write PNG figures per file into DIR "
        "(time series, sequence graph, RTT CDF; runs compared when several files)",
    )
    parser.add_argument("--strict", action="store_true", help="treat a file cut mid-record as an error (exit 2)")
    parser.add_argument("--quiet", action="store_true", help="no warnings or progress bar on stderr")
    return parser


def _write_csv(rows: List[Dict[str, Any]], columns: Sequence[str], out: TextIO) -> None:
    writer = csv.DictWriter(out, fieldnames=list(columns), lineterminator="\n", extrasaction="ignore")
    writer.writeheader()
    for row in rows:
        writer.writerow(row)


def _analyse(path: str, args: argparse.Namespace) -> Dict[str, Any]:
    """Run every stage on one file; returns the report dict and, when asked, its time series."""
    from .pipeline import analyze
    from .progress import bar_for

    try:
        mode = os.stat(path).st_mode if path != "-" else os.fstat(0).st_mode
        size = os.path.getsize(path) if stat.S_ISREG(mode) else 0
        if stat.S_ISFIFO(mode) and not args.quiet:
            print(f"{PROG}: {path}: reading a FIFO or pipe to its end (waits for its writer)", file=sys.stderr)
    except OSError:
        size = 0
    bar = None if args.quiet else bar_for(os.path.basename(path), size)
    try:
        analysis = analyze(path, strict=args.strict, progress=bar, name=args.display_names.get(path, ""))
    finally:
        if bar is not None:
            bar.close()
    report = dict(analysis.to_json())  # a copy: --interval and --plot add keys to it
    series = None
    if args.interval_s is not None:
        series = analysis.timeseries(args.interval_s)
        series.insert(0, "file", report["file"])
        if args.json:
            report["timeseries"] = json.loads(series.to_json(orient="records"))
    plot_error = None
    if args.plot:
        from ..plot import save_report_plots

        stem = args.plot_stems.get(path) or "capture"
        try:
            report["plots"] = [str(p) for p in save_report_plots(analysis, args.plot, stem)]
        except OSError as exc:  # the figures are lost, never the report
            _stop_if_interrupted()
            plot_error = f"cannot write figures into {args.plot}: {exc.strerror or exc}"
        except ImportError:
            plot_error = "figures need matplotlib: .venv/bin/pip install 'spline-toolkit[plot]'"
    return {"report": report, "series": series, "plot_error": plot_error}


def distinct_names(paths: Sequence[str]) -> List[str]:
    """The shortest trailing path parts that tell the files apart
    (`samples/bbr/trace.pcap`, `samples/cubic/trace.pcap` -> `bbr/trace.pcap`, `cubic/trace.pcap`)."""
    parts = [os.path.normpath(p).split(os.sep) for p in paths]
    longest = max((len(x) for x in parts), default=1)
    for keep in range(1, longest + 1):
        names = [os.sep.join(x[-keep:]) for x in parts]
        if len(set(names)) == len(names):
            return names
    return [os.path.normpath(p) for p in paths]


def _plot_comparison(reports: List[Dict[str, Any]], out_dir: str) -> str:
    from ..plot import plot_compare, save_figure_atomically

    fig = plot_compare([r["summary"] for r in reports], title="Runs compared")
    return str(save_figure_atomically(fig, os.path.join(out_dir, "compare.png"), dpi=120, bbox_inches="tight"))


def _output_text(args: argparse.Namespace, reports: List[Dict[str, Any]], series_frames: List[Any]) -> str:
    """Everything stdout gets, assembled before any of it is written."""
    out = io.StringIO()
    if args.json:
        from ..report import several

        document: Any = reports[0] if len(args.files) == 1 and reports else several(reports)
        if reports or len(args.files) > 1:
            json.dump(document, out, indent=2)
            out.write("\n")
    elif args.csv:
        from ..report import direction_rows
        from ..schema import DIRECTION_CSV_COLUMNS

        rows = [row for r in reports for row in direction_rows(r)]
        _write_csv(rows, DIRECTION_CSV_COLUMNS, out)
    elif series_frames:
        import pandas as pd

        pd.concat(series_frames, ignore_index=True).to_csv(out, index=False)
    else:
        from ..report import text as report_text

        text = report_text(reports)
        if text:
            out.write(text + "\n")
    return out.getvalue()


def write_whole(text: str, fd: int) -> None:
    """Write all of `text` to `fd` with SIGINT, SIGTERM and SIGHUP held off: the output is
    complete or (on an error, raised as OSError) the error is said; never cut by an interrupt."""
    data = memoryview(text.encode("utf-8"))
    held = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        while data:
            written = os.write(fd, data)
            data = data[written:]
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def main(argv: Optional[Sequence[str]] = None) -> int:
    # numpy's OpenBLAS starts a thread per core at import; no stage does linear algebra,
    # and on a 2-core machine those threads only compete with the analysis (~40 ms CPU).
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    parser = _parser()
    args = parser.parse_args(argv)
    from .errors import CaptureError

    args.interval_s = None
    if args.interval is not None:
        from .timeseries import parse_interval

        try:
            args.interval_s = parse_interval(args.interval)
        except ValueError as exc:
            parser.error(f"--interval: {exc}")

    args.display_names = dict(zip(args.files, distinct_names(args.files)))
    args.plot_stems = {path: name.split(".")[0].replace(os.sep, "_") for path, name in args.display_names.items()}
    status = EXIT_OK
    reports: List[Dict[str, Any]] = []
    series_frames: List[Any] = []
    for path in args.files:
        try:
            _stop_if_interrupted()
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
            _stop_if_interrupted()  # or an interrupt that an import or C code turned into an error
            print(
                f"{PROG}: {path}: internal error ({exc.__class__.__name__}: {exc}); please report it", file=sys.stderr
            )
            status = max(status, EXIT_INTERNAL)
            continue
        report = result["report"]
        if result["plot_error"]:
            print(f"{PROG}: {path}: {result['plot_error']}", file=sys.stderr)
            status = max(status, EXIT_OUTPUT)
        if not args.quiet:
            for warning in report["warnings"]:
                print(f"{PROG}: {path}: warning [{warning['code']}]: {warning['message']}", file=sys.stderr)
        reports.append(report)
        if result["series"] is not None:
            series_frames.append(result["series"])
    text = _output_text(args, reports, series_frames)
    _stop_if_interrupted()
    try:
        sys.stdout.flush()
        try:
            fd = sys.stdout.fileno()
        except (AttributeError, ValueError, io.UnsupportedOperation):  # a captured stdout (tests)
            sys.stdout.write(text)
        else:
            write_whole(text, fd)
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except OSError as exc:
        _stop_if_interrupted()
        print(f"{PROG}: cannot write the output: {exc.strerror or exc}", file=sys.stderr)
        status = max(status, EXIT_OUTPUT)
    if args.plot and len(reports) > 1:
        try:
            _plot_comparison(reports, args.plot)
        except OSError as exc:
            print(f"{PROG}: cannot write figures into {args.plot}: {exc.strerror or exc}", file=sys.stderr)
            status = max(status, EXIT_OUTPUT)
    return status


_interrupted_quietly = False
INTERRUPT_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def _interrupt(signum: int, frame: Any) -> None:
    global _interrupted_quietly
    # remembered too: C code (a PNG writer) may turn the exception into an OSError
    _interrupted_quietly = True
    raise KeyboardInterrupt


def _unraisable(info: Any) -> None:
    """An interrupt that landed in a finalizer or callback cannot propagate: remember it (the
    run stops at its next check) instead of printing a traceback."""
    global _interrupted_quietly
    if info.exc_type is not None and issubclass(info.exc_type, KeyboardInterrupt):
        _interrupted_quietly = True
        return
    sys.__unraisablehook__(info)


def _stop_if_interrupted() -> None:
    if _interrupted_quietly:
        raise KeyboardInterrupt


def run() -> None:
    """Console-script entry: `main()`, then leave without tearing the interpreter down.

    Freeing every column of a large capture one by one at exit cost ~30 ms per
    million packets, a tenth of the whole run. Output is flushed first and the
    only temporary file (a gunzipped capture) is anonymous, so nothing is lost.
    """
    # SIGTERM and SIGHUP (the terminal closed) end the run as Ctrl-C does: temporary files
    # removed, one line, status 130
    for signum in INTERRUPT_SIGNALS:
        signal.signal(signum, _interrupt)
    sys.unraisablehook = _unraisable
    try:
        status = main()
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        status = EXIT_INTERRUPTED
    except Exception as exc:  # outside the per-file guard (output, imports): still one line
        if _interrupted_quietly:
            print(f"{PROG}: interrupted", file=sys.stderr)
            status = EXIT_INTERRUPTED
        else:
            print(f"{PROG}: internal error ({exc.__class__.__name__}: {exc}); please report it", file=sys.stderr)
            status = EXIT_INTERNAL
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (BrokenPipeError, ValueError):
            pass
    os._exit(status)


if __name__ == "__main__":
    run()
