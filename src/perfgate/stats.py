"""From step-time series to verdicts: warm-up removal, robust run summaries, comparisons.

Noise model (measured on the real series in ../shared/reference by
scripts/evaluate_detector.py). The log of a run's steady median step time is

    log m = log mu + launch effect + within-run error

Steps within one launch are autocorrelated and say nothing about the launch effect: two
launches of the same config on the same nodes differ by a median of ~1.4% (Megatron-LM CI
A/A pairs), whatever the number of steps. So the standard error of a comparison always
carries a between-run term:

    stored:  se^2 = s_run^2 (1/K + 1/n_base) + sum(se_k^2) / K^2
    runs:    se^2 = s_run^2 (1/K + 1/M)      + within-run SEs of both sides
    paired:  se^2 = s_pair^2 / N              (d_i = log(candidate_i / baseline_i))

s_run^2 and s_pair^2 pool what the runs themselves show with a prior calibrated on real A/A
data (DEFAULT_RUN_TO_RUN_CV, DEFAULT_PAIR_CV, PRIOR_DF degrees of freedom), the empirical-Bayes
"moderated" variance of Smyth (2004): s^2 = (PRIOR_DF * prior^2 + df_obs * s_obs^2) /
(PRIOR_DF + df_obs), used with a t quantile on PRIOR_DF + df_obs degrees of freedom. This
keeps 3 pairs usable (df = 2 alone gives t = 6.96 at 1%) while a noisy workload's own
spread still raises its SE.

Decision rule (tolerance = the largest acceptable slowdown; alpha = 1% one-sided):
    resolution = exp(t_(1-alpha, df) * se) - 1, the slowdown told from noise at alpha;
    lower, upper = the 1 - 2 alpha (98%) confidence bounds of delta.
    If resolution <= tolerance (precise enough): REGRESSION if delta > tolerance,
        IMPROVEMENT if delta < -tolerance, else PASS. False alarms at no change <= alpha.
    Else (too noisy for this tolerance): REGRESSION only if lower > tolerance, IMPROVEMENT
        only if upper < -tolerance, PASS if upper <= tolerance (the data exclude a slowdown
        beyond tolerance), else INCONCLUSIVE, saying what resolution was reached and how
        many runs or pairs would resolve the tolerance.
A slowdown equal to the tolerance is flagged about half the time: to catch a slowdown X with
95% probability, set tolerance <= X - 1.645 * se (the report shows each row's resolution).
Runs that never reached a steady state are left out and named in the reason; if a side has
no steady run left the verdict is INCONCLUSIVE, never REGRESSION.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from perfgate.catalog import Baseline
from perfgate.errors import ConfigError, PerfgateError
from perfgate.stats_dist import normal_quantile, t_quantile
from perfgate.stats_run import RunSummary, Window, summarize_run

__all__ = [
    "ALPHA",
    "DEFAULT_PAIR_CV",
    "DEFAULT_RUN_TO_RUN_CV",
    "DEFAULT_TOLERANCE",
    "PRIOR_DF",
    "VERDICTS",
    "Comparison",
    "RunSummary",
    "Window",
    "compare_runs",
    "compare_to_baseline",
    "needs_more_pairs",
    "sequential_alpha",
    "summarize_run",
]

VERDICTS = ("PASS", "REGRESSION", "IMPROVEMENT", "INCONCLUSIVE")
ALPHA = 0.01  # one-sided false-alarm rate of a REGRESSION verdict at no change
DEFAULT_TOLERANCE = 0.05  # when neither the caller nor the stored baseline gives one
# Per-run sigma of log(steady step time) between separate launches of one config.
DEFAULT_RUN_TO_RUN_CV = 0.011
# Sigma of log(candidate / baseline) for a pair launched back to back on the same nodes.
DEFAULT_PAIR_CV = 0.016
PRIOR_DF = 2.0  # weight of those priors in degrees of freedom; also their tail weight


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
        return _json_ready(asdict(self))


def _json_ready(x: Any) -> Any:
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, dict):
        return {k: _json_ready(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_json_ready(v) for v in x]
    return x


# Per-look alpha / ALPHA for an adaptive loop that looks at n0, n0 + 1, ..., nmax pairs: the
# Pocock-type boundary for which a Gaussian random walk crosses any look's one-sided
# threshold with probability 1% (looks at n pairs are strongly correlated, so this is well
# above Bonferroni's 1 / looks). Computed offline from 4 million simulated walks, rounded
# down; tests/test_stats_compare.py re-simulates entries.
_POCOCK_FRACTION_1PCT = {  # first look -> fractions for max_pairs = first + 1, first + 2, ...
    1: (0.56, 0.42, 0.34, 0.29, 0.26, 0.23, 0.21),
    2: (0.61, 0.46, 0.37, 0.32, 0.29, 0.26, 0.24),
    3: (0.64, 0.49, 0.41, 0.35, 0.31, 0.28, 0.26),
    4: (0.67, 0.52, 0.43, 0.38, 0.34, 0.31, 0.28),
    5: (0.69, 0.54, 0.46, 0.40, 0.36, 0.32, 0.30),
    6: (0.70, 0.56, 0.48, 0.42, 0.38, 0.34),
}


def sequential_alpha(alpha: float, pairs: int, max_pairs: int) -> float:
    """Per-look alpha for an adaptive A/B loop that may look at pairs, pairs+1, ..., max_pairs.

    Keeps the chance of a false REGRESSION at any look <= alpha: the Pocock-type table above
    for alpha = 1%, Bonferroni (alpha / looks) otherwise.
    """
    if max_pairs <= pairs:
        return alpha
    row = _POCOCK_FRACTION_1PCT.get(pairs, ()) if alpha == ALPHA else ()
    if max_pairs - pairs <= len(row):
        return alpha * row[max_pairs - pairs - 1]
    return alpha / (max_pairs - pairs + 1)


def needs_more_pairs(comparison: Comparison, max_pairs: int) -> bool:
    """True when an A/B comparison is INCONCLUSIVE and one more pair is allowed."""
    if comparison.mode != "paired":
        return False
    pairs = len(comparison.baseline)
    return comparison.verdict == "INCONCLUSIVE" and pairs < max_pairs


# --- the decision -----------------------------------------------------------------------------


def _pct(x: float) -> str:
    return f"{x * 100:+.1f}%"


def _pooled(
    prior: float, prior_df: float, observed: float | None, df_obs: float
) -> tuple[float, float]:
    """Moderated sigma and its degrees of freedom (prior with prior_df, observed with df_obs)."""
    if observed is None or df_obs <= 0:
        return prior, prior_df
    var = (prior_df * prior**2 + df_obs * observed**2) / (prior_df + df_obs)
    return math.sqrt(var), prior_df + df_obs


def _check_prior(sigma: float | None, df: float | None, default: float) -> tuple[float, float]:
    sigma = default if sigma is None else sigma
    df = PRIOR_DF if df is None else df
    if not (math.isfinite(sigma) and sigma > 0):
        raise ConfigError(f"prior_sigma = {sigma!r}: expected a fraction > 0, e.g. 0.01")
    if not df > 0:
        raise ConfigError(f"prior_df = {df!r}: expected degrees of freedom > 0")
    return sigma, df


@dataclass(frozen=True)
class _Decision:
    verdict: str
    delta: float
    ci_low: float
    ci_high: float
    resolution: float
    reason: str
    detectable: float


def _decide(
    d: float, se: float, df: float, tolerance: float, alpha: float, advice: Callable[[], str]
) -> _Decision:
    """Apply the decision rule to a log ratio d with standard error se (see module doc).

    advice() says how many runs or pairs would resolve the tolerance (for INCONCLUSIVE).
    """
    q = t_quantile(1 - alpha, df)
    delta = math.expm1(d)
    lo, hi = math.expm1(d - q * se), math.expm1(d + q * se)
    res = math.expm1(q * se)
    tol = tolerance
    ci = f"{1 - 2 * alpha:.0%} CI {_pct(lo)}..{_pct(hi)}"
    about = f"resolution {res:.1%} at {alpha:.1%} false alarms, {ci}"

    # REGRESSION fires above log1p(tol) (precise) or log1p(tol) + q se (noisy); a slowdown
    # 1.645 se beyond that threshold is caught 95% of the time.
    threshold = math.log1p(tol) + (0.0 if res <= tol else q * se)
    detectable = math.expm1(threshold + normal_quantile(0.95) * se)

    def verdict(name: str, why: str) -> _Decision:
        return _Decision(name, delta, lo, hi, res, f"{why} ({about})", detectable)

    if res <= tol:
        if delta > tol:
            return verdict("REGRESSION", f"delta {_pct(delta)} > tolerance {tol:.0%}")
        if delta < -tol:
            return verdict(
                "IMPROVEMENT", f"delta {_pct(delta)} < -{tol:.0%}: faster, refresh the baseline"
            )
        return verdict("PASS", f"delta {_pct(delta)} within tolerance {tol:.0%}")
    if lo > tol:
        return verdict(
            "REGRESSION", f"delta {_pct(delta)} > tolerance {tol:.0%} even at the lower bound"
        )
    if hi < -tol:
        return verdict(
            "IMPROVEMENT",
            f"delta {_pct(delta)}: faster even at the upper bound, refresh the baseline",
        )
    if hi <= tol:
        return verdict(
            "PASS", f"delta {_pct(delta)}: upper bound {_pct(hi)} within tolerance {tol:.0%}"
        )
    reason = (
        f"resolution {res:.1%} > tolerance {tol:.0%}: delta {_pct(delta)} ({ci}) cannot be "
        f"told from run-to-run noise; {advice()}"
    )
    return _Decision("INCONCLUSIVE", delta, lo, hi, res, reason, detectable)


def _smallest_n(
    se_of: Callable[[int], float], df_of: Callable[[int], float], tol: float, alpha: float
) -> int | None:
    """Smallest count n (up to 1000) whose predicted resolution is within tol, else None.

    The predicted resolution falls as n grows (smaller SE, more df), so bisect.
    """

    def ok(n: int) -> bool:
        return math.expm1(t_quantile(1 - alpha, df_of(n)) * se_of(n)) <= tol

    if not ok(1000):
        return None
    lo, hi = 0, 1000  # ok(hi) holds; ok(lo) is taken as false
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return hi


# --- inputs -------------------------------------------------------------------------------------


def _check_tolerance(tolerance: float) -> float:
    try:
        tol = float(tolerance)
    except (TypeError, ValueError):
        raise ConfigError(f"tolerance = {tolerance!r}: expected a fraction such as 0.03") from None
    if not 0 < tol < 1:
        raise ConfigError(f"tolerance = {tolerance!r}: expected a fraction in (0, 1), e.g. 0.03")
    return tol


def _check_alpha(alpha: float) -> float:
    if not 0 < alpha < 0.5:
        raise ConfigError(f"alpha = {alpha!r}: expected a fraction in (0, 0.5), e.g. 0.01")
    return alpha


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


def _mean(xs: Sequence[float]) -> float:
    return math.fsum(xs) / len(xs)


def _sum_sq(xs: Sequence[float]) -> float:
    m = _mean(xs)
    return math.fsum((x - m) ** 2 for x in xs)


def _log_spread(logs: Sequence[float]) -> float | None:
    return math.sqrt(_sum_sq(logs) / (len(logs) - 1)) if len(logs) >= 2 else None


def _window_name(window: Window) -> str:
    return window if isinstance(window, str) else f"{window[0]}:{window[1]}"


def _gmean(values: Sequence[float]) -> float:
    return math.exp(_mean([math.log(v) for v in values])) if values else math.nan


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
    tol, alpha = _check_tolerance(tolerance), _check_alpha(alpha)
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
    within = _mean([b.rel_se**2 + c.rel_se**2 for b, c in used])
    observed = _log_spread(diffs)
    # The prior is the launch-to-launch part; each pair adds its own within-run noise.
    sigma, df = _pooled(math.sqrt(prior[0] ** 2 + within), prior[1], observed, n - 1)
    se = sigma / math.sqrt(n)

    def advice() -> str:
        need = _smallest_n(lambda k: sigma / math.sqrt(k), lambda k: prior[1] + k - 1, tol, alpha)
        return f"about {need or 'over 1000'} pairs (A/B runs on the same nodes) would resolve it"

    dec = _decide(_mean(diffs), se, df, tol, alpha, advice)
    reason = f"{n} pair{'s' if n > 1 else ''}: {dec.reason}" + (
        f"; left out: {note}" if note else ""
    )
    return Comparison(
        dec.verdict,
        dec.delta,
        dec.ci_low,
        dec.ci_high,
        se,
        dec.resolution,
        tol,
        "paired",
        reason,
        _gmean([b.median_s for b, _ in used]),
        _gmean([c.median_s for _, c in used]),
        pair_deltas=tuple(math.expm1(x) for x in diffs),
        df=df,
        sigma=sigma,
        sigma_observed=observed,
        detectable=dec.detectable,
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
        ss = _sum_sq(lb) + _sum_sq(lc)
        observed = math.sqrt(ss / df_obs)
    sigma, df = _pooled(prior[0], prior[1], observed, df_obs)
    within = sum(r.rel_se**2 for r in c_ok) / k**2 + sum(r.rel_se**2 for r in b_ok) / m**2
    se = math.sqrt(sigma**2 * (1 / k + 1 / m) + within)

    def advice() -> str:
        need = _smallest_n(
            lambda j: sigma * math.sqrt(2 / j), lambda j: prior[1] + 2 * j - 2, tol, alpha
        )
        return f"about {need or 'over 1000'} runs on each side, or A/B pairs, would resolve it"

    dec = _decide(_mean(lc) - _mean(lb), se, df, tol, alpha, advice)
    reason = f"{k} vs {m} runs: {dec.reason}" + (f"; left out: {note}" if note else "")
    return Comparison(
        dec.verdict,
        dec.delta,
        dec.ci_low,
        dec.ci_high,
        se,
        dec.resolution,
        tol,
        "runs",
        reason,
        _gmean([r.median_s for r in b_ok]),
        _gmean([r.median_s for r in c_ok]),
        df=df,
        sigma=sigma,
        sigma_observed=observed,
        detectable=dec.detectable,
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
) -> Comparison:
    """Compare candidate runs with a stored baseline (mode "stored").

    tolerance None -> baseline.tolerance -> DEFAULT_TOLERANCE. The baseline's spread over its
    n_runs and the candidate runs' spread estimate the run-to-run sigma, pooled with the
    prior (DEFAULT_RUN_TO_RUN_CV with PRIOR_DF, or prior_sigma/prior_df).
    """
    prior = _check_prior(prior_sigma, prior_df, DEFAULT_RUN_TO_RUN_CV)
    if tolerance is None:
        tolerance = baseline.tolerance if baseline.tolerance is not None else DEFAULT_TOLERANCE
    tol, alpha = _check_tolerance(tolerance), _check_alpha(alpha)
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
    ss, df_obs = 0.0, 0
    spread = baseline.step_time_spread_s
    if n_base >= 2 and spread is not None and math.isfinite(spread) and spread >= 0:
        ss += (n_base - 1) * (spread / ref) ** 2
        df_obs += n_base - 1
    if k >= 2:
        ss += _sum_sq(lc)
        df_obs += k - 1
    observed = math.sqrt(ss / df_obs) if df_obs else None
    sigma, df = _pooled(prior[0], prior[1], observed, df_obs)
    within = sum(r.rel_se**2 for r in c_ok) / k**2
    se = math.sqrt(sigma**2 * (1 / k + 1 / n_base) + within)

    def advice() -> str:
        need = _smallest_n(
            lambda j: math.sqrt(sigma**2 * (1 / j + 1 / n_base) + within * k / j**2),
            lambda j: df - max(k - 1, 0) + j - 1,
            tol,
            alpha,
        )
        if need is None:
            return (
                f"no number of candidate runs resolves it against a baseline of {n_base} "
                f"run{'s' if n_base > 1 else ''}: use A/B pairs (--candidate-image) or store "
                "a baseline from more runs"
            )
        return f"about {need} candidate runs, or A/B pairs, would resolve it"

    dec = _decide(_mean(lc) - math.log(ref), se, df, tol, alpha, advice)
    reason = (
        f"{k} run{'s' if k > 1 else ''} vs stored baseline ({n_base} run"
        f"{'s' if n_base > 1 else ''}): {dec.reason}" + (f"; left out: {note}" if note else "")
    )
    return Comparison(
        dec.verdict,
        dec.delta,
        dec.ci_low,
        dec.ci_high,
        se,
        dec.resolution,
        tol,
        "stored",
        reason,
        ref,
        _gmean([r.median_s for r in c_ok]),
        df=df,
        sigma=sigma,
        sigma_observed=observed,
        detectable=dec.detectable,
        **common,
    )
