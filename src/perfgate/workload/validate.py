"""Check a row's overrides before anything is submitted, on a login node with or without NeMo.

With NeMo importable the recipe is built for real and every override applied; without it
the paths are checked against nemo2/paths.json (the snapshot the contract test proves
current for the pinned NeMo). Values below a config-valued field the snapshot records as
None cannot be checked there; the job checks them with NeMo before training starts.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping
from typing import Any

from perfgate.catalog.rows import Row
from perfgate.errors import ConfigError
from perfgate.workload.automodel.config import AutomodelInputs, build_config
from perfgate.workload.bridge.plan import check_bridge_overrides
from perfgate.workload.nemo2.models import nemo2_model
from perfgate.workload.nemo2.snapshot import load, valid_paths
from perfgate.workload.overrides import (
    check_against_snapshot,
    merged_overrides,
    normalize_path,
)


def nemo_importable() -> bool:
    """True when this interpreter has the NeMo 2.x LLM collection."""
    try:
        return importlib.util.find_spec("nemo.collections.llm") is not None
    except ModuleNotFoundError:
        return False


def check_overrides(
    row: Row,
    overrides: Mapping[str, Any] | None = None,
    mock_data: bool = False,
    use_nemo: bool | None = None,
) -> str:
    """Raise a one-line ConfigError for a bad override; return how the check was made."""
    origin = f"row {row.id!r}"
    backend = row.backend
    if backend == "command":
        # "command" is the argv the backend runs; anything else would be silently ignored.
        keys = [*row.overrides, *(overrides or {})]
        extra = list(dict.fromkeys(k for k in keys if k != "command"))
        if extra:
            raise ConfigError(
                f"{origin}: backend 'command' runs a command, it has no recipe to "
                f"override ({', '.join(extra)})"
            )
        return "no recipe overrides (command backend)"
    if backend == "automodel":
        _, source = build_config(
            row, AutomodelInputs(overrides=overrides or {}, mock_data=mock_data)
        )
        return f"checked against {source}"
    if backend == "megatron_bridge":
        return check_bridge_overrides(row, overrides or {}, origin)
    merged = merged_overrides(row.overrides, overrides or {}, normalize_path)
    use_nemo = nemo_importable() if use_nemo is None else use_nemo
    if use_nemo:
        # NeMo loads only here: without it the snapshot below does the check.
        from perfgate.workload.nemo2.recipe import RecipeInputs, build_recipe

        try:
            build_recipe(row, RecipeInputs(overrides=overrides or {}, mock_data=mock_data))
        except ConfigError as e:
            raise ConfigError(f"{origin}: {e}") from None
        return "checked by building the recipe with the installed NeMo"
    nemo2_model(row.model)  # an unknown model is its own clear error
    snapshot = load()
    check_against_snapshot(merged, valid_paths(row.model, row.task, snapshot), origin)
    return f"checked against the snapshot of NeMo {snapshot['versions']['nemo_toolkit']}"
