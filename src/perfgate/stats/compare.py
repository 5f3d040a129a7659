"""Comparisons of steady step times: the noise model, stored-baseline, runs and paired tests.

The noise settings and priors live in perfgate.stats.noise, the Comparison result in
perfgate.stats.comparison, the decision rule in perfgate.stats.rule; this module combines them.

Noise model (measured on the real series in tests/data/reference by
scripts/evaluate_detector.py). The log of a run's steady median step time is

    log m = log mu + launch effect + within-run error

Steps within one launch are autocorrelated and say nothing about the launch effect: two
launches of the same config in the same job differ by a median of 1.4% (Megatron-LM CI A/A
pairs; one in five by more than 3%), whatever the number of steps. So the standard error of
a comparison always carries a between-run term (d = log ratio, K candidate runs, M baseline
runs, N pairs, se_k the within-run SE of run k):

    stored:  se^2 = s_run^2 (1/K + 1/n_base) + sum(se_k^2) / K^2
    runs:    se^2 = s_run^2 (1/K + 1/M)      + within-run SEs of both sides
    paired:  se^2 = s_pair^2 / N              (d_i = log(candidate_i / baseline_i))

s_run and s_pair pool what the runs themselves show with a prior, as the empirical-Bayes
"moderated" variance (Smyth 2004): s^2 = (d0 prior^2 + df_obs s_obs^2) / (d0 + df_obs), with a
t quantile on d0 + df_obs degrees of freedom. For a stored baseline, s_obs pools the baseline's
own runs, the candidate runs and the row's history (its residuals within the segments between
change points: perfgate.history), so a row with history gets its own resolution. One candidate
run is judged by the predictive distribution of a new run: se^2 = s_run^2 (1 + 1/n_base), t on
the pooled df (a lone run's outlier risk is in those tails). The prior (perfgate.stats.priors)
is chosen per baseline by Noise.prior_for: the site's calibrated prior or "production" (0.45%
per run on 11 df, fitted to 512-GPU B200 reruns) for a baseline perfgate measured,
"megatron-ci" (the scaled-t fit of Megatron-LM CI A/A pairs: 1.1% per run, 1.6% per pair, 2
df, heavy tails) for a published or imported number. A/B pairs keep the pair prior.

Decision rule: guarded acceptance (ISO 14253-1, ASME B89.7.3.1), the conservative rule for a
release gate (tolerance = the largest acceptable slowdown; alpha = 1% one-sided):
    lower, upper = the 1 - 2 alpha (98%) confidence bounds of delta;
    resolution = exp(t_(1-alpha, df) * se) - 1, the slowdown told from noise at alpha.
    REGRESSION   lower > 0 (a real slowdown: false alarms at no change <= alpha) and
                 upper > tolerance (within tolerance not shown);
    IMPROVEMENT  symmetric: upper < 0 and lower < -tolerance;
    PASS         upper <= tolerance (otherwise);
    INCONCLUSIVE neither: lower <= 0 < tolerance < upper, saying how many runs or pairs
                 would resolve the tolerance (2 q se <= log(1 + tolerance): then no change
                 passes and a slowdown of the tolerance fails, each with probability >= 99%).
REGRESSION fires above max(q se, log(1 + tol) - q se), so a slowdown equal to the tolerance
is caught more than half the time (the point rule before it, "REGRESSION iff delta >
tolerance" when precise, caught it half the time by symmetry, whatever the noise);
Comparison.detectable is the slowdown caught 95% of the time. RULE = "point" keeps that old
rule for scripts/evaluate_detector.py to compare. The adaptive A/B loop (needs_more_pairs)
adds a pair while a verdict is INCONCLUSIVE or a REGRESSION whose lower bound is still within
the tolerance, with sequential_alpha per look so that all looks keep false alarms <= alpha.
Runs that never reached a steady state are left out and named in the reason; if a side has
no steady run left the verdict is INCONCLUSIVE, never REGRESSION.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from perfgate.catalog import Baseline
from perfgate.errors import ConfigError, PerfgateError
from perfgate.stats.comparison import Comparison, from_decision, no_verdict
from perfgate.stats.noise import (
    ALPHA,
    DEFAULT_PAIR_CV,
    DEFAULT_RUN_TO_RUN_CV,
    DEFAULT_TOLERANCE,
    baseline_noise,
    baseline_within,
    check_prior,
)
from perfgate.stats.rule import (
    check_alpha,
    check_tolerance,
    decide,
    gmean,
    log_spread,
    mean,
    pooled,
    smallest_n,
    sum_sq,
    unpaired_se,
)
from perfgate.stats.run import RunSummary, Window, summarize_run, window_name

# The decision rule (perfgate.stats.rule.RULES): "guarded" acceptance; scripts/evaluate_detector.py
# sets "point" (the rule before row histories) to compare the two.
RULE = "guarded"


def needs_more_pairs(comparison: Comparison, max_pairs: int) -> bool:
    """True when one more A/B pair is allowed and could change the verdict.

    INCONCLUSIVE, or (guarded rule) a REGRESSION whose lower bound is within the tolerance:
    "slower, not shown within tolerance" rather than "beyond it", which more pairs can tell.
    """
    if comparison.mode != "paired" or len(comparison.baseline) >= max_pairs:
        return False
    if comparison.verdict == "INCONCLUSIVE":
        return True
    soft = comparison.verdict == "REGRESSION" and comparison.ci_low <= comparison.tolerance
    return RULE == "guarded" and soft


def _summaries(runs: Sequence[Sequence[float]], window: Window, side: str) -> list[RunSummary]:
    if isinstance(runs, str | bytes) or not isinstance(runs, Sequence) or not runs:
        raise PerfgateError(f"{side} runs: expected a non-empty list of step-time series")
    out = []
    for i, run in enumerate(runs):
        if isinstance(run, RunSummary):
            out.append(run)
            continue
        try:
            out.append(summarize_run(run, window))
        except PerfgateError as e:
            raise PerfgateError(f"{side} run {i + 1}: {e}") from None
    return out


def _unsteady_note(side: str, runs: Sequence[RunSummary]) -> str:
    bad = [f"{side} run {i + 1}: {r.reason}" for i, r in enumerate(runs) if not r.steady]
    return "; ".join(bad)


# --- comparisons --------------------------------------------------------------------------------


def compare_runs(
    baseline_runs: Sequence[Sequence[float]],
    candidate_runs: Sequence[Sequence[float]],
    tolerance: float = 0.05,
    paired: bool = False,
    window: Window = "auto",
    *,
    alpha: float = ALPHA,
    prior_sigma: float | None = None,
    prior_df: float | None = None,
) -> Comparison:
    """Compare runs given as full per-step series (warm-up included), step order.

    paired=True: baseline_runs[i] and candidate_runs[i] ran back to back on the same nodes
    (A/B mode); a pair with an unsteady run is left out. Runs may also be given as
    RunSummary objects. prior_sigma/prior_df replace the default prior (per pair when
    paired, per run otherwise), e.g. with what a row's own past A/B gates measured.
    """
    tol, alpha = check_tolerance(tolerance), check_alpha(alpha)
    default = DEFAULT_PAIR_CV if paired else DEFAULT_RUN_TO_RUN_CV
    prior = check_prior(prior_sigma, prior_df, default)
    base = _summaries(baseline_runs, window, "baseline")
    cand = _summaries(candidate_runs, window, "candidate")
    if paired:
        if len(base) != len(cand):
            raise PerfgateError(
                f"paired comparison needs as many baseline runs as candidate runs, got "
                f"{len(base)} and {len(cand)}"
            )
        return _compare_paired(base, cand, tol, alpha, window_name(window), prior)
    return _compare_unpaired(base, cand, tol, alpha, window_name(window), prior)


def _compare_paired(
    base: list[RunSummary],
    cand: list[RunSummary],
    tol: float,
    alpha: float,
    window: str,
    prior: tuple[float, float],
) -> Comparison:
    used = [(b, c) for b, c in zip(base, cand, strict=True) if b.steady and c.steady]
    unsteady = sum(not r.steady for r in base + cand)
    note = "; ".join(
        x for x in (_unsteady_note("baseline", base), _unsteady_note("candidate", cand)) if x
    )
    common = dict(
        baseline=tuple(base),
        candidate=tuple(cand),
        alpha=alpha,
        ci_level=1 - 2 * alpha,
        n_candidate=len(used),
        n_baseline=len(used),
        n_unsteady=unsteady,
        window=window,
    )
    if not used:
        return no_verdict("paired", tol, f"no pair with both runs steady ({note})", **common)
    diffs = [math.log(c.median_s / b.median_s) for b, c in used]
    n = len(diffs)
    within = mean([b.rel_se**2 + c.rel_se**2 for b, c in used])
    observed = log_spread(diffs)
    # The prior is the launch-to-launch part; each pair adds its own within-run noise.
    sigma, df = pooled(math.sqrt(prior[0] ** 2 + within), prior[1], observed, n - 1)
    se = sigma / math.sqrt(n)

    def advice() -> str:
        need = smallest_n(
            lambda k: sigma / math.sqrt(k), lambda k: prior[1] + k - 1, tol, alpha, RULE
        )
        return f"about {need or 'over 1000'} pairs (A/B runs on the same nodes) would resolve it"

    dec = decide(mean(diffs), se, df, tol, alpha, advice, RULE)
    reason = f"{n} pair{'s' if n > 1 else ''}: {dec.reason}" + (
        f"; left out: {note}" if note else ""
    )
    return from_decision(
        dec,
        mode="paired",
        se=se,
        tolerance=tol,
        reason=reason,
        baseline_step_time_s=gmean([b.median_s for b, _ in used]),
        candidate_step_time_s=gmean([c.median_s for _, c in used]),
        df=df,
        sigma=sigma,
        sigma_observed=observed,
        pair_deltas=tuple(math.expm1(x) for x in diffs),
        **common,
    )


def _compare_unpaired(
    base: list[RunSummary],
    cand: list[RunSummary],
    tol: float,
    alpha: float,
    window: str,
    prior: tuple[float, float],
) -> Comparison:
    b_ok = [r for r in base if r.steady]
    c_ok = [r for r in cand if r.steady]
    unsteady = len(base) + len(cand) - len(b_ok) - len(c_ok)
    note = "; ".join(
        x for x in (_unsteady_note("baseline", base), _unsteady_note("candidate", cand)) if x
    )
    common = dict(
        baseline=tuple(base),
        candidate=tuple(cand),
        alpha=alpha,
        ci_level=1 - 2 * alpha,
        n_baseline=len(b_ok),
        n_candidate=len(c_ok),
        n_unsteady=unsteady,
        window=window,
    )
    if not b_ok or not c_ok:
        side = "baseline" if not b_ok else "candidate"
        return no_verdict("runs", tol, f"no steady {side} run ({note})", **common)
    lb = [math.log(r.median_s) for r in b_ok]
    lc = [math.log(r.median_s) for r in c_ok]
    k, m = len(lc), len(lb)
    df_obs = (k - 1) + (m - 1)
    observed = None
    if df_obs > 0:
        ss = sum_sq(lb) + sum_sq(lc)
        observed = math.sqrt(ss / df_obs)
    sigma, df = pooled(prior[0], prior[1], observed, df_obs)
    within = sum(r.rel_se**2 for r in c_ok) / k**2 + sum(r.rel_se**2 for r in b_ok) / m**2
    se = unpaired_se(sigma, k, m, within)

    def advice() -> str:
        need = smallest_n(
            lambda j: unpaired_se(sigma, j, j, 0), lambda j: prior[1] + 2 * j - 2, tol, alpha, RULE
        )
        return f"about {need or 'over 1000'} runs on each side, or A/B pairs, would resolve it"

    dec = decide(mean(lc) - mean(lb), se, df, tol, alpha, advice, RULE)
    reason = f"{k} vs {m} runs: {dec.reason}" + (f"; left out: {note}" if note else "")
    return from_decision(
        dec,
        mode="runs",
        se=se,
        tolerance=tol,
        reason=reason,
        baseline_step_time_s=gmean([r.median_s for r in b_ok]),
        candidate_step_time_s=gmean([r.median_s for r in c_ok]),
        df=df,
        sigma=sigma,
        sigma_observed=observed,
        **common,
    )


def compare_to_baseline(
    candidate_runs: Sequence[Sequence[float]],
    baseline: Baseline,
    tolerance: float | None = None,
    window: Window = "auto",
    *,
    alpha: float = ALPHA,
    prior_sigma: float | None = None,
    prior_df: float | None = None,
    history: tuple[float, float] | None = None,
) -> Comparison:
    """Compare candidate runs with a stored baseline (mode "stored").

    tolerance None -> baseline.tolerance -> DEFAULT_TOLERANCE. The run-to-run sigma pools
    the prior (DEFAULT_RUN_TO_RUN_CV with PRIOR_DF, or prior_sigma/prior_df) with what the
    baseline's runs, the candidate runs and the row's history (sum of squares, df: its
    within-segment residuals, perfgate.history.noise) show; one candidate run is judged by
    the predictive distribution of a new run, t on the pooled df.
    """
    prior = check_prior(prior_sigma, prior_df, DEFAULT_RUN_TO_RUN_CV)
    if tolerance is None:
        tolerance = baseline.tolerance if baseline.tolerance is not None else DEFAULT_TOLERANCE
    tol, alpha = check_tolerance(tolerance), check_alpha(alpha)
    ref = baseline.step_time_s
    if not (isinstance(ref, int | float) and math.isfinite(ref) and ref > 0):
        raise ConfigError(f"baseline step_time_s = {ref!r}: expected seconds > 0")
    n_base = max(1, int(baseline.n_runs))
    cand = _summaries(candidate_runs, window, "candidate")
    c_ok = [r for r in cand if r.steady]
    note = _unsteady_note("candidate", cand)
    common = dict(
        candidate=tuple(cand),
        alpha=alpha,
        ci_level=1 - 2 * alpha,
        n_baseline=n_base,
        n_candidate=len(c_ok),
        n_unsteady=len(cand) - len(c_ok),
        window=window_name(window),
    )
    if not c_ok:
        return no_verdict(
            "stored", tol, f"no steady candidate run ({note})", baseline_step_time_s=ref, **common
        )
    lc = [math.log(r.median_s) for r in c_ok]
    k = len(lc)
    ss, df_obs = baseline_noise(baseline)
    if k >= 2:
        ss += sum_sq(lc)
        df_obs += k - 1
    if history is not None and history[1] > 0:
        ss += history[0]
        df_obs += history[1]
    observed = math.sqrt(ss / df_obs) if df_obs else None
    sigma, df = pooled(prior[0], prior[1], observed, df_obs)
    # Within-run error of both sides' medians: the candidate runs', and the baseline's runs'
    # as stored with it (a 1-run baseline of a 3%-CV row carries ~0.4%: as much as the
    # production prior's whole run-to-run sigma).
    within = sum(r.rel_se**2 for r in c_ok) / k**2 + baseline_within(baseline)
    se = unpaired_se(sigma, k, n_base, within)

    def advice() -> str:
        # j more runs of the row stored with its baseline: n_base + j runs and j more df.
        need = smallest_n(
            lambda j: unpaired_se(sigma, k, n_base + j, within),
            lambda j: df + j,
            tol,
            alpha,
            RULE,
        )
        if need is None:
            return (
                f"no number of runs of this row resolves {tol:.0%} at its noise ({sigma:.1%} "
                "per run): use A/B pairs (--candidate-image)"
            )
        return (
            f"{need} more run{'s' if need > 1 else ''} of this row resolve {tol:.0%} (a "
            f"baseline of {n_base + need} runs: --update-baselines --repeat {n_base + need})"
        )

    dec = decide(mean(lc) - math.log(ref), se, df, tol, alpha, advice, RULE)
    reason = (
        f"{k} run{'s' if k > 1 else ''} vs stored baseline ({n_base} run"
        f"{'s' if n_base > 1 else ''}): {dec.reason}" + (f"; left out: {note}" if note else "")
    )
    return from_decision(
        dec,
        mode="stored",
        se=se,
        tolerance=tol,
        reason=reason,
        baseline_step_time_s=ref,
        candidate_step_time_s=gmean([r.median_s for r in c_ok]),
        df=df,
        sigma=sigma,
        sigma_observed=observed,
        **common,
    )
