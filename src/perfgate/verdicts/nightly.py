"""One run (or K) against the stored baseline, with what the row's history knows.

The nightly mode: the row's noise is learned from its baseline's runs and its history
(perfgate.history.trend: residuals within the segments between change points), moderated by
the prior (stats.Noise.prior_for), so a row with history gets its own resolution. Then the
history, tonight included, is searched for a persistent step the baseline has not absorbed:

    tonight REGRESSION                          -> REGRESSION (mode "stored")
    else a step judged REGRESSION               -> REGRESSION (mode "history"): single nights
                                                   were within noise, together they are not
    else a step judged SHIFT                    -> SHIFT: real, within tolerance; passes with a
                                                   warning, --strict fails it
    else                                        -> tonight's verdict

The step names the first session after the change (its date, job, container, versions).
The series searched and its change points are handed on with the verdict (Judged.trend): the
report draws them, and never searches a history again.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from perfgate import stats
from perfgate.catalog import Baseline, Row
from perfgate.history import trend
from perfgate.stats.noise import baseline_noise

REGRESSION, PASS, INCONCLUSIVE = "REGRESSION", "PASS", "INCONCLUSIVE"


@dataclass(frozen=True)
class Judged:
    """The verdict of a row judged with its history, and the numbers behind it."""

    verdict: str
    mode: str  # "stored" or "history"
    comparison: stats.Comparison
    history: dict[str, Any] | None
    note: str = ""
    trend: dict[str, Any] | None = None  # trend_record of the series searched


# What the report keeps of each point of a trend (results.json "trend": points).
TREND_FIELDS = ("session_id", "started_at", "job_id", "image", "step_time_s", "verdict", "label")


def trend_record(
    points: Sequence[trend.Point],
    tonight_s: Sequence[float],
    cps: Sequence[trend.ChangePoint],
) -> dict[str, Any] | None:
    """A row's trend as results.json keeps it for the report: its history's points, oldest
    first, then tonight's steady runs (no session yet: "tonight"), and the change points the
    search found on them (indices into points); None below two points."""
    if len(points) + len(tonight_s) < 2:
        return None
    rows = [
        {
            "session_id": p.session_id,
            "started_at": p.started_at,
            "job_id": p.job_id,
            "image": p.container,
            "step_time_s": p.step_time_s,
            "verdict": p.verdict,
            "label": p.label,
        }
        for p in points
    ]
    rows += [{**dict.fromkeys(TREND_FIELDS), "step_time_s": t, "tonight": True} for t in tonight_s]
    return {
        "points": rows,
        "change_points": [{"index": c.index, "p_value": c.p_value} for c in cps],
    }


def stored_at(base: Baseline) -> str | None:
    """When the baseline was stored: its last run's timestamp, else its provenance date."""
    dates = [r.date for r in base.runs if r.date]
    return max(dates) if dates else base.provenance.date


def first_after(points: Sequence[trend.Point], base: Baseline) -> int:
    """Index of the first history point from a session after the baseline was stored.

    A published or imported baseline predates every session here: 0.
    """
    stamp = stored_at(base)
    if not base.measured_here or not stamp:
        return 0
    for i, p in enumerate(points):
        later = p.started_at > stamp if len(stamp) > 10 else p.started_at[:10] >= stamp
        if later:
            return i
    return len(points)


