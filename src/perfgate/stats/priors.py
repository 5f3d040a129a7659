"""Noise priors: what a comparison assumes about run-to-run noise its own runs cannot show.

A prior is (sigma, df): the per-run sigma of log(steady step time) between separate launches
of one configuration, and its weight in degrees of freedom. Under the moderated-variance model
(Smyth 2004) a row's true variance is drawn from s0^2 d0 / chi2_d0, so a row's observed
variance s^2 on d df is s0^2 F(d, d0), and its posterior (moderated) variance is

    s_post^2 = (d0 s0^2 + d s^2) / (d0 + d),   with a t quantile on d0 + d df.

fit_prior finds (s0, d0) by maximum likelihood of that scaled F over a site's groups (a row's
within-segment residuals, an A/A pair with 1 df), as limma's fitFDist does by moments. d0 is
never more than the data's own df: a prior fitted to 11 pairs counts as 11 runs' evidence,
however homogeneous those pairs look (the likelihood of a few 1-df groups is flat in d0).

Named priors:
    production   fitted to the 512-GPU B200 day-to-day reruns (together-dgxc-benchmarking,
                 tests/data/reference/third_party_logs/together_b200_512gpu_dayToDay_tflops.csv):
                 11 configs rerun 6 days apart, the 405B NVFP4 weak-fabric-node day (infra)
                 and the Qwen3 BF16 software uplift left out as that data's author attributes
                 them. 0.45% per run on 11 df. The shipped default for baselines perfgate
                 measured; few data: `perfgate calibrate` fits a site's own history.
    megatron-ci  the scaled-t fit of Megatron-LM CI A/A pairs (small models, 8 GPUs): 1.1% per
                 run on 2 df (heavy tails). Also what a published or imported baseline (a number
                 measured on another cluster) is judged with.
    site         `perfgate calibrate`'s JSON file (baselines/noise-prior.json by default).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from perfgate import inputs, limits
from perfgate.errors import ConfigError

MAX_DF = 1000.0  # above this the scaled F is the scaled chi-square for every purpose here
_LR_95 = 1.920729  # half the 95% quantile of chi-square with 1 df (profile-likelihood CI)


@dataclass(frozen=True)
class NoisePrior:
    """A run-to-run noise prior: sigma of log(step time) per launch and its weight in df."""

    name: str
    sigma: float
    df: float
    source: str = ""
    n_groups: int = 0  # groups the fit used (0: not fitted here)
    data_df: float = 0.0  # their total degrees of freedom
    sigma_ci: tuple[float, float] | None = None  # 95% profile-likelihood interval of sigma
    df_ml: float | None = None  # maximum-likelihood d0 before the cap at data_df

    def to_dict(self) -> dict[str, Any]:
        """The JSON form `perfgate calibrate` writes."""
        out = asdict(self)
        out["sigma_ci"] = list(self.sigma_ci) if self.sigma_ci else None
        return {"schema": SCHEMA, **out}


SCHEMA = "perfgate.noise-prior/1"
PRODUCTION = NoisePrior(
    "production",
    0.004493,
    11.0,
    "512-GPU B200 day-to-day reruns (together-dgxc-benchmarking), infra and software "
    "change excluded; maximum-likelihood scaled F, df capped at the data's 11",
)
MEGATRON_CI = NoisePrior(
    "megatron-ci", 0.011, 2.0, "Megatron-LM CI ckpt-resume A/A pairs: scaled t, 1.6% per pair"
)
NAMED = {"production": PRODUCTION, "megatron-ci": MEGATRON_CI}
CHOICES = ("auto", "production", "megatron-ci", "site")
SITE_FILE = "noise-prior.json"


# --- the scaled F likelihood ------------------------------------------------------------------


def _log_f_density(x: float, d1: float, d2: float) -> float:
    """log density at x > 0 of Fisher's F(d1, d2); d2 >= MAX_DF is the chi2_d1 / d1 limit."""
    if d2 >= MAX_DF:
        h = d1 / 2
        return h * math.log(h) + (h - 1) * math.log(x) - h * x - math.lgamma(h)
    return (
        (d1 / 2) * math.log(d1 / d2)
        + (d1 / 2 - 1) * math.log(x)
        - ((d1 + d2) / 2) * math.log1p(d1 * x / d2)
        - (math.lgamma(d1 / 2) + math.lgamma(d2 / 2) - math.lgamma((d1 + d2) / 2))
    )


def log_likelihood(groups: Sequence[tuple[float, float]], sigma: float, d0: float) -> float:
    """log L of (sigma, d0) for groups of (sum of squares, df): s_g^2 ~ sigma^2 F(d_g, d0)."""
    s2 = sigma * sigma
    total = 0.0
    for ss, d in groups:
        x = ss / d / s2
        total += _log_f_density(x, d, d0) - math.log(s2)
    return total


