"""Architectures of the models the catalog runs: what FLOPs formulas and validation need.

Every entry names its source. Values are the model's own (HF config.json, or the NeMo 2.x /
Megatron-Bridge model config where NeMo trains it); vocab_size is the tokenizer's true vocab.
Padding the vocab for the output layer (make_vocab_size_divisible_by x TP, as Megatron does)
is done by the FLOPs conventions that count the padded width, not here. The fields of an
architecture are perfgate.model_arch's.
"""

from __future__ import annotations

import dataclasses

from perfgate.errors import ConfigError
from perfgate.model_arch import FAMILIES, ModelArch

__all__ = ["FAMILIES", "MODELS", "ModelArch", "get"]


def _dense(name: str, source: str, **kw: object) -> ModelArch:
    return ModelArch(name=name, family=kw.pop("family", "llama"), source=source, **kw)  # type: ignore[arg-type]


_MODELS: tuple[ModelArch, ...] = (
    # Llama 3 / 3.1 8B (same architecture): NeMo Llama3Config8B; HF meta-llama/Llama-3.1-8B.
    _dense(
        "llama3_8b",
        "NeMo 2.x llm Llama3Config8B; HF meta-llama/Llama-3.1-8B config.json",
        num_layers=32,
        hidden_size=4096,
        ffn_hidden_size=14336,
        num_attention_heads=32,
        num_query_groups=8,
        vocab_size=128256,
    ),
    # Llama 3 / 3.1 / 3.3 70B (same architecture): NeMo Llama3Config70B; HF Llama-3.3-70B.
    _dense(
        "llama3_70b",
        "NeMo 2.x llm Llama3Config70B; HF meta-llama/Llama-3.3-70B-Instruct config.json",
        num_layers=80,
        hidden_size=8192,
        ffn_hidden_size=28672,
        num_attention_heads=64,
        num_query_groups=8,
        vocab_size=128256,
    ),
    _dense(
        "llama31_405b",
        "NeMo 2.x llm Llama31Config405B; HF meta-llama/Llama-3.1-405B config.json",
        num_layers=126,
        hidden_size=16384,
        ffn_hidden_size=53248,
        num_attention_heads=128,
        num_query_groups=8,
        vocab_size=128256,
    ),
    # Llama 3.2 1B: HF ties the embedding and output weights (FLOPs are the same either way).
    _dense(
        "llama32_1b",
        "HF meta-llama/Llama-3.2-1B config.json; NeMo 2.x llm Llama32Config1B",
        num_layers=16,
        hidden_size=2048,
        ffn_hidden_size=8192,
        num_attention_heads=32,
        num_query_groups=8,
        vocab_size=128256,
    ),
    # Llama 4 Scout (16 experts, every layer MoE) and Maverick (128 experts, every other layer):
    # NeMo 2.x llm Llama4Experts16Config / Llama4Experts128Config (vocab 25256 * 8 = 202048).
    ModelArch(
        name="llama4_e16",
        family="llama4",
        source="NeMo 2.x llm Llama4Experts16Config; HF meta-llama/Llama-4-Scout-17B-16E",
        num_layers=48,
        hidden_size=5120,
        ffn_hidden_size=16384,
        num_attention_heads=40,
        num_query_groups=8,
        vocab_size=202048,
        num_experts=16,
        moe_router_topk=1,
        moe_ffn_hidden_size=8192,
        moe_shared_expert_intermediate_size=8192,
    ),
    ModelArch(
        name="llama4_e128",
        family="llama4",
        source="NeMo 2.x llm Llama4Experts128Config; HF meta-llama/Llama-4-Maverick-17B-128E",
        num_layers=48,
        hidden_size=5120,
        ffn_hidden_size=16384,
        num_attention_heads=40,
        num_query_groups=8,
        vocab_size=202048,
        num_experts=128,
        moe_router_topk=1,
        moe_ffn_hidden_size=8192,
        moe_shared_expert_intermediate_size=8192,
        moe_layer_freq=(0, 1) * 24,
    ),
    # Mixtral: NeMo 2.x llm MixtralConfig8x7B / 8x22B; HF mistralai/Mixtral-8x7B-v0.1 and
    # Mixtral-8x22B-v0.1 (8x22B v0.1 has vocab 32000; the v0.3 tokenizer has 32768).
    ModelArch(
        name="mixtral_8x7b",
        family="mixtral",
        source="NeMo 2.x llm MixtralConfig8x7B; HF mistralai/Mixtral-8x7B-v0.1 config.json",
        num_layers=32,
        hidden_size=4096,
        ffn_hidden_size=14336,
        num_attention_heads=32,
        num_query_groups=8,
        vocab_size=32000,
        num_experts=8,
        moe_router_topk=2,
        moe_ffn_hidden_size=14336,
    ),
    ModelArch(
        name="mixtral_8x22b",
        family="mixtral",
        source="NeMo 2.x llm MixtralConfig8x22B; HF mistralai/Mixtral-8x22B-v0.1 config.json",
        num_layers=56,
        hidden_size=6144,
        ffn_hidden_size=16384,
        num_attention_heads=48,
        num_query_groups=8,
        vocab_size=32000,
        num_experts=8,
        moe_router_topk=2,
        moe_ffn_hidden_size=16384,
    ),
    # Nemotron-4: squared-ReLU MLP (not gated), GQA with 8 groups. NeMo 2.x llm
    # Nemotron4Config15B / Nemotron4Config340B; vocab 256000.
    ModelArch(
        name="nemotron4_15b",
        family="nemotron4",
        source="NeMo 2.x llm Nemotron4Config15B; seed 001",
        num_layers=32,
        hidden_size=6144,
        ffn_hidden_size=24576,
        num_attention_heads=48,
        num_query_groups=8,
        vocab_size=256000,
        gated_linear_unit=False,
    ),
    ModelArch(
        name="nemotron4_340b",
        family="nemotron4",
        source="NeMo 2.x llm Nemotron4Config340B; HF nvidia/Nemotron-4-340B-Base",
        num_layers=96,
        hidden_size=18432,
        ffn_hidden_size=73728,
        num_attention_heads=96,
        num_query_groups=8,
        vocab_size=256000,
        gated_linear_unit=False,
    ),
    # Nemotron-H 56B: NeMo 2.x llm NemotronHConfig56B (+ NemotronHConfigBase): 118 layers of
    # Mamba2 / attention / squared-ReLU MLP; mamba heads default to 2 * hidden / head_dim = 256.
    ModelArch(
        name="nemotronh_56b",
        family="nemotronh",
        source="NeMo 2.x llm NemotronHConfig56B; HF nvidia/Nemotron-H-56B-Base-8K",
        num_layers=118,
        hidden_size=8192,
        ffn_hidden_size=32768,
        num_attention_heads=64,
        num_query_groups=8,
        vocab_size=131072,
        gated_linear_unit=False,
        hybrid_override_pattern=(
            "M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-"
            "M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-"
        ),
        mamba_state_dim=256,
        mamba_head_dim=64,
        mamba_num_groups=8,
        mamba_num_heads=256,
    ),
    # Nemotron 3 Nano 30B-A3B: hybrid Mamba2 / attention / MoE (squared-ReLU experts).
    # Megatron-Bridge recipes/nemotronh nemotron_3_nano.py; HF
    # nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16 config.json (as Automodel loads it).
    ModelArch(
        name="nemotron_nano_v3_30b",
        family="nemotronh",
        source="Megatron-Bridge nemotron_3_nano recipe; HF nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B",
        num_layers=52,
        hidden_size=2688,
        ffn_hidden_size=1856,
        num_attention_heads=32,
        num_query_groups=2,
        kv_channels=128,
        vocab_size=131072,
        gated_linear_unit=False,
        num_experts=128,
        moe_router_topk=6,
        moe_ffn_hidden_size=1856,
        moe_shared_expert_intermediate_size=3712,
        hybrid_override_pattern="MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME",
        mamba_state_dim=128,
        mamba_head_dim=64,
        mamba_num_groups=8,
        mamba_num_heads=64,
    ),
    # Nemotron 3 Super 120B-A12B: hybrid Mamba2 / attention / LatentMoE (512 squared-ReLU experts
    # on a 1024-wide latent, top-22, one shared expert), 88 layers + an MTP block "*E" that the
    # Bridge recipes run twice (mtp_num_layers 2, mtp_use_repeated_layer).
    ModelArch(
        name="nemotron_3_super",
        family="nemotronh",
        source=(
            "HF nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-BF16 config.json; Megatron-Bridge "
            "NemotronHBridge (moe_latent_size) and recipes/nemotronh nemotron_3_super (MTP 2)"
        ),
        num_layers=88,
        hidden_size=4096,
        ffn_hidden_size=2688,
        num_attention_heads=32,
        num_query_groups=2,
        kv_channels=128,
        vocab_size=131072,
        gated_linear_unit=False,
        num_experts=512,
        moe_router_topk=22,
        moe_ffn_hidden_size=2688,
        moe_shared_expert_intermediate_size=5376,
        moe_latent_size=1024,
        mtp_num_layers=2,
        hybrid_override_pattern=(
            "MEMEMEM*EMEMEMEM*EMEMEMEM*EMEMEMEMEM*EMEMEMEMEM*EMEMEMEMEM*EMEMEMEMEM*EMEMEMEM*EMEMEMEME"
        ),
        mtp_hybrid_override_pattern="*E",
        mamba_state_dim=128,
        mamba_head_dim=64,
        mamba_num_groups=8,
        mamba_num_heads=128,
    ),
    # DeepSeek-V3: MLA + MoE (first 3 layers dense) + 1 MTP layer. NeMo 2.x llm
    # DeepSeekV3Config (the NeMo recipe enables mtp_num_layers=1); HF deepseek-ai/DeepSeek-V3.
    ModelArch(
        name="deepseek_v3",
        family="deepseek",
        source="NeMo 2.x llm DeepSeekV3Config; HF deepseek-ai/DeepSeek-V3 config.json",
        num_layers=61,
        hidden_size=7168,
        ffn_hidden_size=18432,
        num_attention_heads=128,
        num_query_groups=128,
        kv_channels=128,
        vocab_size=129280,
        make_vocab_size_divisible_by=1280,
        num_experts=256,
        moe_router_topk=8,
        moe_ffn_hidden_size=2048,
        moe_shared_expert_intermediate_size=2048,
        moe_layer_freq=(0,) * 3 + (1,) * 58,
        q_lora_rank=1536,
        kv_lora_rank=512,
        qk_head_dim=128,
        qk_pos_emb_head_dim=64,
        v_head_dim=128,
        mtp_num_layers=1,
    ),
    # Kimi K2: the DeepSeek-V3 architecture with 64 heads, 384 experts, 1 dense layer, no MTP.
    # HF moonshotai/Kimi-K2-Base config.json; Megatron-Bridge KimiK2Bridge (vocab pad 1280).
    ModelArch(
        name="kimi_k2",
        family="deepseek",
        source="HF moonshotai/Kimi-K2-Base config.json; Megatron-Bridge KimiK2Bridge",
        num_layers=61,
        hidden_size=7168,
        ffn_hidden_size=18432,
        num_attention_heads=64,
        num_query_groups=64,
        kv_channels=128,
        vocab_size=163840,
        make_vocab_size_divisible_by=1280,
        num_experts=384,
        moe_router_topk=8,
        moe_ffn_hidden_size=2048,
        moe_shared_expert_intermediate_size=2048,
        moe_layer_freq=(0,) + (1,) * 60,
        q_lora_rank=1536,
        kv_lora_rank=512,
        qk_head_dim=128,
        qk_pos_emb_head_dim=64,
        v_head_dim=128,
    ),
    # Qwen3-30B-A3B: 128 experts, top-8, no shared expert, head_dim 128 (q proj 4096 > hidden).
    ModelArch(
        name="qwen3_30b_a3b",
        family="qwen3_moe",
        source="HF Qwen/Qwen3-30B-A3B config.json; NeMo 2.x llm Qwen3Config30B_A3B",
        num_layers=48,
        hidden_size=2048,
        ffn_hidden_size=6144,
        num_attention_heads=32,
        num_query_groups=4,
        kv_channels=128,
        vocab_size=151936,
        num_experts=128,
        moe_router_topk=8,
        moe_ffn_hidden_size=768,
    ),
    # Qwen3-235B-A22B: the Qwen3-30B-A3B layout scaled (94 layers, 64 heads / 4 KV groups).
    ModelArch(
        name="qwen3_235b_a22b",
        family="qwen3_moe",
        source="HF Qwen/Qwen3-235B-A22B config.json; NeMo 2.x llm Qwen3Config235B_A22B",
        num_layers=94,
        hidden_size=4096,
        ffn_hidden_size=12288,
        num_attention_heads=64,
        num_query_groups=4,
        kv_channels=128,
        vocab_size=151936,
        num_experts=128,
        moe_router_topk=8,
        moe_ffn_hidden_size=1536,
    ),
    # GPT-OSS: MoE in every layer (top-4), head_dim 64, alternating 128-token sliding-window and
    # full attention layers (HF layer_types start with sliding_attention).
    ModelArch(
        name="gpt_oss_20b",
        family="gpt_oss",
        source="HF openai/gpt-oss-20b config.json",
        num_layers=24,
        hidden_size=2880,
        ffn_hidden_size=2880,
        num_attention_heads=64,
        num_query_groups=8,
        kv_channels=64,
        vocab_size=201088,
        num_experts=32,
        moe_router_topk=4,
        moe_ffn_hidden_size=2880,
        window_size=128,
        window_attn_skip_freq=2,
    ),
    ModelArch(
        name="gpt_oss_120b",
        family="gpt_oss",
        source="HF openai/gpt-oss-120b config.json",
        num_layers=36,
        hidden_size=2880,
        ffn_hidden_size=2880,
        num_attention_heads=64,
        num_query_groups=8,
        kv_channels=64,
        vocab_size=201088,
        num_experts=128,
        moe_router_topk=4,
        moe_ffn_hidden_size=2880,
        window_size=128,
        window_attn_skip_freq=2,
    ),
    # Qwen2.5 dense (QKV bias ignored by every FLOPs convention).
    _dense(
        "qwen25_7b",
        "HF Qwen/Qwen2.5-7B config.json",
        family="qwen2",
        num_layers=28,
        hidden_size=3584,
        ffn_hidden_size=18944,
        num_attention_heads=28,
        num_query_groups=4,
        vocab_size=152064,
    ),
    _dense(
        "qwen25_32b",
        "HF Qwen/Qwen2.5-32B-Instruct config.json",
        family="qwen2",
        num_layers=64,
        hidden_size=5120,
        ffn_hidden_size=27648,
        num_attention_heads=40,
        num_query_groups=8,
        vocab_size=152064,
    ),
)

