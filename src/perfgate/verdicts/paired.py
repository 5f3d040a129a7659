"""A row's verdict in A/B mode: the paired comparison of its pairs, both containers side by side.

The verdict is the paired rule of perfgate.verdicts.pairs_rule (PASS / REGRESSION /
IMPROVEMENT / INCONCLUSIVE); INFRA when a launch failed or no pair has both runs steady. The
measured numbers of the row (step time, tokens/s, TFLOP/s, MFU) are the candidate's, pooled
over its steady runs. The stored baseline is still compared with, for both images, and
reported as drift: it never decides the row (it was measured on other nodes, another day).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from perfgate import stats
from perfgate.catalog import Row
from perfgate.runs import RunRecord, RunResult, launch_order
from perfgate.stats import RunSummary
from perfgate.verdicts import pairs_rule, physical
from perfgate.verdicts.pairs_rule import BASELINE, CANDIDATE
from perfgate.verdicts.phases import compare_phases
from perfgate.verdicts.single import (
    IMPROVEMENT,
    Evaluation,
    convention_of,
    infra,
    mode_label,
    names_requeues,
    pooled,
    pooled_measured,
    tolerance_of,
)

PAIRED = "paired"
# The versions the report lines up first (then any other key a run recorded).
KEY_VERSIONS = (
    "nemo",
    "megatron_core",
    "megatron_bridge",
    "nemo_automodel",
    "transformer_engine",
    "torch",
    "nccl",
    "cuda",
    "cudnn",
    "driver",
)


@names_requeues
def evaluate_ab(
    row: Row,
    result: RunResult,
    *,
    source: str,
    first_pairs: int,
    max_pairs: int,
    window: stats.Window = "auto",
    tolerance: float | None = None,
    convention: str | None = None,
    noise: stats.Noise = stats.DEFAULT_NOISE,
) -> Evaluation:
    """Judge one row from its A/B job: the paired verdict, with sides, pairs and drift."""
    tol = tolerance_of(row, tolerance)
    common: dict[str, Any] = {
        "tolerance": tol,
        "convention": convention_of(row, convention),
        "notes": tuple(result.notes),
        "mode": PAIRED,
    }
    runs = list(result.runs)
    ab: dict[str, Any] = {
        "order": launch_order(tuple((r.label, r.image) for r in runs)),
        "first_pairs": first_pairs,
        "max_pairs": max_pairs,
        "sides": sides(runs),
        "changed": changed_versions(runs),
        "pairs": [],
        # the job wanted another pair but the allocation had no time left for it
        "no_time_for_more": next((n for n in result.notes if " was wanted " in n), None),
    }
    if not result.ok:
        d = result.diagnosis
        assert d is not None
        return infra(row, source, result, d.cause, d.message, ab=ab, **common)
    base, cand = pairs_rule.split_pairs(runs)
    if not base:
        why = "no complete A/B pair ran"
        return infra(row, source, result, "TOO_FEW_STEPS", why, ab=ab, **common)
    for run in (*base, *cand):
        where = f"run {runs.index(run) + 1} ({run.label})"
        if run.series is None or not run.series.steps:
            why = f"{where}: no step times were recorded"
            return infra(row, source, result, "TOO_FEW_STEPS", why, ab=ab, **common)
        if not run.series.valid:
            why = f"{where}: {run.series.invalid_reason}"
            return infra(row, source, result, run.series.cause, why, ab=ab, **common)
    comp = pairs_rule.judge(
        pairs_rule.side_series(base, window, "baseline"),
        pairs_rule.side_series(cand, window, "candidate"),
        tol,
        window,
        first_pairs=first_pairs,
        max_pairs=max_pairs,
        noise=noise,
    )
    ab.update(pair_table(runs, base, cand, comp, first_pairs))
    if comp.n_candidate == 0:
        why = f"no A/B pair has both runs steady ({comp.reason})"
        return infra(row, source, result, "TOO_FEW_STEPS", why, ab=ab, comparison=comp, **common)
    used = [i for i, p in enumerate(ab["pairs"]) if p["used"]]
    steady_base = [comp.baseline[i] for i in used]
    steady_cand = [comp.candidate[i] for i in used]
    for side, summaries in (
        (BASELINE, steady_base),
        (CANDIDATE, steady_cand),
    ):
        ab["sides"][side].update(pooled(summaries))
    ab["drift"] = drift(row, steady_base, steady_cand, tol, window, noise)
    ab["phases"] = compare_phases(base, cand, comp, noise)  # where the time went, if timed
    measured = pooled_measured(row, steady_cand, [cand[i] for i in used])
    why_not = physical.impossible(row, min(s.median_s for s in (*steady_base, *steady_cand)))
    if why_not is not None:  # both images ran something else than the row: no A/B verdict
        kw = {"ab": ab, "comparison": comp, "measured": measured, **common}
        return infra(row, source, result, physical.CAUSE, why_not, **kw)
    return Evaluation(
        row=row,
        verdict=comp.verdict,
        message=ab_line(row, comp, ab),
        source=source,
        measured=measured,
        comparison=comp,
        result=result,
        series=cand[used[-1]].series,
        ab=ab,
        **common,
    )


def candidate_steady_steps(ev: Evaluation) -> list[float]:
    """The steady step times of the candidate runs used, each run in its own window."""
    if ev.comparison is None or ev.result is None or ev.ab is None:
        return []
    _, cand = pairs_rule.split_pairs(ev.result.runs)
    out: list[float] = []
    for run, summary in zip(cand, ev.comparison.candidate, strict=False):
        if summary.steady and run.series is not None:
            a, b = summary.window_start, summary.window_end
            out += [s.step_time_s for s in run.series.steps if a <= s.step <= b]
    return out


# --- the two sides -----------------------------------------------------------------------------


def _distinct(values: Sequence[Any]) -> Any:
    """The value when all agree, else the distinct values joined (a side should not differ)."""
    seen = list(dict.fromkeys(v for v in values if v is not None))
    if not seen:
        return None
    return seen[0] if len(seen) == 1 else " | ".join(str(v) for v in seen)


def side_versions(runs: Sequence[RunRecord]) -> dict[str, str]:
    """The versions a side's runs recorded (key versions first)."""
    keys = {k for r in runs for k in r.versions}
    order = [k for k in KEY_VERSIONS if k in keys] + sorted(keys - set(KEY_VERSIONS))
    return {k: _distinct([r.versions.get(k) for r in runs]) for k in order}


