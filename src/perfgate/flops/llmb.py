"""FLOPs in the "llmb" convention: the hand formulas of NVIDIA's DGX Cloud benchmarking (llmb)
recipe READMEs, kept so baselines taken from them compare like with like.

Only for the families those READMEs print:
- nemotron4 (seed 001, llmb nemotron READMEs): attention as if multi-head (24 L h^2, GQA
  ignored) and not causal (12 L h s), MLP 12 L h ffn, logits 6 V h, all per token;
- llama (seed 004, llmb llama3 LoRA README): 12 s L h^2 (1 + g/n + s/(2h) + 1.5 ffn/h +
  V/(2 L h)), i.e. GQA-aware and causal: the same count as Megatron-LM for a dense Llama.
"""

from __future__ import annotations

from collections.abc import Callable

from perfgate.errors import ConfigError
from perfgate.models import ModelArch


def _nemotron4(m: ModelArch, s: int) -> float:
    h, L, V = m.hidden_size, m.num_layers, m.vocab_size
    attention = 24 * L * h * h + 12 * L * h * s
    mlp = 12 * L * h * m.ffn_hidden_size
    return s * (attention + mlp + 6 * V * h)


def _llama(m: ModelArch, s: int) -> float:
    h, L, V = m.hidden_size, m.num_layers, m.vocab_size
    g, n, ffn = m.num_query_groups, m.num_attention_heads, m.ffn_hidden_size
    return 12 * s * L * h * h * (1 + g / n + 0.5 * s / h + 1.5 * ffn / h + V / (2 * L * h))


# family (perfgate.models) -> the llmb README's formula
FORMULAS: dict[str, Callable[[ModelArch, int], float]] = {"nemotron4": _nemotron4, "llama": _llama}
FAMILIES = tuple(FORMULAS)


def flops_per_sample(m: ModelArch, s: int) -> float:
    """Training FLOPs of one sample as the llmb READMEs count them (nemotron4, llama only)."""
    try:
        formula = FORMULAS[m.family]
    except KeyError:
        raise ConfigError(
            f"the 'llmb' FLOPs convention is only defined for families {', '.join(FAMILIES)} "
            f"(model {m.name!r} is {m.family!r}); use 'nemo2' or 'megatron'"
        ) from None
    return formula(m, s)
