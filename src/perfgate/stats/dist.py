"""Student t and normal quantiles in pure Python (perfgate.stats must not need numpy or scipy).

The t quantile is needed for non-integer degrees of freedom (a prior's weight plus observed
runs), so it is computed from the regularized incomplete beta function rather than a table.
"""

from __future__ import annotations

import math
from functools import lru_cache
from statistics import NormalDist

_EPS = 1e-15
_TINY = 1e-300


def _beta_continued_fraction(a: float, b: float, x: float) -> float:
    """Continued fraction of I_x(a, b), evaluated by the modified Lentz method."""
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > _TINY else _TINY)
    h = d
    for m in range(1, 500):
        # Even step, then odd step of the expansion.
        num = m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m))
        d = 1.0 + num * d
        d = 1.0 / (d if abs(d) > _TINY else _TINY)
        c = 1.0 + num / c
        c = c if abs(c) > _TINY else _TINY
        h *= d * c
        num = -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))
        d = 1.0 + num * d
        d = 1.0 / (d if abs(d) > _TINY else _TINY)
        c = 1.0 + num / c
        c = c if abs(c) > _TINY else _TINY
        step = d * c
        h *= step
        if abs(step - 1.0) < _EPS:
            break
    return h


def betainc(a: float, b: float, x: float) -> float:
    """Regularized incomplete beta function I_x(a, b) for a, b > 0 and 0 <= x <= 1."""
    if not (a > 0 and b > 0) or not 0.0 <= x <= 1.0:
        raise ValueError(f"betainc needs a, b > 0 and 0 <= x <= 1, got a={a}, b={b}, x={x}")
    if x in (0.0, 1.0):
        return x
    log_front = (
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    # The fraction converges fast only below the mean of the beta density; use symmetry above.
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _beta_continued_fraction(a, b, x) / a
    return 1.0 - math.exp(log_front) * _beta_continued_fraction(b, a, 1.0 - x) / b


def t_cdf(t: float, df: float) -> float:
    """P(T <= t) for Student's t with df > 0 degrees of freedom (df = inf: normal)."""
    if math.isinf(df):
        return NormalDist().cdf(t)
    tail = 0.5 * betainc(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t > 0 else tail


def t_sf(t: float, df: float) -> float:
    """P(T > t), exact in the far tail (a p-value of 1e-9 does not round to 0 as 1 - cdf would)."""
    if math.isinf(df):
        return NormalDist().cdf(-t)
    tail = 0.5 * betainc(df / 2.0, 0.5, df / (df + t * t))
    return tail if t > 0 else 1.0 - tail


def _t_pdf(t: float, df: float) -> float:
    log_c = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
    return math.exp(log_c - (df + 1) / 2 * math.log1p(t * t / df))


@lru_cache(maxsize=4096)
def t_quantile(p: float, df: float) -> float:
    """The p-quantile of Student's t with df degrees of freedom (df may be fractional or inf)."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"t_quantile needs 0 < p < 1, got {p}")
    if not df > 0:
        raise ValueError(f"t_quantile needs df > 0, got {df}")
    if math.isinf(df) or df > 1e7:
        return NormalDist().inv_cdf(p)
    if p == 0.5:
        return 0.0
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    lo, hi = 0.0, max(1.0, NormalDist().inv_cdf(p))
    while t_cdf(hi, df) < p:
        lo, hi = hi, hi * 2.0
    t = 0.5 * (lo + hi)
    # Newton steps, falling back to bisection whenever a step leaves the bracket.
    for _ in range(200):
        f = t_cdf(t, df) - p
        if f > 0:
            hi = t
        else:
            lo = t
        step = f / _t_pdf(t, df)
        nxt = t - step
        if not lo < nxt < hi:
            nxt = 0.5 * (lo + hi)
        if abs(nxt - t) <= 1e-12 * max(1.0, abs(t)):
            return nxt
        t = nxt
    return t


def normal_quantile(p: float) -> float:
    """The p-quantile of the standard normal distribution."""
    return NormalDist().inv_cdf(p)


def f_sf(x: float, d1: float, d2: float) -> float:
    """P(F > x) for Fisher's F(d1, d2), d1, d2 > 0 (d2 = inf: chi2_d1 / d1)."""
    if x <= 0:
        return 1.0
    if math.isinf(d2):
        return 1.0 - _gamma_p(d1 / 2, d1 * x / 2)
    return betainc(d2 / 2, d1 / 2, d2 / (d2 + d1 * x))


def _gamma_p(a: float, x: float) -> float:
    """The regularized lower incomplete gamma function P(a, x) (series; x small or moderate),
    as the limit of betainc for the chi-square case."""
    if x <= 0:
        return 0.0
    term = total = 1.0 / a
    k = a
    while abs(term) > 1e-15 * abs(total):
        k += 1
        term *= x / k
        total += term
    return min(1.0, total * math.exp(-x + a * math.log(x) - math.lgamma(a)))
