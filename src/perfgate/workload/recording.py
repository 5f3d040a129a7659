"""What the in-process backends (nemo2, megatron_bridge) record per step, shared by both.

Imports torch: only for backends that train in this process. Rank 0 turns a measured step
time into a Step (tokens/s per GPU, memory now and at peak) and, at the end, every rank's
peak memory is gathered with one collective.
"""

from __future__ import annotations

from typing import Any

import torch

from perfgate.logs import Step
from perfgate.workload.runtime import Recorder
from perfgate.workload.versions import job_versions

GIB = float(1 << 30)


def make_step(
    step: int,
    step_time_s: float,
    tokens_per_step: int,
    world_size: int,
    tflops_per_gpu: float | None = None,
    loss: float | None = None,
) -> Step:
    """One finished step; memory from this rank's CUDA allocator where there is one."""
    cuda = torch.cuda.is_available()
    return Step(
        step=step,
        step_time_s=step_time_s,
        tflops_per_gpu=tflops_per_gpu,
        tokens_per_s_per_gpu=tokens_per_step / step_time_s / world_size if step_time_s else None,
        loss=loss,
        mem_allocated_gib=torch.cuda.memory_allocated() / GIB if cuda else None,
        mem_peak_gib=torch.cuda.max_memory_allocated() / GIB if cuda else None,
    )


def start_record(recorder: Recorder | None, world_size: int, convention: str | None) -> None:
    """Status running, versions measured now (torch and CUDA are up), the FLOPs convention."""
    if recorder:
        recorder.update(
            status="running", versions=job_versions(world_size), flops_convention=convention
        )


def gather_peak_memory(recorder: Recorder | None) -> list[float]:
    """Every rank's peak allocated GiB (index = global rank); rank 0 records them.

    Collective: every rank must call it, after its last step.
    """
    peak = torch.cuda.max_memory_allocated() / GIB if torch.cuda.is_available() else 0.0
    peaks: list[Any] = [peak]
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        peaks = [0.0] * torch.distributed.get_world_size()
        torch.distributed.all_gather_object(peaks, peak)
    rounded = [round(float(p), 3) for p in peaks]
    if recorder:
        recorder.update(peak_memory_gib_per_rank=rounded)
    return rounded
