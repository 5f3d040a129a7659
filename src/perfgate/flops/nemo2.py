"""FLOPs per sample in the "nemo2" convention: NeMo 2.x nemo/utils/flops_formulas.py.

This reproduces what NeMo 2.x up to v2.5.0rc0 (containers up to 25.07) logs as TFLOPS_per_GPU,
quirks included, so our figure can be compared with a NeMo 2 log line:
- llama3 / nemotron / mixtral count attention without the causal halving (12 * s / h) and use
  the vocab NeMo hard-codes per family (llama3 128256, nemotron 256000, mixtral 32000);
- NeMo's FLOPs callback maps llama4 to the llama3 formula (a TODO in NeMo): MoE ignored,
  ffn_hidden_size (16384) taken as a dense MLP, vocab 128256;
- the qwen3, deepseekv3 and nemotronh formulas already halve causal attention, and qwen3 (as of
  v2.5.0rc0) ignores a head_dim wider than hidden/heads;
- nemotronh counts its squared-ReLU MLP as if gated (x3 instead of x2).
NeMo r2.5.0 final (NeMo #14424, containers 25.09+) halves attention in those three formulas:
that is the "nemo2_2509" convention (perfgate.flops.nemo2_2509).

Where NeMo 2 has no formula for a family we say what we use: qwen2 (Qwen2.5) takes the qwen3
formula as a dense model (as NeMo Automodel does for Qwen2Config); kimi_k2 takes deepseekv3;
GPT-OSS takes the gpt_oss formula NeMo added after v2.5.0rc0 (NeMo #14457); the MoE layers
("E") of a hybrid model (Nemotron 3 Nano) are counted as NeMo Automodel extends nemotronh
(routed and shared squared-ReLU experts plus the router), since NeMo 2's pattern parser skips
them. Vocab for qwen3/deepseek/nemotronh/gpt_oss is the model's; NeMo's mock-data
NullTokenizer reports one more token, a change below 1e-5 of the total.
"""

from __future__ import annotations

from collections.abc import Callable

from perfgate.flops.terms import (
    deepseekv3_flops,
    gpt_family_flops,
    gpt_oss_flops,
    hybrid_flops,
)
from perfgate.models import ModelArch

# nemo/collections/common/parts/perf_metrics_utils.py LLM_VOCAB_SIZE_MAP
VOCAB = {"llama3": 128256, "nemotron": 256000, "mixtral": 32000}


def _llama3(m: ModelArch, s: int) -> float:
    return gpt_family_flops(m, s, 18 * m.ffn_hidden_size / m.hidden_size, VOCAB["llama3"], False)


def _nemotron(m: ModelArch, s: int) -> float:
    mlp = 12 * m.ffn_hidden_size / m.hidden_size
    return gpt_family_flops(m, s, mlp, VOCAB["nemotron"], False)


def _mixtral(m: ModelArch, s: int) -> float:
    mlp = 18 * m.moe_router_topk * m.ffn_hidden_size / m.hidden_size
    return gpt_family_flops(m, s, mlp, VOCAB["mixtral"], False)


def _qwen3(m: ModelArch, s: int) -> float:
    h, n, g, L = m.hidden_size, m.num_attention_heads, m.num_query_groups, m.num_layers
    if m.is_moe:
        width = (m.moe_ffn_hidden_size or m.ffn_hidden_size) * m.moe_router_topk
    else:
        width = m.ffn_hidden_size
    attention = 6 * L * s * h * h * ((g / n * 2 + 1) + (s / h * 2 * 0.5) + 1)
    mlp = 6 * L * s * h * 3 * width
    return attention + mlp + 6 * s * h * m.vocab_size


# family (perfgate.models) -> NeMo 2.x's formula for it
Formula = Callable[[ModelArch, int], float]
FORMULAS: dict[str, Formula] = {
    "llama": _llama3,
    "llama4": _llama3,  # NeMo's FLOPs callback maps llama4 to llama3 (MoE ignored, see above)
    "nemotron4": _nemotron,
    "mixtral": _mixtral,
    "qwen2": _qwen3,
    "qwen3_moe": _qwen3,
    "deepseek": deepseekv3_flops,
    "nemotronh": hybrid_flops,
    "gpt_oss": lambda m, s: gpt_oss_flops(
        m, s, m.kv_channels or m.hidden_size // m.num_attention_heads
    ),
}


def flops_per_sample(
    m: ModelArch, s: int, formulas: dict[str, Formula] = FORMULAS, convention: str = "nemo2"
) -> float:
    """Training FLOPs of one sample of s tokens, as NeMo 2.x's FLOPs callback counts them
    (formulas: another era's table of the same callback)."""
    try:
        formula = formulas[m.family]
    except KeyError:
        raise AssertionError(f"no {convention} formula for family {m.family!r}") from None
    return formula(m, s)
