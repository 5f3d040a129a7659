"""Fixtures shared by the suite's own tests."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# CI clones the repository with the shared folder beside it (../shared).
SHARED = (REPO / ".." / "shared").resolve()


def require(available: bool, what: str) -> None:
    """Skip when an optional heavy dependency is absent, but fail under CI (CI must never skip)."""
    if available:
        return
    if os.environ.get("CI"):
        pytest.fail(f"{what} is required under CI (CI is set) but is not available")
    pytest.skip(f"{what} is not available here")


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
