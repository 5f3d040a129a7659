"""Contract tests against the real NeMo 2.x, run with the .venv-nemo interpreter."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "nemo: needs the NeMo 2.x stack (.venv-nemo)")
    warnings.filterwarnings("ignore")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        item.add_marker(pytest.mark.nemo)


def contract_rows() -> list[dict]:
    """Every nemo2 row of baselines/*.json, plus NVIDIA's recommended configs of seed 000."""
    rows = json.loads((HERE / "seed_rows.json").read_text())
    for path in sorted((REPO / "baselines").glob("*.json")):
        data = json.loads(path.read_text())
        items = data if isinstance(data, list) else data.get("rows", [])
        rows += [r for r in items if r.get("backend", "nemo2") == "nemo2"]
    from perfgate.workload.nemo2_models import complete_row

    return [complete_row(r) for r in rows]
