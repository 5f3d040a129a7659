"""The decision machinery behind perfgate.stats: pooling, standard errors, the verdict.

Pure functions of explicit numbers (priors are passed in), so perfgate.stats keeps the
constants, the public API and the documentation of the rule in one place.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from perfgate.errors import ConfigError
from perfgate.stats.dist import normal_quantile, t_quantile

# Per-look alpha / ALPHA for an adaptive loop that looks at n0, n0 + 1, ..., nmax pairs: the
# Pocock-type boundary for which a Gaussian random walk crosses any look's one-sided
# threshold with probability 1% (looks at n pairs are strongly correlated, so this is well
# above Bonferroni's 1 / looks). Computed offline from 4 million simulated walks, rounded
# down; tests/stats/test_stats_compare.py re-simulates entries.
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
    row = _POCOCK_FRACTION_1PCT.get(pairs, ()) if alpha == 0.01 else ()
    if max_pairs - pairs <= len(row):
        return alpha * row[max_pairs - pairs - 1]
    return alpha / (max_pairs - pairs + 1)


def pct(x: float) -> str:
    """+1.2% style."""
    return f"{x * 100:+.1f}%"


def pooled(
    prior: float, prior_df: float, observed: float | None, df_obs: float
) -> tuple[float, float]:
    """Moderated sigma and its degrees of freedom (prior with prior_df, observed with df_obs)."""
    if observed is None or df_obs <= 0:
        return prior, prior_df
    var = (prior_df * prior**2 + df_obs * observed**2) / (prior_df + df_obs)
    return math.sqrt(var), prior_df + df_obs


@dataclass(frozen=True)
class Decision:
    """A verdict with its numbers, before it becomes a Comparison."""

    verdict: str
    delta: float
    ci_low: float
    ci_high: float
    resolution: float
    reason: str
    detectable: float


@dataclass(frozen=True)
class Bounds:
    """One comparison as a rule sees it: the slowdown, its interval and resolution (fractions)."""

    delta: float
    lo: float
    hi: float
    resolution: float
    tolerance: float


@dataclass(frozen=True)
class Rule:
    """A decision rule: what it calls a REGRESSION or IMPROVEMENT before the shared tail.

    threshold(q_se, tol): the log ratio above which it says REGRESSION (for `detectable`);
    early(bounds): its own verdict and why, or None to fall through to the shared tail
    (REGRESSION / IMPROVEMENT beyond the tolerance at the bound, PASS within it, else
    INCONCLUSIVE); resolved(q_se, tol): True when it never ends INCONCLUSIVE.
    """

    threshold: Callable[[float, float], float]
    early: Callable[[Bounds], tuple[str, str] | None]
    resolved: Callable[[float, float], bool]


def _guarded_early(b: Bounds) -> tuple[str, str] | None:
    tol, delta = b.tolerance, b.delta
    if b.lo > 0 and b.hi > tol:
        if b.lo > tol:
            return "REGRESSION", f"delta {pct(delta)} > tolerance {tol:.0%} even at the lower bound"
        return "REGRESSION", (
            f"delta {pct(delta)}: slower (lower bound {pct(b.lo)} > 0) and not shown within "
            f"tolerance {tol:.0%} (upper bound {pct(b.hi)})"
        )
    if b.hi < 0 and b.lo < -tol:
        return "IMPROVEMENT", (
            f"delta {pct(delta)}: faster (upper bound {pct(b.hi)}), refresh the baseline"
        )
    return None


def _point_early(b: Bounds) -> tuple[str, str] | None:
    tol, delta = b.tolerance, b.delta
    if b.resolution > tol:
        return None
    if delta > tol:
        return "REGRESSION", f"delta {pct(delta)} > tolerance {tol:.0%}"
    if delta < -tol:
        return "IMPROVEMENT", f"delta {pct(delta)} < -{tol:.0%}: faster, refresh the baseline"
    return "PASS", f"delta {pct(delta)} within tolerance {tol:.0%}"


def _point_threshold(q_se: float, tol: float) -> float:
    # above log1p(tol) when precise, log1p(tol) + q se when noisy
    return math.log1p(tol) + (0.0 if math.expm1(q_se) <= tol else q_se)


# The decision rules by name. "guarded" (the gate's): REGRESSION iff d - q se > 0 and
# d + q se > log1p(tol), so the threshold is max(q se, log1p(tol) - q se) and a slowdown 1.645
# se beyond it is caught 95% of the time; INCONCLUSIVE only when q se > log1p(tol) / 2.
# "point" (the rule before row histories, kept so scripts/evaluate_detector.py can compare):
# the point estimate against the tolerance when the resolution is within it.
RULES: dict[str, Rule] = {
    "guarded": Rule(
        threshold=lambda q_se, tol: max(q_se, math.log1p(tol) - q_se),
        early=_guarded_early,
        resolved=lambda q_se, tol: 2 * q_se <= math.log1p(tol),
    ),
    "point": Rule(
        threshold=_point_threshold,
        early=_point_early,
        resolved=lambda q_se, tol: math.expm1(q_se) <= tol,
    ),
}


def rule_named(name: str) -> Rule:
    """The decision rule of this name, else a one-line ConfigError listing the rules."""
    if name not in RULES:
        raise ConfigError(f"decision rule {name!r}: expected one of {', '.join(RULES)}")
    return RULES[name]


def decide(
    d: float,
    se: float,
    df: float,
    tolerance: float,
    alpha: float,
    advice: Callable[[], str],
    rule: str = "guarded",
) -> Decision:
    """Apply the decision rule to a log ratio d with standard error se (see perfgate.stats).

    advice() says how many runs or pairs would resolve the tolerance (for INCONCLUSIVE).
    """
    how = rule_named(rule)
    q = t_quantile(1 - alpha, df)
    delta = math.expm1(d)
    lo, hi = math.expm1(d - q * se), math.expm1(d + q * se)
    res = math.expm1(q * se)
    tol = tolerance
    ci = f"{1 - 2 * alpha:.0%} CI {pct(lo)}..{pct(hi)}"
    about = f"resolution {res:.1%} at {alpha:.1%} false alarms, {ci}"
    threshold = how.threshold(q * se, tol)
    detectable = math.expm1(threshold + normal_quantile(0.95) * se)

    def verdict(name: str, why: str) -> Decision:
        return Decision(name, delta, lo, hi, res, f"{why} ({about})", detectable)

    early = how.early(Bounds(delta, lo, hi, res, tol))
    if early is not None:
        return verdict(*early)
    if lo > tol:
        return verdict(
            "REGRESSION", f"delta {pct(delta)} > tolerance {tol:.0%} even at the lower bound"
        )
    if hi < -tol:
        return verdict(
            "IMPROVEMENT",
            f"delta {pct(delta)}: faster even at the upper bound, refresh the baseline",
        )
    if hi <= tol:
        return verdict(
            "PASS", f"delta {pct(delta)}: upper bound {pct(hi)} within tolerance {tol:.0%}"
        )
    reason = (
        f"delta {pct(delta)} ({ci}) is neither shown within tolerance {tol:.0%} nor told from "
        f"run-to-run noise (resolution {res:.1%}); {advice()}"
    )
    return Decision("INCONCLUSIVE", delta, lo, hi, res, reason, detectable)


def unpaired_se(sigma: float, k: int, m: float, within: float) -> float:
    """SE of a difference of means of k and m separate runs with per-run sigma.

    With k = 1 this is the predictive spread of one new run around the baseline: its outlier
    risk is in the t tails of the learned df, not in a floor on sigma.
    """
    return math.sqrt(sigma**2 / k + sigma**2 / m + within)


def resolved(se: float, df: float, tol: float, alpha: float, rule: str = "guarded") -> bool:
    """True when a comparison with this se and df never ends INCONCLUSIVE at tolerance tol."""
    return rule_named(rule).resolved(t_quantile(1 - alpha, df) * se, tol)


def smallest_n(
    se_of: Callable[[int], float],
    df_of: Callable[[int], float],
    tol: float,
    alpha: float,
    rule: str = "guarded",
) -> int | None:
    """Smallest count n (up to 1000) whose predicted comparison resolves tol, else None.

    The predicted resolution falls as n grows (smaller SE, more df), so bisect.
    """

    def ok(n: int) -> bool:
        return resolved(se_of(n), df_of(n), tol, alpha, rule)

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


# --- small numeric helpers and input checks ---------------------------------------------


def check_tolerance(tolerance: float) -> float:
    """The tolerance as a fraction in (0, 1), else a one-line ConfigError."""
    try:
        tol = float(tolerance)
    except (TypeError, ValueError):
        raise ConfigError(f"tolerance = {tolerance!r}: expected a fraction such as 0.03") from None
    if not 0 < tol < 1:
        raise ConfigError(f"tolerance = {tolerance!r}: expected a fraction in (0, 1), e.g. 0.03")
    return tol


def check_alpha(alpha: float) -> float:
    """The false-alarm rate as a fraction in (0, 0.5), else a one-line ConfigError."""
    if not 0 < alpha < 0.5:
        raise ConfigError(f"alpha = {alpha!r}: expected a fraction in (0, 0.5), e.g. 0.01")
    return alpha


def mean(xs: Sequence[float]) -> float:
    """Arithmetic mean (exactly rounded sum)."""
    return math.fsum(xs) / len(xs)


def sum_sq(xs: Sequence[float]) -> float:
    """Sum of squared deviations from the mean."""
    m = mean(xs)
    return math.fsum((x - m) ** 2 for x in xs)


def log_spread(logs: Sequence[float]) -> float | None:
    """Sample standard deviation, None with fewer than two values."""
    return math.sqrt(sum_sq(logs) / (len(logs) - 1)) if len(logs) >= 2 else None


def gmean(values: Sequence[float]) -> float:
    """Geometric mean (NaN for no values)."""
    return math.exp(mean([math.log(v) for v in values])) if values else math.nan
