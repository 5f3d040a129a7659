"""Two clocks on the same step boundaries, the Megatron-LM log line, and the timing sidecar.

A step ends when its optimizer step has run on the device. perfgate's step time is the host's:
torch.cuda.synchronize() then time.perf_counter(), end of one step to the end of the next (the
first from just before it), so time spent between steps (writing steps.json, the log line) is
in the next step, as in Megatron-LM's `elapsed time per iteration`. The second clock marks the
same boundaries on the device (perfgate.workload.deviceclock: a CUDA event queued on the
step's stream just before the host's sync, read only after the run; without CUDA,
CLOCK_REALTIME, which checks the plumbing, not the timer). It proves the host's sync waits for
the step's work; scripts/gpu-check adds clocks the step code does not take. Both series go to
megatron_core.json beside steps.json.
"""

from __future__ import annotations

import datetime as _dt
import json
import time
from pathlib import Path
from typing import Any

from perfgate import atomic
from perfgate.workload.deviceclock import DeviceClock

SIDECAR = "megatron_core.json"  # in spec.output_dir, written by rank 0
SCHEMA = "perfgate.megatron_core/1"


class StepClock:
    """Host time of each step (perfgate's) and the same boundaries on a device clock."""

    def __init__(self, torch: Any | None = None) -> None:
        self._torch = torch if torch is not None and torch.cuda.is_available() else None
        self._device = DeviceClock(torch)
        self.second_clock = self._device.name
        self._host: float | None = None
        self.host_s: list[float] = []

    def _boundary(self) -> float:
        # The device mark is queued first and read only in finish(): the host's synchronize
        # and perf_counter never touch it.
        self._device.mark()
        if self._torch is not None:
            self._torch.cuda.synchronize()
        return time.perf_counter()

    def start(self) -> None:
        """Mark the boundary before the first step."""
        self._host = self._boundary()

    def lap(self) -> float:
        """Mark the end of a step; return its host time in seconds."""
        if self._host is None:
            raise RuntimeError("StepClock.lap() before start()")
        host = self._boundary()
        self.host_s.append(host - self._host)
        self._host = host
        return self.host_s[-1]

    @property
    def second_s(self) -> list[float]:
        """The device clock's time of each step (read once, after the run)."""
        return self._device.intervals()


def iteration_line(
    iteration: int,
    total: int,
    step_time_s: float,
    gbs: int,
    lr: float,
    loss: float | None = None,
    grad_norm: float | None = None,
    now: _dt.datetime | None = None,
) -> str:
    """Megatron-LM's training_log line for a finished iteration (1-based, as Megatron counts)."""
    stamp = (now or _dt.datetime.now()).strftime("%Y-%m-%d %H:%M:%S")
    fields = [
        f" [{stamp}] iteration {iteration:8d}/{total:8d}",
        f"consumed samples: {iteration * gbs:12d}",
        f"elapsed time per iteration (ms): {step_time_s * 1000.0:.1f}",
        f"learning rate: {lr:.6E}",
        f"global batch size: {gbs:5d}",
    ]
    if loss is not None:
        fields.append(f"lm loss: {loss:.6E}")
    if grad_norm is not None:
        fields.append(f"grad norm: {grad_norm:.3f}")
    fields += ["number of skipped iterations:   0", "number of nan iterations:   0"]
    return " | ".join(fields) + " |"


def write_sidecar(
    output_dir: str | Path, clock: StepClock, settings: dict[str, Any], extra: dict[str, Any]
) -> Path:
    """Write megatron_core.json: both clocks' step times and what was built."""
    path = Path(output_dir) / SIDECAR
    data = {
        "schema": SCHEMA,
        "host_clock": "perf_counter after synchronize",
        "second_clock": clock.second_clock,
        "host_step_time_s": clock.host_s,
        "second_step_time_s": clock.second_s,
        "settings": settings,
        **extra,
    }
    atomic.write_json(path, data)
    return path


def read_sidecar(path: str | Path) -> dict[str, Any]:
    """Read a megatron_core.json back (the check's side)."""
    data = json.loads(Path(path).read_text())
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise ValueError(f"{path}: not a {SCHEMA} file")
    return data
