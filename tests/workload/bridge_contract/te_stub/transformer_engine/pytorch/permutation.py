"""transformer_engine.pytorch.permutation: fused MoE permutation (moe_permute_fusion)."""

from transformer_engine._placeholder import unavailable

moe_permute = moe_permute_with_probs = moe_unpermute = unavailable
moe_sort_chunks_by_index = moe_sort_chunks_by_index_with_probs = unavailable
