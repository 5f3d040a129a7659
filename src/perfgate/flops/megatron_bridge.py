"""FLOPs per sample in the "megatron_bridge" convention: Megatron-Bridge's flop_utils from v0.5.0.

What Megatron-Bridge (NeMo containers 26.06 and later) logs as TFLOP/s/GPU. It is Megatron-LM's
count ("megatron") except for sliding-window attention, which Megatron-LM counts as full causal
attention: Bridge v0.5.0 (training/utils/flop_utils.py, from #3029) gives each windowed layer
the exact mean causal context of a window of W = window_size[0] + window_size[1] + 1 tokens,
W - W (W - 1) / (2 s) when W < s, and makes layer i windowed unless (i + 1) % skip_freq == 0.
GPT-OSS (HF sliding_window 128, Bridge's window_size (127, 0), skip_freq 2) is the family this
changes: half its layers attend to 128 tokens, so "megatron" overstates it by ~5% at 4k
tokens and ~10% at 8k. Bridge before v0.5.0 (containers 25.09-26.04) counts as "megatron".
"""

from __future__ import annotations

from perfgate.flops import megatron
from perfgate.models import ModelArch


def windowed_layers(m: ModelArch) -> int:
    """How many layers Bridge counts with the sliding window."""
    if not m.window_size:
        return 0
    freq = m.window_attn_skip_freq
    if not freq:
        return m.num_layers
    return sum(1 for i in range(m.num_layers) if (i + 1) % freq != 0)


def flops_per_sample(m: ModelArch, s: int, tp: int = 1) -> float:
    """Training FLOPs of one sample of s tokens, as Megatron-Bridge >= v0.5.0 counts them."""
    full = megatron.flops_per_sample(m, s, tp)
    window = m.window_size or 0
    if m.is_hybrid or m.is_mla or not window or window >= s:
        return full
    context = window - window * (window - 1) / (2 * s)  # mean causal context per token
    q_proj = m.head_dim * m.num_attention_heads
    # Megatron-LM's core attention per layer is 6 * q_proj * s per token (s/2 context, x2 for
    # QK^T and PV); a windowed layer's is 6 * q_proj * 2 * context.
    return full - windowed_layers(m) * s * 6 * q_proj * (s - 2 * context)
