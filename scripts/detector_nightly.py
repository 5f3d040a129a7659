"""The nightly scenario of scripts/evaluate_detector.py: change points in a row's history.

    python scripts/evaluate_detector.py --scenario production --nightly [--launch-noise clean]

A row runs once a night for NIGHTS nights against a baseline stored from 3 runs before the
first night; each night is a synthetic run (a real template's warm-up, its steady part block-
bootstrapped) with its own launch effect (separate jobs). In half the series a persistent step
of STEP starts at a random night s in [10, NIGHTS - WITHIN]; each night the gate's own
functions run on the history so far (perfgate.history.trend: change points, noise, the step
the baseline missed). Measured:
  - found: a change point at night s (or s +- 1) reported on some night up to s + WITHIN - 1;
  - false change points per 100 nights: distinct change points reported on any night of the
    series without a step;
  - flagged: the row's verdict is SHIFT or REGRESSION on some night up to s + WITHIN - 1,
    and false SHIFT/REGRESSION nights per 100 nights without a step.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence

import numpy as np
from detector_runs import scaled, synth_run

from perfgate.catalog import Baseline, BaselineRun, Provenance
from perfgate.history import trend
from perfgate.stats import compare_to_baseline, summarize_run

NIGHTS = 30
STEP = 0.03
WITHIN = 5
FIRST_STEP_NIGHT = 10
TOLERANCE = 0.05


def series(t, noise, rng: np.random.Generator, step_at: int | None) -> tuple[Baseline, list]:
    """The baseline (3 runs) and NIGHTS nightly run summaries, a step from night step_at on."""
    runs = [summarize_run(list(synth_run(t, rng))) for _ in range(3 + NIGHTS)]
    eff = np.exp(noise.run_effects(3 + NIGHTS, rng))
    runs = [scaled(r, f) for r, f in zip(runs, eff, strict=True)]
    base = [r for r in runs[:3] if r.steady]
    gm = math.exp(sum(math.log(r.median_s) for r in base) / len(base))
    stored = Baseline(
        gm,
        Provenance("perfgate sim"),
        n_runs=len(base),
        runs=tuple(BaselineRun(r.median_s, r.rel_se) for r in base),
    )
    nights = runs[3:]
    if step_at is not None:
        nights = [scaled(r, 1 + STEP) if i >= step_at else r for i, r in enumerate(nights)]
    return stored, nights


def one_series(t, noise, rng: np.random.Generator, with_step: bool) -> dict[str, float]:
    """Run the gate night by night over one series; what it found and when."""
    s = int(rng.integers(FIRST_STEP_NIGHT, NIGHTS - WITHIN + 1)) if with_step else None
    stored, nights = series(t, noise, rng, s)
    prior = {"prior_sigma": noise.prior.sigma, "prior_df": noise.prior.df}
    xs: list[float] = []
    found = exact = flagged = 0
    seen_cps: set[int] = set()
    flags = 0
    for night, run in enumerate(nights):
        if not run.steady:
            continue
        # as perfgate.verdicts.nightly: change points located with tonight, noise from before
        cps = trend.change_points([*xs, math.log(run.median_s)])
        h_ss, h_df, _ = trend.noise(xs, (), cps)
        comp = compare_to_baseline([run], stored, TOLERANCE, **prior, history=(h_ss, h_df))
        xs.append(math.log(run.median_s))
        step = trend.last_step(
            xs,
            cps,
            baseline_log=math.log(stored.step_time_s),
            n_baseline=stored.n_runs,
            after=0,
            sigma=comp.sigma,
            df=comp.df,
            tolerance=TOLERANCE,
        )
        flag = comp.verdict == "REGRESSION" or (
            step is not None and step.verdict in (trend.SHIFT, "REGRESSION")
        )
        in_time = s is not None and s <= night < s + WITHIN
        if s is None:
            seen_cps.update(c.index for c in cps)
            flags += flag
        elif in_time:
            found |= any(abs(c.index - s) <= 1 for c in cps)
            exact |= any(c.index == s for c in cps)
            flagged |= flag
    return {
        "found": found,
        "exact": exact,
        "flagged": flagged,
        "false_cps": len(seen_cps),
        "false_flags": flags,
        "nights": len(xs),
    }


def simulate(templates: Sequence, noise, rng: np.random.Generator, draws: int) -> dict:
    """draws series with a step and draws without; rates as the module docstring defines."""
    sums: dict[str, float] = defaultdict(float)
    for _ in range(draws):
        for with_step in (True, False):
            t = templates[rng.integers(len(templates))]
            r = one_series(t, noise, rng, with_step)
            key = "step" if with_step else "null"
            for k, v in r.items():
                sums[f"{key}:{k}"] += v
    null_nights = sums["null:nights"]
    return {
        "draws": draws,
        "found_within": sums["step:found"] / draws,
        "found_exact": sums["step:exact"] / draws,
        "flagged_within": sums["step:flagged"] / draws,
        "false_cps_per_100_nights": 100 * sums["null:false_cps"] / null_nights,
        "false_flags_per_100_nights": 100 * sums["null:false_flags"] / null_nights,
    }


def report(res: dict, info: dict) -> str:
    """Markdown lines for the nightly scenario."""
    return "\n".join(
        [
            f"## Nightly change points: scenario {info['scenario']}, launch noise "
            f"{info['noise'].get('launch', '-')}, prior {info['prior']['name']}, "
            f"{res['draws']} series with a {STEP:.0%} step and {res['draws']} without",
            "",
            "| measure | value |",
            "|---|---|",
            f"| {STEP:.0%} step found within {WITHIN} nights (change point at s +- 1) | "
            f"{res['found_within']:.1%} |",
            f"| ... at exactly the first night after the change | {res['found_exact']:.1%} |",
            f"| false change points per 100 nights (no step) | "
            f"{res['false_cps_per_100_nights']:.2f} |",
            f"| row flagged (SHIFT or REGRESSION, tolerance {TOLERANCE:.0%}) within {WITHIN} "
            f"nights of the step | {res['flagged_within']:.1%} |",
            f"| false SHIFT/REGRESSION nights per 100 nights (no step) | "
            f"{res['false_flags_per_100_nights']:.2f} |",
        ]
    )
