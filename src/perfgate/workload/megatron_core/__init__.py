"""Backend "megatron_core": a Megatron-Core GPTModel trained in the rank's process, no NeMo.

A lean row: Megatron-Core (a 2.4 MB wheel needing torch, numpy and packaging) builds the
row's architecture with the local layer spec, bf16, mock tokens, the row's TP/PP, and trains
it through the same `python -m perfgate.workload` entry, Recorder and log format as the other
backends. face (login node) and plan, configs, clock are pure Python; torch and Megatron-Core
load in the job, after the environment is set.

    face      the override check, the --dry-run text, the environment defaults (BACKEND)
    plan      settings of a row and its overrides (layout, architecture, sections)
    configs   Megatron-Core's config keyword arguments and their field check
    clock     the step's two clocks, Megatron-LM's log line, the timing sidecar
    job       run(): the environment, then the loop that records each step (torch)
    trainer   model, optimizer, mock data, one step (torch, Megatron-Core)
    attention torch SDPA as the local spec's core attention (torch)
"""
