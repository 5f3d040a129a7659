"""The megatron_core backend on a login node, without torch: check, describe, environment.

The row and every override are checked here (plan.settings_for: the layout, the sections,
the refused rows); config field names too where this interpreter has Megatron-Core, else the
job checks them before anything is built. The dry run lists the model, the layout and the
keyword arguments of the three configs exactly as the job passes them.
"""

from __future__ import annotations

import json
from importlib import metadata

from perfgate.catalog.rows import Row
from perfgate.errors import ConfigError
from perfgate.workload.backend import Backend, Overrides
from perfgate.workload.megatron_core.configs import (
    check_fields,
    config_fields,
    ddp_kwargs,
    megatron_importable,
    optimizer_kwargs,
    transformer_kwargs,
)
from perfgate.workload.megatron_core.plan import FAMILIES, settings_for


def check_overrides(
    row: Row, overrides: Overrides, mock_data: bool = False, use_framework: bool | None = None
) -> str:
    """Raise a one-line ConfigError for a bad row or override; return how it was checked."""
    try:
        s = settings_for(row, overrides)
    except ConfigError as e:
        raise ConfigError(str(e) if str(e).startswith("row ") else f"row {row.id!r}: {e}") from None
    use_megatron = megatron_importable() if use_framework is None else use_framework
    if not use_megatron:
        return (
            "checked the layout and override sections; config field names are checked in the "
            "job against the installed Megatron-Core"
        )
    version = metadata.version("megatron-core")
    try:
        check_fields(s, config_fields(version))
    except ConfigError as e:
        raise ConfigError(f"row {row.id!r}: {e}") from None
    return f"checked against Megatron-Core {version}'s config fields"


def describe(row: Row, steps: int, overrides: Overrides, use_framework: bool | None = None) -> str:
    """What --dry-run shows below the environment: model, layout, the configs' arguments."""
    s = settings_for(row, overrides)
    a = s.arch
    lines = [
        f"model: Megatron-Core GPTModel, local layer spec, core attention {s.core_attention}; "
        f"{a.num_layers} layers, hidden {a.hidden_size}, ffn {a.ffn_hidden_size}, "
        f"{a.num_attention_heads} heads / {a.num_query_groups} query groups, vocab "
        f"{a.vocab_size} (padded {s.padded_vocab}), RoPE base {FAMILIES[a.family][0]:g}",
        f"layout: tp {s.tp} pp {s.pp} dp {s.dp}; mbs {s.mbs} x {s.num_microbatches} "
        f"micro-batches = gbs {s.gbs} of seq {s.seq_len} on {s.device}; {steps} steps, "
        "mock tokens",
    ]
    for name, kwargs in (
        ("TransformerConfig", transformer_kwargs(s)),
        ("OptimizerConfig", optimizer_kwargs(s)),
        ("DistributedDataParallelConfig", ddp_kwargs(s)),
    ):
        lines.append(f"{name}: {json.dumps(kwargs, sort_keys=True)}")
    return "\n".join(lines) + "\n"


def env_defaults(row: Row, overrides: Overrides | None = None) -> dict[str, str]:
    """Variables set before CUDA and NCCL start (the row's env and the user's win over them)."""
    env = {
        "TORCH_NCCL_AVOID_RECORD_STREAMS": "1",
        "NCCL_NVLS_ENABLE": "0",
        # Fragmentation at seq 4096 with a 128k vocab (fp32 logits) costs GiBs otherwise.
        "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True",
    }
    if row.tp > 1:  # sequence parallel's communication is issued in program order
        env["CUDA_DEVICE_MAX_CONNECTIONS"] = "1"
    return env


BACKEND = Backend(
    name="megatron_core",
    job="perfgate.workload.megatron_core.job",
    check_overrides=check_overrides,
    describe=describe,
    env_defaults=env_defaults,
)
