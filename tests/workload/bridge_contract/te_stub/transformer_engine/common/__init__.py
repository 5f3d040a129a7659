"""transformer_engine.common: only the recipe classes Megatron-Core subclasses."""

from transformer_engine.common import recipe  # noqa: F401
