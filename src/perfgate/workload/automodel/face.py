"""The automodel backend on a login node: the row's benchmark config, checked and shown.

The config is pure data (config.py builds it from perfgate's copy of the base YAML), so a
login node builds exactly what the job writes, every override included.
"""

from __future__ import annotations

from perfgate.catalog.rows import Row
from perfgate.workload.automodel.config import AutomodelInputs, build_config, to_yaml
from perfgate.workload.backend import Backend, Overrides


def check_overrides(
    row: Row, overrides: Overrides, mock_data: bool = False, use_framework: bool | None = None
) -> str:
    """Build the row's config with the overrides; say which base it was checked against."""
    _, source = build_config(row, AutomodelInputs(overrides=overrides, mock_data=mock_data))
    return f"checked against {source}"


def describe(row: Row, steps: int, overrides: Overrides, use_framework: bool | None = None) -> str:
    """The config the job would write, as YAML, and its base."""
    cfg, source = build_config(row, AutomodelInputs(steps=steps, overrides=overrides))
    return f"Automodel benchmark config (base: {source}):\n" + to_yaml(cfg)


# No environment defaults: NVIDIA's NeMo variables are not Automodel's benchmark settings.
BACKEND = Backend(
    name="automodel",
    job="perfgate.workload.automodel.job",
    check_overrides=check_overrides,
    describe=describe,
)
