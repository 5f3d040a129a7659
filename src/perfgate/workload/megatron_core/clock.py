"""Two clocks on the same step boundaries, the Megatron-LM log line, and the timing sidecar.

A step ends when its optimizer step has run on the device. perfgate's step time is the host's:
torch.cuda.synchronize() then time.perf_counter(), end of one step to the end of the next (the
first from just before it), so time spent between steps (writing steps.json, the log line) is
in the next step, as in Megatron-LM's `elapsed time per iteration`. The second clock times the
same intervals independently: a CUDA event recorded on the current stream at each boundary (the
device's own timestamps), or, without CUDA, CLOCK_REALTIME read at the same points (a separate
clock, but on the same host: on CPU this checks the plumbing, not the timer). Both series go to
megatron_core.json beside steps.json.
"""

from __future__ import annotations

import datetime as _dt
import json
import time
from pathlib import Path
from typing import Any

from perfgate import atomic

SIDECAR = "megatron_core.json"  # in spec.output_dir, written by rank 0
SCHEMA = "perfgate.megatron_core/1"


class StepClock:
    """Host time of each step (perfgate's) and the same interval on a second clock."""

    def __init__(self, torch: Any | None = None) -> None:
        self._torch = torch if torch is not None and torch.cuda.is_available() else None
        self.second_clock = "cuda_event" if self._torch else "clock_realtime"
        self._host: float | None = None
        self._mark: Any = None
        self.host_s: list[float] = []
        self.second_s: list[float] = []

    def _boundary(self) -> tuple[float, Any]:
        if self._torch is None:
            mark = time.clock_gettime(time.CLOCK_REALTIME)
            return time.perf_counter(), mark
        event = self._torch.cuda.Event(enable_timing=True)
        event.record()
        self._torch.cuda.synchronize()
        return time.perf_counter(), event

    def start(self) -> None:
        """Mark the boundary before the first step."""
        self._host, self._mark = self._boundary()

    def lap(self) -> float:
        """Mark the end of a step; return its host time in seconds (recorded on both clocks)."""
        if self._host is None:
            raise RuntimeError("StepClock.lap() before start()")
        host, mark = self._boundary()
        if self._torch is None:
            second = mark - self._mark
        else:
            second = self._mark.elapsed_time(mark) / 1000.0  # both events are complete
        self.host_s.append(host - self._host)
        self.second_s.append(second)
        self._host, self._mark = host, mark
        return self.host_s[-1]


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
