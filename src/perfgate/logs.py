"""Parse training logs of every NeMo-stack format into one StepSeries.

Formats: NeMo 2.x progress lines, NeMo 1.x tqdm bars, Megatron-LM iteration lines,
Megatron-Bridge `Step Time :` lines, NeMo Automodel lines, llmb logs. See
../shared/reference/log_formats.md for verbatim examples of each.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Step:
    """One training step as logged. step is 0-based (NeMo 2 numbering) whatever the format."""

    step: int
    step_time_s: float
    tflops_per_gpu: float | None = None  # as logged, in the logger's own FLOPs convention
    tokens_per_s_per_gpu: float | None = None
    mem_allocated_gib: float | None = None
    mem_peak_gib: float | None = None
    loss: float | None = None
    grad_norm: float | None = None


@dataclass(frozen=True)
class StepSeries:
    """The per-step record of one run, in step order, plus what the parser learned."""

    format: str
    steps: tuple[Step, ...]
    source_files: tuple[str, ...] = ()
    log_interval: int = 1  # >1: each value is an average over that many steps
    restarts: int = 0  # files/segments chained (torchrun restarts, requeues)
    invalid_reason: str | None = None  # e.g. "NaN grad norm at step 17"

    @property
    def step_times(self) -> list[float]:
        """Seconds per step, in step order."""
        return [s.step_time_s for s in self.steps]

    @property
    def valid(self) -> bool:
        """False when the run cannot be judged (e.g. a NaN grad norm)."""
        return self.invalid_reason is None
