#!/usr/bin/env python3
"""Replay real step-time series with injected slowdowns: false alarms and detection per mode.

    python scripts/evaluate_detector.py [--draws 2000] [--split evaluation] [--quick] [--json]

Modes, each judged by perfgate.stats exactly as the gate judges a row:
  stored-1   one run vs a baseline stored from one earlier run (compare_to_baseline), its
             median with its within-run error as --update-baselines stores it
  stored-3   one run vs a baseline stored from 3 earlier runs (each run's median and error)
  history-3+10  one run vs a baseline stored with its 3 runs, plus the row's 10 earlier runs
             (separate jobs) as its history: the noise the gate learns from them
             (perfgate.history.trend, perfgate.verdicts.nightly)
  runs-3v3   3 baseline runs vs 3 candidate runs, separate jobs (compare_runs)
  ab-N       N A/B pairs on the same nodes, N = 3, 5, 8 (perfgate.verdicts.pairs_rule.judge: the
             paired comparison of the gate with --pairs N --max-pairs N)
  ab-3..M    the gate's adaptive loop (perfgate.verdicts.pairs_rule, the job's PairsRule): 3 pairs,
             one more while INCONCLUSIVE up to M = 5 or 8 (ab-3..8 is the gate's default,
             --pairs 3 --max-pairs 8), per-look alpha from sequential_alpha;
             ab-3..5-naive uses the full alpha at every look (the inflation looks cause)
  llmb       llmb's rule: mean of iterations 35-44 of one run vs a stored number from one
             run, REGRESSION when more than the tolerance slower (llmb uses 5%)

Modelling assumptions (also printed with the results):
  1. Within-run noise: each synthetic run is a real series (a "template") whose warm-up is kept
     verbatim and whose steady part is resampled by a circular block bootstrap (blocks of
     BLOCK steps, so autocorrelation, spikes and GC steps stay as they were). The warm-up
     boundary of a template is found by a rule independent of perfgate's MSER-5 (last step in
     the first half above 1.2x the second-half median, at least 5 steps).
  2. Between-launch noise: every run is its own launch and gets a launch effect. Its size and
     shape come from real A/A pairs: Megatron-LM CI ckpt-resume tests run the same training
     twice in one job (tests/functional_tests/shell_test_utils/run_ci_test.sh runs
     _run_training.sh a second time for TEST_TYPE ckpt-resume): same code, same allocation,
     two launches. Their log ratios (resume_pairs_run1_vs_run2.csv, reshard tests left out:
     the second run may use another layout) are resampled with their measured sign and
     applied in the gate's launch order (--order alternating, the default: pairs AB BA AB ..,
     so the candidate is second in pairs 1, 3, 5 and first in 2, 4, 6 and the order effect,
     run 2 ~0.4% slower, flips sign from pair to pair). --order abab keeps the candidate
     always second (order effect in every pair); --order random draws each pair's order.
  3. An A/B gate is one allocation on one day: all its pairs come from one CI batch (one
     commit on one platform, i.e. one day's machines), so a noisy day stays noisy for every
     pair. Runs in separate jobs (stored baselines, K runs) draw their batches independently
     and get r / sqrt(2) each. The data cannot separate a node/day (allocation) effect from
     the launch effect; --alloc-cv adds one (default 0), which A/B pairs cancel by design.
  4. The launch noise already contains within-run noise of a ~46-step median; adding the
     bootstrap on top counts it twice (conservative, ~0.3% against ~2%).
  5. The slowdown multiplies every step of every candidate run.
  6. Calibration and evaluation use disjoint data: the A/A pairs and the templates are split
     by test directory (a hash) into two halves, every day and platform present in both, and
     different seeds. perfgate's constants were chosen with --split calibration; report
     --split evaluation.
  7. Scenario "production" (--scenario production): 50-step NeMo/Megatron-Bridge series on
     8 B200 as templates, and the 512-GPU B200 day-to-day reruns (together-dgxc-benchmarking)
      as launch noise; the 405B NVFP4 -7.2% (weak fabric nodes) counts for separate jobs only
     (--launch-noise with-infra, the default; clean leaves it out), the Qwen3 BF16 +10% (a
     software change) not at all. The production prior is fitted to the same 11 clean pairs:
     the scenario shows the gate with a prior that describes its cluster (what perfgate
     calibrate gives a site), not an out-of-sample test of that prior.
  8. --nightly (scripts/detector_nightly.py): 30 nights of one run each against a 3-run
     baseline, a persistent 3% step at a random night in half the series; change points and
     the row's verdict each night, as the gate computes them.
  9. --matrix (scripts/detector_matrix.py): a whole night of --rows rows from a parametric
     generator of its own (warm-up, AR(1) per-step noise, spikes, drift within a run and
     across nights, launch noise, slow nodes: --slow-nodes), each row judged by
     perfgate.verdicts.evaluate with its history and confirmed on other nodes (--confirm);
     false REGRESSIONs per row and per night, slowed rows caught, 3% steps found.
 10. --baseline-runs (scripts/detector_baselines.py): rows of --matrix's generator with
     per-step CV 0.5-1%, 1-2% and 2-3%, one run vs a baseline stored from 1 run (with and
     without its within-run error) and from 3 runs, no history: false alarms, PASS and
     INCONCLUSIVE at no change, detection of 5% and 8% at tolerance 5%.
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import os
import sys
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

import detector_baselines
import detector_generator
import detector_matrix
import detector_nightly
import numpy as np
from detector_data import (
    REFERENCE,
    load_ci_templates,
    load_day_to_day,
    load_production_templates,
    load_resume_pairs,
    measure_noise,
    split_templates,
)
from detector_runs import Noise, Template, scaled, synth_run, warmup_end

import perfgate.stats as pstats
from perfgate.catalog import Baseline, BaselineRun, Provenance
from perfgate.history import trend
from perfgate.launch.types import LaunchOptions
from perfgate.stats import (
    ALPHA,
    compare_runs,
    compare_to_baseline,
    summarize_run,
)
from perfgate.stats import compare as pcompare
from perfgate.stats.priors import NAMED
from perfgate.verdicts.pairs_rule import judge, wants_another_pair

SLOWDOWNS = (0.0, 0.01, 0.02, 0.03, 0.05, 0.08, 0.10)
TOLERANCES = (0.02, 0.03, 0.05)
LLMB_WINDOW = (35, 44)
LLMB_TOLERANCE = 0.05
FIXED_PAIRS = (3, 5, 8)
FIRST_PAIRS, MAX_PAIRS = LaunchOptions.pairs, LaunchOptions.max_pairs  # the gate's defaults
# (mode, most pairs, per-look alpha from sequential_alpha?) of the adaptive A/B loop
ADAPTIVE = (("ab-3..5", 5, True), ("ab-3..8", 8, True), ("ab-3..5-naive", 5, False))
ORDERS = ("alternating", "abab", "random")
CHUNKS = 8  # draws are split into this many independently seeded chunks (any --jobs)
SEEDS = {"calibration": 20240611, "evaluation": 7}
HISTORY_RUNS = 10  # mode history-3+10: the row's earlier nightly runs (separate jobs)


# --- one simulated gate per mode ----------------------------------------------------------

Verdicts = dict[tuple[str, float, float], str]  # (mode, tolerance, slowdown) -> verdict


def _llmb_mean(x: np.ndarray) -> float:
    a, b = LLMB_WINDOW
    return float(np.mean(x[a : b + 1]))


def one_gate(
    t: Template,
    noise: Noise,
    rng: np.random.Generator,
    tolerances: Sequence[float],
    slowdowns: Sequence[float],
) -> Verdicts:
    """Draw every run one row's gate needs, then judge it in every mode and setting."""
    out: Verdicts = {}
    # Separate jobs: 3 baseline + 3 candidate runs, each its own launch (and allocation).
    raw = [synth_run(t, rng) for _ in range(6)]
    eff = np.exp(noise.run_effects(6, rng))
    summ = [summarize_run(list(x)) for x in raw]
    base = [scaled(s, f) for s, f in zip(summ[:3], eff[:3], strict=True)]
    cand0 = [scaled(s, f) for s, f in zip(summ[3:], eff[3:], strict=True)]
    # Baselines as --update-baselines stores them: each run's median with its within-run
    # error (rel_se), which the comparison adds to its SE (stats.noise.baseline_within).
    first = (BaselineRun(base[0].median_s, base[0].rel_se),) if base[0].steady else ()
    stored1 = Baseline(base[0].median_s, Provenance("sim"), n_runs=1, runs=first)
    logs = [math.log(b.median_s) for b in base if b.steady]
    stored3 = storedh = None
    if len(logs) >= 2:
        gm = math.exp(float(np.mean(logs)))
        spread = gm * float(np.std(logs, ddof=1))
        runs = tuple(BaselineRun(b.median_s, b.rel_se) for b in base if b.steady)
        stored3 = Baseline(gm, Provenance("sim"), spread, len(logs), runs=runs)
        storedh = Baseline(gm, Provenance("perfgate sim"), spread, len(runs), runs=runs)
    # The row's history: HISTORY_RUNS earlier runs, each its own job; its noise as the gate
    # learns it (residuals within the segments between change points).
    hist = [summarize_run(list(synth_run(t, rng))) for _ in range(HISTORY_RUNS)]
    heff = np.exp(noise.run_effects(HISTORY_RUNS, rng))
    hx = [math.log(h.median_s * f) for h, f in zip(hist, heff, strict=True) if h.steady]
    h_ss, h_df, _ = trend.noise(hx)
    prior = {"prior_sigma": noise.prior.sigma, "prior_df": noise.prior.df}
    llmb_base = _llmb_mean(raw[0]) * eff[0]
    llmb_cand = _llmb_mean(raw[3]) * eff[3]
    # One allocation: up to max_pairs pairs from one batch (day).
    batch = noise.gate_batch(rng)
    n_pairs = max(*FIXED_PAIRS, *(top for _, top, _ in ADAPTIVE))
    pe = np.exp(noise.pair_effects(batch, n_pairs, rng))
    a_runs = [summarize_run(list(synth_run(t, rng))) for _ in range(n_pairs)]
    b_runs = [scaled(summarize_run(list(synth_run(t, rng))), f) for f in pe]
    for s in slowdowns:
        f = 1 + s
        # llmb's own rule, always at its 5%: mean of iterations 35-44 vs a stored number.
        out["llmb", LLMB_TOLERANCE, s] = (
            "REGRESSION" if llmb_cand * f / llmb_base - 1 > LLMB_TOLERANCE else "PASS"
        )
        cand = [scaled(c, f) for c in cand0]
        bs = [scaled(b, f) for b in b_runs]
        for tol in tolerances:
            out["stored-1", tol, s] = compare_to_baseline(cand[:1], stored1, tol, **prior).verdict
            out["stored-3", tol, s] = out["history-3+10", tol, s] = "INCONCLUSIVE"
            if stored3 is not None and storedh is not None:
                c = compare_to_baseline(cand[:1], stored3, tol, **prior)
                out["stored-3", tol, s] = c.verdict
                c = compare_to_baseline(cand[:1], storedh, tol, **prior, history=(h_ss, h_df))
                out["history-3+10", tol, s] = c.verdict
            out["runs-3v3", tol, s] = compare_runs(base, cand, tol, **prior).verdict
            for k in FIXED_PAIRS:
                c = judge(a_runs[:k], bs[:k], tol, first_pairs=k, max_pairs=k)
                out[f"ab-{k}", tol, s] = c.verdict
            for name, top, seq in ADAPTIVE:
                n = FIRST_PAIRS
                while True:
                    if seq:  # exactly the gate: perfgate.verdicts.pairs_rule's rule
                        c = judge(a_runs[:n], bs[:n], tol, first_pairs=FIRST_PAIRS, max_pairs=top)
                    else:
                        c = compare_runs(a_runs[:n], bs[:n], tol, paired=True, alpha=ALPHA)
                    if not wants_another_pair(c, top):
                        break
                    n += 1
                out[name, tol, s] = c.verdict
                out[name + ":pairs", tol, s] = str(n)
    return out


