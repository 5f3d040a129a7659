"""Change points in a row's history: E-divisive means with a permutation test, in O(n) a scan.

E-divisive (Matteson & James 2014, as MongoDB's signal-processing-algorithms and Apache Otava
(Hunter) use it) splits a series where the energy distance between the parts is largest:

    Q(tau) = m n / (m + n) * (2/(m n) sum d(x_i, y_j) - mean d(x_i, x_k) - mean d(y_j, y_k))

for x = the segment before tau (m points) and y = after it (n points), d(x, y) = |x - y|^a
(a = EXPONENT). The largest Q over every segment of the current split is tested by
permutation: the points of each segment are shuffled within it, and the split is kept when
fewer than a fraction `significance` of the shuffles reach the observed Q. Then the search
goes on in the new segments, until a split is not significant.

The energy distance is computed in its characteristic-function form (Szekely & Rizzo 2013):

    energy(x, y) = c_a * integral |phi_x(t) - phi_y(t)|^2 / |t|^(1 + a) dt

on a fixed quadrature of FREQUENCIES (log-spaced, in units of the segment's robust SD, each
weighted by its share of the integral). Each frequency is a CUSUM of the segment's centred
e^(i t x): every Q of a segment costs O(n) with cumulative sums, where the pairwise distances
cost O(n^2), and a permutation O(n) instead of O(n^2) (1,095 nights with steps took minutes;
see docs/history.md for the answers compared on the nightly scenario: the same within the
simulation's error). A bounded e^(i t x) keeps what the exponent a = 0.5 was for: one odd
night weighs little. When the segments' largest shift of the mean (their points clipped at
HUBER_C robust SDs) is beyond what any order of their points gives but once in OVERWHELMING
(a bound on its exact permutation p-value: Bennett's inequality, which holds for sampling
without replacement, Hoeffding 1963 Thm 4, added up over every split of every segment), the
split is kept without shuffling, its p-value reported as the shuffles' resolution
1 / (permutations + 1): years of history with steps cost no shuffles but for the last step.
A shuffle test stops as soon as its p-value cannot fall below the significance (a null
series costs a few shuffles). The shuffles are seeded from the data, so the same history
always gives the same change points.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import operator
import random
import statistics
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import accumulate
from statistics import NormalDist

SIGNIFICANCE = 0.01  # per split: scripts/evaluate_detector.py --scenario nightly measures it
PERMUTATIONS = 499
# Distances |x - y|^EXPONENT (Matteson & James allow (0, 2)): 0.5 rather than 1 gives one odd
# night less weight; on the nightly scenario with the weak-node day it found 82% of 3% steps
# within 5 nights instead of 74%, and the same 99% on clean launch noise.
EXPONENT = 0.5
# The quadrature of the energy integral: frequencies in units of 1 / (the segment's robust SD),
# one per octave from the scale of a slow drift to that of single-night noise; each weighted
# by u^-EXPONENT (the integrand's 1/|t|^(1+a) over an octave, whose width grows as t).
FREQUENCIES = tuple(0.1 * 2**k for k in range(8))
MIN_SIZE = 3  # points on each side of a change: a single odd night is never a step
# A shuffle whose Q equals the observed one up to rounding reaches it: arrangements with the
# same sets on each side give the same Q, summed in another order (the pairwise statistic
# this replaced counted such ties as not reaching, and so understated small p-values).
TIE = 1 - 1e-9
# A shift so large that chance gives it less than this is not shuffled for (the search's
# false-alarm rate grows by at most this much: 1% becomes 1.001%).
OVERWHELMING = 1e-5


@dataclass(frozen=True)
class ChangePoint:
    """A change at index `index`: points [.., index) before it, [index, ..) after."""

    index: int
    q: float  # the energy statistic of the split
    p_value: float


@dataclass(frozen=True)
class _Segment:
    """One segment as every scan of it sees it: per frequency, the real and imaginary parts
    of its points' centred e^(i t x), each times the square root of the frequency's weight."""

    start: int
    parts: tuple[list[float], ...]
    split_weights: tuple[float, ...]  # L / (m n) for m = MIN_SIZE .. L - MIN_SIZE


@lru_cache(maxsize=4096)
def _split_weights(n: int, min_size: int) -> tuple[float, ...]:
    return tuple(n / (m * (n - m)) for m in range(min_size, n - min_size + 1))


def _segment(xs: Sequence[float], a: int, b: int, min_size: int) -> _Segment | None:
    """The segment xs[a:b] ready to scan, None if too short to split or constant."""
    n = b - a
    if n < 2 * min_size:
        return None
    part = xs[a:b]
    mid = statistics.median(part)
    scale = 1.4826 * statistics.median(abs(x - mid) for x in part) or statistics.pstdev(part)
    if not scale > 1e-12 * max(1.0, abs(mid)):
        return None
    parts = []
    for u in FREQUENCIES:
        t, root = u / scale, math.sqrt(u**-EXPONENT)
        for wave in (math.cos, math.sin):
            f = [root * wave(t * (x - mid)) for x in part]
            mean = math.fsum(f) / n
            parts.append([x - mean for x in f])
    return _Segment(a, tuple(parts), _split_weights(n, min_size))


def _q(parts: Sequence[Sequence[float]], seg: _Segment, min_size: int) -> list[float]:
    """Q of every split of one segment (parts: its points' centred waves, in some order):
    per split, L / (m n) times the sum over the waves of the squared sum of the m before."""
    lo, hi = min_size - 1, len(parts[0]) - min_size
    squares = []
    for f in parts:
        sums = list(accumulate(f))[lo:hi]
        squares.append(map(operator.mul, sums, sums))
    return list(map(operator.mul, map(sum, zip(*squares, strict=True)), seg.split_weights))


def _scan(seg: _Segment, min_size: int) -> tuple[int, float]:
    """(tau, Q) of the largest Q over the splits of one segment."""
    qs = _q(seg.parts, seg, min_size)
    q = max(qs)
    return seg.start + qs.index(q) + min_size, q


def _clipped(part: Sequence[float]) -> list[float]:
    """The points clipped at HUBER_C robust SDs around their median, centred on their mean."""
    mid = statistics.median(part)
    scale = 1.4826 * statistics.median(abs(x - mid) for x in part)
    lo, hi = (mid - HUBER_C * scale, mid + HUBER_C * scale) if scale > 0 else (-math.inf, math.inf)
    v = [min(max(x, lo), hi) for x in part]
    mean = math.fsum(v) / len(v)
    return [x - mean for x in v]


def _bennett(k: int, var: float, spread: float, t: float) -> float:
    """P(|sum of k draws| >= t) for draws of mean 0, variance var, |draw| <= spread."""
    u = spread * t / (k * var)
    return 2 * math.exp(-(k * var / (spread * spread)) * ((1 + u) * math.log1p(u) - u))


def _overwhelming(xs: Sequence[float], bounds: Sequence[int], min_size: int) -> bool:
    """True when the segments' largest mean shift is beyond any order of their points but
    one in OVERWHELMING: the largest z of a mean shift (clipped points, every split of every
    segment) has a permutation p-value bounded by Bennett's tail of each split's sum (0 where
    even the most extreme points cannot reach it), added up over the splits."""
    parts = [_clipped(xs[a:b]) for a, b in itertools.pairwise(bounds) if b - a >= 2 * min_size]
    stats = []
    for v in parts:
        n = len(v)
        var = math.fsum(x * x for x in v) / n
        if var <= 0:
            continue
        sums = list(accumulate(v))
        z = max(
            abs(sums[m - 1]) / math.sqrt(var * m * (n - m) / n)
            for m in range(min_size, n - min_size + 1)
        )
        stats.append((v, var, z))
    if not stats:
        return False
    z = max(zz for _, _, zz in stats)
    total = 0.0
    for v, var, _ in stats:
        n = len(v)
        spread = max(map(abs, v))
        reach = list(accumulate(sorted(map(abs, v), reverse=True)))
        for m in range(min_size, n - min_size + 1):
            t = z * math.sqrt(var * m * (n - m) / n)
            k = min(m, n - m)  # the sum of the m before is minus that of the n - m after
            if t <= reach[k - 1]:
                total += _bennett(k, var, spread, t)
                if total >= OVERWHELMING:
                    return False
    return True


def _seed(xs: Sequence[float]) -> int:
    return int.from_bytes(hashlib.sha256(struct.pack(f"{len(xs)}d", *xs)).digest()[:8], "big")


def _largest(segs: Sequence[_Segment], min_size: int) -> tuple[int, float]:
    """(tau, Q) of the largest Q over every segment's splits ((-1, -1) without one)."""
    return max((_scan(s, min_size) for s in segs), key=lambda f: f[1], default=(-1, -1.0))


def _shuffled_max(segs: Sequence[_Segment], rng: random.Random, min_size: int) -> float:
    """The largest Q over the segments after shuffling each segment's points within it."""
    best = 0.0
    rand = rng.random
    for s in segs:
        keys = [rand() for _ in s.parts[0]]  # a uniform order: the points sorted by keys
        pick = operator.itemgetter(*sorted(range(len(keys)), key=keys.__getitem__))
        best = max(best, max(_q([pick(f) for f in s.parts], s, min_size)))
    return best


def change_points(
    xs: Sequence[float],
    significance: float = SIGNIFICANCE,
    permutations: int = PERMUTATIONS,
    min_size: int = MIN_SIZE,
) -> list[ChangePoint]:
    """Every significant change point of the series, in index order."""
    xs = [float(x) for x in xs]
    rng = random.Random(_seed(xs))
    bounds = [0, len(xs)]
    found: list[ChangePoint] = []
    floor = 1 / (permutations + 1)  # the smallest p-value the shuffles can show
    while True:
        segs = [s for a, b in itertools.pairwise(bounds) if (s := _segment(xs, a, b, min_size))]
        tau, q = _largest(segs, min_size)
        if tau < 0:
            break
        if _overwhelming(xs, bounds, min_size):
            p = floor
        else:
            # The observed Q is reached by a fraction p of within-segment shuffles; stop
            # counting once p can no longer fall below the significance.
            limit = significance * (permutations + 1) - 1
            beaten = done = 0
            while done < permutations and beaten <= limit:
                done += 1
                beaten += _shuffled_max(segs, rng, min_size) >= q * TIE
            p = (beaten + 1) / (done + 1)
        if p >= significance:
            break
        found.append(ChangePoint(tau, q, p))
        bounds = sorted([*bounds, tau])
    return sorted(found, key=lambda c: c.index)


def segments(n: int, points: Sequence[ChangePoint]) -> list[tuple[int, int]]:
    """The [start, end) index ranges between change points of a series of n points."""
    cuts = [0, *(c.index for c in points), n]
    return list(itertools.pairwise(cuts))


# Huber clipping of robust residuals at HUBER_C robust SDs; dividing by E[min(Z^2, c^2)] for a
# standard normal Z keeps the estimate unbiased for clean Gaussian noise (0.9776 at c = 2.5).
HUBER_C = 2.5
_HUBER_MEAN_SQ = (
    (2 * NormalDist().cdf(HUBER_C) - 1)
    - 2 * HUBER_C * NormalDist().pdf(HUBER_C)
    + HUBER_C**2 * 2 * NormalDist().cdf(-HUBER_C)
)


def segment_noise(
    xs: Sequence[float], points: Sequence[ChangePoint], robust: bool = False
) -> tuple[float, int]:
    """(sum of squares, df) of the residuals of xs around its segments' means.

    A past step change is a difference of means, not noise: each segment has its own mean
    and costs one degree of freedom. robust: residuals around each segment's median, clipped
    at HUBER_C robust SDs (1.4826 x their median absolute value), so a launch whose nodes were
    slow counts like a 2.5-sigma one, not as 10 sigma of noise (for when such launches are
    confirmed away instead: perfgate.verdicts.confirm).
    """
    parts = [xs[a:b] for a, b in segments(len(xs), points) if b - a >= 2]
    df = sum(len(p) - 1 for p in parts)
    if robust:
        res = [x - statistics.median(p) for p in parts for x in p]
        scale = 1.4826 * statistics.median(abs(r) for r in res) if res else 0.0
        if scale > 0:
            cap = (HUBER_C * scale) ** 2
            # median residuals: n points of a segment carry n - 1 df, as around its mean
            ss = sum(min(r * r, cap) for r in res) / _HUBER_MEAN_SQ
            return ss * df / len(res), df
    ss = 0.0
    for part in parts:
        m = sum(part) / len(part)
        ss += sum((x - m) ** 2 for x in part)
    return ss, df
