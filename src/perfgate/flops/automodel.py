"""FLOPs in the "automodel" convention: what NeMo Automodel's benchmark recipe publishes.

nemo_automodel/components/utils/flops_utils.py (commit bb0c0bfb0, the one that published seed
003), chosen by the HF config class as Automodel does, quirks included: Llama by the llama2
formula (causal), Qwen2 and Qwen3-MoE by qwen3_flops, DeepSeek-V3/Kimi-K2 by deepseekv3_flops
with every layer an MoE (their HF config.json carries moe_layer_freq=1, which Automodel reads
before first_k_dense_replace) and no MTP (the HF config has no mtp_num_layers), GPT-OSS with
kv_channels = hidden // heads (45: the HF config names its 64 head_dim differently), and
Nemotron-H with d_inner = mamba heads x head dim and the router counted. LoRA scales by
(2 + lora_params / frozen_params) / 3 (rank-16 adapters on every linear layer, as the seed's
YAMLs set), not by 2/3.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from perfgate.errors import ConfigError
from perfgate.flops.terms import deepseekv3_flops, gpt_oss_flops, hybrid_flops
from perfgate.models import ModelArch


def _llama2(m: ModelArch, s: int) -> float:
    h, n, g, L = m.hidden_size, m.num_attention_heads, m.num_query_groups, m.num_layers
    ffn = m.ffn_hidden_size
    return s * L * h * h * (12 + 12 * g / n + 18 * ffn / h + 6 * s / h + 6 * m.vocab_size / (L * h))


def _qwen3(m: ModelArch, s: int) -> float:
    h, n, g, L = m.hidden_size, m.num_attention_heads, m.num_query_groups, m.num_layers
    ratio = m.head_dim * n / h
    if m.is_moe:
        width = (m.moe_ffn_hidden_size or m.ffn_hidden_size) * m.moe_router_topk
    else:
        width = m.ffn_hidden_size
    attention = 6 * L * s * h * h * ratio * ((g / n * 2 + 1) + (s / h * 2 * 0.5) + 1)
    return attention + 6 * L * s * h * 3 * width + 6 * s * h * m.vocab_size


def _deepseekv3(m: ModelArch, s: int) -> float:
    # Automodel reads moe_layer_freq=1 from the HF config (every layer MoE) and finds no MTP.
    as_read = replace(m, moe_layer_freq=(1,) * m.num_layers, mtp_num_layers=0)
    return deepseekv3_flops(as_read, s)


# family (perfgate.models) -> Automodel's formula for it (Nemotron-H: exactly NeMo 2's)
FORMULAS: dict[str, Callable[[ModelArch, int], float]] = {
    "llama": _llama2,
    "qwen2": _qwen3,
    "qwen3_moe": _qwen3,
    "deepseek": _deepseekv3,
    "gpt_oss": lambda m, s: gpt_oss_flops(m, s, m.hidden_size // m.num_attention_heads),
    "nemotronh": hybrid_flops,
}


def flops_per_sample(m: ModelArch, s: int) -> float:
    """Training FLOPs of one sample as NeMo Automodel's benchmark recipe counts them."""
    try:
        formula = FORMULAS[m.family]
    except KeyError:
        raise ConfigError(
            f"the 'automodel' FLOPs convention has no formula for model {m.name!r} "
            f"(family {m.family!r}); use 'nemo2' or 'megatron'"
        ) from None
    return formula(m, s)


def lora_params(m: ModelArch, rank: int = 16) -> tuple[int, int]:
    """(adapter params, frozen params) for rank-r LoRA on every linear layer of a dense model."""
    h, L = m.hidden_size, m.num_layers
    q, kv, ffn = (
        m.head_dim * m.num_attention_heads,
        m.head_dim * m.num_query_groups,
        m.ffn_hidden_size,
    )
    linears = [(h, q), (h, kv), (h, kv), (q, h), (h, ffn), (h, ffn), (ffn, h)]
    adapters = L * sum(rank * (i + o) for i, o in linears)
    frozen = L * (sum(i * o for i, o in linears) + 2 * h) + 2 * m.vocab_size * h + h
    return adapters, frozen


def lora_multiplier(m: ModelArch, rank: int = 16) -> float:
    """Automodel's PEFT scaling of full-training FLOPs: (2 + lora / frozen) / 3."""
    if m.is_moe or m.is_hybrid or m.is_mla:
        raise ConfigError(f"no Automodel LoRA parameter count for model {m.name!r}")
    adapters, frozen = lora_params(m, rank)
    return (2 + adapters / frozen) / 3
