"""Helpers shared by the suite's tests (a module with a unique name: several conftest.py exist)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def require(available: bool, what: str) -> None:
    """Skip when an optional heavy dependency is absent, but fail under CI (CI must never skip)."""
    if available:
        return
    if os.environ.get("CI"):
        pytest.fail(f"{what} is required under CI (CI is set) but is not available")
    pytest.skip(f"{what} is not available here")
