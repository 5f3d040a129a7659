"""perfgate: NeMo LLM training performance measured on Slurm and gated against baselines."""

__version__ = "0.1.0"
