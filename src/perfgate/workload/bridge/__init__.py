"""Backend "megatron_bridge": a row as a Megatron-Bridge ConfigContainer, trained in-process.

job (the run in the container), config (the ConfigContainer; imports Megatron-Bridge),
plan and perf (which recipe and which settings, pure Python).
"""
