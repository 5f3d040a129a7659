"""Fixtures shared by the suite's own tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from testutil import SHARED, require


@pytest.fixture(scope="session")
def shared() -> Path:
    """The ../shared folder (seeds and reference data)."""
    require(SHARED.is_dir(), f"the shared folder {SHARED}")
    return SHARED


@pytest.fixture(scope="session")
def reference(shared: Path) -> Path:
    """../shared/reference: real step-time series and verbatim log lines."""
    return shared / "reference"


@pytest.fixture(scope="session")
def seeds(shared: Path) -> Path:
    """../shared/seeds: the source documents."""
    return shared / "seeds"
