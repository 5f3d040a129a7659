"""transformer_engine.pytorch.attention: fused RoPE (apply_rope_fusion)."""

from transformer_engine.pytorch.attention.rope import apply_rotary_pos_emb  # noqa: F401
