"""The rows the NeMo contract builds (a module with a unique name: several conftest.py exist)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from perfgate.catalog import Row
from perfgate.catalog.provenance import SHIPPED_DIR

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
sys.path.insert(0, str(HERE.parents[1]))  # tests/: rowfactory, shared with the unit tests
from rowfactory import as_row  # noqa: E402


def contract_rows() -> list[Row]:
    """Every nemo2 row of baselines/*.json, plus NVIDIA's recommended configs of seed 000."""
    rows = json.loads((HERE / "seed_rows.json").read_text())
    for path in sorted((SHIPPED_DIR).glob("*.json")):
        data = json.loads(path.read_text())
        items = data if isinstance(data, list) else data.get("rows", [])
        rows += [r for r in items if r.get("backend", "nemo2") == "nemo2"]
    return [as_row(r) for r in rows]


__all__ = ["as_row", "contract_rows"]
