"""False alarms of a whole night: many rows judged at once, each at its own alpha.

A row's REGRESSION is a one-sided test of "slower than its baseline" at alpha (1%). A night
of m independent rows with no change then holds up to m x alpha false REGRESSIONs (147 rows:
1.47, and all rows green only e^-1.47 = 23% of nights). Two controls of that:

- confirmation on other nodes (perfgate.verdicts.confirm): a REGRESSION must be reproduced
  by a second launch, which takes a false alarm to about alpha x alpha per row;
- Benjamini-Hochberg over the rows' one-sided p-values (`--fdr q`): among the rows called
  slower, the expected fraction of false ones is at most q, and on a night where nothing
  changed the chance of any false REGRESSION is at most q. It costs detection: a lone slowed
  row must reach p <= q / m (147 rows, q = 0.05: 0.00034 instead of 0.01).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from perfgate.errors import ConfigError


def benjamini_hochberg(p_values: Sequence[float], q: float) -> list[bool]:
    """Which hypotheses BH rejects at false discovery rate q (NaN p-values never are)."""
    if not 0 < q < 1:
        raise ConfigError(f"--fdr {q!r}: expected a false discovery rate in (0, 1), e.g. 0.05")
    finite = sorted((p, i) for i, p in enumerate(p_values) if math.isfinite(p))
    m = len(p_values)
    cut = 0
    for k, (p, _) in enumerate(finite, start=1):
        if p <= k * q / m:
            cut = k  # the step-up rule: the largest k whose p(k) <= k q / m
    rejected = [False] * m
    for _, i in finite[:cut]:
        rejected[i] = True
    return rejected


def bh_threshold(p_values: Sequence[float], q: float) -> float:
    """The largest p-value BH rejects at q, or q / m when it rejects none (the bar to reach)."""
    chosen = [p for p, r in zip(p_values, benjamini_hochberg(p_values, q), strict=True) if r]
    return max(chosen) if chosen else q / max(1, len(p_values))


def expected_false_alarms(rows: int, alpha: float) -> tuple[float, float]:
    """(expected false REGRESSIONs, chance of none) for rows independent tests at alpha."""
    return rows * alpha, (1 - alpha) ** rows
