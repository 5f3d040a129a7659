"""A row's history as a trend: its noise, its change points, and a step the baseline missed.

The trend of a row is the log steady median step time of each of its steady, undiagnosed runs
in sessions not forgotten, oldest first (perfgate.history.store reads them). From it:

- noise: the residuals within the segments between change points (a past step is a change
  of level, not noise), less the baseline's own runs (counted once, by the baseline);
- a step: the last change point, when the first session after it came after the baseline
  was stored and its segment is still slower than the baseline (the baseline has not
  absorbed it). Judged by the same guarded rule as one run, on the segment's mean:
  REGRESSION (mode "history") when the step is real and not shown within tolerance, SHIFT
  when it is shown within tolerance and shown to be at least SHIFT_SHARE of it (a smaller
  step, or one not shown that large, is reported with the history without a warning).

No outlier is dropped beyond INFRA diagnoses and unsteady runs (the store never returns
those): a row that was 7% slow one night without a diagnosis can be again, and its noise
estimate should say so, or the next such night is a false alarm.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from perfgate.stats import ALPHA, compare
from perfgate.stats.changepoint import ChangePoint, change_points, segment_noise
from perfgate.stats.rule import decide, pct

SHIFT = "SHIFT"
# A SHIFT is a step shown to be at least this share of the tolerance (its lower bound at
# alpha above 1% at 5%), as every verdict is shown, not guessed: a smaller real step is the
# slow drift of a cluster and its software, or a few slow nights the change-point search picked
# for being high (a split chosen where the data differ most, then tested on the same data),
# which the gate reports with the history but does not warn of. Chosen on
# scripts/evaluate_detector.py --matrix (docs/statistics.md, "SHIFT at no change"): "real"
# alone (lower bound above 0) called ~1 such step a night a SHIFT on 147 unchanged rows of a
# confirming session; at 20% 0.05-0.07 a night, with a 3% step still flagged within 5 nights
# on 91-94% of rows (at 30%: none, but 85-89%).
SHIFT_SHARE = 0.2
# Nights (sessions) a step needs since its change, as the search needs MIN_SIZE points: a night
# whose REGRESSION was reproduced keeps its first run and its reruns, and two or three slow
# launches of one night must not read as a persistent step on the next (docs/statistics.md).
MIN_NIGHTS = 3


@dataclass(frozen=True)
class Point:
    """One steady run of a row in the history (plain data from the store)."""

    session_id: int
    started_at: str  # ISO 8601 UTC of its session
    step_time_s: float
    rel_se: float | None = None
    job_id: str | None = None
    container: str | None = None
    versions: dict[str, str] = field(default_factory=dict)
    verdict: str | None = None
    label: str = "baseline"
    nodes: tuple[str, ...] = ()  # where it ran (a run on a node known to be slow is left out)


def off_slow_nodes(points: Sequence[Point], slow: set[str] | frozenset[str]) -> list[Point]:
    """The points that ran on none of the slow nodes (`perfgate nodes`): a run on one measured
    its node, not the row, and would read as noise or a step of the row's trend."""
    return [p for p in points if not slow.intersection(p.nodes)] if slow else list(points)


