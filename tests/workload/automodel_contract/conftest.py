"""Contract tests against the real NeMo Automodel, run with the .venv-automodel interpreter."""

from __future__ import annotations

import warnings

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "automodel: needs NeMo Automodel (.venv-automodel)")
    warnings.filterwarnings("ignore")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        item.add_marker(pytest.mark.automodel)
