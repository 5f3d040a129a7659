"""Backend "automodel": a row as NeMo Automodel's benchmark recipe with a generated YAML.

job (the run in the container), config (the row's config, pure Python), bases (the
benchmark configs the rows start from).
"""
