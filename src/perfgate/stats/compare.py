"""Comparisons of steady step times: the noise model, stored-baseline, runs and paired tests.

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
from dataclasses import asdict, dataclass
from typing import Any

from perfgate.catalog import Baseline
from perfgate.errors import ConfigError, PerfgateError
from perfgate.stats.priors import MEGATRON_CI, PRODUCTION, NoisePrior
from perfgate.stats.rule import (
    Decision,
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
from perfgate.stats.run import RunSummary, Window, summarize_run

VERDICTS = ("PASS", "REGRESSION", "IMPROVEMENT", "INCONCLUSIVE")
ALPHA = 0.01  # one-sided false-alarm rate of a REGRESSION verdict at no change
DEFAULT_TOLERANCE = 0.05  # when neither the caller nor the stored baseline gives one
# Per-run sigma of log(steady step time) between separate launches of one config.
DEFAULT_RUN_TO_RUN_CV = 0.011
# Sigma of log(candidate / baseline) for a pair launched back to back on the same nodes.
DEFAULT_PAIR_CV = 0.016
PRIOR_DF = 2.0  # weight of those priors in degrees of freedom; also their tail weight
# The decision rule (perfgate.stats.rule.RULES): "guarded" acceptance; scripts/evaluate_detector.py
# sets "point" (the rule before row histories) to compare the two.
RULE = "guarded"


@dataclass(frozen=True)
class Comparison:
    """A verdict on candidate vs baseline with the numbers behind it."""

    verdict: str
    delta: float  # (candidate / baseline - 1) of steady step time; +0.03 = 3% slower
    ci_low: float  # lower confidence bound of delta (level ci_level)
    ci_high: float
    se: float  # standard error of log(candidate / baseline)
    resolution: float  # smallest slowdown this comparison tells from noise at its false-alarm rate
    tolerance: float
    mode: str  # "stored", "runs" or "paired"
    reason: str
    baseline_step_time_s: float
    candidate_step_time_s: float
    baseline: tuple[RunSummary, ...] = ()
    candidate: tuple[RunSummary, ...] = ()
    pair_deltas: tuple[float, ...] = ()
    alpha: float = ALPHA
    ci_level: float = 1 - 2 * ALPHA
    df: float = math.inf  # degrees of freedom of the t quantile
    sigma: float = math.nan  # per-run (stored, runs) or per-pair (paired) sigma used
    sigma_observed: float | None = None  # what the runs themselves showed, if they could
    n_baseline: int = 0  # steady baseline runs used (stored: the baseline's n_runs)
    n_candidate: int = 0  # steady candidate runs used (paired: pairs used)
    n_unsteady: int = 0  # runs left out because they never reached a steady state
    window: str = "auto"
    detectable: float = math.nan  # slowdown this comparison flags 95% of the time

    @property
    def n_pairs(self) -> int:
        """Pairs behind a paired verdict (0 otherwise)."""
        return self.n_candidate if self.mode == "paired" else 0

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data (NaN and inf become None)."""
        return json_ready(asdict(self))


