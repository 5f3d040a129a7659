"""Contract tests against the real NeMo Automodel, run with the .venv-automodel interpreter."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "automodel: needs NeMo Automodel (.venv-automodel)")
    warnings.filterwarnings("ignore")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # A conftest's hook sees every item of the session: mark only this suite's own tests.
    for item in items:
        if HERE in Path(item.path).parents:
            item.add_marker(pytest.mark.automodel)