def sides(runs: Sequence[RunRecord]) -> dict[str, dict[str, Any]]:
    """Per side: image, digest (None where not known), versions, launch numbers."""
    out: dict[str, dict[str, Any]] = {}
    for side in (BASELINE, CANDIDATE):
        mine = [r for r in runs if r.label == side]
        digest = _distinct([r.image_digest for r in mine])
        why = None
        if digest is None and any(r.image_stamp for r in mine):
            why = "the file changed, or could not be read, before the session hashed it"
        elif digest is None and mine:
            why = "no image file to hash (container runtime none, or a URI the runtime pulls)"
        out[side] = {
            "image": _distinct([r.image for r in mine]),
            "digest": digest,
            "digest_note": why,
            "versions": side_versions(mine),
            "launches": [i + 1 for i, r in enumerate(runs) if r.label == side],
        }
    return out


def changed_versions(runs: Sequence[RunRecord]) -> dict[str, dict[str, str | None]]:
    """Versions that differ between the two sides: key -> {baseline, candidate}."""
    a = side_versions([r for r in runs if r.label == BASELINE])
    b = side_versions([r for r in runs if r.label == CANDIDATE])
    if not a or not b:  # a side recorded nothing (e.g. backend "command"): nothing to compare
        return {}
    keys = [k for k in KEY_VERSIONS if k in a or k in b] + sorted(
        (a.keys() | b.keys()) - set(KEY_VERSIONS)
    )
    return {k: {BASELINE: a.get(k), CANDIDATE: b.get(k)} for k in keys if a.get(k) != b.get(k)}


