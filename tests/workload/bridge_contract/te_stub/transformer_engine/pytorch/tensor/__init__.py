"""transformer_engine.pytorch.tensor: the quantized-tensor base class (isinstance checks)."""

from transformer_engine._placeholder import placeholders

placeholders(globals(), "QuantizedTensor")
