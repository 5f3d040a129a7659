"""Backend "megatron_core" inside the job: train spec.steps steps, record each on rank 0.

run() sets the environment first; torch and Megatron-Core load only after it (in train), so
CUDA and NCCL see it when they start. Every rank trains; rank 0 times each step on two clocks
(perfgate.workload.megatron_core.clock), appends it to steps.json through the Recorder, prints
Megatron-LM's iteration line (what `perfgate parse` reads back), and at the end writes both
clocks' series to megatron_core.json. TFLOP/s and MFU are left to perfgate outside the job,
which computes them from the step time in every FLOPs convention.
"""

from __future__ import annotations

import os
import sys

from perfgate.errors import ConfigError
from perfgate.workload.dispatch import WorkloadFailed
from perfgate.workload.env import applied_env, merge_env
from perfgate.workload.megatron_core.clock import StepClock, iteration_line, write_sidecar
from perfgate.workload.megatron_core.configs import check_fields, installed_fields
from perfgate.workload.megatron_core.face import env_defaults
from perfgate.workload.megatron_core.plan import CoreSettings, settings_for
from perfgate.workload.runtime import RankInfo, Recorder, torch_dist_env
from perfgate.workload.spec import WorkloadSpec


def run(spec: WorkloadSpec, rank: RankInfo, recorder: Recorder | None) -> None:
    """Train the row for spec.steps steps on this rank; rank 0 records each step."""
    settings = settings_for(spec.row, spec.overrides, rank.world_size)
    inherited = dict(os.environ)
    defaults = env_defaults(spec.row, spec.overrides)
    # Set before torch loads: CUDA and NCCL read these when they start.
    os.environ.update(merge_env(inherited, defaults, spec.row.env, spec.env, torch_dist_env(rank)))
    if recorder:
        recorder.update(
            env=applied_env(inherited, defaults, spec.row.env, spec.env), mock_data=True
        )
    require_framework()
    train(settings, spec, rank, recorder)


def require_framework() -> None:
    """A one-line ConfigError where this Python lacks torch or Megatron-Core (imports both)."""
    try:
        import megatron.core  # noqa: F401
        import torch  # noqa: F401
    except ModuleNotFoundError as e:
        if e.name and e.name.split(".")[0] in ("torch", "megatron"):
            raise ConfigError(
                f"backend megatron_core needs torch and Megatron-Core in the job's Python "
                f"({e.name} is missing; pip install megatron-core==0.19.2)"
            ) from None
        raise


def train(s: CoreSettings, spec: WorkloadSpec, rank: RankInfo, recorder: Recorder | None) -> None:
    """Build the model on every rank and run spec.steps steps; rank 0 records them."""
    # torch and Megatron-Core load only here, after run() has set the environment.
    import torch

    from perfgate.workload.megatron_core.trainer import (
        Trainer,
        init_distributed,
        settings_record,
        shutdown,
    )
    from perfgate.workload.recording import gather_peak_memory, make_step, start_record

    check_fields(s, installed_fields())  # a misspelt override fails here, before any GPU work
    init_distributed(s, rank)
    try:
        trainer = Trainer(s)
        if recorder:
            a = s.arch
            print(
                f"perfgate.workload: megatron_core GPTModel {a.num_layers}x{a.hidden_size} "
                f"(ffn {a.ffn_hidden_size}, {a.num_attention_heads}/{a.num_query_groups} heads, "
                f"vocab {s.padded_vocab}) tp{s.tp} pp{s.pp} dp{s.dp} mbs {s.mbs} gbs {s.gbs} "
                f"seq {s.seq_len} on {s.device}, core attention {s.core_attention}",
                flush=True,
            )
        start_record(recorder, rank.world_size, None)
        clock = StepClock(torch)
        clock.start()
        for index in range(spec.steps):
            result = trainer.step()
            step_time = clock.lap()
            if recorder is None:
                continue
            recorder.add_step(
                make_step(index, step_time, s.tokens_per_step, rank.world_size, loss=result.loss)
            )
            line = iteration_line(
                index + 1, spec.steps, step_time, s.gbs, trainer.lr, result.loss, result.grad_norm
            )
            print(line, flush=True)
        gather_peak_memory(recorder)
        if recorder:
            extra = {"device_name": torch.cuda.get_device_name() if trainer.cuda else "cpu"}
            write_sidecar(spec.output_dir, clock, settings_record(s), extra)
    finally:
        sys.stdout.flush()
        shutdown()
    if recorder and len(recorder.record.steps) < spec.steps:
        raise WorkloadFailed(f"training ended after {len(recorder.record.steps)} steps")
