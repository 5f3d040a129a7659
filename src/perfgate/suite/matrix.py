"""The whole night's false alarms (--fdr): Benjamini-Hochberg across the session's rows.

With --fdr Q every row is judged before any test asserts (the jobs run at once anyway), and
a REGRESSION stands only when its row's one-sided p-value of "slower than its baseline"
passes the Benjamini-Hochberg bar over every row judged against a baseline this session; a
row that was slower but does not pass becomes INCONCLUSIVE, naming the bar. On a night where
nothing changed, the chance of any false REGRESSION is then at most Q (perfgate.stats.matrix).
A row confirmed on other nodes is tested on the weaker of its runs (the largest p-value): it
is a REGRESSION only if every run of it is.
"""

from __future__ import annotations

import math
from dataclasses import replace

from perfgate import verdicts
from perfgate.stats.matrix import benjamini_hochberg, bh_threshold
from perfgate.verdicts import Evaluation


def p_value(ev: Evaluation) -> float:
    """The row's one-sided p-value of "slower" (NaN: no comparison, e.g. NO_BASELINE)."""
    comps = [e.comparison for e in (ev, *ev.confirmed_by) if e.comparison is not None]
    ps = [c.p_slower for c in comps if math.isfinite(c.p_slower)]
    return max(ps) if ps else math.nan


def apply_fdr(judged: dict[str, Evaluation | str], q: float) -> dict[str, Evaluation | str]:
    """The night's verdicts with the BH bar at q applied to its REGRESSIONs (skips kept)."""
    evs = {k: v for k, v in judged.items() if isinstance(v, Evaluation)}
    tested = {k: p for k, v in evs.items() if math.isfinite(p := p_value(v))}
    if not tested:
        return judged
    keys = list(tested)
    passes = dict(zip(keys, benjamini_hochberg([tested[k] for k in keys], q), strict=True))
    bar = bh_threshold([tested[k] for k in keys], q)
    out = dict(judged)
    for key, ev in evs.items():
        if ev.verdict != verdicts.REGRESSION or passes.get(key, False):
            continue
        p = tested.get(key, math.nan)
        out[key] = replace(
            ev,
            verdict=verdicts.INCONCLUSIVE,
            message=(
                f"{ev.row.id}: INCONCLUSIVE: slower (one-sided p {p:.2g}) but not past the "
                f"night's false-discovery bar (--fdr {q:g}: p <= {bar:.2g} over {len(keys)} "
                f"rows); as one row: {ev.message.split(': ', 1)[-1]}"
            ),
        )
    return out