def json_ready(x: Any) -> Any:
    """Plain JSON-ready data: dataclass dicts with NaN and inf as None."""
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, dict):
        return {k: json_ready(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [json_ready(v) for v in x]
    return x


@dataclass(frozen=True)
class Noise:
    """What a comparison assumes about noise its runs cannot show: the false-alarm rate and
    the run-to-run prior (perfgate.stats.priors).

    run_cv/df (--noise-cv/--noise-df) win over everything. Else prior (--noise-prior) when
    named; else ("auto") the site's calibrated prior, or the production prior, for a baseline
    perfgate measured, and the megatron-ci prior for a published or imported number (measured
    on another cluster: its offset is unknown, its tails heavy).
    """

    alpha: float = ALPHA
    run_cv: float | None = None  # sigma of log(step time) of one launch; None: the prior's
    df: float | None = None  # the prior's weight in degrees of freedom; None: PRIOR_DF
    prior: NoisePrior | None = None  # a named prior for every row; None: auto
    site: NoisePrior | None = None  # the site's calibrated prior (perfgate calibrate), if any

    def __post_init__(self) -> None:
        if not 0 < self.alpha < 0.5:
            raise ConfigError(f"alpha {self.alpha}: must be a fraction in (0, 0.5), e.g. 0.01")
        if self.run_cv is not None and not 0 < self.run_cv < 0.5:
            raise ConfigError(f"noise CV {self.run_cv}: must be a fraction in (0, 0.5)")
        if self.df is not None and not self.df > 0:
            raise ConfigError(f"noise df {self.df}: must be positive")

    def prior_for(self, baseline: Baseline | None) -> NoisePrior:
        """The run-to-run prior a comparison with this baseline uses."""
        if self.run_cv is not None:
            return NoisePrior("--noise-cv", self.run_cv, self.df or PRIOR_DF)
        if self.prior is not None:
            return self.prior
        if baseline is not None and baseline.measured_here:
            return self.site or PRODUCTION
        return MEGATRON_CI

    def stored(self, baseline: Baseline | None = None) -> dict[str, Any]:
        """Keyword arguments of compare_to_baseline and unpaired compare_runs."""
        if baseline is None and self.run_cv is None and self.prior is None:
            return {"alpha": self.alpha, "prior_sigma": None, "prior_df": self.df}
        p = self.prior_for(baseline)
        return {"alpha": self.alpha, "prior_sigma": p.sigma, "prior_df": p.df}

    def paired(self) -> dict[str, Any]:
        """The pair prior (a pair's log ratio has two launches' noise) for paired compare_runs.

        A/B pairs keep the A/A-pair fit (DEFAULT_PAIR_CV) unless --noise-cv says otherwise:
        the named priors describe runs in separate jobs.
        """
        sigma = None if self.run_cv is None else self.run_cv * math.sqrt(2)
        return {"prior_sigma": sigma, "prior_df": self.df}


DEFAULT_NOISE = Noise()


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


def _check_prior(sigma: float | None, df: float | None, default: float) -> tuple[float, float]:
    sigma = default if sigma is None else sigma
    df = PRIOR_DF if df is None else df
    if not (math.isfinite(sigma) and sigma > 0):
        raise ConfigError(f"prior_sigma = {sigma!r}: expected a fraction > 0, e.g. 0.01")
    if not df > 0:
        raise ConfigError(f"prior_df = {df!r}: expected degrees of freedom > 0")
    return sigma, df


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


def _window_name(window: Window) -> str:
    return window if isinstance(window, str) else f"{window[0]}:{window[1]}"


def _result(dec: Decision, **fields: Any) -> Comparison:
    """A Comparison from a decision and the numbers behind it."""
    return Comparison(
        verdict=dec.verdict,
        delta=dec.delta,
        ci_low=dec.ci_low,
        ci_high=dec.ci_high,
        resolution=dec.resolution,
        detectable=dec.detectable,
        **fields,
    )


def _no_verdict(mode: str, tolerance: float, reason: str, **kw: Any) -> Comparison:
    nan = math.nan
    return Comparison(
        "INCONCLUSIVE",
        nan,
        nan,
        nan,
        nan,
        nan,
        tolerance,
        mode,
        reason,
        kw.pop("baseline_step_time_s", nan),
        kw.pop("candidate_step_time_s", nan),
        **kw,
    )


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
    prior = _check_prior(prior_sigma, prior_df, default)
    base = _summaries(baseline_runs, window, "baseline")
    cand = _summaries(candidate_runs, window, "candidate")
    if paired:
        if len(base) != len(cand):
            raise PerfgateError(
                f"paired comparison needs as many baseline runs as candidate runs, got "
                f"{len(base)} and {len(cand)}"
            )
        return _compare_paired(base, cand, tol, alpha, _window_name(window), prior)
    return _compare_unpaired(base, cand, tol, alpha, _window_name(window), prior)


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
        return _no_verdict("paired", tol, f"no pair with both runs steady ({note})", **common)
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
    return _result(
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
        return _no_verdict("runs", tol, f"no steady {side} run ({note})", **common)
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
    return _result(
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


def baseline_noise(baseline: Baseline) -> tuple[float, float]:
    """(sum of squares, df) of log step time that a baseline's own runs show about noise.

    Its stored runs when it has them, else its spread over n_runs; (0, 0) for one run.
    """
    runs = [r.step_time_s for r in baseline.runs]
    if len(runs) >= 2:
        return sum_sq([math.log(x) for x in runs]), len(runs) - 1
    n, spread, ref = baseline.n_runs, baseline.step_time_spread_s, baseline.step_time_s
    if n >= 2 and spread is not None and math.isfinite(spread) and spread >= 0:
        return (n - 1) * (spread / ref) ** 2, n - 1
    return 0.0, 0


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
    prior = _check_prior(prior_sigma, prior_df, DEFAULT_RUN_TO_RUN_CV)
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
        window=_window_name(window),
    )
    if not c_ok:
        return _no_verdict(
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
    within = sum(r.rel_se**2 for r in c_ok) / k**2
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
    return _result(
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
