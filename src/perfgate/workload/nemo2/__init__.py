"""Backend "nemo2": a row as NeMo 2.x's own performance recipe, trained in the rank's process.

job (the run in the container), recipe (the recipe NVIDIA's scripts would build; imports
NeMo), paths (edits by dotted path; imports NeMo), models (per-model data), snapshot and
paths.json (every settable path, for login nodes without NeMo), callback (rank 0's steps),
knobs (the tuning guide's knobs), finetune_data (the llmb fine-tuning inputs).
"""
