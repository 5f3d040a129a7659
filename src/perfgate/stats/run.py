"""One run's step-time series -> its steady state: warm-up removal and a robust summary.

Warm-up ("auto"): skip MIN_SKIP_STEPS (first iteration, compile, CUDA-graph capture), then
MSER-5 (White 1997; Franklin & White 2008): batch the rest into means of 5 steps and cut the
prefix d that minimises the squared standard error of the remaining mean,
sum((Y_j - mean_d)^2) / (k - d)^2. Spikes are clipped before MSER sees them (a GC or
checkpoint step near the end must not pull the cut), and the cut never exceeds half the run.
The fixed window (first, last) is the llmb rule (iterations 35-44 of a 50-step NeMo 2 run,
0-based and inclusive).

Summary: the median of the steady steps is the run's location. Its standard error is a
batch-means SE (steps are autocorrelated, lag-1 up to ~0.7 in the reference data), computed
on the spike-clipped steps and scaled by sqrt(pi/2) (the median's efficiency under normal
noise), never below the iid value. A run is not steady, with a reason, when it is too short,
too noisy or still drifting; callers must then not turn it into a REGRESSION.
"""

from __future__ import annotations

import itertools
import math
import statistics
from array import array
from collections.abc import Sequence
from dataclasses import dataclass

from perfgate.errors import ConfigError, PerfgateError

Window = str | tuple[int, int]  # "auto" (data-driven) or (first, last) inclusive step numbers

MIN_SKIP_STEPS = 5  # never steady: step 0 (init/compile) and the CUDA-graph capture (step 3-4)
MSER_BATCH = 5
MIN_STEADY_STEPS = 10  # fewer steady steps than this cannot give a median and an SE
MAX_ROBUST_CV = 0.10  # noisier (often bimodal) runs have no meaningful single step time
MAX_DRIFT = 0.03  # halves of the steady window differing by more: the run never settled
DRIFT_SIGMAS = 3.0  # ... and only when the difference is also beyond noise
AUTOCORR_FACTOR = 4.0  # see _drift_se
SPIKE_THRESHOLD = 0.10  # a step > 1.10 x the steady median is a spike (GC, checkpoint, capture)
CLIP_SIGMAS = 5.0  # steps beyond median +- 5 robust sigma are clipped for MSER and the SE
_MAD_TO_SIGMA = 1.4826
_MEDIAN_EFFICIENCY = math.sqrt(math.pi / 2)


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
    se_s: float  # batch-means standard error of the steady location (median)
    cv: float  # robust coefficient of variation (1.4826 MAD / median) of the steady steps
    spike_fraction: float
    reason: str | None = None  # why not steady, when steady is False
    n_missing: int = 0  # non-finite step times (e.g. a value cut from the log), left out
    drift: float = 0.0  # median of the second half of the window / first half - 1

    @property
    def rel_se(self) -> float:
        """Standard error of the location relative to it (about the SE of its log)."""
        return self.se_s / self.median_s if self.median_s > 0 else math.inf


def _stdev(xs: Sequence[float]) -> float:
    m = math.fsum(xs) / len(xs)
    return math.sqrt(math.fsum((x - m) ** 2 for x in xs) / (len(xs) - 1))


def _mad_sigma(values: Sequence[float], center: float) -> float:
    return _MAD_TO_SIGMA * statistics.median([abs(v - center) for v in values])


def _clip(values: Sequence[float], center: float, width: float) -> list[float]:
    lo, hi = center - width, center + width
    return [min(max(v, lo), hi) for v in values]


def _clip_width(values: Sequence[float], center: float) -> float:
    # A floor of 0.5% keeps very quiet runs (MAD ~ 0) from clipping ordinary steps.
    return CLIP_SIGMAS * max(_mad_sigma(values, center), 0.005 * center)


