"""FLOPs formulas more than one convention uses, written once.

NeMo 2's llama3/nemotron/mixtral formula is counted with and without the causal halving (NeMo
up to v2.5.0rc0, and from r2.5.0 on). NeMo 2.x's deepseekv3, nemotronh (hybrid) and gpt_oss
formulas are also what NeMo Automodel counts (Automodel reads a DeepSeek/Kimi HF config its
own way first: perfgate.flops.automodel).
All return the training FLOPs (forward + backward) of one sample of s tokens.
"""

from __future__ import annotations

from perfgate.models import ModelArch


def gpt_family_flops(m: ModelArch, s: int, mlp: float, vocab: int, causal: bool) -> float:
    """NeMo 2's llama3 / nemotron / mixtral formula: mlp is the MLP's coefficient of h^2 per
    token (18 ffn/h gated, 12 ffn/h plain, x topk for Mixtral); causal halves the s^2 term."""
    h, n, g, L = m.hidden_size, m.num_attention_heads, m.num_query_groups, m.num_layers
    attention = 12 * s / h * (0.5 if causal else 1.0)
    return s * L * h * h * (12 + 12 * g / n + mlp + attention + 6 * vocab / (L * h))


def deepseekv3_flops(m: ModelArch, s: int) -> float:
    """DeepSeek-V3 / Kimi-K2 (MLA, MoE by moe_layer_pattern, MTP layers), as NeMo 2 counts it."""
    n, h = m.num_attention_heads, m.hidden_size
    qk, rope, v = m.qk_head_dim or 0, m.qk_pos_emb_head_dim or 0, m.v_head_dim or 0
    mtp = m.mtp_num_layers
    bmm = 0.5 * (qk + rope) * n * s * s + 0.5 * v * n * s * s
    attention = 6 * bmm * (m.num_layers + mtp)
    mla = h * (m.q_lora_rank or 0) + (m.q_lora_rank or 0) * (qk + rope) * n  # Q
    mla += h * rope  # K^R
    mla += h * (m.kv_lora_rank or 0) + (m.kv_lora_rank or 0) * (qk + v) * n  # K^C, V^C
    mla += v * n * h  # output projection
    moe_layer = (
        3
        * h
        * (m.moe_shared_expert_intermediate_size + (m.moe_ffn_hidden_size or 0) * m.moe_router_topk)
    )
    ffn = sum(moe_layer if moe else 3 * h * m.ffn_hidden_size for moe in m.moe_layer_pattern)
    params = mla * (m.num_layers + mtp) + ffn + moe_layer * mtp
    vocab = 6 * m.vocab_size * h * s * (1 + mtp) + mtp * 6 * h * 2 * h * s
    return attention + 6 * params * s + vocab


def hybrid_flops(m: ModelArch, s: int) -> float:
    """Hybrid Mamba/attention/MLP/MoE models (Nemotron-H) by their layer pattern."""
    h, n, g = m.hidden_size, m.num_attention_heads, m.num_query_groups
    counts = m.hybrid_counts()
    attn = 6 * s * h * (h + g / n * h * 2 + s / 2 * 2 + h)
    nheads = m.mamba_num_heads or 2 * h // (m.mamba_head_dim or 64)
    d_in = nheads * (m.mamba_head_dim or 64)
    state, groups = m.mamba_state_dim or 0, m.mamba_num_groups or 0
    mamba = (
        6 * s * h * (2 * d_in + 2 * groups * state + nheads)
        + 3 * 2 * s * d_in * state
        + 6 * s * d_in * h
    )
    mlp = 6 * s * h * m.ffn_hidden_size * 3  # NeMo assumes a gated MLP here
    moe = 0.0
    if counts["E"]:
        moe = (
            6 * s * m.moe_router_topk * h * (m.moe_ffn_hidden_size or 0) * 2
            + 6 * s * h * m.moe_shared_expert_intermediate_size * 2
            + 6 * s * h * (m.num_experts or 0)
        )
    return (
        counts["*"] * attn
        + counts["M"] * mamba
        + counts["-"] * mlp
        + counts["E"] * moe
        + 6 * s * h * m.vocab_size
    )


def gpt_oss_attention(s: int, h: int, n: int, g: int, kv: int, window: int | None = None) -> float:
    """Training FLOPs of one GPT-OSS attention layer (NeMo / Automodel gpt_oss calculator)."""
    qkv = s * h * kv * (n + 2 * g)
    proj = s * h * kv * n
    nonzero = (
        s * (s + 1) / 2 if window is None else window * (window + 1) / 2 + (s - window) * window
    )
    return (qkv + proj + n * nonzero * kv * 2) * 6


def gpt_oss_flops(m: ModelArch, s: int, kv: int) -> float:
    """NeMo's (and Automodel's) gpt_oss formula: layer i is full attention when i % freq == 0."""
    freq = m.window_attn_skip_freq or 2
    window = m.window_size or 128
    h, n, g = m.hidden_size, m.num_attention_heads, m.num_query_groups
    total = 0.0
    for i in range(m.num_layers):
        total += gpt_oss_attention(s, h, n, g, kv, None if i % freq == 0 else window)
        tokens = s * m.moe_router_topk
        width = m.moe_ffn_hidden_size or m.ffn_hidden_size
        total += (tokens * h * width * 2 + tokens * width * h) * 6
    return total + s * h * m.vocab_size * 6
