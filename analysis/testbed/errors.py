"""The one exception type the testbed raises for conditions a user can fix."""

from __future__ import annotations

from .._core.errors import SplineError


class TestbedError(SplineError):
    """A clear, user-facing reason why the testbed cannot (continue to) run."""

    __test__ = False  # not a pytest test class despite the name
