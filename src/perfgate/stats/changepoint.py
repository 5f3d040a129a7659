"""Change points in a row's history: E-divisive means with a permutation test.

E-divisive (Matteson & James 2014, as MongoDB's signal-processing-algorithms and Apache Otava
(Hunter) use it) splits a series where the energy distance between the parts is largest:

    Q(tau) = m n / (m + n) * (2/(m n) sum d(x_i, y_j) - mean d(x_i, x_k) - mean d(y_j, y_k))

for x = the segment before tau (m points) and y = after it (n points), with distances
d(x, y) = |x - y|^0.5 (EXPONENT). The largest Q over every segment of the current split is tested by
permutation: the points of each segment are shuffled within it, and the split is kept when
fewer than a fraction `significance` of the shuffles reach the observed Q. Then the search
goes on in the new segments, until a split is not significant.

Pure Python: a 2-D prefix sum of the distance matrix gives every Q of a segment in O(n) after
O(n^2); the permutation test stops as soon as its p-value cannot fall below the significance
(a null series costs a few shuffles). The distances are computed once per series: a shuffle
only reorders them, and its prefix sums add them in the order a loop over the shuffled values
would (bit for bit the same statistic, at a third less time on a 40-night history). The
shuffles are seeded from the data, so the same history always gives the same change points.
"""

from __future__ import annotations

import hashlib
import itertools
import random
import statistics
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import accumulate
from operator import add, itemgetter
from statistics import NormalDist

SIGNIFICANCE = 0.01  # per split: scripts/evaluate_detector.py --scenario nightly measures it
PERMUTATIONS = 499
# Distances |x - y|^EXPONENT (Matteson & James allow (0, 2)): 0.5 rather than 1 gives one odd
# night less weight; on the nightly scenario with the weak-node day it finds 82% of 3% steps
# within 5 nights instead of 74%, and the same 99% on clean launch noise.
EXPONENT = 0.5
MIN_SIZE = 3  # points on each side of a change: a single odd night is never a step


@dataclass(frozen=True)
class ChangePoint:
    """A change at index `index`: points [.., index) before it, [index, ..) after."""

    index: int
    q: float  # the energy statistic of the split
    p_value: float


def _distances(xs: Sequence[float]) -> list[list[float]]:
    """d(x_p, x_q) for every pair: computed once, a shuffle only reorders them."""
    return [[abs(xi - xj) ** EXPONENT for xj in xs] for xi in xs]


def _prefix(
    xs: Sequence[float],
    dist: list[list[float]] | None = None,
    order: Sequence[int] | None = None,
) -> list[list[float]]:
    """S[i][j] = sum of d(y_p, y_q) for p < i, q < j, where y = xs in `order` (a shuffle's
    indices; None: as they are). Sums in the same order as a loop over y would, so a shuffled
    series gives bit for bit the statistic it always gave."""
    dist = _distances(xs) if dist is None else dist
    order = list(range(len(xs))) if order is None else list(order)
    s = [[0.0] * (len(xs) + 1)]
    if len(order) < 2:  # itemgetter of one index returns the item, not a tuple
        s += [[0.0, *accumulate([dist[i][j] for j in order])] for i in order]
        return s
    pick = itemgetter(*order)
    for i in order:
        s.append([0.0, *map(add, s[-1][1:], accumulate(pick(dist[i])))])
    return s


def _block(s: list[list[float]], r0: int, r1: int, c0: int, c1: int) -> float:
    return s[r1][c1] - s[r0][c1] - s[r1][c0] + s[r0][c0]


def best_split(
    xs: Sequence[float], a: int, b: int, min_size: int = MIN_SIZE, s=None
) -> tuple[int, float] | None:
    """(tau, Q) of the largest energy statistic splitting xs[a:b], None if too short."""
    if b - a < 2 * min_size:
        return None
    s = s or _prefix(xs)
    best: tuple[int, float] | None = None
    for tau in range(a + min_size, b - min_size + 1):
        m, n = tau - a, b - tau
        cross = _block(s, a, tau, tau, b) * 2 / (m * n)
        left = _block(s, a, tau, a, tau) / (m * (m - 1))
        right = _block(s, tau, b, tau, b) / (n * (n - 1))
        q = m * n / (m + n) * (cross - left - right)
        if best is None or q > best[1]:
            best = (tau, q)
    return best


def _seed(xs: Sequence[float]) -> int:
    return int.from_bytes(hashlib.sha256(struct.pack(f"{len(xs)}d", *xs)).digest()[:8], "big")


def _largest(
    xs: Sequence[float], bounds: Sequence[int], min_size: int, s=None
) -> tuple[int, float]:
    s = s or _prefix(xs)
    found = [best_split(xs, a, b, min_size, s) for a, b in itertools.pairwise(bounds)]
    return max((f for f in found if f is not None), key=lambda f: f[1], default=(-1, -1.0))


def change_points(
    xs: Sequence[float],
    significance: float = SIGNIFICANCE,
    permutations: int = PERMUTATIONS,
    min_size: int = MIN_SIZE,
) -> list[ChangePoint]:
    """Every significant change point of the series, in index order."""
    xs = [float(x) for x in xs]
    rng = random.Random(_seed(xs))
    dist = _distances(xs)
    bounds = [0, len(xs)]
    found: list[ChangePoint] = []
    while True:
        tau, q = _largest(xs, bounds, min_size, _prefix(xs, dist))
        if tau < 0:
            break
        # The observed Q is beaten by a fraction p of within-segment shuffles; stop counting
        # once p can no longer fall below the significance.
        limit = significance * (permutations + 1) - 1
        beaten = done = 0
        while done < permutations and beaten <= limit:
            done += 1
            order = list(range(len(xs)))  # the shuffle of the values, as indices
            for a, b in itertools.pairwise(bounds):
                part = order[a:b]
                rng.shuffle(part)
                order[a:b] = part
            s = _prefix(xs, dist, order)
            beaten += _largest(xs, bounds, min_size, s)[1] >= q
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
