"""FLOPs per sample in the "nemo2_2509" convention: NeMo 2's flops_formulas.py from r2.5.0 on.

What a NeMo 2 log prints as TFLOPS_per_GPU in containers 25.09 and later. NeMo #14424
("Discount FLOPs in dot-product att", r2.5.0) halves the s^2 attention term of the llama3,
nemotron and mixtral formulas for the causal mask; everything else is as in "nemo2": the
vocab NeMo hard-codes per family, and Llama 4 still counted by the llama3 formula (NeMo's FLOPs
callback: `"llama4": flops_formulas.llama3  # TODO`), so its MoE is ignored and vocab is
128256. A Llama 4 log of these containers is ~6% below "nemo2" and matches neither "nemo2"
nor "megatron". The other families (qwen3, deepseekv3, nemotronh, gpt_oss) did not change.
"""

from __future__ import annotations

from perfgate.flops import nemo2
from perfgate.flops.terms import gpt_family_flops
from perfgate.models import ModelArch


def _llama3(m: ModelArch, s: int) -> float:
    mlp = 18 * m.ffn_hidden_size / m.hidden_size
    return gpt_family_flops(m, s, mlp, nemo2.VOCAB["llama3"], True)


def _nemotron(m: ModelArch, s: int) -> float:
    mlp = 12 * m.ffn_hidden_size / m.hidden_size
    return gpt_family_flops(m, s, mlp, nemo2.VOCAB["nemotron"], True)


def _mixtral(m: ModelArch, s: int) -> float:
    mlp = 18 * m.moe_router_topk * m.ffn_hidden_size / m.hidden_size
    return gpt_family_flops(m, s, mlp, nemo2.VOCAB["mixtral"], True)


# family (perfgate.models) -> NeMo r2.5.0's formula for it
FORMULAS: dict[str, nemo2.Formula] = {
    **nemo2.FORMULAS,
    "llama": _llama3,
    "llama4": _llama3,  # still the llama3 formula in NeMo's FLOPs callback
    "nemotron4": _nemotron,
    "mixtral": _mixtral,
}


def flops_per_sample(m: ModelArch, s: int) -> float:
    """Training FLOPs of one sample of s tokens, as NeMo 2 in containers 25.09+ counts them."""
    return nemo2.flops_per_sample(m, s, FORMULAS, "nemo2_2509")
