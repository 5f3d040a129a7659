"""transformer_engine.pytorch.attention.rope: fused RoPE, where TE >= 2.3 keeps it."""

from transformer_engine._placeholder import unavailable

apply_rotary_pos_emb = unavailable
