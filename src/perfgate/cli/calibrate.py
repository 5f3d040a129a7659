"""`perfgate calibrate`: the site's run-to-run noise prior, fitted to its history."""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from perfgate.cli.common import emit, history_options, open_history
from perfgate.history import calibrate
from perfgate.stats.priors import SITE_FILE


def add(sub: argparse._SubParsersAction) -> None:
    """Register `perfgate calibrate`."""
    p = sub.add_parser(
        "calibrate",
        help="fit the site's noise prior to its history",
        description="Fit the run-to-run noise prior (sigma, df) to every row's history "
        "(residuals within the segments between change points) and write it as JSON; the "
        "suite uses <baselines-dir>/noise-prior.json when present.",
    )
    history_options(p)
    p.add_argument("--rows", default="*", metavar="GLOB", help="row ids to use (default all)")
    p.add_argument("--out", metavar="JSON", help="default: <baselines-dir>/noise-prior.json")
    p.add_argument("--json", action="store_true", help="print the prior as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """`perfgate calibrate`: fit the prior, write it, say what it rests on."""
    prior, rows = calibrate.calibrate(open_history(args), args.rows)
    out = args.out or str(Path(args.baselines_dir) / SITE_FILE)
    calibrate.write_prior(prior, out)
    if args.json:
        emit({**prior.to_dict(), "out": out}, True)
        return 0
    lo, hi = prior.sigma_ci or (math.nan, math.nan)
    print(
        f"site prior: sigma {prior.sigma:.3%} per run (95% CI {lo:.3%}..{hi:.3%}), df "
        f"{prior.df:g} (maximum likelihood {prior.df_ml:g}, capped at the data's "
        f"{prior.data_df:g}), from {prior.n_groups} rows"
    )
    for r in rows:
        print(
            f"  {r.row_id}: {r.n_runs} runs, {r.change_points} change point(s), sigma "
            f"{r.sigma:.3%} on {r.df} df"
        )
    print(f"wrote {out}")
    return 0