def judge(
    row: Row,
    base: Baseline,
    runs: Sequence[Sequence[float] | stats.RunSummary],
    tolerance: float,
    window: stats.Window,
    noise: stats.Noise,
    points: Sequence[trend.Point] = (),
) -> Judged:
    """The row's verdict from its runs tonight, its baseline and its history points."""
    prior = noise.prior_for(base)
    xs = trend.logs_of(points)
    base_jobs = {r.job_id for r in base.runs if r.job_id}
    skip = [p.job_id in base_jobs for p in points]  # the baseline's own runs count once
    tonight = _steady_logs(runs, window)
    all_xs = xs + tonight
    cps = trend.change_points(all_xs)  # located with tonight; the noise is history's own
    h_ss, h_df, _ = trend.noise(xs, skip, cps, robust=noise.confirming)
    reference, pooled_note = base, ""
    if noise.confirming:
        reference, h_ss, h_df, pooled_note = _level(base, points, skip, cps, h_ss, h_df)
    comp = stats.compare_to_baseline(
        list(runs),
        reference,
        tolerance=tolerance,
        window=window,
        alpha=noise.alpha,
        prior_sigma=prior.sigma,
        prior_df=prior.df,
        history=(h_ss, h_df),
    )
    info: dict[str, Any] = {
        "reference": None
        if reference is base
        else {
            "step_time_s": reference.step_time_s,
            "n_runs": reference.n_runs,
            "what": pooled_note,
        },
        "n_runs": len(points),
        "prior": {"name": prior.name, "sigma": prior.sigma, "df": prior.df},
        "noise_df": h_df,
        "sigma": comp.sigma,
        "df": comp.df,
        "change_points": [],
        "step": None,
    }
    searched = trend_record(points, [math.exp(x) for x in tonight], cps)
    if not tonight:
        return Judged(comp.verdict, "stored", comp, info, trend=searched)
    info["change_points"] = [
        {"index": c.index, "p_value": c.p_value, "session_id": _point(points, c.index)} for c in cps
    ]
    step = trend.last_step(
        all_xs,
        cps,
        baseline_log=math.log(reference.step_time_s),
        n_baseline=max(1, reference.n_runs),
        after=first_after(points, base),
        sigma=comp.sigma,
        df=comp.df,
        tolerance=tolerance,
        alpha=noise.alpha,
        robust=noise.confirming,
        sessions=[p.session_id for p in points] + [object()] * len(tonight),
    )
    if step is None:
        return Judged(comp.verdict, "stored", comp, info, trend=searched)
    first = points[step.index] if step.index < len(points) else None
    step = trend.Step(**{**step.__dict__, "first": first})
    info["step"] = step.to_dict()
    where = _first_session_text(first)
    note = f"{step.reason}; first session after the change: {where}"
    if comp.verdict == REGRESSION:
        return Judged(REGRESSION, "stored", comp, info, note, searched)
    if step.verdict == REGRESSION:
        return Judged(REGRESSION, "history", comp, info, note, searched)
    if step.verdict == trend.SHIFT and comp.verdict in (PASS, INCONCLUSIVE):
        return Judged(trend.SHIFT, "history", comp, info, note, searched)
    return Judged(comp.verdict, "stored", comp, info, trend=searched)


MIN_LEVEL_RUNS = 3  # history runs since the baseline that may join its level
# The last nights stay out of the level: a step that started there, not yet a change point,
# must not be absorbed into the reference it is measured against.
RECENT_NIGHTS = 5


def _level(
    base: Baseline,
    points: Sequence[trend.Point],
    skip: Sequence[bool],
    cps: Sequence[trend.ChangePoint],
    h_ss: float,
    h_df: float,
) -> tuple[Baseline, float, float, str]:
    """The reference a confirming session judges against: the baseline's runs with the
    history's runs since it, up to the first change point and but the last RECENT_NIGHTS (the
    runs that measure the baseline's level), when there are MIN_LEVEL_RUNS of them; else the
    baseline. The baseline's own spread then joins the history's noise (the pooled reference
    carries no runs, so nothing is counted twice)."""
    after = first_after(points, base)
    first_cp = min((c.index for c in cps), default=len(points))
    cut = min(first_cp, len(points) - RECENT_NIGHTS)
    later = [p for i, p in enumerate(points[after:cut], start=after) if not skip[i]]
    if not base.measured_here or len(later) < MIN_LEVEL_RUNS:
        return base, h_ss, h_df, ""
    own = [r.step_time_s for r in base.runs] or [base.step_time_s] * max(1, base.n_runs)
    logs = [math.log(x) for x in own] + [math.log(p.step_time_s) for p in later]
    b_ss, b_df = baseline_noise(base)
    level = Baseline(
        math.exp(math.fsum(logs) / len(logs)),
        base.provenance,
        n_runs=len(logs),
        tolerance=base.tolerance,
        flops_convention=base.flops_convention,
    )
    until = "the change" if cut == first_cp else f"the last {RECENT_NIGHTS} nights"
    note = f"level of the baseline's {len(own)} and the history's {len(later)} runs before {until}"
    return level, h_ss + b_ss, h_df + b_df, note


def _steady_logs(
    runs: Sequence[Sequence[float] | stats.RunSummary], window: stats.Window
) -> list[float]:
    out = []
    for steps in runs:
        s = steps if isinstance(steps, stats.RunSummary) else stats.summarize_run(steps, window)
        if s.steady:
            out.append(math.log(s.median_s))
    return out


def _point(points: Sequence[trend.Point], index: int) -> int | None:
    return points[index].session_id if index < len(points) else None


def _first_session_text(p: trend.Point | None) -> str:
    if p is None:
        return "this session"
    versions = ", ".join(f"{k} {v}" for k, v in list(p.versions.items())[:3])
    parts = [f"session {p.session_id} ({p.started_at[:10]})"]
    if p.job_id:
        parts.append(f"job {p.job_id}")
    if p.container:
        parts.append(f"container {p.container}")
    if versions:
        parts.append(versions)
    return ", ".join(parts)
