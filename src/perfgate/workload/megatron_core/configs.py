"""The Megatron-Core configs of a megatron_core row, as plain data, and their field check.

Pure Python: dtypes and the activation are named ("bfloat16", "silu") and resolved to torch
objects in the job (perfgate.workload.megatron_core.trainer), so --dry-run shows exactly the
keyword arguments the job passes. Field names are checked against the installed
Megatron-Core where it is importable (face.check_overrides), else in the job before anything
is built.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import json
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

from perfgate.errors import ConfigError
from perfgate.workload.megatron_core.plan import FAMILIES, CoreSettings
from perfgate.workload.overrides import suggest

# Fused kernels that need Apex, Transformer Engine or torch.compile stay off: a launch must not
# spend its first steps compiling, and the GPU machine this backend targets has neither.
UNFUSED = {
    "masked_softmax_fusion": False,
    "bias_activation_fusion": False,
    "bias_dropout_fusion": False,
    "apply_rope_fusion": False,
    "persist_layer_norm": False,
    "gradient_accumulation_fusion": False,
}
FIELDS = Path(__file__).with_name("fields.json")  # config_fields' snapshot of one version
CONFIG_CLASSES = {
    "model": "megatron.core.transformer.transformer_config.TransformerConfig",
    "optim": "megatron.core.optimizer.optimizer_config.OptimizerConfig",
    "ddp": "megatron.core.distributed.distributed_data_parallel_config."
    "DistributedDataParallelConfig",
}


def transformer_kwargs(s: CoreSettings) -> dict[str, Any]:
    """TransformerConfig keyword arguments (dtypes and activation by name)."""
    a = s.arch
    cuda = s.device == "cuda"
    kwargs: dict[str, Any] = {
        "num_layers": a.num_layers,
        "hidden_size": a.hidden_size,
        "ffn_hidden_size": a.ffn_hidden_size,
        "num_attention_heads": a.num_attention_heads,
        "num_query_groups": a.num_query_groups,
        "kv_channels": a.head_dim,
        "gated_linear_unit": a.gated_linear_unit,
        "activation_func": "silu",
        "normalization": "RMSNorm",
        "layernorm_epsilon": 1e-5,
        "add_bias_linear": False,
        "add_qkv_bias": FAMILIES[a.family][1],
        "hidden_dropout": 0.0,
        "attention_dropout": 0.0,
        "init_method_std": 0.02,
        "bf16": True,
        "params_dtype": "bfloat16",
        "pipeline_dtype": "bfloat16",
        "tensor_model_parallel_size": s.tp,
        "pipeline_model_parallel_size": s.pp,
        # gloo has no reduce-scatter: sequence parallel needs NCCL.
        "sequence_parallel": s.tp > 1 and cuda,
        # On CPU the weights are built there; on GPU straight on the device, as Megatron-LM.
        "use_cpu_initialization": not cuda,
        **UNFUSED,
    }
    kwargs.update(s.transformer)
    return kwargs


def optimizer_kwargs(s: CoreSettings) -> dict[str, Any]:
    """OptimizerConfig keyword arguments: Adam, constant LR, bf16 params with fp32 main params."""
    kwargs: dict[str, Any] = {
        "optimizer": "adam",
        "lr": 3e-4,
        "min_lr": 3e-4,
        "weight_decay": 0.1,
        "adam_beta1": 0.9,
        "adam_beta2": 0.95,
        "adam_eps": 1e-8,
        "clip_grad": 1.0,
        "bf16": True,
        "params_dtype": "bfloat16",
        "use_distributed_optimizer": False,
    }
    kwargs.update(s.optimizer)
    return kwargs


def ddp_kwargs(s: CoreSettings) -> dict[str, Any]:
    """DistributedDataParallelConfig keyword arguments (fp32 gradient reduction, as NeMo)."""
    kwargs: dict[str, Any] = {
        "grad_reduce_in_fp32": True,
        "overlap_grad_reduce": False,
        "overlap_param_gather": False,
        "use_distributed_optimizer": optimizer_kwargs(s)["use_distributed_optimizer"],
    }
    kwargs.update(s.ddp)
    return kwargs


def megatron_importable() -> bool:
    """True when this interpreter has Megatron-Core (its configs import torch)."""
    try:
        return importlib.util.find_spec("megatron.core") is not None
    except ModuleNotFoundError:
        return False


def installed_fields() -> dict[str, set[str]]:
    """Field names of the installed Megatron-Core's three config dataclasses, by section."""
    out = {}
    for section, path in CONFIG_CLASSES.items():
        module, _, name = path.rpartition(".")
        cls = getattr(importlib.import_module(module), name)
        out[section] = {f.name for f in dataclasses.fields(cls)}
    return out


def config_fields(version: str) -> dict[str, set[str]]:
    """The config field names of this Megatron-Core version, from FIELDS where it records it.

    Importing Megatron-Core to list them costs a login node ~6 CPU-seconds (torch, and the
    torch.compile its fusions apply at import); the snapshot is read only for its own version,
    which the contract test proves equal to the installed classes.
    """
    snapshot = json.loads(FIELDS.read_text())
    if snapshot["megatron_core"] != version:
        return installed_fields()
    return {section: set(snapshot[section]) for section in CONFIG_CLASSES}


def write_fields(path: Path = FIELDS) -> None:
    """Write the installed Megatron-Core's config field names to the snapshot (FIELDS)."""
    fields = {k: sorted(v) for k, v in installed_fields().items()}
    data = {"megatron_core": metadata.version("megatron-core"), **fields}
    path.write_text(json.dumps(data, indent=1) + "\n")


def check_fields(s: CoreSettings, fields: Mapping[str, set[str]]) -> None:
    """Raise a one-line ConfigError for an override naming no field of its config."""
    for section, given in (("model", s.transformer), ("optim", s.optimizer), ("ddp", s.ddp)):
        for name in given:
            if name not in fields[section]:
                cls = CONFIG_CLASSES[section].rsplit(".", 1)[1]
                raise ConfigError(
                    f"override '{section}.{name}': {cls} has no field {name!r}"
                    f"{suggest(name, fields[section])}"
                )
