"""The Lightning callback that has rank 0 record each finished step in steps.json.

Imported only inside the nemo2 backend (needs lightning and torch). It reads the step time
NeMo's own TimingCallback measured (time from on_train_batch_start to on_train_batch_end,
unsynchronised, as the log line prints it) so steps.json and the log agree exactly, and
TFLOP/s from NeMo's FLOPsMeasurementCallback formula for that same step.
"""

from __future__ import annotations

import time
from typing import Any

import torch
from lightning.pytorch.callbacks import Callback

from perfgate.logs import Step
from perfgate.workload.runtime import Recorder
from perfgate.workload.versions import job_versions

GIB = float(1 << 30)


def _first(callbacks: list[Any], name: str) -> Any | None:
    return next((c for c in callbacks if type(c).__name__ == name), None)


class PerfgateStepCallback(Callback):
    """Record every training step on rank 0; gather each rank's peak memory at the end."""

    def __init__(self, recorder: Recorder | None, gbs: int, seq_len: int, world_size: int):
        self.recorder = recorder
        self.tokens_per_step = gbs * seq_len
        self.world_size = world_size
        self._t0: float | None = None
        self._timing: Any = None
        self._flops: Any = None

    def on_train_start(self, trainer: Any, pl_module: Any) -> None:
        """Find NeMo's timing and FLOPs callbacks; record versions; status running."""
        self._timing = _first(trainer.callbacks, "TimingCallback")
        self._flops = _first(trainer.callbacks, "FLOPsMeasurementCallback")
        if self.recorder:
            self.recorder.update(
                status="running",
                versions=job_versions(self.world_size),
                flops_convention="nemo2" if self._flops is not None else None,
            )

    def on_train_batch_start(self, trainer: Any, pl_module: Any, batch: Any, idx: int) -> None:
        """Start this callback's own clock (used only when NeMo's TimingCallback is absent)."""
        self._t0 = time.time()

    def on_train_batch_end(
        self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, idx: int
    ) -> None:
        """Append the finished step (0-based, NeMo's iteration number) to steps.json."""
        if self.recorder is None:
            return
        own = time.time() - self._t0 if self._t0 is not None else float("nan")
        step_time = float(self._timing.timer["train_step_timing"]) if self._timing else own
        tflops = None
        if self._flops is not None and step_time > 0:
            tflops = float(self._flops.eval_tflops_per_sec_per_gpu(step_time)[0])
        cuda = torch.cuda.is_available()
        self.recorder.add_step(
            Step(
                step=int(trainer.global_step) - 1,
                step_time_s=step_time,
                tflops_per_gpu=tflops,
                tokens_per_s_per_gpu=self.tokens_per_step / step_time / self.world_size,
                mem_allocated_gib=torch.cuda.memory_allocated() / GIB if cuda else None,
                mem_peak_gib=torch.cuda.max_memory_allocated() / GIB if cuda else None,
            )
        )

    def on_train_end(self, trainer: Any, pl_module: Any) -> None:
        """Gather every rank's peak allocated memory (one collective, after the last step)."""
        peak = torch.cuda.max_memory_allocated() / GIB if torch.cuda.is_available() else 0.0
        peaks = [peak]
        if torch.distributed.is_available() and torch.distributed.is_initialized():
            peaks = [0.0] * torch.distributed.get_world_size()
            torch.distributed.all_gather_object(peaks, peak)
        if self.recorder:
            self.recorder.update(peak_memory_gib_per_rank=[round(p, 3) for p in peaks])
