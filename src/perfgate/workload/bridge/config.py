"""Backend "megatron_bridge": build a row's ConfigContainer with the installed Megatron-Bridge.

Imports Megatron-Bridge (and so transformer_engine) inside the functions only: a login node
plans these rows without either. The choice of recipe and the settings are planned in
plan / perf (pure Python); here they meet Bridge's objects.
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from perfgate import models
from perfgate.catalog.rows import Row
from perfgate.errors import ConfigError
from perfgate.workload.bridge.perf import (
    derived_settings,
    fallback_settings,
    pick_perf_recipe,
    stage_layout,
)
from perfgate.workload.bridge.plan import (
    bridge_task,
    peft_checkpoint,
    planned_settings,
    precision_preset,
    recipe_call,
    section_path,
    set_attr_path,
)
from perfgate.workload.dispatch import WorkloadFailed
from perfgate.workload.overrides import merged_overrides
from perfgate.workload.runtime import one_line_error

PERF_PACKAGE = "megatron.bridge.perf_recipes"
_RECIPE_DEF = re.compile(r"^def (\w+_config)\(", re.MULTILINE)


def perf_recipe_names() -> set[str]:
    """Every performance recipe function name of the installed Bridge (its source, unimported)."""
    spec = importlib.util.find_spec(PERF_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return set()
    names: set[str] = set()
    for folder in spec.submodule_search_locations:
        for path in Path(folder).rglob("*.py"):
            names.update(_RECIPE_DEF.findall(path.read_text()))
    return names


def find_perf_recipe(name: str) -> Any | None:
    """The performance recipe function of that name, as scripts/performance finds it: each
    model family package of megatron.bridge.perf_recipes exports its GPUs' recipes."""
    try:
        perf = importlib.import_module(PERF_PACKAGE)
    except ImportError:
        return None
    for info in sorted(pkgutil.iter_modules(perf.__path__), key=lambda i: i.name):
        if not info.ispkg or info.name.startswith("_"):
            continue
        try:
            family = importlib.import_module(f"{PERF_PACKAGE}.{info.name}")
        except ImportError:  # a family needing what this container lacks (e.g. video models)
            continue
        fn = getattr(family, name, None)
        if callable(fn):
            return fn
    return None


def _recipe(row: Row) -> tuple[Any, str, bool]:
    """(ConfigContainer, where it came from, whether it is NVIDIA's recipe for this exact row)."""
    picked = pick_perf_recipe(row, perf_recipe_names())
    if picked is not None:
        name, exact = picked
        fn = find_perf_recipe(name)
        if fn is not None:
            scaled = "" if exact else f" (scaled to {row.num_gpus} GPUs)"
            return fn(), f"{PERF_PACKAGE} {name}{scaled}", exact
    module, fn_name, kwargs = recipe_call(row)
    fn = getattr(importlib.import_module(module), fn_name, None)
    if fn is None:
        raise ConfigError(f"this Megatron-Bridge has no recipe {module}.{fn_name}")
    cfg = fn(**kwargs)
    from megatron.bridge.training import mixed_precision

    preset = precision_preset(row)[0]
    if not hasattr(mixed_precision, preset):
        raise ConfigError(f"this Megatron-Bridge has no mixed-precision preset {preset}")
    cfg.mixed_precision = getattr(mixed_precision, preset)()
    if preset == "bf16_with_fp8_current_scaling_mixed":
        cfg.mixed_precision.first_last_layers_bf16 = False  # as perf_recipes _perf_precision
    return cfg, f"{module}.{fn_name}", False


def mock_dataset(seq_len: int, old: Any) -> Any:
    """scripts/performance utils/datasets.py `create_mock_dataset_config`."""
    from megatron.bridge.training.config import MockGPTDatasetConfig

    return MockGPTDatasetConfig(
        seq_length=seq_len,
        random_seed=1234,
        reset_attention_mask=False,
        reset_position_ids=False,
        eod_mask_loss=False,
        num_dataset_builder_threads=1,
        split="99990,8,2",
        data_sharding=True,
        dataloader_type="single",
        num_workers=getattr(old, "num_workers", 8),
        pin_memory=getattr(old, "pin_memory", False),
        persistent_workers=getattr(old, "persistent_workers", False),
    )


