"""Backend "megatron_bridge": what NVIDIA's benchmark scripts add, as pure planning.

Megatron-Bridge >= 0.6 keeps its per-row performance recipes in
`megatron.bridge.perf_recipes.<family>.<gpu>` as functions named
`<model>_<task>_<N>gpu_<gpu>_<precision>[_<variant>]_config`. scripts/performance
(utils/utils.py) runs the recipe of exactly the requested GPU count where one exists, else a
default-count recipe of the same model, task, GPU and precision with the layout and batch
overridden (weak scaling); `pick_perf_recipe` makes the same choice. Where no performance recipe
fits, the row starts from Bridge's library recipe and `fallback_settings` adds what
scripts/performance applies on top of it (utils/overrides.py `_set_common_perf_overrides`,
`set_post_overrides`). `derived_settings` completes knobs that NVIDIA's command-line options
set in groups (CUDA graphs, recompute). `stage_layout` splits layers over pipeline stages for
the MLA models where Bridge's own layout table has no entry.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from typing import Any

from perfgate import models
from perfgate.catalog.rows import Row
from perfgate.workload.bridge.plan import (
    bridge_model,
    bridge_task,
    precision_preset,
)

PERF_NAME = re.compile(
    r"^(?P<model>\w+?)_(?P<task>pretrain|sft|peft)_(?P<gpus>\d+)gpu_(?P<gpu>[a-z0-9]+)_"
    r"(?P<precision>bf16|fp8cs|fp8ds|fp8mx|fp8sc|nvfp4)(?:_(?P<variant>\w+?))?_config$"
)

# scripts/performance utils/utils.py `_DEFAULT_GPU_COUNT_OVERRIDES`: where NVIDIA's default
# recipe is not the largest GPU count. (model, task, gpu, precision tag) -> GPU count.
DEFAULT_GPU_COUNT: dict[tuple[str, str, str, str], int] = {
    **{
        ("llama3_8b", "pretrain", g, p): 8
        for g in ("b200", "gb200", "h100")
        for p in ("bf16", "fp8cs")
    },
    **{("llama3_8b", "pretrain", "gb300", p): 8 for p in ("bf16", "fp8cs", "fp8mx", "nvfp4")},
    ("nemotronh_56b", "pretrain", "b200", "fp8cs"): 64,
    ("nemotronh_56b", "pretrain", "gb300", "fp8cs"): 64,
    **{
        ("qwen3_30b_a3b", "pretrain", g, p): 8
        for g in ("b200", "gb200", "gb300")
        for p in ("bf16", "fp8cs")
    },
    **{("qwen3_30b_a3b", "pretrain", "h100", p): 16 for p in ("bf16", "fp8cs")},
}


def pick_perf_recipe(row: Row, names: Iterable[str]) -> tuple[str, bool] | None:
    """(performance recipe name, whether it is for exactly the row's GPU count), or None.

    Only suffix-less recipes (no config variant) stand for a row, as NVIDIA's default.
    """
    model, task = bridge_model(row.model).prefix, bridge_task(row)
    gpu, tag = row.gpu.lower(), precision_preset(row)[1]
    counts: dict[int, str] = {}
    for name in names:
        m = PERF_NAME.match(name)
        if (
            m
            and not m["variant"]
            and (m["model"], m["task"], m["gpu"], m["precision"])
            == (
                model,
                task,
                gpu,
                tag,
            )
        ):
            counts[int(m["gpus"])] = name
    if not counts:
        return None
    if row.num_gpus in counts:
        return counts[row.num_gpus], True
    default = DEFAULT_GPU_COUNT.get((model, task, gpu, tag))
    return counts[default if default in counts else max(counts)], False


def data_parallel_size(row: Row) -> int:
    """The row's data-parallel size (GPUs over TP x PP x CP)."""
    return max(row.num_gpus // (row.tp * row.pp * row.cp), 1)


def fallback_settings(row: Row) -> dict[str, Any]:
    """What scripts/performance sets on a library recipe, beyond perfgate's benchmark policy."""
    out: dict[str, Any] = {
        "train.manual_gc": True,
        "train.manual_gc_interval": 100,
        # A fixed model shape: no tokenizer may resize the embedding; pad the vocabulary as
        # every performance recipe does.
        "tokenizer.use_tokenizer_vocab_size": False,
        "model.should_pad_vocab": True,
    }
    if row.precision == "bf16":
        out["optimizer.use_precision_aware_optimizer"] = True
    if models.get(row.model).num_experts:
        out["model.moe_router_fusion"] = True
        out["model.moe_permute_fusion"] = True
        out["model.moe_router_force_load_balancing"] = True  # token balance of a trained router
    out.update(overlap_settings(row))
    return out


def overlap_settings(row: Row) -> dict[str, Any]:
    """`set_post_overrides`: overlap the parameter all-gather with the optimizer step where
    DP, PP and VP are all > 1 (not for MXFP8/NVFP4: NaN grad norm there, per NVIDIA)."""
    vp = row.vp or 1
    fp8_blocks = row.precision in ("mxfp8", "nvfp4")
    if data_parallel_size(row) > 1 and row.pp > 1 and vp > 1 and not fp8_blocks:
        return {"optimizer.overlap_param_gather_with_optimizer_step": True}
    return {}


def derived_settings(settings: Mapping[str, Any]) -> dict[str, Any]:
    """The settings NVIDIA's options set together with the ones given (utils/overrides.py).

    A CUDA graph implementation other than "none" needs Transformer Engine's RNG tracker; a
    number of layers to recompute means full block recompute; recompute modules mean
    selective recompute.
    """
    out: dict[str, Any] = {}
    impl = settings.get("model.cuda_graph_impl")
    if impl is not None:
        on = impl != "none"
        out["rng.te_rng_tracker"] = out["model.use_te_rng_tracker"] = on
        if not on:
            out["model.cuda_graph_scope"] = []
    if settings.get("model.recompute_num_layers") is not None:
        out["model.recompute_granularity"] = "full"
        out["model.recompute_method"] = "block"
    if settings.get("model.recompute_modules") is not None:
        out["model.recompute_granularity"] = "selective"
    return {k: v for k, v in out.items() if k not in settings}


def stage_layout(num_layers: int, stages: int, last: list[str]) -> list[list[str]]:
    """Split decoder layers over pipeline stages as Bridge's MLA layout tables do.

    The embedding opens the first stage; every stage holds ceil(layers / stages) decoder
    layers until they run out (later stages may hold fewer, or none); `last` (MTP layers and
    the loss) closes the final stage. Bridge's DeepSeek-V3 and Kimi-K2 tables are this rule
    for the (PP, VP) pairs they list; other pairs get it from here.
    """
    per = math.ceil(num_layers / stages)
    left, layout = num_layers, []
    for i in range(stages):
        n = min(per, left)
        left -= n
        layout.append((["embedding"] if i == 0 else []) + ["decoder"] * n)
    layout[-1] += last
    return layout
