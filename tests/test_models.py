"""Model architectures: lookup, internal consistency, and parameter counts vs published sizes."""

from __future__ import annotations

import pytest

from perfgate import models
from perfgate.errors import ConfigError, PerfgateError


def test_get_returns_the_frozen_architecture():
    arch = models.get("llama3_70b")
    assert (arch.num_layers, arch.hidden_size, arch.ffn_hidden_size) == (80, 8192, 28672)
    assert (arch.num_attention_heads, arch.num_query_groups, arch.vocab_size) == (64, 8, 128256)
    with pytest.raises(AttributeError):
        arch.num_layers = 1  # type: ignore[misc]


def test_unknown_model_error_lists_the_known_ones():
    with pytest.raises(ConfigError) as e:
        models.get("llama3_7b")
    message = str(e.value)
    assert "unknown model 'llama3_7b'" in message
    assert "llama3_8b" in message and "deepseek_v3" in message
    assert "\n" not in message
    assert isinstance(e.value, PerfgateError)


def test_every_model_is_consistent():
    for arch in models.MODELS.values():
        assert arch.family in models.FAMILIES, arch.name
        assert arch.source, arch.name
        assert arch.num_attention_heads % arch.num_query_groups == 0, arch.name
        if arch.moe_layer_freq is not None:
            assert len(arch.moe_layer_freq) == arch.num_layers, arch.name
        if arch.is_hybrid:
            assert len(arch.hybrid_override_pattern) == arch.num_layers, arch.name
            assert set(arch.hybrid_override_pattern) <= set("M*-E"), arch.name
        if arch.is_moe:
            assert 0 < arch.moe_router_topk <= arch.num_experts, arch.name


def test_layer_patterns():
    assert models.get("llama4_e16").num_moe_layers == 48  # every layer MoE
    assert models.get("llama4_e128").num_moe_layers == 24  # every other layer
    assert models.get("deepseek_v3").moe_layer_pattern[:4] == (0, 0, 0, 1)
    assert models.get("kimi_k2").num_moe_layers == 60
    assert models.get("nemotronh_56b").hybrid_counts() == {"M": 54, "*": 10, "-": 54, "E": 0}
    assert models.get("nemotron_nano_v3_30b").hybrid_counts() == {"M": 23, "*": 6, "-": 0, "E": 23}
    super_ = models.get("nemotron_3_super")
    assert super_.hybrid_counts() == {"M": 40, "*": 8, "-": 0, "E": 40}
    assert super_.hybrid_counts(mtp=True) == {"M": 40, "*": 10, "-": 0, "E": 42}  # 2 x "*E"
    assert models.get("llama3_8b").num_moe_layers == 0


def _params(m: models.ModelArch) -> float:
    """Total parameters (weights of linears, experts, embeddings; norms and biases ignored)."""
    h = m.hidden_size
    mlp_mult = 3 if m.gated_linear_unit else 2
    if m.is_mla:
        qk, rope, v, n = m.qk_head_dim, m.qk_pos_emb_head_dim, m.v_head_dim, m.num_attention_heads
        attn = h * m.q_lora_rank + m.q_lora_rank * n * (qk + rope)
        attn += h * (m.kv_lora_rank + rope) + m.kv_lora_rank * n * (qk + v) + n * v * h
    else:
        q, kv = m.head_dim * m.num_attention_heads, m.head_dim * m.num_query_groups
        attn = h * (q + 2 * kv) + q * h
    dense = mlp_mult * h * m.ffn_hidden_size
    moe = 0
    if m.is_moe:
        width = m.moe_ffn_hidden_size
        routed_in = m.moe_latent_size or h  # LatentMoE: experts on the latent + 2 projections
        moe = mlp_mult * (
            routed_in * width * m.num_experts + h * m.moe_shared_expert_intermediate_size
        )
        moe += h * m.num_experts + 2 * h * (m.moe_latent_size or 0)  # router, latent projections
    embeddings = 2 * m.vocab_size * h
    if m.is_hybrid:
        c = m.hybrid_counts()
        d_in = m.mamba_num_heads * m.mamba_head_dim
        mamba = h * (2 * d_in + 2 * m.mamba_num_groups * m.mamba_state_dim + m.mamba_num_heads)
        mamba += d_in * h
        return c["M"] * mamba + c["*"] * attn + c["-"] * dense + c["E"] * moe + embeddings
    per_layer = [attn + (moe if is_moe else dense) for is_moe in m.moe_layer_pattern]
    return sum(per_layer) + embeddings


# Published total sizes (model cards / papers), in billions; MTP modules excluded.
PUBLISHED_B = {
    "llama3_8b": 8.03,
    "llama3_70b": 70.55,
    "llama31_405b": 405.85,
    "llama4_e16": 109.0,  # includes the ~1B vision encoder we do not count
    "llama4_e128": 400.0,
    "mixtral_8x7b": 46.70,
    "mixtral_8x22b": 140.62,
    "nemotron4_15b": 15.6,
    "nemotron4_340b": 341.0,
    "nemotronh_56b": 56.0,
    "nemotron_nano_v3_30b": 31.6,
    "nemotron_3_5_lightning": 31.6,  # Nemotron 3 Nano's backbone (its MTP block not counted)
    "nemotron_3_super": 120.67,  # HF BF16 safetensors 123.61B less the 2.94B MTP block
    "deepseek_v3": 671.0,
    "kimi_k2": 1026.4,  # HF safetensors total (the card says "1T")
    "qwen3_30b_a3b": 30.5,
    "qwen3_235b_a22b": 235.0,  # model card: 235B total, 22B activated
    "gpt_oss_20b": 20.9,
    "gpt_oss_120b": 116.8,
    "qwen25_7b": 7.6,
    "qwen25_32b": 32.8,
    "llama32_1b": 1.50,  # HF's 1.24B ties the output layer to the embedding; counted untied here
}


@pytest.mark.parametrize("name", sorted(PUBLISHED_B))
def test_parameter_count_matches_the_published_size(name):
    # A wrong layer count, width, expert count or MLA rank moves the total by far more than 2%.
    total = _params(models.get(name)) / 1e9
    assert total == pytest.approx(PUBLISHED_B[name], rel=0.02), f"{name}: {total:.2f}B"


def test_every_model_has_a_published_size_check():
    assert set(PUBLISHED_B) == set(models.MODELS)
