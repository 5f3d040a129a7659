"""transformer_engine.pytorch.fp8: FP8 state queries Megatron-Core imports."""

from transformer_engine._placeholder import unavailable


class FP8GlobalStateManager:
    """No FP8 is ever active on a CPU machine."""

    @staticmethod
    def is_fp8_enabled() -> bool:
        return False


fp8_autocast = fp8_model_init = unavailable
