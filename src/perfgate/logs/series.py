"""The per-step record of one run: Step and StepSeries, what every log format is read into.

Pure stdlib: the workload builds these inside the container (steps.json), the parser and the
statistics outside.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace


@dataclass(frozen=True)
class Step:
    """One training step as logged. step is 0-based (NeMo 2 numbering) whatever the format."""

    step: int
    step_time_s: float
    tflops_per_gpu: float | None = None  # as logged, in the logger's own FLOPs convention
    tokens_per_s_per_gpu: float | None = None
    mem_allocated_gib: float | None = None
    mem_peak_gib: float | None = None  # peak allocated by tensors (torch max_memory_allocated)
    loss: float | None = None
    grad_norm: float | None = None
    mem_reserved_gib: float | None = None  # peak reserved by the caching allocator
    mfu: float | None = None  # as logged (fraction), in the logger's own FLOPs convention
    rank: int | None = None  # rank label of the line this record was read from, if any

    @property
    def peak_memory_gib(self) -> float | None:
        """Peak GPU memory as logged: the allocated peak, else the reserved one (TorchTitan)."""
        return self.mem_peak_gib if self.mem_peak_gib is not None else self.mem_reserved_gib


@dataclass(frozen=True)
class StepSeries:
    """The per-step record of one run, in step order, plus what the parser learned."""

    format: str
    steps: tuple[Step, ...]
    source_files: tuple[str, ...] = ()
    log_interval: int = 1  # >1: each value is an average over that many steps
    restarts: int = 0  # restarts seen: later files (torchrun restarts, requeues) + reruns in a file
    invalid_reason: str | None = None  # e.g. "NaN grad norm at step 17"
    notes: tuple[str, ...] = ()  # what the parser decided (duplicates, restarts, derivations)
    segment_starts: tuple[int, ...] = ()  # first step of each segment after the first
    # Summary lines the logger printed itself (e.g. Automodel's average_step_time_s).
    reported: dict[str, float] = field(default_factory=dict, hash=False)
    # The smallest relative standard error the step times can support: > 0 when they are a
    # window mean of whole-second timestamps (perfgate.logs.formats.fields.window_mean_times).
    min_rel_se: float = 0.0

    @property
    def step_times(self) -> list[float]:
        """Seconds per step, in step order."""
        return [s.step_time_s for s in self.steps]

    @property
    def valid(self) -> bool:
        """False when the run cannot be judged (e.g. a NaN grad norm)."""
        return self.invalid_reason is None


def renumber(steps: Iterable[Step], offset: int) -> list[Step]:
    """The steps with offset added to every step number."""
    return [replace(s, step=s.step + offset) for s in steps]


def log_interval_of(step_numbers: Sequence[int]) -> int:
    """The most common gap between consecutive logged steps (1 when there is none)."""
    gaps = Counter(b - a for a, b in itertools.pairwise(step_numbers) if b > a)
    if not gaps:
        return 1
    top = max(gaps.values())
    return min(g for g, n in gaps.items() if n == top)
