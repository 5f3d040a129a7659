"""`perfgate calibrate`: fit the site's noise prior to its own history.

Each row with at least two steady runs in its trend gives one group: the sum of squares of
its log step times around their segment means (segments between change points, so a past
step change is not counted as noise) and its degrees of freedom. The prior (sigma, d0) is the
maximum-likelihood scaled F over the groups (perfgate.stats.priors.fit_prior), written as a
small JSON file the suite reads (baselines/noise-prior.json, reviewed in git).
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from pathlib import Path

from perfgate import atomic
from perfgate.history import trend
from perfgate.history.store import HistoryStore
from perfgate.stats.priors import NoisePrior, fit_prior


@dataclass(frozen=True)
class RowNoise:
    """What one row's history says about its noise."""

    row_id: str
    n_runs: int
    change_points: int
    ss: float
    df: int

    @property
    def sigma(self) -> float | None:
        """Its own within-segment sigma of log step time (None without df)."""
        return (self.ss / self.df) ** 0.5 if self.df else None


def row_noise(store: HistoryStore, pattern: str = "*") -> list[RowNoise]:
    """Every matching row's within-segment residuals from the store."""
    out = []
    for rid in store.row_ids():
        if not fnmatch.fnmatch(rid, pattern):
            continue
        xs = trend.logs_of(store.points(rid))
        if len(xs) < 2:
            continue
        ss, df, cps = trend.noise(xs)
        out.append(RowNoise(rid, len(xs), len(cps), ss, df))
    return out


def calibrate(store: HistoryStore, pattern: str = "*") -> tuple[NoisePrior, list[RowNoise]]:
    """The site prior fitted to the store's rows, and the rows behind it."""
    rows = [r for r in row_noise(store, pattern) if r.df > 0]
    prior = fit_prior(
        [(r.ss, r.df) for r in rows],
        name="site",
        source=f"perfgate calibrate on {store.location} ({len(rows)} rows, {pattern})",
    )
    return prior, rows


def write_prior(prior: NoisePrior, path: str | Path) -> None:
    """Write the prior's JSON atomically."""
    atomic.write_json(Path(path), prior.to_dict(), indent=2)
