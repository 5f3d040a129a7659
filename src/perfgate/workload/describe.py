"""What --dry-run shows for a row: the recipe NeMo would run, and how it differs from NeMo's.

With NeMo importable: the recipe as NeMo-Run serializes it (YAML) and a unified diff against
the recipe function's own performance-mode defaults. Without NeMo: the settings perfgate
would apply, with a line saying NeMo is not importable here.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping
from typing import Any

from perfgate.catalog.rows import Row
from perfgate.workload.automodel.config import AutomodelInputs, build_config, to_yaml
from perfgate.workload.bridge.perf import describe_bridge
from perfgate.workload.bridge.plan import bridge_env_defaults
from perfgate.workload.env import nvidia_defaults
from perfgate.workload.nemo2.models import nemo2_model, tp_overlap_config
from perfgate.workload.overrides import merged_overrides, normalize_path
from perfgate.workload.validate import nemo_importable


def planned_settings(row: Row, steps: int, overrides: Mapping[str, Any]) -> dict:
    """The recipe settings the nemo2 backend applies for the row, by path (no NeMo needed)."""
    model = nemo2_model(row.model)
    plugin = {
        ("bf16", None): "bf16_mixed",
        ("fp8", None): "bf16_with_fp8_mixed",
        ("fp8", "delayed"): "bf16_with_fp8_mixed",
        ("fp8", "current_scaling"): "bf16_with_fp8_current_scaling_mixed",
        ("mxfp8", None): "bf16_with_mxfp8_mixed",
    }.get((row.precision, row.fp8_recipe), f"(none for {row.precision})")
    vp = row.vp or 1
    out: dict[str, Any] = {
        "recipe": f"nemo.collections.llm.recipes.{model.recipe}."
        + (
            "pretrain_recipe(performance_mode=True)"
            if row.task == "pretrain"
            else f"finetune_recipe(peft_scheme={'lora' if row.task == 'lora' else 'none'!r}, "
            f"performance_mode=True, packed_sequence=True, seq_length={row.seq_len})"
        ),
        "trainer.num_nodes": row.nodes,
        "trainer.devices": row.tasks_per_node,
        "trainer.max_steps": steps,
        "trainer.limit_val_batches": 0,
        "trainer.log_every_n_steps": 1,
        "trainer.enable_checkpointing": False,
        "log.ckpt": None,
        "data.global_batch_size": row.gbs,
        "data.micro_batch_size": row.mbs,
        "data.seq_length": row.seq_len,
        "trainer.strategy.tensor_model_parallel_size": row.tp,
        "trainer.strategy.pipeline_model_parallel_size": row.pp,
        "trainer.strategy.context_parallel_size": row.cp,
        "trainer.strategy.virtual_pipeline_model_parallel_size": None if vp == 1 else vp,
        "trainer.strategy.expert_model_parallel_size": row.ep,
        "trainer.strategy.expert_tensor_parallel_size": row.etp,
        "trainer.strategy.sequence_parallel": row.tp > 1,
        "trainer.strategy.fsdp": "megatron" if row.fsdp else None,
        "trainer.plugins": plugin,
        "data.tokenizer": f"NullTokenizer(vocab_size={model.vocab_size})"
        if row.task == "pretrain"
        else f"AutoTokenizer({model.hf_id!r})",
    }
    if row.task == "pretrain":
        out["trainer.callbacks.FLOPsMeasurementCallback.model_name"] = model.flops_name
    ub = tp_overlap_config(row)
    if ub:
        out["trainer.callbacks.MegatronCommOverlapCallback.tp_comm_overlap_cfg"] = ub
    out.update(model.settings)
    out.update(merged_overrides(row.overrides, overrides, normalize_path))
    return out


def describe(
    row: Row,
    overrides: Mapping[str, Any] | None = None,
    steps: int = 50,
    use_nemo: bool | None = None,
) -> str:
    """The text --dry-run prints for a row's workload."""
    overrides = overrides or {}
    backend = row.backend
    env: dict[str, str] = {}
    if backend == "nemo2":
        env = nvidia_defaults(row, merged_overrides(row.overrides, overrides, normalize_path))
    elif backend == "megatron_bridge":
        env = bridge_env_defaults(row)
    env_text = "\n".join(f"  {k}={v}" for k, v in sorted({**env, **row.env}.items()))
    head = f"workload {row.id} (backend {backend})\nenvironment set in the job:\n{env_text}\n"
    if backend == "automodel":
        cfg, source = build_config(row, AutomodelInputs(steps=steps, overrides=overrides))
        return head + f"Automodel benchmark config (base: {source}):\n" + to_yaml(cfg)
    if backend == "megatron_bridge":
        return head + describe_bridge(row, steps, overrides)
    if backend != "nemo2":
        body = json.dumps({"overrides": {**row.overrides, **overrides}}, indent=1)
        return head + f"backend {backend}: recipe text is not rendered on the login node\n{body}\n"
    use_nemo = nemo_importable() if use_nemo is None else use_nemo
    if not use_nemo:
        lines = [f"  {k} = {v!r}" for k, v in planned_settings(row, steps, overrides).items()]
        return (
            head + "NeMo is not importable here: these are the settings perfgate applies to "
            "NeMo's recipe in the job:\n" + "\n".join(lines) + "\n"
        )
    # NeMo loads only here: a login node without it gets the settings above instead.
    from nemo_run.core.serialization.yaml import YamlSerializer

    from perfgate.workload.nemo2.recipe import RecipeInputs, build_recipe, recipe_function

    recipe = build_recipe(row, RecipeInputs(steps=steps, overrides=overrides))
    default = recipe_function(row, RecipeInputs(steps=steps))
    ours = YamlSerializer().serialize(recipe)
    theirs = YamlSerializer().serialize(default)
    diff = "".join(
        difflib.unified_diff(
            theirs.splitlines(keepends=True),
            ours.splitlines(keepends=True),
            fromfile=f"{nemo2_model(row.model).recipe} (NeMo's defaults)",
            tofile=f"{row.id} (perfgate)",
        )
    )
    return head + "recipe (YAML, as NeMo-Run serializes it):\n" + ours + "\ndiff:\n" + diff
