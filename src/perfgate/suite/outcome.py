"""A row's verdict as its test's pytest outcome: fail, warn or pass.

Verdicts (perfgate.verdicts) know nothing of pytest; the suite's test bodies call
assert_verdict. INFRA never reaches here: the fixture makes it a test ERROR first.
"""

from __future__ import annotations

import warnings

import pytest

from perfgate.charset import for_terminal
from perfgate.verdicts import IMPROVEMENT, INFRA, REGRESSION, WARN, Evaluation


class PerfgateWarning(UserWarning):
    """A row passed without a firm verdict (INCONCLUSIVE, NO_BASELINE) or asks for a refresh."""


def assert_verdict(ev: Evaluation, strict: bool = False) -> None:
    """Turn an evaluation into the test's outcome; --strict fails the warning verdicts."""
    message = for_terminal(ev.message)  # printed on the terminal: log text must not act on it
    if ev.verdict in (REGRESSION, INFRA):
        pytest.fail(message, pytrace=False)
    if ev.verdict in WARN:
        if strict:
            pytest.fail(f"{message} (--strict)", pytrace=False)
        warnings.warn(PerfgateWarning(message), stacklevel=2)
    elif ev.verdict == IMPROVEMENT:
        warnings.warn(PerfgateWarning(message), stacklevel=2)
