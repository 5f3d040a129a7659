"""transformer_engine.common.recipe: quantization recipe classes and the FP8 format enum."""

import enum

from transformer_engine._placeholder import placeholders


class Format(enum.Enum):
    """FP8 formats (names as in Transformer Engine)."""

    E4M3 = "E4M3"
    E5M2 = "E5M2"
    HYBRID = "HYBRID"


placeholders(
    globals(),
    "DelayedScaling",
    "Float8CurrentScaling",
    "Float8BlockScaling",
    "MXFP8BlockScaling",
    "NVFP4BlockScaling",
)
