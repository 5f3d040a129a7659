"""A second clock of the step boundaries: device timestamps, never read until the run ends.

mark() records a CUDA event on the current stream (the stream the step's work is queued on)
and nothing else: no host synchronisation, no read. The step's own timer (perfgate's synced
host clock, NeMo's TimingCallback) is untouched by it; intervals() synchronises once, after
the last step, and returns the device time between consecutive marks. Without CUDA the marks
are CLOCK_REALTIME readings: a separate clock, but on the same host, so on CPU it checks the
plumbing, not a timer. torch is passed in (the backends import it in the job only).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from perfgate import atomic

CLOCK_FILE = "device_clock.json"  # beside steps.json, rank 0 only (the nemo2 backend's)
SCHEMA = "perfgate.device_clock/1"


class DeviceClock:
    """Marks at step boundaries; their intervals, read after the run."""

    def __init__(self, torch: Any | None = None) -> None:
        cuda = torch is not None and torch.cuda.is_available()
        self._torch = torch if cuda else None
        self.name = "cuda_event" if cuda else "clock_realtime"
        self._marks: list[Any] = []

    def mark(self) -> None:
        """Record a boundary: an event queued on the current stream (or the realtime clock)."""
        if self._torch is None:
            self._marks.append(time.clock_gettime(time.CLOCK_REALTIME))
            return
        event = self._torch.cuda.Event(enable_timing=True)
        event.record()
        self._marks.append(event)

    def __len__(self) -> int:
        return len(self._marks)

    def intervals(self) -> list[float]:
        """Seconds between consecutive marks (one synchronisation, after the last)."""
        if self._torch is None:
            return [b - a for a, b in zip(self._marks, self._marks[1:], strict=False)]
        self._torch.cuda.synchronize()
        pairs = zip(self._marks, self._marks[1:], strict=False)
        return [a.elapsed_time(b) / 1000.0 for a, b in pairs]


def write_clock(folder: str | Path, name: str, what: str, intervals: list[float]) -> Path:
    """Write CLOCK_FILE: the second clock's step times, and what each interval spans."""
    path = Path(folder) / CLOCK_FILE
    data = {"schema": SCHEMA, "second_clock": name, "what": what, "second_step_time_s": intervals}
    atomic.write_json(path, data)
    return path


def read_clock(path: str | Path) -> dict[str, Any]:
    """Read a CLOCK_FILE back (a check's side); ValueError naming the file when it is not one."""
    data = json.loads(Path(path).read_text())
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise ValueError(f"{path}: not a {SCHEMA} file")
    if not isinstance(data.get("second_step_time_s"), list):
        raise ValueError(f"{path}: no second_step_time_s list")
    return data