def pair_table(
    runs: Sequence[RunRecord],
    base: Sequence[RunRecord],
    cand: Sequence[RunRecord],
    comp: stats.Comparison,
    first_pairs: int,
) -> dict[str, Any]:
    """Each pair's order, step times and delta; how many pairs ran, were used, were added."""
    rows = []
    for i, (b, c, sb, sc) in enumerate(zip(base, cand, comp.baseline, comp.candidate, strict=True)):
        first = min(runs.index(b), runs.index(c))
        used = sb.steady and sc.steady
        why = "; ".join(
            f"{label} run not steady: {s.reason}"
            for label, s in ((BASELINE, sb), (CANDIDATE, sc))
            if not s.steady
        )
        rows.append(
            {
                "pair": i + 1,
                "order": "AB" if runs[first] is b else "BA",
                "baseline_launch": runs.index(b) + 1,
                "candidate_launch": runs.index(c) + 1,
                "baseline_step_time_s": sb.median_s if sb.steady else None,
                "candidate_step_time_s": sc.median_s if sc.steady else None,
                "delta": sc.median_s / sb.median_s - 1 if used else None,
                "used": used,
                "left_out": why or None,
            }
        )
    n = len(rows)
    return {
        "pairs": rows,
        "pairs_run": n,
        "pairs_used": sum(r["used"] for r in rows),
        "pairs_added": max(0, n - first_pairs),
        "alpha_per_look": comp.alpha,
    }


# --- pooled numbers, drift, message -----------------------------------------------------------


def _drift_side(comp: stats.Comparison) -> dict[str, Any]:
    return {
        "delta": comp.delta,
        "ci_low": comp.ci_low if math.isfinite(comp.ci_low) else None,
        "ci_high": comp.ci_high if math.isfinite(comp.ci_high) else None,
        "verdict": comp.verdict,
        "n_runs": comp.n_candidate,
    }


def drift(
    row: Row,
    base: Sequence[RunSummary],
    cand: Sequence[RunSummary],
    tolerance: float,
    window: stats.Window,
    noise: stats.Noise = stats.DEFAULT_NOISE,
) -> dict[str, Any] | None:
    """Both images against the stored baseline (informational: it never decides the row)."""
    if row.baseline is None:
        return None
    out: dict[str, Any] = {"stored_step_time_s": row.baseline.step_time_s}
    for side, summaries in ((BASELINE, base), (CANDIDATE, cand)):
        comp = stats.compare_to_baseline(
            list(summaries), row.baseline, tolerance, window, **noise.stored(row.baseline)
        )
        out[side] = _drift_side(comp)
    return out


def ab_line(row: Row, comp: stats.Comparison, ab: dict[str, Any]) -> str:
    """One line: verdict, both step times, paired delta with its interval, pairs, drift."""
    ci = ""
    if math.isfinite(comp.ci_low) and math.isfinite(comp.ci_high):
        ci = f" [{comp.ci_low:+.1%}, {comp.ci_high:+.1%}]"
    n, top = ab["pairs_run"], ab["max_pairs"]
    pairs = f"{n} pair{'s' if n != 1 else ''}"
    if n > ab["first_pairs"]:
        pairs += f" ({n - ab['first_pairs']} added, at most {top})"
    elif comp.verdict == "INCONCLUSIVE":
        pairs += f" of at most {top}"
    if comp.verdict == "INCONCLUSIVE" and ab.get("no_time_for_more"):
        pairs += f"; {ab['no_time_for_more']}: raise --time-limit"
    extra = ""
    if comp.verdict == IMPROVEMENT:
        extra = "; the candidate is faster: --update-baselines stores its runs as the baseline"
    d = ab.get("drift")
    if d:
        extra += (
            f"; stored baseline {d['stored_step_time_s']:.4g} s: baseline image "
            f"{d['baseline']['delta']:+.1%}, candidate {d['candidate']['delta']:+.1%} "
            "(drift, informational)"
        )
    return (
        f"{row.id}: {comp.verdict}: candidate {comp.candidate_step_time_s:.4g} s vs baseline "
        f"image {comp.baseline_step_time_s:.4g} s per step, delta {comp.delta:+.2%}{ci}, "
        f"tolerance {comp.tolerance:.1%} ({mode_label(PAIRED)}: {pairs}, resolution "
        f"{comp.resolution:.1%}){extra}"
    )
