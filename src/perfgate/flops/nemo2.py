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
NeMo r2.5.0 final (NeMo #14424, containers 25.09+) halves attention everywhere: that is the
"megatron" convention's territory, not this one.

Where NeMo 2 has no formula for a family we say what we use: qwen2 (Qwen2.5) takes the qwen3
formula as a dense model (as NeMo Automodel does for Qwen2Config); kimi_k2 takes deepseekv3;
GPT-OSS takes the gpt_oss formula NeMo added after v2.5.0rc0 (NeMo #14457); the MoE layers
("E") of a hybrid model (Nemotron 3 Nano) are counted as NeMo Automodel extends nemotronh
(routed and shared squared-ReLU experts plus the router), since NeMo 2's pattern parser skips
them. Vocab for qwen3/deepseek/nemotronh/gpt_oss is the model's; NeMo's mock-data
NullTokenizer reports one more token, a change below 1e-5 of the total.
"""

from __future__ import annotations

from perfgate.models import ModelArch

# nemo/collections/common/parts/perf_metrics_utils.py LLM_VOCAB_SIZE_MAP
_VOCAB = {"llama3": 128256, "nemotron": 256000, "mixtral": 32000}


def _llama3(m: ModelArch, s: int, ffn: int) -> float:
    h, n, g, L = m.hidden_size, m.num_attention_heads, m.num_query_groups, m.num_layers
    return (
        s
        * L
        * h
        * h
        * (12 + 12 * g / n + 18 * ffn / h + 12 * s / h + 6 * _VOCAB["llama3"] / (L * h))
    )


def _nemotron(m: ModelArch, s: int) -> float:
    h, n, g, L = m.hidden_size, m.num_attention_heads, m.num_query_groups, m.num_layers
    ffn = m.ffn_hidden_size
    return (
        s
        * L
        * h
        * h
        * (12 + 12 * g / n + 12 * ffn / h + 12 * s / h + 6 * _VOCAB["nemotron"] / (L * h))
    )


def _mixtral(m: ModelArch, s: int) -> float:
    h, n, g, L = m.hidden_size, m.num_attention_heads, m.num_query_groups, m.num_layers
    k, ffn = m.moe_router_topk, m.ffn_hidden_size
    return (
        s
        * L
        * h
        * h
        * (12 + 12 * g / n + 18 * k * ffn / h + 12 * s / h + 6 * _VOCAB["mixtral"] / (L * h))
    )


def _qwen3(m: ModelArch, s: int) -> float:
    h, n, g, L = m.hidden_size, m.num_attention_heads, m.num_query_groups, m.num_layers
    if m.is_moe:
        width = (m.moe_ffn_hidden_size or m.ffn_hidden_size) * m.moe_router_topk
    else:
        width = m.ffn_hidden_size
    attention = 6 * L * s * h * h * ((g / n * 2 + 1) + (s / h * 2 * 0.5) + 1)
    mlp = 6 * L * s * h * 3 * width
    return attention + mlp + 6 * s * h * m.vocab_size


def _deepseekv3(m: ModelArch, s: int) -> float:
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


def flops_per_sample(m: ModelArch, s: int) -> float:
    """Training FLOPs of one sample of s tokens, as NeMo 2.x's FLOPs callback counts them."""
    family = m.family
    if family == "llama":
        return _llama3(m, s, m.ffn_hidden_size)
    if family == "llama4":
        return _llama3(m, s, m.ffn_hidden_size)
    if family == "nemotron4":
        return _nemotron(m, s)
    if family == "mixtral":
        return _mixtral(m, s)
    if family in ("qwen2", "qwen3_moe"):
        return _qwen3(m, s)
    if family == "deepseek":
        return _deepseekv3(m, s)
    if family == "nemotronh":
        return hybrid_flops(m, s)
    if family == "gpt_oss":
        return gpt_oss_flops(m, s, m.kv_channels or m.hidden_size // m.num_attention_heads)
    raise AssertionError(f"no nemo2 formula for family {family!r}")
