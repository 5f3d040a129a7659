"""Fixtures of the report's tests: the suite copy of tests/suite/pytester_suite.py for pytester
runs, and a headless Chromium per module for the pages."""

import pytest
from suite.pytester_suite import suite  # noqa: F401  (the fixture)
from testutil import require

from report.chromium import Browser, find_chromium


@pytest.fixture(scope="module")
def browser():
    """One headless Chromium (1400 x 900) for a module's pages."""
    binary = find_chromium()
    require(binary is not None, "Chromium (apt-get install chromium; scripts/install --full)")
    b = Browser(binary, width=1400, height=900)
    yield b
    b.close()
