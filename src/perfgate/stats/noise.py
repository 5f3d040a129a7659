"""What a comparison assumes about noise its runs cannot show, and what a baseline shows.

The false-alarm rate, the run-to-run and pair priors (their sigma and weight in degrees of
freedom), the per-row choice of a named prior (Noise.prior_for; perfgate.stats.priors), and
the sum of squares a stored baseline's own runs contribute. How they enter a comparison:
perfgate.stats.compare.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from perfgate.catalog import Baseline
from perfgate.errors import ConfigError
from perfgate.stats.dist import f_sf
from perfgate.stats.priors import MEGATRON_CI, PRODUCTION, NoisePrior
from perfgate.stats.rule import sum_sq

ALPHA = 0.01  # one-sided false-alarm rate of a REGRESSION verdict at no change
DEFAULT_TOLERANCE = 0.05  # when neither the caller nor the stored baseline gives one
# Per-run sigma of log(steady step time) between separate launches of one config.
DEFAULT_RUN_TO_RUN_CV = 0.011
# Sigma of log(candidate / baseline) for a pair launched back to back on the same nodes.
DEFAULT_PAIR_CV = 0.016
PRIOR_DF = 2.0  # weight of those priors in degrees of freedom; also their tail weight
MAX_DF = 1e6  # a prior known from a million runs: as good as exact


@dataclass(frozen=True)
class Noise:
    """What a comparison assumes about noise its runs cannot show: the false-alarm rate and
    the run-to-run prior (perfgate.stats.priors).

    run_cv/df (--noise-cv/--noise-df) win over everything. Else prior (--noise-prior) when
    named; else ("auto") the site's calibrated prior, or the production prior, for a baseline
    perfgate measured, and the megatron-ci prior for a published or imported number (measured
    on another cluster: its offset is unknown, its tails heavy).
    """

    alpha: float = ALPHA
    run_cv: float | None = None  # sigma of log(step time) of one launch; None: the prior's
    df: float | None = None  # the prior's weight in degrees of freedom; None: PRIOR_DF
    prior: NoisePrior | None = None  # a named prior for every row; None: auto
    site: NoisePrior | None = None  # the site's calibrated prior (perfgate calibrate), if any
    # The session confirms a one-launch REGRESSION on other nodes (--confirm), which tells a
    # slow-node launch from a slower row: the history's noise then clips slow launches
    # (perfgate.stats.changepoint), and a row whose history has not changed since its
    # baseline is judged against the baseline's and the history's runs together (a level
    # known from 13 runs, not 3, so a baseline stored low by chance does not make every
    # rerun of the row look slow). Without confirmation, slow launches are noise.
    confirming: bool = False

    def __post_init__(self) -> None:
        if not 0 < self.alpha < 0.5:
            raise ConfigError(f"alpha {self.alpha}: must be a fraction in (0, 0.5), e.g. 0.01")
        if self.run_cv is not None and not 0 < self.run_cv < 0.5:
            raise ConfigError(f"noise CV {self.run_cv}: must be a fraction in (0, 0.5)")
        if self.df is not None and self.run_cv is None:
            raise ConfigError(
                f"--noise-df {self.df:g} without --noise-cv: the df weighs the CV it comes "
                "with; give both, or neither (the prior's own df is used)"
            )
        if self.df is not None and not 1 <= self.df <= MAX_DF:
            raise ConfigError(
                f"--noise-df {self.df:g}: must be 1..{MAX_DF:g} degrees of freedom (below 1 "
                "a t distribution has no mean, and the intervals no meaning)"
            )

    def prior_for(self, baseline: Baseline | None) -> NoisePrior:
        """The run-to-run prior a comparison with this baseline uses."""
        if self.run_cv is not None:
            return NoisePrior("--noise-cv", self.run_cv, self.df or PRIOR_DF)
        if self.prior is not None:
            return self.prior
        if baseline is not None and baseline.measured_here:
            return self.site or PRODUCTION
        return MEGATRON_CI

    def stored(self, baseline: Baseline | None = None) -> dict[str, Any]:
        """Keyword arguments of compare_to_baseline and unpaired compare_runs."""
        if baseline is None and self.run_cv is None and self.prior is None:
            return {"alpha": self.alpha, "prior_sigma": None, "prior_df": self.df}
        p = self.prior_for(baseline)
        return {"alpha": self.alpha, "prior_sigma": p.sigma, "prior_df": p.df}

    def paired(self) -> dict[str, Any]:
        """The pair prior (a pair's log ratio has two launches' noise) for paired compare_runs.

        A/B pairs keep the A/A-pair fit (DEFAULT_PAIR_CV) unless --noise-cv says otherwise:
        the named priors describe runs in separate jobs.
        """
        sigma = None if self.run_cv is None else self.run_cv * math.sqrt(2)
        return {"prior_sigma": sigma, "prior_df": self.df}


DEFAULT_NOISE = Noise()


def check_prior(sigma: float | None, df: float | None, default: float) -> tuple[float, float]:
    """(sigma, df) of a prior: the defaults where None, checked."""
    sigma = default if sigma is None else sigma
    df = PRIOR_DF if df is None else df
    if not (math.isfinite(sigma) and sigma > 0):
        raise ConfigError(f"prior_sigma = {sigma!r}: expected a fraction > 0, e.g. 0.01")
    if not df > 0:
        raise ConfigError(f"prior_df = {df!r}: expected degrees of freedom > 0")
    return sigma, df


def baseline_noise(baseline: Baseline) -> tuple[float, float]:
    """(sum of squares, df) of log step time that a baseline's own runs show about noise.

    Its stored runs when it has them, else its spread over n_runs; (0, 0) for one run.
    """
    runs = [r.step_time_s for r in baseline.runs]
    if len(runs) >= 2:
        return sum_sq([math.log(x) for x in runs]), len(runs) - 1
    n, spread, ref = baseline.n_runs, baseline.step_time_spread_s, baseline.step_time_s
    if n >= 2 and spread is not None and math.isfinite(spread) and spread >= 0:
        return (n - 1) * (spread / ref) ** 2, n - 1
    return 0.0, 0


def runs_disagree(
    times: list[float], prior: NoisePrior, alpha: float
) -> tuple[float, float] | None:
    """(spread, p) when the runs of a new baseline disagree beyond what the noise rule allows,
    else None: their log step times' sample variance is above the upper alpha tail of the
    prior's scaled F (s^2 ~ sigma^2 F(n - 1, d0), the model the priors are fitted with), with
    the prior's sigma and tails no lighter than PRIOR_DF's. The runs teach the row its own
    noise (stats.compare pools them), so a spread wider than the prior's is no reason to
    refuse; one that even heavy-tailed noise of that sigma would not give is (runs of 2.0, 2.0
    and 4.0 s: p 1e-4 under the production prior; 2.6, 2.64 and 2.7 s: p 0.05, stored).
    spread is the SD of log step time (40% for runs of 2.0, 2.0 and 4.0 s)."""
    logs = [math.log(t) for t in times if t > 0 and math.isfinite(t)]
    if len(logs) < 2 or len(logs) < len(times):
        return None
    d = len(logs) - 1
    var = sum_sq(logs) / d
    p = f_sf(var / (prior.sigma * prior.sigma), d, min(prior.df, PRIOR_DF))
    return (math.sqrt(var), p) if p < alpha else None


def baseline_within(baseline: Baseline) -> float:
    """Squared relative SE of the baseline's step time from its runs' within-run errors.

    The baseline is the geometric mean of its runs' medians, each known to its own rel_se;
    0 when the runs do not say (a published number, a baseline stored before perfgate kept
    them). Runs without an rel_se count as exact, which understates, never overstates.
    """
    runs = baseline.runs
    if not runs:
        return 0.0
    return math.fsum((r.rel_se or 0.0) ** 2 for r in runs) / len(runs) ** 2