# Nemotron 3.5 Lightning 30B-A3B: Nemotron 3 Nano's architecture trained with MTP (Megatron-Bridge
# examples/models/nemotron/nemotron_3/lightning README); its Bridge performance recipes run the
# MTP block "*E" twice (perf_recipes/nemotronh: mtp_num_layers 2, mtp_use_repeated_layer).
_LIGHTNING = dataclasses.replace(
    next(m for m in _MODELS if m.name == "nemotron_nano_v3_30b"),
    name="nemotron_3_5_lightning",
    source=(
        "Megatron-Bridge nemotron_3 lightning README (Nemotron 3 Nano architecture) and "
        "perf_recipes/nemotronh (MTP '*E' x 2); HF nvidia/NVIDIA-Nemotron-3.5-Lightning-30B-A3B"
    ),
    mtp_num_layers=2,
    mtp_hybrid_override_pattern="*E",
)

MODELS: dict[str, ModelArch] = {m.name: m for m in (*_MODELS, _LIGHTNING)}


def get(name: str) -> ModelArch:
    """The architecture of a model by its catalog name; a clear error lists the known ones."""
    try:
        return MODELS[name]
    except (KeyError, TypeError):
        raise ConfigError(f"unknown model {name!r}; known: {', '.join(sorted(MODELS))}") from None
