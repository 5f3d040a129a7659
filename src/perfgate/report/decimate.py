"""A long run in bounded space: a few thousand points that keep every spike visible.

A pretraining run logs millions of steps: more than a plot has pixels, more than results.json
should rewrite after every row. Its steps are cut into consecutive buckets and each bucket
keeps its fastest and its slowest step (a slow step is what a reader looks for; an average
would hide it), in step order. Points that are not a finite step time (NaN, inf) are each a
finding and are kept, up to MAX_UNPLOTTABLE.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

MAX_POINTS = 4000  # the plot: two points per bucket, about 1 per pixel column at 2000
MAX_UNPLOTTABLE = 1000


def decimate(
    numbers: Sequence[int], times: Sequence[float], max_points: int = MAX_POINTS
) -> list[tuple[int, float]]:
    """(step, time) pairs: all of them when there are at most max_points, else the fastest
    and slowest step of each of max_points // 2 buckets (and the non-finite ones), in order."""
    n = len(times)
    if n <= max_points:
        return list(zip(numbers, times, strict=True))
    buckets = max(1, max_points // 2)
    keep: set[int] = set()
    unplottable = 0
    for b in range(buckets):
        lo, hi = b * n // buckets, (b + 1) * n // buckets
        chunk = times[lo:hi]
        if not chunk:
            continue
        if math.isfinite(sum(chunk)):  # C speed; inf or NaN when one is (or on overflow)
            keep.add(lo + chunk.index(min(chunk)))
            keep.add(lo + chunk.index(max(chunk)))
            continue
        finite = [(x, lo + k) for k, x in enumerate(chunk) if math.isfinite(x)]
        if finite:
            keep.add(min(finite)[1])
            keep.add(max(finite)[1])
        for k, x in enumerate(chunk):
            if not math.isfinite(x) and unplottable < MAX_UNPLOTTABLE:
                keep.add(lo + k)
                unplottable += 1
    return [(numbers[i], times[i]) for i in sorted(keep)]
