"""The nemo2 backend on a login node, with or without NeMo: check, describe, environment.

With NeMo importable the recipe is built for real: every override applied, and the dry run
shows the recipe as NeMo-Run serializes it (YAML) with a unified diff against the recipe
function's own performance-mode defaults. Without NeMo the paths are checked against
paths.json (the snapshot the contract test proves current for the pinned NeMo) and the dry
run lists the settings perfgate would apply. Values below a config-valued field the snapshot
records as None cannot be checked there; the job checks them with NeMo before training.
"""

from __future__ import annotations

import difflib
import importlib.util
from typing import Any

from perfgate.catalog.rows import Row
from perfgate.errors import ConfigError
from perfgate.workload.backend import Backend, Overrides
from perfgate.workload.env import nvidia_defaults
from perfgate.workload.nemo2.models import nemo2_model, tp_overlap_config
from perfgate.workload.nemo2.snapshot import load, valid_paths
from perfgate.workload.overrides import check_against_snapshot, merged_overrides, normalize_path


def nemo_importable() -> bool:
    """True when this interpreter has the NeMo 2.x LLM collection."""
    try:
        return importlib.util.find_spec("nemo.collections.llm") is not None
    except ModuleNotFoundError:
        return False


def check_overrides(
    row: Row, overrides: Overrides, mock_data: bool = False, use_framework: bool | None = None
) -> str:
    """Build the recipe with NeMo, or check the paths against the snapshot; say which."""
    origin = f"row {row.id!r}"
    merged = merged_overrides(row.overrides, overrides, normalize_path)
    use_nemo = nemo_importable() if use_framework is None else use_framework
    if use_nemo:
        # NeMo loads only here: without it the snapshot below does the check.
        from perfgate.workload.nemo2.recipe import RecipeInputs, build_recipe

        try:
            build_recipe(row, RecipeInputs(overrides=overrides, mock_data=mock_data))
        except ConfigError as e:
            raise ConfigError(f"{origin}: {e}") from None
        return "checked by building the recipe with the installed NeMo"
    nemo2_model(row.model)  # an unknown model is its own clear error
    snapshot = load()
    check_against_snapshot(merged, valid_paths(row.model, row.task, snapshot), origin)
    return f"checked against the snapshot of NeMo {snapshot['versions']['nemo_toolkit']}"


def env_defaults(row: Row, overrides: Overrides) -> dict[str, str]:
    """NVIDIA's variables for the row's GPU and layout, and for the overrides that need some."""
    return nvidia_defaults(row, merged_overrides(row.overrides, overrides, normalize_path))


def planned_settings(row: Row, steps: int, overrides: Overrides) -> dict:
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


def describe(row: Row, steps: int, overrides: Overrides, use_framework: bool | None = None) -> str:
    """The recipe as YAML and its diff to NeMo's defaults, or without NeMo the settings."""
    use_nemo = nemo_importable() if use_framework is None else use_framework
    if not use_nemo:
        lines = [f"  {k} = {v!r}" for k, v in planned_settings(row, steps, overrides).items()]
        return (
            "NeMo is not importable here: these are the settings perfgate applies to "
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
    return "recipe (YAML, as NeMo-Run serializes it):\n" + ours + "\ndiff:\n" + diff


BACKEND = Backend(
    name="nemo2",
    job="perfgate.workload.nemo2.job",
    check_overrides=check_overrides,
    describe=describe,
    env_defaults=env_defaults,
)