def _best_sigma(groups: Sequence[tuple[float, float]], d0: float) -> tuple[float, float]:
    """(sigma, log L) maximising the likelihood at fixed d0: golden section on log sigma."""
    spreads = [math.sqrt(ss / d) for ss, d in groups]
    lo, hi = math.log(min(spreads) / 10), math.log(max(spreads) * 10)
    g = (math.sqrt(5) - 1) / 2

    def f(u: float) -> float:
        return log_likelihood(groups, math.exp(u), d0)

    a, b = hi - g * (hi - lo), lo + g * (hi - lo)
    fa, fb = f(a), f(b)
    for _ in range(200):
        if fa > fb:  # the maximum is in [lo, b]
            hi, b, fb = b, a, fa
            a = hi - g * (hi - lo)
            fa = f(a)
        else:  # in [a, hi]
            lo, a, fa = a, b, fb
            b = lo + g * (hi - lo)
            fb = f(b)
        if hi - lo < 1e-10:
            break
    u = (lo + hi) / 2
    return math.exp(u), f(u)


def _sigma_interval(
    groups: Sequence[tuple[float, float]], d0: float, sigma: float, best: float
) -> tuple[float, float]:
    """95% profile-likelihood interval of sigma at fixed d0 (log L drops by 1.92)."""

    def edge(direction: float) -> float:
        inside, outside = math.log(sigma), math.log(sigma) + direction
        while best - log_likelihood(groups, math.exp(outside), d0) < _LR_95:
            inside, outside = outside, outside + direction
        for _ in range(100):
            mid = (inside + outside) / 2
            if best - log_likelihood(groups, math.exp(mid), d0) < _LR_95:
                inside = mid
            else:
                outside = mid
        return math.exp((inside + outside) / 2)

    return edge(-0.5), edge(0.5)


def fit_prior(
    groups: Sequence[tuple[float, float]], name: str = "site", source: str = ""
) -> NoisePrior:
    """Maximum-likelihood (sigma, d0) of the scaled F over groups of (sum of squares, df).

    A group is what one row shows about its noise: the sum of squared residuals of log step
    time within its history segments and their df (an A/A pair: diff^2 / 2 on 1 df). d0 is
    searched on a log grid up to MAX_DF and capped at the groups' total df.
    """
    usable = [(float(ss), float(d)) for ss, d in groups if d > 0 and ss > 0]
    if len(usable) < 2:
        raise ConfigError(
            f"noise prior: {len(usable)} usable group(s) of runs; need at least 2 rows or pairs "
            "with two or more steady runs each"
        )
    grid = [
        math.exp(math.log(0.5) + i * (math.log(MAX_DF) - math.log(0.5)) / 200) for i in range(201)
    ]
    fits = [(_best_sigma(usable, d0)[1], d0) for d0 in grid]
    d0_ml = max(fits)[1]
    data_df = math.fsum(d for _, d in usable)
    d0 = min(d0_ml, data_df)
    sigma, ll = _best_sigma(usable, d0)
    return NoisePrior(
        name=name,
        sigma=round(sigma, 6),
        df=round(d0, 2),
        source=source,
        n_groups=len(usable),
        data_df=data_df,
        sigma_ci=tuple(round(x, 6) for x in _sigma_interval(usable, d0, sigma, ll)),  # type: ignore[arg-type]
        df_ml=round(d0_ml, 2),
    )


def pair_groups(log_ratios: Sequence[float]) -> list[tuple[float, float]]:
    """A/A pairs as groups: log(run 2 / run 1)^2 / 2 on 1 df (a pair's variance is 2 sigma^2)."""
    return [(x * x / 2, 1.0) for x in log_ratios]


# --- reading and writing the site's prior -------------------------------------------------------


def read_prior(path: str | Path) -> NoisePrior:
    """A prior written by `perfgate calibrate`; a one-line error names the file and field."""
    path = Path(path)
    data = inputs.read_json(
        path,
        ConfigError,
        max_bytes=limits.MAX_SMALL_FILE_BYTES,
        what="noise prior",
        missing=f"{path}: no noise prior file (write one with perfgate calibrate)",
        unreadable=f"{path}: not a readable noise prior",
    )
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        found = data.get("schema") if isinstance(data, dict) else type(data).__name__
        raise ConfigError(f"{path}: field 'schema' is {found!r}, expected {SCHEMA!r}")
    for key in ("sigma", "df"):
        value = data.get(key)
        if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
            raise ConfigError(f"{path}: field {key!r} is {value!r}, expected a number > 0")
    if not data["sigma"] < 0.5:
        raise ConfigError(f"{path}: field 'sigma' is {data['sigma']!r}, expected a fraction < 0.5")
    ci = data.get("sigma_ci")
    return NoisePrior(
        name="site",
        sigma=float(data["sigma"]),
        df=float(data["df"]),
        source=str(data.get("source") or path),
        n_groups=int(data.get("n_groups") or 0),
        data_df=float(data.get("data_df") or 0),
        sigma_ci=(float(ci[0]), float(ci[1])) if isinstance(ci, list) and len(ci) == 2 else None,
        df_ml=data.get("df_ml"),
    )


def named_prior(name: str, site_file: str | Path | None = None) -> NoisePrior:
    """production, megatron-ci, or site (the calibrate file); a clear error otherwise."""
    if name in NAMED:
        return NAMED[name]
    if name == "site":
        if site_file is None:
            raise ConfigError("--noise-prior site: no site prior file given")
        return read_prior(site_file)
    raise ConfigError(f"--noise-prior {name!r}: expected one of {', '.join(CHOICES)}")
