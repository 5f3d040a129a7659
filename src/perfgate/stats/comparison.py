"""The result of a comparison: a verdict with the numbers behind it, as plain JSON-ready data."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from perfgate.stats.dist import t_sf
from perfgate.stats.noise import ALPHA
from perfgate.stats.rule import Decision
from perfgate.stats.run import RunSummary

VERDICTS = ("PASS", "REGRESSION", "IMPROVEMENT", "INCONCLUSIVE")


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
    def p_slower(self) -> float:
        """One-sided p-value of "slower than the baseline" (NaN without an estimate)."""
        if not (math.isfinite(self.delta) and math.isfinite(self.se) and self.se > 0):
            return math.nan
        return t_sf(math.log1p(self.delta) / self.se, self.df)

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


def from_decision(dec: Decision, **fields: Any) -> Comparison:
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


def no_verdict(mode: str, tolerance: float, reason: str, **kw: Any) -> Comparison:
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
