"""Where the time went: each timed phase of a step compared between the two sides of an A/B job
with the same paired statistics as the step time.

For every pair whose two runs are steady, a run's phase time is the median of that phase over
the run's own steady window (the step-time window: the same steps on both counts); the pairs'
log ratios then go through stats.compare_runs(paired=True) at the row's tolerance and the
job's per-look alpha. A phase "moved" when its interval excludes zero (slower or faster); its
share is how much of the baseline's step time the move is worth, so "optimizer +18%, +3.1% of
the step; everything else flat" reads off one table. Phases nest (optimizer holds the
optimizer-* timers; forward-backward holds the gradient reduction when it overlaps), so
shares do not add up to the step's change.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from perfgate import stats
from perfgate.errors import PerfgateError
from perfgate.logs.phases import PhaseSeries
from perfgate.runs import RunRecord
from perfgate.stats import RunSummary

SLOWER, FASTER, FLAT = "slower", "faster", "flat"
NESTING = (
    "phases nest (optimizer holds the optimizer-* timers, forward-backward holds an overlapped "
    "gradient reduction), so their shares do not add up to the step's change"
)


def _run_phase(phases: PhaseSeries, name: str, window: RunSummary) -> RunSummary | None:
    """The phase's summary over the run's steady step window (None: the run lacks it)."""
    steps, cols = phases.window(window.window_start, window.window_end)
    values = cols.get(name)
    if not values or not any(math.isfinite(x) for x in values):
        return None
    try:
        return stats.summarize_run(values, (steps[0], steps[-1]), step_numbers=steps)
    except PerfgateError:
        return None


def _moved(comp: stats.Comparison) -> str | None:
    if not (math.isfinite(comp.ci_low) and math.isfinite(comp.ci_high)):
        return None
    return SLOWER if comp.ci_low > 0 else FASTER if comp.ci_high < 0 else FLAT


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None


def compare_phase(
    name: str,
    base: Sequence[RunRecord],
    cand: Sequence[RunRecord],
    step: stats.Comparison,
    noise: stats.Noise,
) -> dict[str, Any]:
    """One phase, A vs B over the pairs the step-time verdict used."""
    bs: list[RunSummary] = []
    cs: list[RunSummary] = []
    for b, c, sb, sc in zip(base, cand, step.baseline, step.candidate, strict=False):
        if not (sb.steady and sc.steady and b.phases and c.phases):
            continue
        pb, pc = _run_phase(b.phases, name, sb), _run_phase(c.phases, name, sc)
        if pb is not None and pc is not None:
            bs.append(pb)
            cs.append(pc)
    out: dict[str, Any] = {"name": name, "pairs": 0}
    if not bs:
        return {**out, "note": "not timed in both runs of any steady pair"}
    comp = stats.compare_runs(
        bs, cs, step.tolerance, paired=True, alpha=step.alpha, **noise.paired()
    )
    out["pairs"] = comp.n_candidate
    if comp.n_candidate == 0:
        return {**out, "note": f"too noisy to compare ({comp.reason})"}
    base_step = step.baseline_step_time_s
    delta_s = comp.candidate_step_time_s - comp.baseline_step_time_s
    return {
        **out,
        "baseline_s": comp.baseline_step_time_s,
        "candidate_s": comp.candidate_step_time_s,
        "delta": comp.delta,
        "ci_low": _finite(comp.ci_low),
        "ci_high": _finite(comp.ci_high),
        "moved": _moved(comp),
        "share": delta_s / base_step if base_step and math.isfinite(base_step) else None,
        "pair_deltas": list(comp.pair_deltas),
    }


def phase_names(runs: Sequence[RunRecord]) -> list[str]:
    """Every phase any run timed, in the order the logs first printed them."""
    return list(dict.fromkeys(n for r in runs if r.phases for n in r.phases.names))


def compare_phases(
    base: Sequence[RunRecord],
    cand: Sequence[RunRecord],
    step: stats.Comparison,
    noise: stats.Noise = stats.DEFAULT_NOISE,
) -> dict[str, Any] | None:
    """Every phase, A vs B (None when no run printed timers): the A/B record's "phases"."""
    names = phase_names([*base, *cand])
    if not names:
        return None
    rows = [compare_phase(n, base, cand, step, noise) for n in names]
    moved = sorted(
        (r for r in rows if r.get("moved") in (SLOWER, FASTER)),
        key=lambda r: -abs(r.get("share") or 0.0),
    )
    options = {r.phases.option for r in (*base, *cand) if r.phases}
    return {
        "phases": rows,
        "moved": [r["name"] for r in moved],
        "option": " | ".join(sorted(options)),
        "ci_level": step.ci_level,
        "note": NESTING,
    }
