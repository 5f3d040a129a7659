"""One model's architecture (ModelArch) and the families that pick its FLOPs formula.

The catalog's models, each with its source, are in perfgate.models.
"""

from __future__ import annotations

from dataclasses import dataclass

# Families pick the FLOPs formula. "llama" covers every dense SwiGLU GPT with GQA.
FAMILIES = (
    "llama",
    "llama4",
    "nemotron4",
    "mixtral",
    "deepseek",
    "nemotronh",
    "qwen2",
    "qwen3_moe",
    "gpt_oss",
)


@dataclass(frozen=True)
class ModelArch:
    """One model's architecture; MoE, MLA, MTP, hybrid and sliding-window fields are optional.

    ffn_hidden_size is the dense MLP width (for MoE models: the width of their dense layers).
    moe_layer_freq lists 1 for an MoE layer, 0 for a dense one; None means every layer is MoE
    when num_experts is set. hybrid_override_pattern uses NeMo/Megatron symbols: M = Mamba,
    * = attention, - = MLP, E = MoE; mtp_hybrid_override_pattern is the layer pattern of one MTP
    block (repeated mtp_num_layers times). moe_latent_size set means LatentMoE: routed experts
    run on a latent of that width, projected down from and up to hidden. window_attn_skip_freq
    = N means every N-th layer is full attention and the others use a window of window_size
    tokens.
    """

    name: str
    family: str
    num_layers: int
    hidden_size: int
    ffn_hidden_size: int
    num_attention_heads: int
    num_query_groups: int
    vocab_size: int
    source: str
    kv_channels: int | None = None
    gated_linear_unit: bool = True
    make_vocab_size_divisible_by: int = 128
    num_experts: int | None = None
    moe_router_topk: int = 0
    moe_ffn_hidden_size: int | None = None
    moe_shared_expert_intermediate_size: int = 0
    moe_layer_freq: tuple[int, ...] | None = None
    moe_latent_size: int | None = None
    q_lora_rank: int | None = None
    kv_lora_rank: int | None = None
    qk_head_dim: int | None = None
    qk_pos_emb_head_dim: int | None = None
    v_head_dim: int | None = None
    mtp_num_layers: int = 0
    hybrid_override_pattern: str | None = None
    mtp_hybrid_override_pattern: str | None = None
    mamba_state_dim: int | None = None
    mamba_head_dim: int | None = None
    mamba_num_groups: int | None = None
    mamba_num_heads: int | None = None
    window_size: int | None = None
    window_attn_skip_freq: int | None = None

    @property
    def head_dim(self) -> int:
        """Attention head width (kv_channels), hidden/heads unless the model sets it."""
        return self.kv_channels or self.hidden_size // self.num_attention_heads

    @property
    def is_moe(self) -> bool:
        """True for mixture-of-experts models."""
        return bool(self.num_experts)

    @property
    def is_mla(self) -> bool:
        """True for multi-latent attention (DeepSeek-V3, Kimi K2)."""
        return self.kv_lora_rank is not None

    @property
    def is_hybrid(self) -> bool:
        """True for hybrid Mamba models (Nemotron-H, Nemotron 3 Nano)."""
        return self.hybrid_override_pattern is not None

    @property
    def moe_layer_pattern(self) -> tuple[int, ...]:
        """Per decoder layer: 1 for MoE, 0 for dense (all 0 for dense models)."""
        if not self.is_moe:
            return (0,) * self.num_layers
        if self.moe_layer_freq is None:
            return (1,) * self.num_layers
        return self.moe_layer_freq

    @property
    def num_moe_layers(self) -> int:
        """Decoder layers whose MLP is an MoE (MTP layers not included)."""
        if self.is_hybrid:
            return self.hybrid_override_pattern.count("E")  # type: ignore[union-attr]
        return sum(self.moe_layer_pattern)

    def hybrid_counts(self, mtp: bool = False) -> dict[str, int]:
        """Layers per symbol of the hybrid pattern: M (Mamba), * (attention), - (MLP), E (MoE);
        with mtp, the MTP blocks' layers (mtp_num_layers x their pattern) added."""
        pattern = self.hybrid_override_pattern or ""
        if mtp:
            pattern += (self.mtp_hybrid_override_pattern or "") * self.mtp_num_layers
        return {sym: pattern.count(sym) for sym in "M*-E"}
