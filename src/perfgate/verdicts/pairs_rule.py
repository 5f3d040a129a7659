"""The container-upgrade A/B gate: the rule that judges pairs and grows a job by a pair.

    pytest ... --container-image OLD --candidate-image NEW [--pairs 3] [--max-pairs 8]

Each row gets one allocation whose job runs the workload with the baseline image (A) and the
candidate image (B) alternately, counterbalanced AB BA AB .., each launch with its own warm-up.
Pair i's delta is log(B_i / A_i) of the steady median step times; the verdict is
perfgate.stats.compare_runs(paired=True). While it is INCONCLUSIVE (or a REGRESSION whose
lower bound is still within the tolerance) after N pairs the job adds one pair, up to M, so
the rule looks at N, N+1, .. M pairs: each look uses the per-look alpha of
stats.sequential_alpha(ALPHA, N, M), which keeps false alarms over all looks at ALPHA. The
same functions run inside the job (PairsRule, the job's more_pairs callback), in the plugin's
verdict (perfgate.verdicts.paired) and in scripts/evaluate_detector.py, so the simulated detection
rates are those of the gate.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from perfgate.errors import PerfgateError
from perfgate.stats import (
    DEFAULT_NOISE,
    Comparison,
    Noise,
    Window,
    compare_runs,
    needs_more_pairs,
    summarize_run,
)
from perfgate.stats.rule import sequential_alpha

BASELINE, CANDIDATE = "baseline", "candidate"


def alpha_for(first_pairs: int, max_pairs: int, noise: Noise = DEFAULT_NOISE) -> float:
    """The one-sided false-alarm rate of each look of a first_pairs..max_pairs loop."""
    return sequential_alpha(noise.alpha, first_pairs, max_pairs)


def judge(
    baseline_runs: Sequence[Any],
    candidate_runs: Sequence[Any],
    tolerance: float,
    window: Window = "auto",
    *,
    first_pairs: int,
    max_pairs: int,
    noise: Noise = DEFAULT_NOISE,
) -> Comparison:
    """The paired comparison of pair i = (baseline_runs[i], candidate_runs[i])."""
    return compare_runs(
        baseline_runs,
        candidate_runs,
        tolerance,
        paired=True,
        window=window,
        alpha=alpha_for(first_pairs, max_pairs, noise),
        **noise.paired(),
    )


def side_series(runs: Sequence[Any], window: Window, side: str) -> list[Any]:
    """What judge() takes for one side's runs: the step times, or, for a run whose times are
    a window mean of whole-second stamps, its summary with that SE floor (StepSeries.min_rel_se;
    without it two such runs can look identical to a precision they do not have)."""
    out: list[Any] = []
    for i, run in enumerate(runs):
        s = run.series
        if not s.min_rel_se:
            out.append(s.step_times)
            continue
        try:
            out.append(summarize_run(s.step_times, window, min_rel_se=s.min_rel_se))
        except PerfgateError as e:
            raise PerfgateError(f"{side} run {i + 1}: {e}") from None
    return out


def wants_another_pair(comparison: Comparison, max_pairs: int) -> bool:
    """One more pair: the verdict could still change (stats.needs_more_pairs: INCONCLUSIVE, or
    a REGRESSION not yet beyond the tolerance), below max_pairs, and it has a usable pair.

    With no pair steady on both sides the runs, not the noise, are the problem (too few
    steps, a diverging run): more pairs would burn the allocation for nothing.
    """
    return comparison.n_candidate > 0 and needs_more_pairs(comparison, max_pairs)


def split_pairs(runs: Sequence[Any]) -> tuple[list[Any], list[Any]]:
    """(baseline runs, candidate runs) of the complete pairs, in launch order.

    In launch order AB BA AB .., the i-th baseline and the i-th candidate run form pair i.
    """
    base = [r for r in runs if r.label == BASELINE]
    cand = [r for r in runs if r.label == CANDIDATE]
    n = min(len(base), len(cand))
    return base[:n], cand[:n]


@dataclass(frozen=True)
class PairsRule:
    """The job's more_pairs callback: one more pair while the paired verdict is not firm.

    Pickled into the job and called there with the RunRecords so far; returns why it wants
    another pair (a str, for the job's notes), or False.
    """

    tolerance: float
    window: Window
    first_pairs: int
    max_pairs: int
    noise: Noise = DEFAULT_NOISE

    def __call__(self, runs: Sequence[Any]) -> str | bool:
        base, cand = split_pairs(runs)
        series = [r.series for r in (*base, *cand)]
        if not base or any(s is None or not s.steps or not s.valid for s in series):
            return False  # a failed or empty run: the row is INFRA, more pairs change nothing
        comp = judge(
            side_series(base, self.window, "baseline"),
            side_series(cand, self.window, "candidate"),
            self.tolerance,
            self.window,
            first_pairs=self.first_pairs,
            max_pairs=self.max_pairs,
            noise=self.noise,
        )
        if not wants_another_pair(comp, self.max_pairs):
            return False
        return (
            f"{len(base)} pair(s) {comp.verdict}: delta {comp.delta:+.2%} "
            f"[{comp.ci_low:+.1%}, {comp.ci_high:+.1%}] not yet told from tolerance, resolution "
            f"{comp.resolution:.1%} > tolerance {comp.tolerance:.1%}"
        )
