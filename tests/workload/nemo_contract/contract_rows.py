"""The rows the NeMo contract builds (a module with a unique name: several conftest.py exist)."""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]


def contract_rows() -> list[dict]:
    """Every nemo2 row of baselines/*.json, plus NVIDIA's recommended configs of seed 000."""
    rows = json.loads((HERE / "seed_rows.json").read_text())
    for path in sorted((REPO / "baselines").glob("*.json")):
        data = json.loads(path.read_text())
        items = data if isinstance(data, list) else data.get("rows", [])
        rows += [r for r in items if r.get("backend", "nemo2") == "nemo2"]
    from perfgate.workload.nemo2_models import complete_row

    return [complete_row(r) for r in rows]
