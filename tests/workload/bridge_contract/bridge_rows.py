"""The rows the Bridge contract builds (a module with a unique name: several conftest.py exist)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

from rowfactory import as_row

from perfgate.catalog import Row
from perfgate.catalog.provenance import SHIPPED_DIR

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]

# What torch.cuda.get_device_properties(0) reports on each GPU (name prefix, compute capability).
# Bridge's MoE dispatcher choice and validate() read it; this CPU machine has no GPU.
DEVICES = {
    "h100": ("NVIDIA H100 80GB HBM3", 9, 0),
    "h200": ("NVIDIA H200", 9, 0),
    "b200": ("NVIDIA B200", 10, 0),
    "b300": ("NVIDIA B300 SXM6 AC", 10, 3),
    "gb200": ("NVIDIA GB200", 10, 0),
    "gb300": ("NVIDIA GB300", 10, 3),
}


def device(gpu: str) -> SimpleNamespace:
    """A stand-in for torch.cuda's device properties of the row's GPU."""
    name, major, minor = DEVICES[gpu.lower()]
    return SimpleNamespace(name=name, major=major, minor=minor, multi_processor_count=132)


def bridge_rows() -> list[Row]:
    """Every megatron_bridge row of baselines/*.json, plus this suite's own rows."""
    rows = json.loads((HERE / "own_rows.json").read_text())
    for path in sorted((SHIPPED_DIR).glob("*.json")):
        data = json.loads(path.read_text())
        items = data if isinstance(data, list) else data.get("rows", [])
        rows += [r for r in items if r.get("backend") == "megatron_bridge"]
    return [as_row(r) for r in rows]
