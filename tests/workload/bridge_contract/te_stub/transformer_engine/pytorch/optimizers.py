"""transformer_engine.pytorch.optimizers: the fused optimizers Megatron-Core prefers.

Megatron-Core's optimizer config accepts the precision-aware optimizer only if TE's FusedAdam
takes the dtype arguments (it reads the signature), so the stand-in declares them.
"""

from transformer_engine._placeholder import Placeholder, placeholders


class FusedAdam(Placeholder):
    """TE's FusedAdam: the keyword arguments Megatron-Core inspects."""

    def __init__(
        self,
        params,
        *,
        master_weight_dtype=None,
        exp_avg_dtype=None,
        exp_avg_sq_dtype=None,
        use_decoupled_grad=False,
        **kwargs,
    ):
        super().__init__()


placeholders(globals(), "FusedSGD")