@dataclass(frozen=True)
class Step:
    """A persistent change of a row's step time found in its history."""

    verdict: str  # SHIFT or REGRESSION (or PASS/IMPROVEMENT/INCONCLUSIVE: informational)
    index: int  # first point after the change
    delta: float  # the new segment vs the baseline
    ci_low: float
    ci_high: float
    step: float  # the new segment vs the segment before it
    p_value: float
    n_after: int
    reason: str
    first: Point | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (results.json "history.step")."""
        first = self.first
        return {
            "verdict": self.verdict,
            "index": self.index,
            "delta": self.delta,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "step": self.step,
            "p_value": self.p_value,
            "n_after": self.n_after,
            "reason": self.reason,
            "first_session": None
            if first is None
            else {
                "session_id": first.session_id,
                "started_at": first.started_at,
                "job_id": first.job_id,
                "container": first.container,
                "versions": dict(first.versions),
            },
        }


def logs_of(points: Sequence[Point]) -> list[float]:
    """log steady median step time of each point."""
    return [math.log(p.step_time_s) for p in points]


def noise(
    xs: Sequence[float],
    skip: Sequence[bool] = (),
    cps: Sequence[ChangePoint] | None = None,
    robust: bool = False,
) -> tuple[float, int, list[ChangePoint]]:
    """(sum of squares, df, change points) of a row's trend, leaving out points in skip.

    cps: change points found on a longer series (tonight's runs too: a step is located
    better with the nights after it); only those inside xs cut it. robust: slow launches
    clipped (stats.changepoint.segment_noise), for sessions that confirm a one-launch
    REGRESSION on other nodes.
    """
    cps = change_points(xs) if cps is None else [c for c in cps if c.index < len(xs)]
    if not any(skip):
        ss, df = segment_noise(xs, cps, robust)
        return ss, df, cps
    # Points already counted elsewhere (the baseline's own runs) leave the residuals, per segment.
    kept_ss, kept_df = 0.0, 0
    cuts = [0, *(c.index for c in cps), len(xs)]
    for a, b in itertools.pairwise(cuts):
        part = [x for i, x in enumerate(xs[a:b], start=a) if not (i < len(skip) and skip[i])]
        ss, df = segment_noise(part, [], robust)
        kept_ss, kept_df = kept_ss + ss, kept_df + df
    return kept_ss, kept_df, cps


def _mean(xs: Sequence[float]) -> float:
    return sum(xs) / len(xs)


def last_step(
    xs: Sequence[float],
    cps: Sequence[ChangePoint],
    *,
    baseline_log: float,
    n_baseline: int,
    after: int,
    sigma: float,
    df: float,
    tolerance: float,
    alpha: float = ALPHA,
    robust: bool = False,
    sessions: Sequence[object] | None = None,
) -> Step | None:
    """The last change point, judged against the baseline, when it is an upward step that
    started at or after index `after` (the first point after the baseline was stored).

    sessions: the session of each point, when known: a step needs MIN_NIGHTS sessions since
    the change, as the search needs MIN_SIZE points (a night's first run and its reruns are
    one night, however many points it left).

    robust: each segment's level is its median (its variance pi/2 times the mean's), for
    sessions that confirm one-launch REGRESSIONs: a slow launch or two among a few nights is
    the reruns' to judge, not a step of the row (as the history's noise clips them)."""
    if not cps:
        return None
    cp = cps[-1]
    before_start = cps[-2].index if len(cps) > 1 else 0
    seg, prev = xs[cp.index :], xs[before_start : cp.index]
    level = statistics.median if robust else _mean
    step = level(seg) - level(prev)
    if cp.index < after or step <= 0:
        return None
    if sessions is not None and len(set(sessions[cp.index :])) < MIN_NIGHTS:
        return None
    d = level(seg) - baseline_log
    spread = math.pi / 2 if robust else 1.0
    se = sigma * math.sqrt(spread / len(seg) + 1 / n_baseline)
    dec = decide(d, se, df, tolerance, alpha, lambda: "more nights will tell", compare.RULE)
    verdict = dec.verdict
    small = ""
    if verdict == "PASS" and dec.ci_low > 0:
        if dec.ci_low >= SHIFT_SHARE * tolerance:
            verdict = SHIFT
        else:
            small = f" (not shown to be the {SHIFT_SHARE * tolerance:.1%} a SHIFT needs)"
    reason = (
        f"persistent step {pct(math.expm1(step))} over {len(seg)} run(s) since the change "
        f"(p {cp.p_value:.3f}): {pct(dec.delta)} vs baseline, "
        f"CI {pct(dec.ci_low)}..{pct(dec.ci_high)}{small}"
    )
    return Step(
        verdict,
        cp.index,
        dec.delta,
        dec.ci_low,
        dec.ci_high,
        math.expm1(step),
        cp.p_value,
        len(seg),
        reason,
    )
