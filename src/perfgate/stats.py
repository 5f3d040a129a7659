"""From step-time series to verdicts: warm-up removal, robust run summaries, comparisons.

Contract (implementation pending in this commit; see the docstrings for the semantics).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

VERDICTS = ("PASS", "REGRESSION", "IMPROVEMENT", "INCONCLUSIVE")
Window = str | tuple[int, int]  # "auto" (data-driven) or (first, last) inclusive step numbers


@dataclass(frozen=True)
class RunSummary:
    """Robust summary of the steady part of one run (one job, one launch)."""

    n_steps: int
    steady: bool
    window_method: str  # "mser5" or "fixed"
    window_start: int  # first steady step (0-based step number)
    window_end: int  # last steady step, inclusive
    n_steady: int
    median_s: float
    mean_s: float
    se_s: float  # batch-means standard error of the steady mean
    cv: float
    spike_fraction: float
    reason: str | None = None  # why not steady, when steady is False


@dataclass(frozen=True)
class Comparison:
    """A verdict on candidate vs baseline with the numbers behind it."""

    verdict: str
    delta: float  # (candidate / baseline - 1) of steady step time; +0.03 = 3% slower
    ci_low: float
    ci_high: float
    se: float
    resolution: float  # smallest slowdown this comparison tells from noise at its false-alarm rate
    tolerance: float
    mode: str  # "stored", "runs" or "paired"
    reason: str
    baseline_step_time_s: float
    candidate_step_time_s: float
    baseline: tuple[RunSummary, ...] = ()
    candidate: tuple[RunSummary, ...] = ()
    pair_deltas: tuple[float, ...] = ()


def summarize_run(step_times: Sequence[float], window: Window = "auto") -> RunSummary:
    """Summarize one run: drop warm-up (MSER-5 after a minimum skip, or a fixed window)."""
    raise NotImplementedError


def compare_runs(
    baseline_runs: Sequence[Sequence[float]],
    candidate_runs: Sequence[Sequence[float]],
    tolerance: float = 0.05,
    paired: bool = False,
    window: Window = "auto",
) -> Comparison:
    """Compare runs given as full per-step series (warm-up included), step order."""
    raise NotImplementedError
