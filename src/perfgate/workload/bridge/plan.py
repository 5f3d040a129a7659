"""Backend "megatron_bridge", the part without Megatron-Bridge: which recipe, which settings.

Pure Python. The row picks (1) NVIDIA's flat performance recipe of Megatron-Bridge >= 0.6
(`megatron.bridge.perf_recipes`, `<model>_<task>_<N>gpu_<gpu>_<precision>_config`) when
the installed Bridge has one for exactly this row, else (2) the library recipe
(`megatron.bridge.recipes.<family>.<module>.<model>_{pretrain,sft,peft}_config`) with what
scripts/performance applies on top (utils/overrides.py `_set_common_perf_overrides`,
utils/precision.py). Either way the row's own fields and the overrides are set last, by
dotted path on the ConfigContainer.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from perfgate import models
from perfgate.catalog.rows import Row
from perfgate.errors import ConfigError
from perfgate.workload.overrides import merged_overrides, suggest


@dataclass(frozen=True)
class BridgeModel:
    """Where a catalog model's Megatron-Bridge recipes live."""

    module: str  # under megatron.bridge.recipes
    prefix: str  # function name prefix: <prefix>_pretrain_config, _sft_config, _peft_config
    finetune: bool = True  # the module has _sft_config / _peft_config for it


BRIDGE_MODELS: dict[str, BridgeModel] = {
    "llama3_8b": BridgeModel("llama.llama3", "llama3_8b"),
    "llama3_70b": BridgeModel("llama.llama3", "llama3_70b"),
    "llama31_405b": BridgeModel("llama.llama3", "llama31_405b"),
    "deepseek_v3": BridgeModel("deepseek.deepseek_v3", "deepseek_v3", finetune=False),
    "kimi_k2": BridgeModel("kimi.kimi_k2", "kimi_k2", finetune=False),
    "nemotronh_56b": BridgeModel("nemotronh.nemotronh", "nemotronh_56b"),
    "nemotron_nano_v3_30b": BridgeModel("nemotronh.nemotron_3_nano", "nemotron_3_nano"),
    "nemotron_3_super": BridgeModel("nemotronh.nemotron_3_super", "nemotron_3_super"),
    "nemotron_3_5_lightning": BridgeModel("nemotronh.nemotron_3_nano", "nemotron_3_5_lightning"),
    "qwen3_30b_a3b": BridgeModel("qwen.qwen3_moe", "qwen3_30b_a3b"),
    "qwen3_235b_a22b": BridgeModel("qwen.qwen3_moe", "qwen3_235b_a22b"),
    "gpt_oss_20b": BridgeModel("gpt_oss.gpt_oss", "gpt_oss_20b"),
    "gpt_oss_120b": BridgeModel("gpt_oss.gpt_oss", "gpt_oss_120b"),
}

# (precision, fp8_recipe) -> (megatron.bridge.training.mixed_precision preset, flat-name tag).
# A plain "fp8" is current scaling: what Bridge's performance recipes and scripts/performance
# benchmark as FP8 (perf_recipes/_common.py _perf_precision("fp8_cs")).
PRECISIONS: dict[tuple[str, str | None], tuple[str, str]] = {
    ("bf16", None): ("bf16_mixed", "bf16"),
    ("fp8", None): ("bf16_with_fp8_current_scaling_mixed", "fp8cs"),
    ("fp8", "delayed"): ("bf16_with_fp8_delayed_scaling_mixed", "fp8ds"),
    ("fp8", "current_scaling"): ("bf16_with_fp8_current_scaling_mixed", "fp8cs"),
    ("fp8", "subchannel_scaling"): ("bf16_with_fp8_subchannel_scaling_mixed", "fp8sc"),
    ("mxfp8", None): ("bf16_with_mxfp8_mixed", "fp8mx"),
    ("nvfp4", None): ("bf16_with_nvfp4_mixed", "nvfp4"),
}

# ConfigContainer's sections (Megatron-Bridge 0.6 training/config.py), the first segment of a
# path; env_vars and validation are new in 0.6.
SECTIONS = (
    "model",
    "train",
    "validation",
    "env_vars",
    "optimizer",
    "scheduler",
    "ddp",
    "dataset",
    "logger",
    "tokenizer",
    "checkpoint",
    "dist",
    "rng",
    "rerun_state_machine",
    "mixed_precision",
    "comm_overlap",
    "profiling",
    "ft",
    "straggler",
    "nvrx_straggler",
    "peft",
    "inprocess_restart",
    "tensor_inspect",
    "optimizer_config_override_provider",
)


