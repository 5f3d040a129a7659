"""What NVIDIA's NeMo 2.x performance scripts (scripts/performance/llm/*.py) do per model.

Pure data, no NeMo import: which recipe module, the FLOPs formula name, the NullTokenizer
vocabulary, the HF id of fine-tuning checkpoints, the TP-overlap userbuffer configs per GPU
and precision, and the model-specific recipe settings the scripts apply.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from perfgate import hardware
from perfgate.catalog.rows import Row
from perfgate.errors import ConfigError


@dataclass(frozen=True)
class Nemo2Model:
    """One catalog model as the NeMo 2.x recipes and performance scripts know it."""

    recipe: str  # module under nemo.collections.llm.recipes
    flops_name: str  # FLOPsMeasurementCallback model_name
    vocab_size: int  # NullTokenizer vocabulary of the mock-data runs
    hf_id: str | None = None  # checkpoint/tokenizer id of fine-tuning runs
    # (gpu class "h100"/"b200", "bf16"/"fp8") -> userbuffers_* config of tp_overlap_configs
    tp_overlap: dict[tuple[str, str], str] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)  # extra recipe settings by path
    finetune_seq_len_b200: int | None = None  # seq_length the scripts pass on B200/GB200


_LLAMA4_FUSIONS = {
    "model.config.cross_entropy_fusion_impl": "te",
    "model.config.cross_entropy_loss_fusion": True,
    "model.config.apply_rope_fusion": True,
    "model.config.moe_permute_fusion": True,
}

NEMO2_MODELS: dict[str, Nemo2Model] = {
    # No performance script of NVIDIA's: the 1-GPU row scripts/gpu-check --nemo2 runs.
    "llama32_1b": Nemo2Model("llama32_1b", "llama3", 128256, "meta-llama/Llama-3.2-1B"),
    "llama3_8b": Nemo2Model(
        "llama3_8b", "llama3", 128256, "meta-llama/Meta-Llama-3-8B", finetune_seq_len_b200=16384
    ),
    "llama3_70b": Nemo2Model(
        "llama3_70b",
        "llama3",
        128256,
        "meta-llama/Meta-Llama-3-70B",
        tp_overlap={
            ("h100", "bf16"): "userbuffers_bf16_h100_h8192_tp4_mbs1_seqlen8192",
            ("h100", "fp8"): "userbuffers_fp8_h100_h8192_tp4_mbs1_seqlen8192",
            ("b200", "bf16"): "userbuffers_bf16_b200_h8192_tp2_mbs1_seqlen8192",
            ("b200", "fp8"): "userbuffers_fp8_b200_h8192_tp2_mbs1_seqlen8192",
        },
        finetune_seq_len_b200=2048,
    ),
    "llama31_405b": Nemo2Model(
        "llama31_405b",
        "llama3",
        128256,
        "meta-llama/Llama-3.1-405B",
        tp_overlap={
            ("h100", "bf16"): "userbuffers_bf16_h100_h16384_tp8_cp2_mbs1_seqlen8192",
            ("h100", "fp8"): "userbuffers_fp8_h100_h16384_tp8_cp2_mbs1_seqlen8192",
            ("b200", "bf16"): "userbuffers_bf16_b200_h16384_tp4_cp2_mbs1_seqlen8192",
            ("b200", "fp8"): "userbuffers_fp8_b200_h16384_tp4_cp2_mbs1_seqlen8192",
        },
    ),
    "llama4_e16": Nemo2Model(
        "llama4_e16",
        "llama4",
        200000,
        "meta-llama/Llama-4-Scout-17B-16E-Instruct",
        settings=_LLAMA4_FUSIONS,
    ),
    "llama4_e128": Nemo2Model(
        "llama4_e128",
        "llama4",
        200000,
        "meta-llama/Llama-4-Maverick-17B-128E-Instruct",
        settings=_LLAMA4_FUSIONS,
    ),
    "mixtral_8x7b": Nemo2Model("mixtral_8x7b", "mixtral", 32000, "mistralai/Mixtral-8x7B-v0.1"),
    "mixtral_8x22b": Nemo2Model("mixtral_8x22b", "mixtral", 32000, "mistralai/Mixtral-8x22B-v0.1"),
    "nemotronh_56b": Nemo2Model("nemotronh_56b", "nemotronh", 131072),
    "deepseek_v3": Nemo2Model(
        "deepseek_v3",
        "deepseekv3",
        129280,
        "deepseek-ai/DeepSeek-V3-Base",
        settings={
            # The script resets the recipe's recompute and sets the fusions; the token
            # dispatcher depends on the GPU (see deepseek_dispatcher).
            "model.config.recompute_granularity": None,
            "model.config.recompute_method": None,
            "model.config.recompute_num_layers": None,
            "model.config.recompute_modules": None,
            "model.config.moe_permute_fusion": True,
            "model.config.apply_rope_fusion": True,
            "trainer.strategy.account_for_embedding_in_pipeline_split": False,
            "trainer.strategy.account_for_loss_in_pipeline_split": False,
            "trainer.strategy.num_layers_in_first_pipeline_stage": None,
            "trainer.strategy.num_layers_in_last_pipeline_stage": None,
        },
    ),
    "nemotron4_15b": Nemo2Model(
        "nemotron4_15b",
        "nemotron4",
        256000,
        tp_overlap={
            ("b200", "bf16"): "userbuffers_bf16_b200_h6144_tp2_mbs1_seqlen4096",
            ("b200", "fp8"): "userbuffers_bf16_b200_h6144_tp2_mbs1_seqlen4096",
        },
    ),
    "nemotron4_340b": Nemo2Model(
        "nemotron4_340b",
        "nemotron4",
        256000,
        tp_overlap={
            ("b200", "bf16"): "userbuffers_bf16_b200_h18432_tp8_mbs1_seqlen4096",
            ("b200", "fp8"): "userbuffers_fp8_b200_h18432_tp8_mbs1_seqlen4096",
        },
    ),
}


def nemo2_model(name: str) -> Nemo2Model:
    """The NeMo 2.x facts of a catalog model; a clear error lists the supported ones."""
    try:
        return NEMO2_MODELS[name]
    except KeyError:
        known = ", ".join(sorted(NEMO2_MODELS))
        raise ConfigError(
            f"field 'model' is {name!r}: the nemo2 backend has no NeMo 2.x recipe mapping for "
            f"it; supported: {known}"
        ) from None


def nemo2_flops_convention(nemo_version: str) -> str:
    """The FLOPs convention a NeMo 2 version's FLOPs callback counts in (perfgate.flops).

    nemo2: up to v2.5.0rc0 (attention not halved); nemo2_2509: from r2.5.0 final (causal
    halving, NeMo #14424). A version perfgate cannot read counts as the older one.
    """
    m = re.match(r"(\d+)\.(\d+)\.(\d+)(.*)$", nemo_version.strip())
    if not m:
        return "nemo2"
    release, rest = tuple(int(x) for x in m.groups()[:3]), m[4]
    final = not re.match(r"[.+]?(a|b|rc|dev)", rest)  # a local or post suffix is still final
    return "nemo2_2509" if release > (2, 5, 0) or (release == (2, 5, 0) and final) else "nemo2"


def gpu_class(gpu: str) -> str:
    """'b200' for every Blackwell GPU, else 'h100' (the two families NVIDIA tunes for)."""
    return "b200" if hardware.gpu(gpu).blackwell else "h100"


def tp_overlap_config(row: Row) -> str | None:
    """The TP-overlap userbuffers config NVIDIA's scripts pick for the row (pretraining only)."""
    dtype = "bf16" if row.precision == "bf16" else "fp8"
    name = nemo2_model(row.model).tp_overlap.get((gpu_class(row.gpu), dtype))
    return name if row.task == "pretrain" else None


def deepseek_pp_layout(pp: int, vp: int | None) -> list[list[str]] | None:
    """The pipeline layout NVIDIA's DeepSeek-V3 script derives from (PP, VP)."""
    emb, dec, loss = "embedding", "decoder", "loss"
    layouts: dict[tuple[int, int], list[list[str]] | None] = {
        (1, 1): None,
        (4, 1): [[emb] + [dec] * 16, [dec] * 16, [dec] * 16, [dec] * 13 + [loss]],
        (8, 1): [[emb] + [dec] * 8] + [[dec] * 8] * 6 + [[dec] * 5 + [loss]],
        (4, 2): [[emb] + [dec] * 8] + [[dec] * 8] * 6 + [[dec] * 5 + [loss]],
        (16, 1): [[emb] + [dec] * 4] + [[dec] * 4] * 14 + [[dec, loss]],
        (8, 2): [[emb] + [dec] * 4] + [[dec] * 4] * 14 + [[dec, loss]],
        (4, 4): [[emb] + [dec] * 4] + [[dec] * 4] * 14 + [[dec, loss]],
    }
    key = (pp, vp or 1)
    if key not in layouts:
        known = ", ".join(f"pp{p}vp{v}" for p, v in layouts)
        raise ConfigError(
            f"deepseek_v3 with pp={pp} vp={vp}: NVIDIA's script has no pipeline layout for it; "
            f"known: {known}"
        )
    layout = layouts[key]
    return None if layout is None else [list(stage) for stage in layout]


def deepseek_dispatcher(gpu: str) -> dict[str, Any]:
    """DeepEP on H100, all-to-all with shared-expert overlap on Blackwell (as the script)."""
    if gpu_class(gpu) == "h100":
        return {
            "model.config.moe_token_dispatcher_type": "flex",
            "model.config.moe_enable_deepep": True,
            "model.config.moe_shared_expert_overlap": False,
            "model.config.moe_router_force_load_balancing": True,
        }
    return {
        "model.config.moe_token_dispatcher_type": "alltoall",
        "model.config.moe_enable_deepep": False,
        "model.config.moe_shared_expert_overlap": True,
    }
