"""The per-step record of one run: Step and StepSeries, what every log format is read into.

Pure stdlib: the workload builds these inside the container (steps.json), the parser and the
statistics outside.
"""

from __future__ import annotations

import itertools
import math
from array import array
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

from perfgate.logs.table import Step, StepTable, as_table

__all__ = ["Step", "StepSeries", "StepTable", "invalid", "log_interval_of", "renumber"]


@dataclass(frozen=True)
class StepSeries:
    """The per-step record of one run, in step order, plus what the parser learned.

    steps is a perfgate.logs.table.StepTable (columns; Step objects built when indexed or
    iterated); any sequence of Steps given is turned into one.
    """

    format: str
    steps: Sequence[Step]
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

    # perfgate.runs.CAUSES word of invalid_reason: "NAN" (a NaN or inf value, Megatron's NaN
    # iterations) or "BAD_LOG" (the log contradicts itself); None reads as NAN.
    invalid_cause: str | None = None

    @property
    def cause(self) -> str:
        """The INFRA cause of an invalid run (perfgate.runs.CAUSES)."""
        return self.invalid_cause or "NAN"

    def __post_init__(self) -> None:
        object.__setattr__(self, "steps", as_table(self.steps))

    @property
    def _table(self) -> StepTable:
        return self.steps  # type: ignore[return-value]  # __post_init__ made it one

    @property
    def step_times(self) -> list[float]:
        """Seconds per step, in step order."""
        return self._table.times.tolist()

    @property
    def step_numbers(self) -> list[int]:
        """The 0-based step numbers, in step order."""
        return self._table.numbers.tolist()

    @property
    def peak_memory_gib(self) -> float | None:
        """The highest peak memory any step logged (allocated, else reserved), or None."""
        table = self._table
        peak = table.max_of("mem_peak_gib")
        if "mem_reserved_gib" not in table.fields:
            return peak
        return max((p for s in table if (p := s.peak_memory_gib) is not None), default=None)

    @property
    def valid(self) -> bool:
        """False when the run cannot be judged (e.g. a NaN grad norm)."""
        return self.invalid_reason is None


def renumber(steps: Iterable[Step], offset: int) -> list[Step]:
    """The steps with offset added to every step number."""
    return [replace(s, step=s.step + offset) for s in steps]


def log_interval_of(step_numbers: Sequence[int]) -> int:
    """The most common gap between consecutive logged steps (1 when there is none)."""
    regular = even_gap(step_numbers)
    if regular is not None:
        return regular
    gaps = Counter(b - a for a, b in itertools.pairwise(step_numbers) if b > a)
    if not gaps:
        return 1
    top = max(gaps.values())
    return min(g for g, n in gaps.items() if n == top)


def even_gap(numbers: Sequence[int]) -> int | None:
    """g when numbers are first, first + g, first + 2g, ... (g > 0), else None.

    One comparison in C: a million-step log is nearly always so, and then needs no per-step
    look at its numbers (log interval, restarts, repeats).
    """
    n = len(numbers)
    if n < 2:
        return None
    first, g = numbers[0], numbers[1] - numbers[0]
    if g <= 0 or numbers[-1] - first != g * (n - 1):
        return None
    steps = range(first, numbers[-1] + 1, g)
    if isinstance(numbers, array):
        return g if numbers == array(numbers.typecode, steps) else None
    if isinstance(numbers, list):
        return g if numbers == list(steps) else None
    return None


def invalid(
    steps: StepTable, nan_iterations: dict[int, float], conflicts: dict[int, str]
) -> tuple[str, str] | None:
    """(cause, reason) of the first reason, in step order, that the run cannot be judged.

    A NaN or infinite step time, grad norm or loss anywhere (warm-up included: NAN), a
    Megatron NaN-iteration count (NAN), a step logged twice with two times (BAD_LOG).
    """
    found: list[tuple[int, int, str]] = []  # (step, rank of the check, reason)
    bad = _first_bad_time(steps.times)
    if bad is not None:
        x, s = steps.times[bad], steps.numbers[bad]
        if not math.isfinite(x):
            found.append((s, 0, f"{_nan_or_inf(x)} step time at step {s}"))
        else:  # zero or negative: not a duration (a corrupt or edited log)
            found.append((s, 5, f"step time {x!r} s at step {s} is not a duration"))
    for order, (name, what) in enumerate((("grad_norm", "grad norm"), ("loss", "loss")), 1):
        col = steps.fields.get(name)
        bad = col.first_not_finite() if col is not None else None
        if bad is not None:
            x = col.values[bad]  # type: ignore[union-attr]
            found.append(
                (steps.numbers[bad], order, f"{_nan_or_inf(x)} {what} at step {steps.numbers[bad]}")
            )
    if nan_iterations:
        s = min(nan_iterations)
        n = nan_iterations[s]  # a corrupt count may be inf or NaN: no int() of it
        count = int(n) if math.isfinite(n) else n
        found.append((s, 3, f"{count} NaN iteration(s) reported by Megatron at step {s}"))
    if conflicts:
        s = min(conflicts)
        found.append((s, 4, conflicts[s]))
    if not found:
        return None
    _, order, why = min(found)
    return ("BAD_LOG" if order >= 4 else "NAN"), why


def _first_bad_time(values: array) -> int | None:
    """The first step time that is NaN, infinite, zero or negative, or None."""
    if math.isfinite(sum(values)) and (not values or min(values) > 0):  # C speed
        return None
    return next((i for i, x in enumerate(values) if not x > 0 or x - x != 0), None)


def _nan_or_inf(x: float) -> str:
    return "NaN" if x != x else "infinite"