def bridge_model(name: str) -> BridgeModel:
    """The Bridge recipe of a catalog model; a clear error lists the supported ones."""
    try:
        return BRIDGE_MODELS[name]
    except KeyError:
        raise ConfigError(
            f"field 'model' is {name!r}: the megatron_bridge backend has no Megatron-Bridge recipe "
            f"mapping for it; supported: {', '.join(sorted(BRIDGE_MODELS))}"
        ) from None


def precision_preset(row: Row) -> tuple[str, str]:
    """(mixed-precision preset function, flat-recipe precision tag) for the row."""
    key = (row.precision, row.fp8_recipe)
    if key not in PRECISIONS:
        known = ", ".join(f"{p}/{r or '-'}" for p, r in PRECISIONS)
        raise ConfigError(
            f"fields 'precision'/'fp8_recipe' are {key[0]!r}/{key[1]!r}: Megatron-Bridge offers "
            f"{known}"
        )
    return PRECISIONS[key]


def bridge_task(row: Row) -> str:
    """'pretrain', 'sft' or 'peft' (Bridge's names; a LoRA row is a PEFT recipe)."""
    names = {"pretrain": "pretrain", "sft": "sft", "lora": "peft"}
    if row.task not in names:
        raise ConfigError(f"field 'task' is {row.task!r}: expected pretrain, sft or lora")
    return names[row.task]


def recipe_call(row: Row) -> tuple[str, str, dict[str, Any]]:
    """(module, function, kwargs) of the library recipe for the row."""
    model, task = bridge_model(row.model), bridge_task(row)
    if task != "pretrain" and not model.finetune:
        raise ConfigError(f"Megatron-Bridge has no {task} recipe for model {row.model!r}")
    kwargs = {"peft_scheme": "lora"} if task == "peft" else {}
    return f"megatron.bridge.recipes.{model.module}", f"{model.prefix}_{task}_config", kwargs


def perf_recipe_name(row: Row) -> str:
    """The name NVIDIA's flat performance recipe for exactly this row would have (>= 0.6)."""
    model, task = bridge_model(row.model), bridge_task(row)
    tag = precision_preset(row)[1]
    return f"{model.prefix}_{task}_{row.num_gpus}gpu_{row.gpu.lower()}_{tag}_config"


def planned_settings(row: Row, steps: int) -> dict[str, Any]:
    """The settings perfgate puts on the ConfigContainer for the row, by path, in order.

    The benchmark policy of scripts/performance (no eval, no checkpoint, log every step, no
    NaN checks, LR schedule within the run, TE fusions) and then the row's layout and batch.
    """
    out: dict[str, Any] = {
        "train.train_iters": steps,
        "train.eval_iters": 0,
        "checkpoint.save": None,
        "logger.log_interval": 1,
        "logger.tensorboard_dir": None,
        # The phases of each step (perfgate.logs.phases): Megatron's level-1 timers, printed
        # by the last rank after each iteration line; no global barrier per timer (README,
        # "Where the time went": what level 1 costs, and why not level 2).
        "logger.timing_log_level": 1,
        "logger.timing_log_option": "minmax",
        "model.barrier_with_L1_time": False,
        "ddp.check_for_nan_in_grad": False,
        "ddp.check_for_large_grads": False,
        "rerun_state_machine.check_for_nan_in_loss": False,
        "scheduler.lr_decay_iters": steps,
        "scheduler.lr_warmup_iters": min(10, max(steps - 1, 0)),
        "model.apply_rope_fusion": True,
        "model.cross_entropy_fusion_impl": "te",
        "ddp.grad_reduce_in_fp32": False,
        "model.tensor_model_parallel_size": row.tp,
        "model.pipeline_model_parallel_size": row.pp,
        "model.context_parallel_size": row.cp,
        "model.virtual_pipeline_model_parallel_size": None if row.vp in (None, 1) else row.vp,
        "model.expert_model_parallel_size": row.ep,
        "model.sequence_parallel": row.tp > 1,
        "model.seq_length": row.seq_len,
        "train.global_batch_size": row.gbs,
        "train.micro_batch_size": row.mbs,
        "tokenizer.tokenizer_type": "NullTokenizer",
        "tokenizer.vocab_size": models.get(row.model).vocab_size,
    }
    if row.etp is not None:  # unset: the recipe's expert TP (NVIDIA's MoE recipes set 1)
        out["model.expert_tensor_parallel_size"] = row.etp
    out.update(fsdp_settings(row.fsdp))
    return out


