"""A/A and A/B pairs judged by the A/B gate's own rule, and the pair noise they show.

A is the row as it is; B is the row with activation recompute of its first layers (block
method), a slowdown whose cost the measure step times separately. Pairs are launched like the
gate's (perfgate.launch.planning.pair_launches: AB, then BA, ..) and alternate A/A, A/B, so a
shortened budget cuts both kinds alike. Each kind is judged by
perfgate.verdicts.pairs_rule.judge (compare_runs(paired=True), the per-look alpha of
--pairs N --max-pairs N) at the gate's default tolerance.

The noise the gate and scripts/evaluate_detector.py assume for a pair's log ratio is set
beside what these pairs show: the gate's pair prior (perfgate.stats DEFAULT_PAIR_CV, 2 df),
the Megatron-LM CI A/A pairs the evaluator resamples (scripts/detector_data.py), and the
production prior (per run) times sqrt(2).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import Any

from perfgate.stats import DEFAULT_PAIR_CV, DEFAULT_TOLERANCE, summarize_run
from perfgate.stats.noise import PRIOR_DF
from perfgate.stats.priors import PRODUCTION
from perfgate.verdicts.pairs_rule import judge

RECOMPUTE_SHARE = 0.5  # B recomputes this share of the layers (8 of 16): ~14% more FLOPs


def b_overrides(num_layers: int) -> dict[str, Any]:
    """B's overrides: full activation recompute of the first half of the layers."""
    return {
        "model.recompute_granularity": "full",
        "model.recompute_method": "block",
        "model.recompute_num_layers": max(1, round(RECOMPUTE_SHARE * num_layers)),
    }


def launch_order(index: int) -> tuple[str, str]:
    """Labels of pair `index` in launch order: (baseline, candidate) for even pairs, else
    reversed, as perfgate.launch.planning.pair_launches orders the gate's pairs."""
    order = ("baseline", "candidate")
    return order if index % 2 == 0 else order[::-1]


def plan(pairs: int) -> list[tuple[str, int]]:
    """The pairs in the order they run: (kind, index), A/A and A/B alternating."""
    return [(kind, i) for i in range(pairs) for kind in ("aa", "ab")]


def log_ratios(base: Sequence[Sequence[float]], cand: Sequence[Sequence[float]]) -> list[float]:
    """log(candidate / baseline) of the steady medians of each pair whose runs are both steady."""
    out = []
    for b, c in zip(base, cand, strict=True):
        sb, sc = summarize_run(list(b)), summarize_run(list(c))
        if sb.steady and sc.steady:
            out.append(math.log(sc.median_s / sb.median_s))
    return out


def judged(base: Sequence[Sequence[float]], cand: Sequence[Sequence[float]]) -> dict[str, Any]:
    """The gate's paired verdict on these pairs at its default tolerance."""
    n = len(base)
    if not n:
        return {"verdict": None, "why": "no complete pair ran"}
    comp = judge(base, cand, DEFAULT_TOLERANCE, "auto", first_pairs=n, max_pairs=n)
    keep = ("verdict", "delta", "ci_low", "ci_high", "se", "resolution", "tolerance", "reason")
    out = {k: getattr(comp, k) for k in keep}
    out.update(
        pairs=n,
        pairs_used=comp.n_pairs,
        sigma_used=comp.sigma,
        sigma_observed=comp.sigma_observed,
        df=comp.df,
        alpha=comp.alpha,
        pair_deltas=list(comp.pair_deltas),
    )
    return {
        k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in out.items()
    }


def sd(values: Sequence[float], about: float | None = None) -> float | None:
    """Standard deviation about `about` (n df), or about the mean (n - 1 df); None if too few."""
    if about is not None:
        return math.sqrt(sum((v - about) ** 2 for v in values) / len(values)) if values else None
    return statistics.stdev(values) if len(values) >= 2 else None


def measured_noise(aa: Sequence[float], ab: Sequence[float]) -> dict[str, Any]:
    """Pair-to-pair SD of log ratios: A/A about 0 (no change), A/B about their mean, pooled."""
    ss = sum(v * v for v in aa) + sum((v - statistics.fmean(ab)) ** 2 for v in ab) if ab else 0.0
    df = len(aa) + max(0, len(ab) - 1)
    return {
        "aa_log_ratios": list(aa),
        "ab_log_ratios": list(ab),
        "aa_sd_about_zero": sd(aa, 0.0),
        "ab_sd_about_mean": sd(ab),
        "pooled_pair_sd": math.sqrt(ss / df) if df else None,
        "pooled_df": df,
        "ab_mean_slowdown": math.expm1(statistics.fmean(ab)) if ab else None,
    }


def evaluator_assumptions() -> dict[str, Any]:
    """What the gate and scripts/evaluate_detector.py assume about a pair's log ratio."""
    out: dict[str, Any] = {
        "gate_pair_prior_sigma": DEFAULT_PAIR_CV,
        "gate_pair_prior_df": PRIOR_DF,
        "production_prior_pair_sigma": PRODUCTION.sigma * math.sqrt(2),
    }
    try:  # the evaluator's own data (numpy): the Megatron-LM CI A/A pairs it resamples
        import numpy as np
        from detector_data import REFERENCE, _mad_sigma, load_resume_pairs

        pairs = np.concatenate([np.array(v) for v in load_resume_pairs(REFERENCE).values()])
        out.update(
            evaluator_pairs=len(pairs),
            evaluator_pair_sd=float(np.std(pairs, ddof=1)),
            evaluator_pair_sigma_mad=_mad_sigma(pairs),
            evaluator_order_effect=float(np.median(pairs)),
        )
    except Exception as e:  # no numpy here, or no reference data: the constants still stand
        out["evaluator_data"] = f"not read: {type(e).__name__}: {e}"
    return out