def mser5_cut(values: Sequence[float], max_cut: int) -> int:
    """MSER-5 truncation point (in values, a multiple of 5) within [0, max_cut].

    One backward pass (Welford's update of the tail's mean and sum of squared deviations)
    gives every candidate cut's score: O(n), where recomputing each tail was O(n^2) and a
    million-step run never finished.
    """
    k = len(values) // MSER_BATCH
    means = [
        math.fsum(values[j * MSER_BATCH : (j + 1) * MSER_BATCH]) / MSER_BATCH for j in range(k)
    ]
    last = min(max_cut // MSER_BATCH, k - 2)
    scores = [math.inf] * (last + 1)
    mean = m2 = 0.0
    for n, d in enumerate(range(k - 1, -1, -1), start=1):
        delta = means[d] - mean
        mean += delta / n
        m2 += delta * (means[d] - mean)
        if d <= last:
            scores[d] = m2 / (n * n)
    best_d, best = 0, math.inf
    for d, score in enumerate(scores):
        if score < best:  # strict: the earliest of equal minima, the least data thrown away
            best_d, best = d, score
    return best_d * MSER_BATCH


def batch_means_se(values: Sequence[float]) -> float:
    """Standard error of the mean of autocorrelated values by non-overlapping batch means."""
    n = len(values)
    if n < 2:
        return math.inf
    iid = _stdev(values) / math.sqrt(n)
    size = max(MSER_BATCH, round(math.sqrt(n)))
    k = n // size
    if k < 3:
        return iid
    # Leftover steps are dropped from the front, the end nearest the warm-up.
    start = n - k * size
    means = [statistics.fmean(values[start + j * size : start + (j + 1) * size]) for j in range(k)]
    # Batch means can understate the SE by chance with few batches; never go below iid.
    return max(_stdev(means) / math.sqrt(k), iid)


def _drift_se(xs: Sequence[float], med: float) -> float:
    """Relative SE of (median of 2nd half - median of 1st half) under stationary noise.

    The noise level comes from successive differences, which a trend does not inflate (a
    batch-means SE would grow with the very drift it is meant to judge); AUTOCORR_FACTOR
    covers what differencing hides of autocorrelated noise (lag-1 0.7: ~4x).
    """
    diffs = [abs(b - a) for a, b in itertools.pairwise(xs)]
    local = _MAD_TO_SIGMA * statistics.median(diffs) / math.sqrt(2)
    half = max(1, len(xs) // 2)
    return math.sqrt(2) * _MEDIAN_EFFICIENCY * AUTOCORR_FACTOR * local / math.sqrt(half) / med


def _validate(step_times: Sequence[float]) -> tuple[list[float], int]:
    if isinstance(step_times, str | bytes) or not isinstance(step_times, Sequence):
        raise PerfgateError(f"step_times must be a sequence of seconds, got {type(step_times)}")
    values: list[float] = []
    for i, v in enumerate(step_times):
        try:
            x = float(v)
        except (TypeError, ValueError):
            raise PerfgateError(f"step_times[{i}] = {v!r} is not a number of seconds") from None
        if math.isinf(x) or x <= 0:
            raise PerfgateError(f"step_times[{i}] = {v!r}: a step time must be > 0 and finite")
        values.append(x)
    missing = sum(math.isnan(x) for x in values)
    return values, missing


def _unit(values: Sequence[float]) -> float:
    """A power of two that brings the largest finite value to [0.5, 1), when values are large
    or small enough for squares and sums to leave the float range; else 1.0 (no copy)."""
    top = max(filter(math.isfinite, values), default=0.0)
    low = min(filter(math.isfinite, values), default=1.0)
    if not top > 0 or (top < 1e100 and low > 1e-100):
        return 1.0
    return math.ldexp(1.0, -math.frexp(top)[1])


def parse_window(text: str, option: str = "--window") -> Window:
    """'auto' or 'FIRST:LAST' (inclusive 0-based steps, e.g. 35:44 as llmb) from an option."""
    if text == "auto":
        return "auto"
    first, sep, last = text.partition(":")
    try:
        if not sep:
            raise ValueError
        return (int(first), int(last))
    except ValueError:
        raise ConfigError(f"{option} {text!r}: expected auto or FIRST:LAST, e.g. 35:44") from None


def window_name(window: Window) -> str:
    """A window as an option writes it: 'auto' or 'FIRST:LAST'."""
    return window if isinstance(window, str) else f"{window[0]}:{window[1]}"


def _parse_window(window: Window) -> tuple[int, int] | None:
    if window == "auto":
        return None
    if isinstance(window, str):
        raise PerfgateError(f"window = {window!r}: expected 'auto' or (first, last) steps")
    try:
        first, last = (int(w) for w in window)
    except (TypeError, ValueError):
        raise PerfgateError(f"window = {window!r}: expected 'auto' or (first, last)") from None
    if first < 0 or last < first:
        raise PerfgateError(f"window = {window!r}: need 0 <= first <= last")
    return first, last


def _not_steady(n: int, method: str, reason: str, missing: int) -> RunSummary:
    nan = math.nan
    return RunSummary(n, False, method, -1, -1, 0, nan, nan, nan, nan, nan, reason, missing)


def summarize_run(
    step_times: Sequence[float],
    window: Window = "auto",
    *,
    step_numbers: Sequence[int] | None = None,
    min_rel_se: float = 0.0,
) -> RunSummary:
    """Summarize one run: drop warm-up (MSER-5 after a minimum skip, or a fixed window).

    step_times are seconds per step in step order; step_numbers (default 0, 1, 2, ...) are
    the 0-based step numbers they belong to. NaN marks a missing value and is left out.
    min_rel_se: the SE never falls below this fraction of the median (step times that are a
    window mean of whole-second stamps: StepSeries.min_rel_se).
    """
    values, missing = _validate(step_times)
    # Computed in units of a power of two near the largest step time (exact: only the
    # exponent changes), so squares and sums of a corrupt 1e300 s step cannot overflow.
    scale = _unit(values)
    if scale != 1.0:
        values = [x * scale for x in values]
    n = len(values)
    if step_numbers is None:
        numbers: Sequence[int] = range(n)
    elif isinstance(step_numbers, array | range):  # integers already: no copy of a long run
        numbers = step_numbers
    else:
        numbers = [int(s) for s in step_numbers]
    if len(numbers) != n:
        raise PerfgateError(f"step_numbers has {len(numbers)} entries for {n} step times")
    fixed = _parse_window(window)
    method = "mser5" if fixed is None else "fixed"
    # Two lists, not (step, time) pairs: a million-step run's tuples cost 64 bytes a step.
    if missing:
        kept = [i for i, x in enumerate(values) if not math.isnan(x)]
        nums, vals = [numbers[i] for i in kept], [values[i] for i in kept]
    else:
        nums, vals = numbers, values

    if fixed is not None:
        first, last = fixed
        if not nums or nums[-1] < last:
            end = nums[-1] if nums else "-"
            reason = f"run ends at step {end}; fixed window {first}:{last} needs step {last}"
            return _not_steady(n, method, reason, missing)
        inside = [i for i, s in enumerate(nums) if first <= s <= last]
        steady_nums, xs = [nums[i] for i in inside], [vals[i] for i in inside]
        min_steps = min(MIN_STEADY_STEPS, last - first + 1)
    else:
        if len(vals) < MIN_SKIP_STEPS + MIN_STEADY_STEPS:
            reason = (
                f"only {len(vals)} step times; warm-up removal needs at least "
                f"{MIN_SKIP_STEPS + MIN_STEADY_STEPS}"
            )
            return _not_steady(n, method, reason, missing)
        rest = vals[MIN_SKIP_STEPS:]
        tail = rest[len(rest) // 2 :]
        ref = statistics.median(tail)
        clipped = _clip(rest, ref, _clip_width(tail, ref))
        del rest, tail
        max_cut = max(0, len(vals) // 2 - MIN_SKIP_STEPS)
        cut = mser5_cut(clipped, max_cut)
        del clipped
        steady_nums, xs = nums[MIN_SKIP_STEPS + cut :], vals[MIN_SKIP_STEPS + cut :]
        min_steps = MIN_STEADY_STEPS

    if len(xs) < min_steps:
        reason = f"only {len(xs)} steady step times; need at least {min_steps}"
        return _not_steady(n, method, reason, missing)

    med = statistics.median(xs)
    if not med > 0:  # values 600 orders of magnitude apart underflowed to 0 in the common unit
        reason = "step times span more orders of magnitude than a float can hold together"
        return _not_steady(n, method, reason, missing)
    cv = _mad_sigma(xs, med) / med
    clipped = _clip(xs, med, _clip_width(xs, med))
    se = max(_MEDIAN_EFFICIENCY * batch_means_se(clipped), min_rel_se * med)
    spikes = sum(x > med * (1 + SPIKE_THRESHOLD) for x in xs) / len(xs)
    half = len(xs) // 2
    m1, m2 = statistics.median(xs[:half]), statistics.median(xs[len(xs) - half :])
    drift = m2 / m1 - 1
    drift_se = _drift_se(xs, med)
    reason = None
    if cv > MAX_ROBUST_CV:
        reason = f"step time too noisy to summarize: robust CV {cv:.1%} > {MAX_ROBUST_CV:.0%}"
    elif abs(drift) > MAX_DRIFT and abs(drift) > DRIFT_SIGMAS * drift_se:
        reason = (
            f"step time drifts {drift:+.1%} between the halves of the steady window "
            f"(limit {MAX_DRIFT:.0%}): the run never settled"
        )
    return RunSummary(
        n_steps=n,
        steady=reason is None,
        window_method=method,
        window_start=steady_nums[0],
        window_end=steady_nums[-1],
        n_steady=len(xs),
        median_s=med / scale,
        mean_s=statistics.fmean(xs) / scale,
        se_s=se / scale,
        cv=cv,
        spike_fraction=spikes,
        reason=reason,
        n_missing=missing,
        drift=drift,
    )
