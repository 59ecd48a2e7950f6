"""Console-script entries, kept apart from the tools so that an interrupt is handled from the start.

Importing a tool (numpy, the extensions, the testbed) takes 0.1-0.3 s. The tools install their own
handlers once imported; before that, Ctrl-C, SIGTERM or SIGHUP would print a KeyboardInterrupt
traceback from inside the imports. Here they end the start-up as the tools end a run: one line,
status 130, nothing written to standard output (nothing has begun).
"""

import os
import sys

# `signal` imports `enum`, itself ~40 ms of start-up where an interrupt would still be a traceback;
# the C module underneath it has the same calls and costs nothing
import _signal  # type: ignore[import-not-found]  # no stub: the C module under `signal`

EXIT_INTERRUPTED = 130
INTERRUPT_SIGNALS = (_signal.SIGINT, _signal.SIGTERM, _signal.SIGHUP)


def _end_start_up(prog: str) -> None:
    message = f"{prog}: interrupted\n".encode()

    def interrupted_while_starting(signum: int, frame: object) -> None:
        os.write(2, message)
        os._exit(EXIT_INTERRUPTED)

    for signum in INTERRUPT_SIGNALS:
        _signal.signal(signum, interrupted_while_starting)


def spline_analyze() -> None:
    _end_start_up("spline-analyze")
    from ._core.cli import run

    run()


def spline_testbed() -> None:
    _end_start_up("spline-testbed")
    from .testbed.cli import main

    # from here a run's Ctrl-C is a KeyboardInterrupt again (namespaces removed, finished runs kept);
    # main() installs its own SIGTERM and SIGHUP handlers
    _signal.signal(_signal.SIGINT, _signal.default_int_handler)
    sys.exit(main())
