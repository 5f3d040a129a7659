"""transformer_engine.pytorch.ops: the fusible operations Megatron-Core subclasses."""

from transformer_engine._placeholder import placeholders

placeholders(globals(), "Sequential", "FusibleOperation")