# --- the experiment -----------------------------------------------------------------------

MODES = (
    "stored-1",
    "stored-3",
    "history-3+10",
    "runs-3v3",
    "ab-3",
    "ab-5",
    "ab-8",
    "ab-3..5",
    "ab-3..8",
    "ab-3..5-naive",
    "llmb",
)


SCENARIO_PRIOR = {"production": "production", "ci": "megatron-ci"}
LAUNCH_NOISE = ("with-infra", "clean")


def build(
    ref: Path,
    scenario: str,
    split: str,
    alloc_cv: float,
    order: str = "alternating",
    prior: str | None = None,
    launch: str = "with-infra",
) -> tuple[list[Template], Noise, dict]:
    """Templates and noise for a scenario and data split, plus what was measured/excluded.

    prior: the noise prior the stored and history modes use (None: the scenario's own:
    production for production, megatron-ci for ci). launch (production only): with-infra
    keeps the 405B NVFP4 weak-node day among the separate jobs' launch effects; clean drops it.
    """
    info: dict = {"scenario": scenario, "split": split}
    chosen = NAMED[prior or SCENARIO_PRIOR[scenario]]
    info["prior"] = {"name": chosen.name, "sigma": chosen.sigma, "df": chosen.df}
    if scenario == "production":
        tmpl = load_production_templates(ref)
        every, clean = load_day_to_day(ref)
        runs = every if launch == "with-infra" else clean
        noise = Noise([np.array(clean)], [np.array(runs)], alloc_cv, order, chosen)
        info["noise"] = {"pair_ratios": len(clean), "run_ratios": len(runs), "launch": launch}
    else:
        batches = load_resume_pairs(ref, split)
        tmpl = split_templates(load_ci_templates(ref), split)
        arrays = [np.array(v) for v in batches.values()]
        noise = Noise(arrays, arrays, alloc_cv, order, chosen)
        info["noise"] = {"batches": len(arrays), "pairs": int(sum(len(a) for a in arrays))}
    templates, unsteady = [], 0
    for name, x in tmpl.items():
        if not summarize_run(list(x)).steady:
            unsteady += 1  # perfgate reports these runs as not steady; no verdict to measure
            continue
        templates.append(Template(name, x, warmup_end(x)))
    info["templates"] = len(templates)
    info["templates_not_steady"] = unsteady
    return templates, noise, info