def fsdp_settings(fsdp: bool) -> dict[str, Any]:
    """Megatron FSDP on or off as the row says, whatever the recipe chose.

    On: scripts/performance utils/overrides.py `_set_megatron_fsdp_overrides`, plus the
    checkpoint format Bridge's validate() demands with Megatron FSDP (fsdp_dtensor) and no
    checkpoint to load (a benchmark starts from random weights).
    """
    if not fsdp:
        return {"ddp.use_megatron_fsdp": False}
    return {
        "ddp.use_megatron_fsdp": True,
        "ddp.data_parallel_sharding_strategy": "optim_grads_params",
        "ddp.keep_fp8_transpose_cache": False,
        "ddp.average_in_collective": False,  # not supported with Megatron FSDP
        "model.init_model_with_meta_device": True,
        "model.gradient_accumulation_fusion": True,
        "checkpoint.load": None,
        "checkpoint.ckpt_format": "fsdp_dtensor",
    }


def peft_checkpoint(row: Row, overrides: Mapping[str, Any]) -> str | None:
    """The base-model checkpoint a LoRA row loads; a clear error where none is given.

    Bridge applies LoRA on top of loaded base weights: validate() requires
    checkpoint.pretrained_checkpoint and the PEFT setup loads it (a Megatron or Hugging Face
    checkpoint folder of the base model), as scripts/performance's --pretrained_checkpoint.
    """
    if bridge_task(row) != "peft":
        return None
    settings = merged_overrides(row.overrides, overrides, section_path)
    path = settings.get("checkpoint.pretrained_checkpoint")
    if not path:
        raise ConfigError(
            f"row {row.id!r} is a LoRA (PEFT) row: Megatron-Bridge loads the base model's weights "
            "before adding adapters; give its checkpoint folder with --override "
            "checkpoint.pretrained_checkpoint=PATH (a Megatron or Hugging Face checkpoint of "
            f"{row.model}, readable on every node)"
        )
    return str(path)


def section_path(raw: str) -> str:
    """The backend's path rule: a dotted path on the ConfigContainer, `recipe.` dropped,
    starting with one of its SECTIONS (the fields below are checked in the job)."""
    path = str(raw).strip()
    if path.startswith("recipe."):
        path = path[len("recipe.") :]
    parts = path.split(".")
    if any(not p for p in parts):
        raise ConfigError(f"override path {raw!r} has an empty segment")
    if parts[0] not in SECTIONS:
        raise ConfigError(
            f"override path {raw!r}: ConfigContainer has no section {parts[0]!r}"
            f"{suggest(parts[0], SECTIONS)}; sections: {', '.join(SECTIONS)}"
        )
    return path


def set_attr_path(root: Any, path: str, value: Any, origin: str = "override") -> None:
    """Set a dotted path on nested config objects; each segment must be an existing field."""
    parts = path.split(".")
    node = root
    for i, name in enumerate(parts):
        here = ".".join(parts[:i]) or "ConfigContainer"
        if isinstance(node, dict):
            if i == len(parts) - 1:
                node[name] = value  # e.g. env_vars.NCCL_X: dict entries may be added
                return
            if name not in node:
                raise ConfigError(f"{origin} {path!r}: {here} has no key {name!r}")
            node = node[name]
            continue
        fields = field_names(node)
        if name not in fields:
            kind = type(node).__name__
            hint = suggest(name, fields)
            if node is None:
                raise ConfigError(f"{origin} {path!r}: {here} is None, not a config object")
            raise ConfigError(f"{origin} {path!r}: {kind} ({here}) has no field {name!r}{hint}")
        if i == len(parts) - 1:
            setattr(node, name, value)
            return
        node = getattr(node, name)


def field_names(obj: Any) -> set[str]:
    """Dataclass fields plus settable properties (Bridge aliases some fields that way)."""
    if not dataclasses.is_dataclass(obj) or isinstance(obj, type):
        return set()
    names = {f.name for f in dataclasses.fields(obj)}
    for cls in type(obj).__mro__:
        names |= {k for k, v in vars(cls).items() if isinstance(v, property) and v.fset}
    return names
