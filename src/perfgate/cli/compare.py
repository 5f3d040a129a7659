"""`perfgate compare`: the verdict on candidate runs vs baseline runs, or vs a stored step time
(perfgate.stats). Exit status 1 on a REGRESSION."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from perfgate.catalog import Baseline, Provenance
from perfgate.cli.common import emit
from perfgate.errors import ConfigError, PerfgateError
from perfgate.report import format as fmt
from perfgate.stats import (
    ALPHA,
    DEFAULT_TOLERANCE,
    Noise,
    compare_runs,
    compare_to_baseline,
    parse_window,
    summarize_run,
)
from perfgate.stats.files import read_run


def add(sub: argparse._SubParsersAction) -> None:
    """Register `perfgate compare`."""
    p = sub.add_parser(
        "compare",
        help="verdict on candidate runs vs baseline runs (or a stored step time)",
        description=(
            "Compare the steady step time of candidate runs with baseline runs. Each FILE is "
            "one run: a training log, or a plain step-time file (one number per line, or CSV "
            "with a step_time_s column); files joined by ',' are one run's restarts, in order. "
            "Exit status: 0 PASS, IMPROVEMENT or INCONCLUSIVE; 1 REGRESSION; 2 bad input."
        ),
    )
    base = p.add_mutually_exclusive_group(required=True)
    base.add_argument("--baseline", nargs="+", metavar="FILE", help="baseline runs")
    base.add_argument(
        "--baseline-step-time", type=float, metavar="S", help="stored baseline step time (s)"
    )
    p.add_argument(
        "--baseline-spread",
        type=float,
        metavar="S",
        help="std of the stored step time across its runs (s)",
    )
    p.add_argument(
        "--baseline-runs",
        type=int,
        default=1,
        metavar="N",
        help="number of runs behind the stored step time (default 1)",
    )
    p.add_argument("--candidate", nargs="+", required=True, metavar="FILE", help="candidate runs")
    p.add_argument(
        "--tolerance",
        type=float,
        default=None,
        help="largest acceptable slowdown, a fraction (default 0.05)",
    )
    p.add_argument(
        "--paired",
        action="store_true",
        help="baseline run i and candidate run i ran back to back on the same nodes",
    )
    p.add_argument(
        "--window",
        default="auto",
        metavar="auto|FIRST:LAST",
        help="warm-up removal: auto (MSER-5) or fixed steps, e.g. 35:44 (llmb)",
    )
    p.add_argument("--alpha", type=float, default=None, help="false-alarm rate (default 0.01)")
    p.add_argument(
        "--noise-cv",
        type=float,
        default=None,
        metavar="CV",
        help="run-to-run noise of one launch (default 0.011, from Megatron-LM CI A/A pairs)",
    )
    p.add_argument(
        "--noise-df", type=float, default=None, metavar="DF", help="its weight (default 2)"
    )
    p.add_argument("--json", action="store_true", help="print the comparison as JSON")
    p.set_defaults(func=run)


def _compare_summaries(files: Sequence[str], window: Any, side: str) -> list[Any]:
    """Read and summarize each run; an invalid run (e.g. NaN grad norm) is not steady."""
    out = []
    for arg in files:
        run = read_run([f for f in arg.split(",") if f])
        try:
            summary = summarize_run(run.step_times, window, step_numbers=run.step_numbers)
        except PerfgateError as e:
            raise PerfgateError(f"{side} {arg}: {e}") from None
        if run.invalid_reason:
            summary = replace(summary, steady=False, reason=f"invalid run: {run.invalid_reason}")
        out.append(summary)
    return out


def run(args: argparse.Namespace) -> int:
    """`perfgate compare`: 0 unless the verdict is REGRESSION (1); bad input raises (2)."""
    window = parse_window(args.window)
    noise = Noise(ALPHA if args.alpha is None else args.alpha, args.noise_cv, args.noise_df)
    tolerance = DEFAULT_TOLERANCE if args.tolerance is None else args.tolerance
    cand = _compare_summaries(args.candidate, window, "candidate")
    if args.baseline is not None:
        if args.baseline_spread is not None or args.baseline_runs != 1:
            raise ConfigError("--baseline-spread/--baseline-runs go with --baseline-step-time")
        base = _compare_summaries(args.baseline, window, "baseline")
        prior = noise.paired() if args.paired else noise.stored()
        prior["alpha"] = noise.alpha
        result = compare_runs(base, cand, tolerance, args.paired, window, **prior)
        files = {"baseline_files": list(args.baseline)}
    else:
        if args.paired:
            raise ConfigError("--paired needs --baseline runs, not --baseline-step-time")
        if args.baseline_runs < 1:
            raise ConfigError(f"--baseline-runs {args.baseline_runs}: expected >= 1")
        stored = Baseline(
            step_time_s=args.baseline_step_time,
            provenance=Provenance(source="command line"),
            step_time_spread_s=args.baseline_spread,
            n_runs=args.baseline_runs,
        )
        result = compare_to_baseline(cand, stored, tolerance, window, **noise.stored())
        files = {}
    data = {**result.to_dict(), **files, "candidate_files": list(args.candidate)}
    if args.json:
        emit(data, True)
    else:
        _print_comparison(result)
    return 1 if result.verdict == "REGRESSION" else 0


def _print_comparison(c: Any) -> None:
    """A short human report: verdict line, estimate, then one line per run."""

    def pct(x: float) -> str:
        return fmt.pct(x, signed=True) or "n/a"

    print(f"{c.verdict}  ({c.mode}, tolerance {fmt.pct(c.tolerance)})")
    print(f"  {c.reason}")
    if c.delta == c.delta:
        print(
            f"  delta {pct(c.delta)}  CI {pct(c.ci_low)}..{pct(c.ci_high)} ({c.ci_level:.0%})"
            f"  resolution {fmt.pct(c.resolution)}  step time "
            f"{fmt.seconds(c.baseline_step_time_s)} -> {fmt.seconds(c.candidate_step_time_s)}"
        )
    if c.pair_deltas:
        print("  pair deltas: " + " ".join(pct(d) for d in c.pair_deltas))
    for side, runs in (("baseline", c.baseline), ("candidate", c.candidate)):
        for i, r in enumerate(runs, 1):
            if not r.steady and r.n_steady == 0:
                print(f"  {side} {i}: NOT steady: {r.reason}")
                continue
            state = "steady" if r.steady else f"NOT steady: {r.reason}"
            print(
                f"  {side} {i}: median {fmt.seconds(r.median_s)}, steps {r.window_start}-"
                f"{r.window_end} ({r.window_method}), CV {fmt.pct(r.cv)}, spikes "
                f"{r.spike_fraction:.0%}, {state}"
            )
