"""FLOPs per sample in the "megatron" convention: Megatron-LM num_floating_point_operations.

Follows megatron/training/training.py (2025-2026, BSHD closed form: every sample is seq_len
tokens with a full causal mask), which Megatron-Bridge's flop_utils mirrors and NeMo >= 25.09
logs: causal attention (s^2 halved), GQA- and head_dim-aware projections, SwiGLU x3 / plain
x2 MLPs, routed and shared experts per MoE layer, MLA, MTP layers (as an extra decoder layer,
MoE when the last layer is, plus their norms, projection and logits), the hybrid Mamba stack
(as Megatron-Bridge's flop_utils hybrid count: LatentMoE experts on their latent width plus the
latent projections, and an MTP block's layers, mtp_hybrid_override_pattern x mtp_num_layers,
counted like the stack's; published Nemotron 3 Super figures agree within 1%),
and logits over the padded vocab (make_vocab_size_divisible_by x TP, as Megatron pads it).

Not modelled, as Megatron-LM does not: sliding-window attention (Megatron-Bridge counts the
GPT-OSS window; Megatron-LM counts every layer as full causal attention).
"""

from __future__ import annotations

from perfgate.models import ModelArch


def padded_vocab(m: ModelArch, tp: int = 1) -> int:
    """The vocab Megatron builds the output layer with: a multiple of divisible_by x TP."""
    multiple = m.make_vocab_size_divisible_by * tp
    return -(-m.vocab_size // multiple) * multiple


def _transformer(m: ModelArch, s: int, tp: int) -> float:
    h = m.hidden_size
    pattern = m.moe_layer_pattern
    moe_layers = sum(pattern)
    dense_layers = m.num_layers - moe_layers
    topk = m.moe_router_topk if m.is_moe else 0
    mtp = m.mtp_num_layers
    if mtp:
        last_is_moe = pattern[-1]
        moe_layers += last_is_moe * mtp
        dense_layers += (1 - last_is_moe) * mtp
    layers = m.num_layers + mtp
    moe_ffn = m.moe_ffn_hidden_size or m.ffn_hidden_size
    shared = m.moe_shared_expert_intermediate_size
    ffn_factor = 3 if m.gated_linear_unit else 2

    if m.is_mla:
        n = m.num_attention_heads
        qk, rope, v = m.qk_head_dim or 0, m.qk_pos_emb_head_dim or 0, m.v_head_dim or 0
        if m.q_lora_rank is None:
            q_term = h * n * (qk + rope)
        else:
            q_term = m.q_lora_rank * (h + n * (qk + rope) + 1)
        kv_lora = m.kv_lora_rank or 0
        attn_term = 6 * (q_term + kv_lora * (h + n * (qk + v) + 1) + h * rope + n * v * h)
        core_term = 6 * (n * (qk + rope) / 2 + n * v / 2)
    else:
        q_proj = m.head_dim * m.num_attention_heads
        kv_proj = m.head_dim * m.num_query_groups
        attn_term = 6 * (h * (q_proj + 2 * kv_proj) + q_proj * h)
        core_term = 6 * q_proj / 2 * 2  # causal mask halves, QK^T and PV double

    per_token = (
        6
        * h
        * (
            m.ffn_hidden_size * ffn_factor * dense_layers
            + moe_ffn * topk * ffn_factor * moe_layers
            + shared * ffn_factor * moe_layers
        )
        + attn_term * layers
        + 6 * mtp * (3 * h + 2 * h * h)
        + 6 * h * padded_vocab(m, tp) * (mtp + 1)
    )
    return s * per_token + s * s * core_term * layers


def _hybrid(m: ModelArch, s: int, tp: int) -> float:
    h = m.hidden_size
    counts = m.hybrid_counts(mtp=True)  # MTP blocks' layers counted like the stack's
    swiglu = 1.5 if m.gated_linear_unit else 1.0
    p = (m.kv_channels * m.num_attention_heads / h) if m.kv_channels else 1.0
    g, n = m.num_query_groups, m.num_attention_heads
    attn = 4 * s * h * p * (h + h * g / n) + 2 * s * s * h * p
    mlp = 4 * (m.ffn_hidden_size / h) * swiglu * s * h * h
    d_in = 2 * h  # Megatron-LM takes d_inner = 2 * hidden whatever mamba_num_heads says
    nheads = m.mamba_num_heads or d_in // (m.mamba_head_dim or 64)
    state, groups = m.mamba_state_dim or 0, m.mamba_num_groups or 0
    mamba = (
        2 * s * h * (2 * d_in + 2 * groups * state + nheads)
        + 7 * s * d_in * state
        + 2 * s * d_in * h
    )
    routed_in = m.moe_latent_size or h  # LatentMoE: experts on the latent, plus its projections
    moe = (
        4 * s * routed_in * (m.moe_ffn_hidden_size or 0) * m.moe_router_topk * swiglu
        + (4 * s * h * m.moe_latent_size if m.moe_latent_size else 0)
        + 4 * s * h * m.moe_shared_expert_intermediate_size * swiglu
    )
    forward = (
        counts["*"] * attn
        + counts["-"] * mlp
        + counts["M"] * mamba
        + counts["E"] * moe
        + 2 * s * h * padded_vocab(m, tp) * (1 + m.mtp_num_layers)
    )
    return 3 * forward


def flops_per_sample(m: ModelArch, s: int, tp: int = 1) -> float:
    """Training FLOPs of one sample of s tokens, as Megatron-LM counts them (TP pads the vocab)."""
    if m.is_hybrid:
        return _hybrid(m, s, tp)
    return _transformer(m, s, tp)
