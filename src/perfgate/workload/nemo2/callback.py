"""The Lightning callback that has rank 0 record each finished step in steps.json.

Imported only inside the nemo2 backend (needs lightning and torch). It reads the step time
NeMo's own TimingCallback measured (time from on_train_batch_start to on_train_batch_end,
unsynchronised, as the log line prints it) so steps.json and the log agree exactly, and
TFLOP/s from NeMo's FLOPsMeasurementCallback formula for that same step. Beside it, a second
clock NeMo's timer does not take (perfgate.workload.deviceclock): a CUDA event queued at each
batch start and at the end of training, read only after the last step, whose intervals are
the device time from one step's start to the next; rank 0 writes them to device_clock.json.
"""

from __future__ import annotations

import time
from importlib import metadata
from typing import Any

from lightning.pytorch.callbacks import Callback

from perfgate.workload.deviceclock import DeviceClock, write_clock
from perfgate.workload.nemo2.models import nemo2_flops_convention
from perfgate.workload.nemo2.timers import TimerPrinter
from perfgate.workload.recording import gather_peak_memory, make_step, start_record
from perfgate.workload.runtime import Recorder


def _first(callbacks: list[Any], name: str) -> Any | None:
    return next((c for c in callbacks if type(c).__name__ == name), None)


class PerfgateStepCallback(Callback):
    """Record every training step on rank 0; gather each rank's peak memory at the end."""

    def __init__(
        self, recorder: Recorder | None, gbs: int, seq_len: int, world_size: int, rank: int = 0
    ):
        self.recorder = recorder
        self.timers = TimerPrinter(rank)  # the phases of each step (perfgate.workload.nemo2.timers)
        self.tokens_per_step = gbs * seq_len
        self.world_size = world_size
        self._t0: float | None = None
        self._timing: Any = None
        self._flops: Any = None
        self._device: DeviceClock | None = None

    def setup(self, trainer: Any, pl_module: Any, stage: str) -> None:
        """Before the optimizer is built: it gets the strategy's Megatron timers too."""
        self.timers.lend_to_optimizer(trainer.strategy, pl_module)

    def on_train_start(self, trainer: Any, pl_module: Any) -> None:
        """Find NeMo's timing and FLOPs callbacks; record versions; status running."""
        self.timers.adopt(trainer.strategy)
        self._timing = _first(trainer.callbacks, "TimingCallback")
        self._flops = _first(trainer.callbacks, "FLOPsMeasurementCallback")
        convention = None
        if self._flops is not None:  # the convention this NeMo's FLOPs callback counts in
            convention = nemo2_flops_convention(self._nemo_version())
        start_record(self.recorder, self.world_size, convention)
        if self.recorder is not None:
            import torch  # loaded by Lightning already; imported here to keep this file light

            self._device = DeviceClock(torch)

    @staticmethod
    def _nemo_version() -> str:
        try:
            return metadata.version("nemo_toolkit")
        except metadata.PackageNotFoundError:
            return ""

    def on_train_batch_start(self, trainer: Any, pl_module: Any, batch: Any, idx: int) -> None:
        """Start this callback's own clock (used only when NeMo's TimingCallback is absent)."""
        self._t0 = time.time()
        if self._device is not None:
            self._device.mark()

    def on_train_batch_end(
        self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, idx: int
    ) -> None:
        """Append the finished step (0-based, NeMo's iteration number) to steps.json."""
        self.timers.after_step()  # every rank: gathering the timers is a collective
        if self.recorder is None:
            return
        own = time.time() - self._t0 if self._t0 is not None else float("nan")
        step_time = float(self._timing.timer["train_step_timing"]) if self._timing else own
        tflops = None
        if self._flops is not None and step_time > 0:
            tflops = float(self._flops.eval_tflops_per_sec_per_gpu(step_time)[0])
        step = make_step(
            int(trainer.global_step) - 1, step_time, self.tokens_per_step, self.world_size, tflops
        )
        self.recorder.add_step(step)

    def on_train_end(self, trainer: Any, pl_module: Any) -> None:
        """Gather every rank's peak allocated memory (one collective, after the last step);
        rank 0 reads the device clock and writes it beside steps.json."""
        gather_peak_memory(self.recorder)
        if self.recorder is None or self._device is None or not len(self._device):
            return
        self._device.mark()  # the end of the last step (and of what followed it)
        write_clock(
            self.recorder.path.parent,
            self._device.name,
            "device time from each batch start to the next (the last: to the end of training)",
            self._device.intervals(),
        )
