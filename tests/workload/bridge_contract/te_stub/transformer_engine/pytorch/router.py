"""transformer_engine.pytorch.router: fused MoE router kernels (imported for TE >= 2.7)."""

from transformer_engine._placeholder import unavailable

fused_compute_score_for_moe_aux_loss = fused_moe_aux_loss = unavailable
fused_topk_with_score_function = unavailable
