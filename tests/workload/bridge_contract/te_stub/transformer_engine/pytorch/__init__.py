"""transformer_engine.pytorch: the names Megatron-Bridge's import and validate() paths touch."""

from transformer_engine._placeholder import placeholders
from transformer_engine.pytorch import distributed, fp8, ops, tensor  # noqa: F401

placeholders(
    globals(),
    "Linear",
    "LayerNormLinear",
    "LayerNorm",
    "RMSNorm",
    "DotProductAttention",
    "GroupedLinear",
)