_CONTEXT: tuple = ()  # (templates, noise, tolerances, slowdowns), inherited by forked workers


def _chunk(job: tuple[np.random.SeedSequence, int]) -> tuple[dict, dict]:
    """Simulate one seeded chunk of gates; returns verdict counts and adaptive pair counts."""
    seed, draws = job
    templates, noise, tolerances, slowdowns = _CONTEXT
    rng = np.random.default_rng(seed)
    counts: dict = defaultdict(lambda: defaultdict(int))
    pairs: dict = defaultdict(list)
    for _ in range(draws):
        t = templates[rng.integers(len(templates))]
        for (mode, tol, s), v in one_gate(t, noise, rng, tolerances, slowdowns).items():
            if mode.endswith(":pairs"):
                pairs[mode.removesuffix(":pairs"), tol, s].append(int(v))
            else:
                counts[mode, tol, s][v] += 1
    return {k: dict(v) for k, v in counts.items()}, dict(pairs)


def run(
    ref: Path,
    scenario: str,
    split: str,
    draws: int,
    seed: int | None,
    alloc_cv: float,
    tolerances: Sequence[float] = TOLERANCES,
    slowdowns: Sequence[float] = SLOWDOWNS,
    jobs: int = 1,
    order: str = "alternating",
    prior: str | None = None,
    launch: str = "with-infra",
) -> dict:
    """Simulate `draws` gates (each on a random template) and tabulate verdict rates.

    The draws are cut into CHUNKS seeded chunks, so the result depends on the seed only,
    not on the number of worker processes.
    """
    global _CONTEXT
    templates, noise, info = build(ref, scenario, split, alloc_cv, order, prior, launch)
    _CONTEXT = (templates, noise, tuple(tolerances), tuple(slowdowns))
    seeds = np.random.SeedSequence(SEEDS[split] if seed is None else seed).spawn(CHUNKS)
    sizes = [draws // CHUNKS + (i < draws % CHUNKS) for i in range(CHUNKS)]
    work = [(sq, n) for sq, n in zip(seeds, sizes, strict=True) if n]
    if jobs > 1 and len(work) > 1:
        with multiprocessing.get_context("fork").Pool(min(jobs, len(work))) as pool:
            parts = pool.map(_chunk, work)
    else:
        parts = [_chunk(w) for w in work]
    counts: dict = defaultdict(lambda: defaultdict(int))
    pairs: dict = defaultdict(list)
    for c, p in parts:
        for key, verdicts in c.items():
            for v, k in verdicts.items():
                counts[key][v] += k
        for key, used in p.items():
            pairs[key].extend(used)
    rates = {
        f"{m}|{tol}|{s}": {v: c / draws for v, c in counts[m, tol, s].items()}
        for (m, tol, s) in counts
    }
    mean_pairs = {f"{m}|{tol}|{s}": float(np.mean(v)) for (m, tol, s), v in pairs.items()}
    return {
        **info,
        "draws": draws,
        "rates": rates,
        "mean_pairs_adaptive": mean_pairs,
        "tolerances": list(tolerances),
        "slowdowns": list(slowdowns),
    }


# --- output -------------------------------------------------------------------------------


def _rate(res: dict, mode: str, tol: float, s: float, verdict: str) -> float:
    return res["rates"].get(f"{mode}|{tol}|{s}", {}).get(verdict, 0.0)


def markdown_table(res: dict) -> str:
    """Rows mode x tolerance; false alarms at 0%, detection per slowdown, INCONCLUSIVE rates."""
    slow = [s for s in res["slowdowns"] if s > 0]
    head = ["mode", "tolerance", "false alarm (0%)"] + [f"detect {s:.0%}" for s in slow]
    head += ["inconclusive 0%", "inconclusive 3%"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for mode in MODES:
        for tol in [LLMB_TOLERANCE] if mode == "llmb" else res["tolerances"]:
            cells = [mode, f"{tol:.0%}", f"{_rate(res, mode, tol, 0.0, 'REGRESSION'):.1%}"]
            cells += [f"{_rate(res, mode, tol, s, 'REGRESSION'):.0%}" for s in slow]
            for s in (0.0, 0.03):
                cells.append(
                    f"{_rate(res, mode, tol, s, 'INCONCLUSIVE'):.0%}" if mode != "llmb" else "-"
                )
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


ASSUMPTIONS = [
    "within-run: real warm-up kept, steady part block-bootstrapped (blocks of 5 steps)",
    "launch noise: real A/A pairs (2 launches, 1 job) in the gate's order AB BA AB .. "
    "(--order alternating) unless --order says otherwise",
    "an A/B gate draws all its pairs from one CI batch (one day); separate jobs draw freely",
    "no separate allocation effect unless --alloc-cv (A/B pairs would cancel it)",
    "a slowdown multiplies every step of every candidate run",
    "constants were chosen on --split calibration; other batches, templates and seed",
    "stored and history modes use the scenario's prior (production / megatron-ci) unless "
    "--noise-prior; decision rule --rule (default: guarded acceptance, the gate's)",
]


README_MODES = (
    (f"ab-{FIRST_PAIRS}..{MAX_PAIRS}", "A/B, adaptive (the gate's defaults)"),
    (f"ab-{FIRST_PAIRS}", f"A/B, {FIRST_PAIRS} fixed pairs"),
    ("history-3+10", "one run vs a 3-run baseline + 10 history runs"),
    ("stored-3", "one run vs a 3-run baseline, no history"),
    ("stored-1", "one run vs a 1-run baseline"),
    ("llmb", "llmb rule (mean of it. 35-44 within 5%)"),
)


def readme_table(res: dict) -> str:
    """The figures the README quotes: false alarms at 0%, detection of 2%, 3%, 5% and 8%."""
    head = (
        "| mode | tolerance | false alarms (0%) | detect 2% | detect 3% | detect 5% | "
        "detect 8% | pairs |"
    )
    lines = [head, "|---|---|---|---|---|---|---|---|"]
    for mode, title in README_MODES:
        for tol in [LLMB_TOLERANCE] if mode == "llmb" else res["tolerances"]:
            cells = [title, f"{tol:.0%}", f"{_rate(res, mode, tol, 0.0, 'REGRESSION'):.1%}"]
            cells += [
                f"{_rate(res, mode, tol, s, 'REGRESSION'):.0%}" for s in (0.02, 0.03, 0.05, 0.08)
            ]
            used = [res["mean_pairs_adaptive"].get(f"{mode}|{tol}|{s}") for s in (0.0, 0.03)]
            pairs = str(FIRST_PAIRS) if mode.startswith("ab-") else "-"
            if used[0] is not None:
                pairs = f"{used[0]:.1f} / {used[1]:.1f}"
            lines.append("| " + " | ".join([*cells, pairs]) + " |")
    return "\n".join(lines)


def report(res: dict, noise: dict | None) -> str:
    """The human/markdown report: data, assumptions, table."""
    out = [
        f"## Detector evaluation: scenario {res['scenario']}, split {res['split']}, "
        f"{res['draws']} gates per cell",
        "",
    ]
    out.append(
        f"templates: {res['templates']} real series "
        f"({res['templates_not_steady']} more left out: perfgate calls them not steady); "
        f"launch noise: {res['noise']}"
    )
    out += ["", "assumptions:"] + [f"- {a}" for a in ASSUMPTIONS] + [""]
    out.append(markdown_table(res))
    if all(s in res["slowdowns"] for s in (0.0, 0.02, 0.03, 0.05)):
        out += ["", "for the README (pairs: mean used at 0% / at 3% slowdown):", ""]
        out.append(readme_table(res))
    out += ["", "mean pairs used by the adaptive modes (tolerance, slowdown: pairs):"]
    for mode, _, _ in ADAPTIVE:
        used = [
            f"{float(t):.0%} @ {float(s):.0%}: {v:.1f}"
            for k, v in res["mean_pairs_adaptive"].items()
            for m, t, s in [k.split("|")]
            if m == mode and float(s) in (0.0, 0.03)
        ]
        out.append(f"- {mode}: " + ", ".join(used))
    if noise:
        out += ["", "A/A noise measured (all data):", "```", json.dumps(noise, indent=1), "```"]
    return "\n".join(out)


def _nightly_chunk(job: tuple[np.random.SeedSequence, int]) -> dict:
    seed, draws = job
    templates, noise = _CONTEXT[:2]
    return detector_nightly.simulate(templates, noise, np.random.default_rng(seed), draws)


def nightly(args: argparse.Namespace, ref: Path, draws: int) -> int:
    """The nightly change-point scenario: print its table (or JSON)."""
    global _CONTEXT
    start = time.perf_counter()
    templates, noise, info = build(
        ref,
        args.scenario,
        args.split,
        args.alloc_cv,
        prior=args.noise_prior,
        launch=args.launch_noise,
    )
    _CONTEXT = (templates, noise)
    seeds = np.random.SeedSequence(SEEDS[args.split] if args.seed is None else args.seed)
    sizes = [draws // CHUNKS + (i < draws % CHUNKS) for i in range(CHUNKS)]
    work = [(sq, n) for sq, n in zip(seeds.spawn(CHUNKS), sizes, strict=True) if n]
    if args.jobs > 1:
        with multiprocessing.get_context("fork").Pool(min(args.jobs, len(work))) as pool:
            parts = pool.map(_nightly_chunk, work)
    else:
        parts = [_nightly_chunk(w) for w in work]
    # Chunk results are rates over their own draws: weight them back by draws.
    res: dict = {"draws": draws}
    for key in parts[0]:
        if key != "draws":
            res[key] = sum(p[key] * p["draws"] for p in parts) / draws
    res["seconds"] = round(time.perf_counter() - start, 1)
    if args.json:
        print(json.dumps({**info, **res}, indent=1))
    else:
        print(detector_nightly.report(res, info))
        print(f"\n({res['seconds']} s)")
    return 0


def matrix(args: argparse.Namespace) -> int:
    """The nightly matrix scenario: print its table (or JSON)."""
    start = time.perf_counter()
    seed = 19 if args.seed is None else args.seed
    detector_matrix.ROBUST = not args.plain_history
    seasons, nights = (1, 12) if args.quick else (args.seasons, args.nights)
    rows = 30 if args.quick else args.rows
    primary = detector_matrix.policy_name(args.confirm)
    policies = tuple(p.strip() for p in args.policies.split(",")) if args.policies else ()
    unknown = [p for p in policies if p not in detector_matrix.POLICIES]
    if unknown:
        names = ", ".join(detector_matrix.POLICIES)
        print(
            f"evaluate_detector: error: --policies {unknown[0]!r}: one of {names}", file=sys.stderr
        )
        return 2
    res = detector_matrix.simulate(
        seed,
        args.slow_nodes,
        rows,
        nights,
        seasons,
        primary,
        args.fdr,
        args.jobs,
        shape=args.shape,
        probes=args.probes,
        policies=policies,
        avoid=not args.no_avoid,
    )
    res["seconds"] = round(time.perf_counter() - start, 1)
    opts = {
        "slow_nodes": args.slow_nodes,
        "shape": args.shape,
        "seed": seed,
        "confirm": args.confirm,
        "fdr": args.fdr,
        "avoid": not args.no_avoid,
        "history_noise": "plain" if args.plain_history else "robust",
    }
    if args.json:
        print(json.dumps({**opts, **res}, indent=1))
    else:
        print(detector_matrix.report(res, opts))
        print(f"\n({res['seconds']} s)")
    return 0


def baseline_runs(args: argparse.Namespace, draws: int) -> int:
    """The 1-run baseline by per-step CV table (or JSON)."""
    start = time.perf_counter()
    seed = detector_baselines.SEED if args.seed is None else args.seed
    res = detector_baselines.simulate(draws, seed, args.jobs, args.launch_cv)
    res["seconds"] = round(time.perf_counter() - start, 1)
    if args.json:
        print(json.dumps(res, indent=1))
    else:
        print(detector_baselines.report(res))
        print(f"\n({res['seconds']} s)")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Command line entry point."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument(
        "--reference", type=Path, default=REFERENCE, help="reference data (tests/data/reference)"
    )
    p.add_argument("--draws", type=int, default=2000, help="simulated gates per cell")
    p.add_argument("--quick", action="store_true", help="a small, fast run (for tests)")
    p.add_argument("--split", choices=("evaluation", "calibration"), default="evaluation")
    p.add_argument("--scenario", choices=("ci", "production"), default="ci")
    p.add_argument("--seed", type=int, default=None, help="default: fixed per split")
    p.add_argument("--alloc-cv", type=float, default=0.0, help="extra per-job sigma")
    p.add_argument("--json", action="store_true", help="print the results as JSON")
    p.add_argument(
        "--order",
        choices=ORDERS,
        default="alternating",
        help="launch order of the pairs: alternating (the gate: AB BA AB ..), abab (candidate "
        "always second: the order effect in every pair), random (each pair's order drawn)",
    )
    p.add_argument("--abab", action="store_true", help=argparse.SUPPRESS)  # = --order abab
    p.add_argument(
        "--jobs",
        type=int,
        default=min(2, os.cpu_count() or 1),
        help="worker processes (the result does not depend on it)",
    )
    p.add_argument(
        "--noise-prior",
        choices=sorted(NAMED),
        default=None,
        help="prior of the stored and history modes (default: the scenario's own)",
    )
    p.add_argument(
        "--launch-noise",
        choices=LAUNCH_NOISE,
        default="with-infra",
        help="production: separate jobs' launch effects with the weak-node day (default) "
        "or without it (clean)",
    )
    p.add_argument(
        "--nightly",
        action="store_true",
        help="the nightly change-point scenario (scripts/detector_nightly.py) instead of the "
        "modes table",
    )
    p.add_argument(
        "--matrix",
        action="store_true",
        help="the nightly matrix scenario (scripts/detector_matrix.py): per row and per night",
    )
    p.add_argument(
        "--slow-nodes",
        choices=("cluster", "memoryless", "none"),
        default="cluster",
        help="--matrix: persistently slow nodes a confirmation can avoid (default), slow "
        "launches anywhere (the worst case), or none",
    )
    p.add_argument(
        "--baseline-runs",
        action="store_true",
        help="what a 1-run baseline costs by per-step CV (scripts/detector_baselines.py); "
        "--draws rows per CV bin",
    )
    p.add_argument(
        "--launch-cv",
        type=float,
        default=None,
        help="--baseline-runs: every row's launch-to-launch noise (default: drawn 0.3..1.2%%)",
    )
    p.add_argument(
        "--confirm",
        default="auto",
        help="--matrix: the suite's rerun policy whose verdicts the history keeps (auto, or N)",
    )
    p.add_argument(
        "--policies",
        default="",
        help="--matrix: rerun policies also judged on the same launches, comma-separated "
        f"({', '.join(detector_matrix.POLICIES)})".replace("%", "%%"),
    )
    p.add_argument(
        "--shape",
        choices=tuple(detector_generator.SHAPES),
        default="default",
        help="--matrix: the generator's noise shape (scripts/detector_generator.py); heavy is "
        "held out",
    )
    p.add_argument(
        "--probes", type=int, default=5, help="--matrix: slowed rows per slowdown per night"
    )
    p.add_argument(
        "--no-avoid",
        action="store_true",
        help="--matrix: first runs not kept off the nodes perfgate nodes flags",
    )
    p.add_argument(
        "--plain-history",
        action="store_true",
        help="--matrix: the history's noise as a plain sum of squares (slow launches in it)",
    )
    p.add_argument("--fdr", type=float, default=None, help="--matrix: BH over the night's rows")
    p.add_argument("--rows", type=int, default=147, help="--matrix: rows a night (the catalog's)")
    p.add_argument("--seasons", type=int, default=4, help="--matrix: independent seasons")
    p.add_argument("--nights", type=int, default=30, help="--matrix: nights a season")
    p.add_argument(
        "--rule",
        choices=("guarded", "point"),
        default=pcompare.RULE,
        help="decision rule (perfgate.stats.rule): guarded acceptance (the gate's) or point",
    )
    # Calibration only: try other values of perfgate.stats' constants.
    p.add_argument("--prior-df", type=float, help=argparse.SUPPRESS)
    p.add_argument("--pair-cv", type=float, help=argparse.SUPPRESS)
    p.add_argument("--run-cv", type=float, help=argparse.SUPPRESS)
    p.add_argument("--tolerances", type=str, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    for name, value in (
        ("PRIOR_DF", args.prior_df),
        ("DEFAULT_PAIR_CV", args.pair_cv),
        ("DEFAULT_RUN_TO_RUN_CV", args.run_cv),
    ):
        if value is not None:
            setattr(pstats, name, value)
    pcompare.RULE = args.rule
    ref = args.reference.resolve()
    if not ref.is_dir():
        print(f"evaluate_detector: error: reference folder {ref} not found", file=sys.stderr)
        return 2
    draws = 100 if args.quick else args.draws
    tols = (0.03,) if args.quick else TOLERANCES
    if args.tolerances:
        tols = tuple(float(x) for x in args.tolerances.split(","))
    start = time.perf_counter()
    if args.matrix:
        return matrix(args)
    if args.baseline_runs:
        return baseline_runs(args, draws)
    if args.nightly:
        return nightly(args, ref, draws)
    res = run(
        ref,
        args.scenario,
        args.split,
        draws,
        args.seed,
        args.alloc_cv,
        tols,
        jobs=args.jobs,
        order="abab" if args.abab else args.order,
        prior=args.noise_prior,
        launch=args.launch_noise,
    )
    res["rule"] = args.rule
    res["alloc_cv"] = args.alloc_cv
    res["order"] = "abab" if args.abab else args.order
    res["constants"] = {
        k: getattr(pstats, k)
        for k in ("ALPHA", "PRIOR_DF", "DEFAULT_PAIR_CV", "DEFAULT_RUN_TO_RUN_CV")
    }
    res["seconds"] = round(time.perf_counter() - start, 1)
    noise = measure_noise(ref)
    if args.json:
        print(json.dumps({**res, "measured": noise}, indent=1))
    else:
        print(report(res, noise))
        print(f"\n({res['seconds']} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
