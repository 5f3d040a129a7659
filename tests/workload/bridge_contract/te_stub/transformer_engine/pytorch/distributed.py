"""transformer_engine.pytorch.distributed: the RNG tracker Megatron-Core subclasses."""

from transformer_engine._placeholder import placeholders, unavailable

placeholders(globals(), "CudaRNGStatesTracker")
checkpoint = activation_recompute_forward = unavailable
