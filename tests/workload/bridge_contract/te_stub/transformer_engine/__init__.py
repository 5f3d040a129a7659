"""A stand-in for NVIDIA Transformer Engine, so Megatron-Bridge imports on a CPU machine.

Test code only (the bridge contract suite puts te_stub/ first on sys.path). Megatron-Bridge
imports transformer_engine unconditionally; Megatron-Core and Bridge then check its version
and look up a handful of names while building and validating a ConfigContainer. Nothing here
computes anything: a name exists so that `import` and `isinstance`/`hasattr` checks succeed.
"""

# The Transformer Engine of NeMo 26.0x containers: Megatron-Core gates fused MoE permutation
# (>= 2.1), the TE router (>= 2.7) and single grouped weights (>= 2.14) on its version.
__version__ = "2.14.0"

from transformer_engine import common  # noqa: F401  (the real package imports it too)
