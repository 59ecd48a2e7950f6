"""`python -m spline_analysis FILE...`: the same as `spline-analyze FILE...`."""

from ._core.cli import run

run()
