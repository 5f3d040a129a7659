"""Fixtures shared by the suite's own tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from refdata import REFERENCE, SEEDS


@pytest.fixture(scope="session")
def reference() -> Path:
    """tests/data/reference: real step-time series and verbatim log lines, with sources."""
    return REFERENCE


@pytest.fixture(scope="session")
def seeds() -> Path:
    """tests/data/reference/seeds: the excerpts of the seed documents the tests read."""
    return SEEDS
