"""What a baseline stored from one run costs, by per-step CV (scripts/evaluate_detector.py
--baseline-runs).

    python scripts/evaluate_detector.py --baseline-runs [--draws 2000] [--launch-cv X] [--json]

Rows come from scripts/detector_generator.py's parametric generator (warm-up, AR(1) per-step
noise with phi 0..0.5, spikes, within-run drift, 50 or 100 steps, launch-to-launch noise
0.3..1.2% per row), with the per-step CV drawn in one bin: 0.5-1%, 1-2% or 2-3%. No slow
nodes and no history: a row's first nights. Each draw stores the row's baseline

  1-run             from one run, with that run's within-run error (rel_se), as
                    `--update-baselines` stores it;
  1-run, no rel_se  the same number without it (a baseline stored before perfgate kept its
                    runs): the baseline's own error is left to the run-to-run prior;
  3-run             from three runs (`--update-baselines --repeat 3`);

then judges one new run (its own launch) with perfgate.verdicts.evaluate at tolerance 5%,
unchanged and slowed by 5% and 8% (every step of the run). The gate assumes the production
prior (0.45% per launch) for these perfgate-measured baselines; --launch-cv 0.0045 gives every
row that launch noise, a cluster the prior describes.
"""

from __future__ import annotations

import math
import multiprocessing
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import replace

import detector_generator as gen
import numpy as np

from perfgate import verdicts
from perfgate.catalog import Baseline, BaselineRun, Provenance
from perfgate.stats import Noise, summarize_run

BINS = ((0.005, 0.01), (0.01, 0.02), (0.02, 0.03))  # per-step CV
MODES = ("1-run", "1-run, no rel_se", "3-run")
SLOWDOWNS = (0.0, 0.05, 0.08)
TOLERANCE = gen.TOLERANCE
SEED = 25
CHUNKS = 4  # per bin, independently seeded (the result does not depend on --jobs)


def _baseline(runs: Sequence[BaselineRun]) -> Baseline:
    gm = math.exp(sum(math.log(r.step_time_s) for r in runs) / len(runs))
    return Baseline(
        gm,
        Provenance("perfgate sim", date="2026-01-01"),
        n_runs=len(runs),
        runs=tuple(runs),
        tolerance=TOLERANCE,
    )


def one_row(
    cv_bin: tuple[float, float], rng: np.random.Generator, launch_cv: float | None = None
) -> dict[tuple[str, float], str]:
    """One row drawn in the CV bin: its three baselines, one new run, every verdict.

    launch_cv: every row's launch-to-launch noise (None: the generator's 0.3..1.2%).
    """
    m = replace(gen.draw_row(0, rng), cv=float(rng.uniform(*cv_bin)))
    if launch_cv is not None:
        m = replace(m, launch_cv=launch_cv)
    stored: list[BaselineRun] = []
    while len(stored) < 3:  # a run that never got steady is not stored (as the gate does)
        s = summarize_run(gen.run_steps(m, rng, gen.launch_effect(m, rng)))
        if s.steady:
            stored.append(BaselineRun(s.median_s, s.rel_se, job_id=f"b{len(stored)}"))
    bases = {
        "1-run": _baseline(stored[:1]),
        "1-run, no rel_se": _baseline([replace(stored[0], rel_se=None)]),
        "3-run": _baseline(stored),
    }
    steps = gen.run_steps(m, rng, gen.launch_effect(m, rng))
    out = {}
    for s in SLOWDOWNS:
        result = gen.result(m, [t * (1 + s) for t in steps], ("n1",), "j1")
        for mode, base in bases.items():
            ev = verdicts.evaluate(
                replace(m.row, baseline=base),
                result,
                source="live",
                tolerance=TOLERANCE,
                noise=Noise(),
            )
            out[mode, s] = ev.verdict
    return out


def _chunk(job: tuple[int, np.random.SeedSequence, int, float | None]) -> dict:
    b, seed, draws, launch_cv = job
    rng = np.random.default_rng(seed)
    counts: dict = defaultdict(int)
    for _ in range(draws):
        for (mode, s), v in one_row(BINS[b], rng, launch_cv).items():
            counts[b, mode, s, v] += 1
    return dict(counts)


def simulate(draws: int, seed: int = SEED, jobs: int = 1, launch_cv: float | None = None) -> dict:
    """draws rows per CV bin; the share of each verdict per bin, baseline and slowdown."""
    seqs = np.random.SeedSequence(seed).spawn(len(BINS) * CHUNKS)
    sizes = [draws // CHUNKS + (i < draws % CHUNKS) for i in range(CHUNKS)]
    work = [
        (b, seqs[b * CHUNKS + i], n, launch_cv)
        for b in range(len(BINS))
        for i, n in enumerate(sizes)
        if n
    ]
    if jobs > 1:
        with multiprocessing.get_context("fork").Pool(jobs) as pool:
            parts = pool.map(_chunk, work)
    else:
        parts = [_chunk(w) for w in work]
    total: dict = defaultdict(int)
    for p in parts:
        for k, v in p.items():
            total[k] += v
    rates = {}
    for b, (lo, hi) in enumerate(BINS):
        for mode in MODES:
            for s in SLOWDOWNS:
                key = f"{cv_label(lo, hi)}|{mode}|{s}"
                rates[key] = {v: n / draws for (bb, mm, ss, v), n in total.items()
                              if (bb, mm, ss) == (b, mode, s)}  # fmt: skip
    return {
        "draws": draws,
        "seed": seed,
        "tolerance": TOLERANCE,
        "launch_cv": launch_cv,
        "rates": rates,
    }


def cv_label(lo: float, hi: float) -> str:
    """A CV bin as the table names it: 0.5-1%."""
    return f"{lo * 100:g}-{hi * 100:g}%"


def _rate(res: dict, cv: str, mode: str, s: float, verdict: str) -> float:
    return res["rates"][f"{cv}|{mode}|{s}"].get(verdict, 0.0)


def report(res: dict) -> str:
    """Markdown: per CV bin and baseline, false alarms, PASS and INCONCLUSIVE at no change,
    detection of 5% and 8% slowdowns."""
    launch = res.get("launch_cv")
    noise = "0.3-1.2% per row" if launch is None else f"{launch:.2%}"
    lines = [
        f"## 1-run baseline by per-step CV: one run vs its stored baseline, no history, "
        f"tolerance {res['tolerance']:.0%}, launch noise {noise}, {res['draws']} rows per bin",
        "",
        "| per-step CV | baseline | false alarms (no change) | PASS (no change) | "
        "INCONCLUSIVE (no change) | detects 5% | detects 8% |",
        "|---|---|---|---|---|---|---|",
    ]
    for lo, hi in BINS:
        cv = cv_label(lo, hi)
        for mode in MODES:
            cells = [
                cv,
                mode,
                f"{_rate(res, cv, mode, 0.0, 'REGRESSION'):.1%}",
                f"{_rate(res, cv, mode, 0.0, 'PASS'):.0%}",
                f"{_rate(res, cv, mode, 0.0, 'INCONCLUSIVE'):.0%}",
                f"{_rate(res, cv, mode, 0.05, 'REGRESSION'):.0%}",
                f"{_rate(res, cv, mode, 0.08, 'REGRESSION'):.0%}",
            ]
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