def build_config(
    row: Row, steps: int, overrides: Mapping[str, Any], mock_data: bool
) -> tuple[Any, str]:
    """The row's ConfigContainer and which recipe it started from."""
    task = row.task
    if task != "pretrain" and not mock_data:
        raise ConfigError(
            f"row {row.id!r}: the megatron_bridge backend fine-tunes on mock data only "
            "(--mock-finetune-data); for SQuAD run Bridge's scripts/performance with backend "
            "'command'"
        )
    recipe_call(row)  # an unmapped model or task is a ConfigError before any import
    pretrained = peft_checkpoint(row, overrides)
    try:
        importlib.import_module("megatron.bridge")
    except ImportError as e:
        raise WorkloadFailed(
            f"Megatron-Bridge cannot be imported in this container ({one_line_error(e)})"
        ) from None
    cfg, source, exact = _recipe(row)
    if not isinstance(cfg.mixed_precision, str):
        cfg.mixed_precision.grad_reduce_in_fp32 = False
    cfg.dataset = mock_dataset(row.seq_len, cfg.dataset)
    # SFT on random weights: Bridge's finetune() would load a checkpoint; perfgate trains
    # through pretrain() instead. LoRA loads the base model given (peft_checkpoint).
    cfg.checkpoint.pretrained_checkpoint = pretrained
    user = merged_overrides(row.overrides, overrides, section_path)
    settings = {
        **planned_settings(row, steps),
        **({} if exact else fallback_settings(row)),
        **user,
    }
    settings.update(derived_settings(settings))
    for path, value in settings.items():
        set_attr_path(cfg, path, value)
    finish(cfg, row, user)
    return cfg, source


def finish(cfg: Any, row: Row, user: Mapping[str, Any]) -> None:
    """What depends on the config's objects: FSDP's comm-overlap limit, the pipeline layout
    of the MLA models, EP overlap without VP, the MoE dispatcher backend, PEFT's rank mapping
    (utils/overrides.py)."""
    overlap = getattr(cfg, "comm_overlap", None)
    if row.fsdp and overlap is not None and getattr(overlap, "defer_embedding_wgrad_compute", 0):
        overlap.defer_embedding_wgrad_compute = False  # cannot work with Megatron FSDP
    if "model.pipeline_model_parallel_layout" not in user:
        set_pipeline_layout(cfg.model, row)
    if (
        overlap is not None
        and getattr(overlap, "overlap_moe_expert_parallel_comm", None)
        and row.pp > 1
        and getattr(cfg.model, "virtual_pipeline_model_parallel_size", None) is None
        and "comm_overlap.overlap_moe_expert_parallel_comm" not in user
    ):
        # EP all-to-all overlap needs interleaved stages; a row published without VP (the
        # 26.04 tables) ran without it, and delayed wgrad needs that overlap in turn.
        overlap.overlap_moe_expert_parallel_comm = False
        if "comm_overlap.delay_wgrad_compute" not in user:
            overlap.delay_wgrad_compute = False
    backend = user.get("model.moe_flex_dispatcher_backend")
    if backend:
        from megatron.bridge.training.flex_dispatcher_backend import apply_flex_dispatcher_backend

        apply_flex_dispatcher_backend(cfg.model, backend)
    if getattr(cfg.model, "moe_flex_dispatcher_backend", None) == "hybridep":
        cfg.model.moe_hybridep_num_sms = 32
    if bridge_task(row) == "peft" and row.pp > 1 and not row.fsdp:
        cfg.dist.use_tp_pp_dp_mapping = True


def set_pipeline_layout(model: Any, row: Row) -> None:
    """Recompute DeepSeek-V3's / Kimi-K2's explicit stage layout for the row's PP and VP.

    Their recipes carry a layout for the recipe's own PP x VP; a row with another one
    conflicts with it. Bridge's own functions compute the new one (as scripts/performance
    does); for a (PP, VP) their tables lack, stage_layout applies the same rule.
    """
    if row.model not in ("deepseek_v3", "kimi_k2"):
        return
    pp, vp = row.pp, row.vp or 1
    if row.model == "deepseek_v3":
        from megatron.bridge.recipes.deepseek.deepseek_v3 import (
            set_deepseek_v3_pipeline_model_parallel_layout,
        )

        model.pipeline_model_parallel_layout = None
        set_deepseek_v3_pipeline_model_parallel_layout(model)
        last = ["mtp"] * (getattr(model, "mtp_num_layers", None) or 0) + ["loss"]
    else:
        from megatron.bridge.recipes.kimi.kimi_k2 import _get_kimi_k2_pipeline_layout

        try:
            model.pipeline_model_parallel_layout = _get_kimi_k2_pipeline_layout(pp, vp)
        except ValueError:  # a (PP, VP) Bridge's table does not list
            model.pipeline_model_parallel_layout = None
        last = ["loss"]
    if model.pipeline_model_parallel_layout is None and pp * vp > 1:
        model.pipeline_model_parallel_layout = stage_layout(
            models.get(row.model).num_layers, pp * vp, last
        )
