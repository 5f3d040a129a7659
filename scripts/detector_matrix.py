"""The nightly matrix scenario of scripts/evaluate_detector.py: a whole night of rows, judged
by perfgate's own verdict code, with slow nodes, spikes, warm-up and drift.

    python scripts/evaluate_detector.py --matrix [--slow-nodes cluster|memoryless|none]
        [--confirm N] [--rows 147] [--seasons 4] [--nights 30] [--fdr Q] [--json]

Its generator is parametric and shares nothing with the real series behind the other scenarios
(so its figures are a second opinion, not a refit). Per row, drawn once:
  - a true step time (log-uniform 0.5..10 s), 50 or 100 steps a run, 1..32 nodes of 8 GPUs;
  - warm-up: the first 3..10 steps 3..20x slower, decaying geometrically;
  - per-step noise: AR(1) with CV 0.5..3% and phi 0..0.5; rare spikes (0..2% of steps, 1.5..3x);
  - within-run drift: a linear trend of up to +-0.5% over the run, drawn per run;
  - launch-to-launch noise: 0.3..1.2% (log-normal), drawn per launch;
  - cross-night drift: a random walk of 0.05% a night (the cluster and software age);
  - slow nodes: one launch in 20 lands on a node that costs 2..6%. "memoryless": any launch,
    the confirmation included, is slow with probability 1/20 (slowness not tied to nodes: the
    worst case for confirmation). "cluster": the cluster has SLOW_NODES persistently slow
    nodes among CLUSTER_NODES; a slow launch holds one of them; a confirmation excludes the
    first run's nodes and the nodes `perfgate nodes` flags on the history so far.
A row's baseline is stored from 3 runs, then 10 nights of history precede the first judged
night, and the history grows by a night each night (the first run, or its confirmation when
the first was UNCONFIRMED, as the history store does). Each night every row is judged by
perfgate.verdicts.evaluate (the nightly mode: history noise, change points) and, when it asks
(perfgate.verdicts.confirm.wants_confirmation), confirmed by --confirm launches.

Measured: false REGRESSIONs per row and per night (all rows green = no REGRESSION), a slowed
copy of one random row per night (5% and 8%: caught after confirmation), confirmation GPU-hours
as a share of the night's, and in separate seasons a persistent 3% step per row: flagged
(SHIFT or REGRESSION) within 5 nights.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field, replace

import numpy as np

from perfgate import flops, hardware, verdicts
from perfgate.catalog import Baseline, BaselineRun, Provenance, Row
from perfgate.history import nodes as hnodes
from perfgate.history.trend import Point, off_slow_nodes
from perfgate.logs import Step, StepSeries
from perfgate.runs import RunRecord, RunResult
from perfgate.stats import Noise
from perfgate.stats.matrix import benjamini_hochberg
from perfgate.verdicts.confirm import combine, settled, wants_confirmation

TOLERANCE = 0.05
HISTORY_NIGHTS = 10
SLOW_P = 0.05  # one launch in 20 lands on a slow node
SLOW_COST = (0.02, 0.06)
CLUSTER_NODES = 512
SLOW_NODES = 6
NIGHT_DRIFT = 0.0005
STEP = 0.03
WITHIN = 5
PROBES = (0.05, 0.08)
# History noise with slow launches clipped when confirming (the suite's default);
# evaluate_detector --plain-history measures the plain sum of squares instead.
ROBUST = True
ROW_MFU = 0.45  # of the H100's BF16 peak, under nemo2's count (the largest)
SIZES = ((1, 0.4), (2, 0.2), (4, 0.15), (8, 0.12), (16, 0.08), (32, 0.05))


@dataclass(frozen=True)
class RowModel:
    """One row's true behaviour (see the module doc)."""

    index: int
    step_s: float
    steps: int
    nodes: int
    cv: float
    phi: float
    spikes: float
    warmup: int
    launch_cv: float

    @property
    def row(self) -> Row:
        """A catalog row for it: Llama 3 8B with the batch that runs its step time at about
        45% MFU (a faster row would be INFRA IMPOSSIBLE); the batch shapes only the report."""
        n = 8 * self.nodes
        per_step = ROW_MFU * hardware.peak_tflops("h100", "bf16") * 1e12 * n * self.step_s
        return Row(
            id=f"pretrain-llama3_8b-h100-bf16-{n}gpu-tp1-r{self.index}",
            task="pretrain",
            model="llama3_8b",
            gpu="h100",
            precision="bf16",
            num_gpus=n,
            gpus_per_node=8,
            gbs=max(1, round(per_step / flops.flops_per_sample("llama3_8b", 8192))),
            mbs=1,
            seq_len=8192,
            variant=f"r{self.index}",
        )

    def gpu_hours(self) -> float:
        return 8 * self.nodes * self.steps * self.step_s / 3600


def draw_row(index: int, rng: np.random.Generator) -> RowModel:
    sizes, weights = zip(*SIZES, strict=True)
    return RowModel(
        index=index,
        step_s=math.exp(rng.uniform(math.log(0.5), math.log(10))),
        steps=int(rng.choice([50, 100])),
        nodes=int(rng.choice(sizes, p=weights)),
        cv=rng.uniform(0.005, 0.03),
        phi=rng.uniform(0.0, 0.5),
        spikes=rng.uniform(0.0, 0.02),
        warmup=int(rng.integers(3, 11)),
        launch_cv=rng.uniform(0.003, 0.012),
    )


def run_steps(m: RowModel, rng: np.random.Generator, factor: float) -> list[float]:
    """One launch's per-step times: warm-up, AR(1) noise, spikes, drift, times factor."""
    n = m.steps
    innov = rng.normal(0.0, m.cv * math.sqrt(1 - m.phi**2), n)
    e = np.empty(n)
    x = 0.0
    for i in range(n):
        x = m.phi * x + innov[i]
        e[i] = x
    t = m.step_s * factor * np.exp(e)
    t[: m.warmup] *= np.geomspace(rng.uniform(3, 20), 1.15, m.warmup)
    hit = rng.random(n) < m.spikes
    t[hit] *= rng.uniform(1.5, 3.0, int(hit.sum()))
    t *= 1 + rng.uniform(-0.005, 0.005) * np.linspace(0.0, 1.0, n)
    return [float(v) for v in t]


@dataclass
class Cluster:
    """Where launches land and how slow their nodes are (model: memoryless, cluster, none)."""

    model: str
    rng: np.random.Generator
    slow: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.model == "cluster":
            names = self.rng.choice(CLUSTER_NODES, SLOW_NODES, replace=False)
            self.slow = {f"n{i}": self.rng.uniform(*SLOW_COST) for i in names}

    def launch(self, m: RowModel, exclude: set[str] = frozenset()) -> tuple[float, tuple[str, ...]]:
        """(slowdown factor, nodes) of one launch of the row, kept off the excluded nodes."""
        rng = self.rng
        if self.model == "memoryless":
            nodes = tuple(f"m{i}" for i in rng.integers(0, 10**9, m.nodes))
            slow = rng.uniform(*SLOW_COST) if rng.random() < SLOW_P else 0.0
            return 1 + slow, nodes
        if self.model == "none":
            return 1.0, tuple(f"m{i}" for i in rng.integers(0, 10**9, m.nodes))
        good = [n for n in self.slow if n not in exclude]
        others = [f"n{i}" for i in rng.integers(0, CLUSTER_NODES, m.nodes + 8)]
        nodes = [n for n in others if n not in self.slow and n not in exclude][: m.nodes]
        factor = 1.0
        # One launch in 20 holds a slow node; a kept-off slow node cannot be drawn.
        if good and rng.random() < SLOW_P * len(good) / len(self.slow):
            bad = good[int(rng.integers(len(good)))]
            nodes[0] = bad
            factor = 1 + self.slow[bad]
        return factor, tuple(nodes)


@dataclass
class RowState:
    """A row's stored baseline and its history so far."""

    model: RowModel
    row: Row
    points: list[Point]
    level: float = 1.0  # the cross-night drift so far


def _result(m: RowModel, steps: list[float], nodes: tuple[str, ...], job: str) -> RunResult:
    series = StepSeries("megatron", tuple(Step(i, t) for i, t in enumerate(steps)))
    run = RunRecord(image="nemo:sim", label="baseline", series=series)
    return RunResult(m.row.id, job, "COMPLETED", runs=(run,), nodes=nodes)


def _summary_point(night: int, ev: verdicts.Evaluation, job: str) -> Point | None:
    if ev.measured is None:
        return None
    stamp = f"2026-{1 + night // 28:02d}-{1 + night % 28:02d}T01:00:00+00:00"
    nodes = ev.result.nodes if ev.result is not None else ()
    return Point(
        night + 100, stamp, ev.measured.step_time_s, job_id=job, verdict=ev.verdict, nodes=nodes
    )


def new_row(m: RowModel, cluster: Cluster, rng: np.random.Generator) -> tuple[RowState, list]:
    """The row with a 3-run baseline and HISTORY_NIGHTS nights of history; its node runs."""
    from perfgate.stats import summarize_run

    runs, node_runs = [], []
    for i in range(3):
        factor, nodes = cluster.launch(m)
        s = summarize_run(run_steps(m, rng, factor * math.exp(rng.normal(0, m.launch_cv))))
        if s.steady:
            runs.append(BaselineRun(s.median_s, s.rel_se, job_id=f"b{i}", date="2026-01-01"))
            node_runs.append(hnodes.NodeRun(m.row.id, s.median_s, nodes))
    gm = math.exp(sum(math.log(r.step_time_s) for r in runs) / len(runs))
    base = Baseline(
        gm, Provenance("perfgate sim", date="2026-01-01"), n_runs=len(runs), runs=tuple(runs),
        tolerance=TOLERANCE,
    )  # fmt: skip
    state = RowState(m, replace(m.row, baseline=base), [])
    for night in range(-HISTORY_NIGHTS, 0):
        state.level *= math.exp(rng.normal(0, NIGHT_DRIFT))
        factor, nodes = cluster.launch(m)
        s = summarize_run(run_steps(m, rng, state.level * factor * _launch(m, rng)))
        if s.steady:
            job = f"h{night}"
            state.points.append(Point(night + 100, f"2026-01-{night + 30:02d}T01:00:00+00:00",
                                      s.median_s, s.rel_se, job_id=job, nodes=nodes))  # fmt: skip
            node_runs.append(hnodes.NodeRun(m.row.id, s.median_s, nodes, job))
    return state, node_runs


def _launch(m: RowModel, rng: np.random.Generator) -> float:
    return math.exp(rng.normal(0.0, m.launch_cv))


@dataclass
class Judged:
    """One row's night: the final evaluation, the runs it took and their GPU-hours."""

    ev: verdicts.Evaluation
    first: verdicts.Evaluation
    confirmations: int
    node_runs: list


def judge_night(
    state: RowState,
    cluster: Cluster,
    rng: np.random.Generator,
    night: int,
    confirm: int,
    slowdown: float = 0.0,
    flagged: frozenset[str] = frozenset(),
) -> Judged:
    """Tonight's run of the row, judged with its history, and its confirmations if asked."""
    m = state.model
    factor, nodes = cluster.launch(m)
    f = state.level * (1 + slowdown)
    # as the suite reads a row's history: without runs on the nodes perfgate nodes flags
    history = off_slow_nodes(state.points, flagged) if confirm else state.points
    first = verdicts.evaluate(
        state.row,
        _result(m, run_steps(m, rng, f * factor * _launch(m, rng)), nodes, f"j{night}"),
        source="live",
        tolerance=TOLERANCE,
        noise=Noise(confirming=ROBUST and confirm > 0),
        history=history,
    )
    runs = [hnodes.NodeRun(m.row.id, first.measured.step_time_s, nodes)] if first.measured else []
    if not confirm or not wants_confirmation(first):
        return Judged(first, first, 0, runs)
    confirmations: list[verdicts.Evaluation] = []
    exclude = set(nodes) | set(flagged)
    for k in range(confirm):
        factor, cnodes = cluster.launch(m, exclude)
        exclude |= set(cnodes)
        ev = verdicts.evaluate(
            state.row,
            _result(m, run_steps(m, rng, f * factor * _launch(m, rng)), cnodes, f"c{night}.{k}"),
            source="live",
            tolerance=TOLERANCE,
            noise=Noise(confirming=ROBUST),
            history=history,
        )
        confirmations.append(ev)
        if ev.measured is not None:
            runs.append(hnodes.NodeRun(m.row.id, ev.measured.step_time_s, cnodes))
        if settled(first, confirmations):
            break  # no further confirmation can change the verdict
    return Judged(combine(first, confirmations), first, len(confirmations), runs)


def _grow(state: RowState, j: Judged, night: int) -> None:
    """Tonight's point(s) join the history as the store keeps them."""
    if j.ev.verdict != "UNCONFIRMED":
        p = _summary_point(night, j.first, f"j{night}")
        if p is not None:
            state.points.append(p)
    for k, c in enumerate(j.ev.confirmed_by):
        p = _summary_point(night, c, f"c{night}.{k}")
        if p is not None:
            state.points.append(p)


def season(
    rng: np.random.Generator,
    model: str,
    rows: int,
    nights: int,
    confirm: int,
    fdr: float | None,
    step: bool = False,
) -> dict[str, float]:
    """One season of the whole matrix; counts for the rates of the module doc."""
    cluster = Cluster(model, rng)
    states, node_runs = [], []
    for i in range(rows):
        st, nr = new_row(draw_row(i, rng), cluster, rng)
        states.append(st)
        node_runs += nr
    c: dict[str, float] = defaultdict(float)
    steps_at = {i: int(rng.integers(5, nights - WITHIN + 1)) for i in range(rows)} if step else {}
    for night in range(nights):
        flagged = frozenset(f.node for f in hnodes.slow_nodes(node_runs) if f.flagged)
        judged = []
        for i, st in enumerate(states):
            st.level *= math.exp(rng.normal(0, NIGHT_DRIFT))
            slow = STEP if step and night >= steps_at[i] else 0.0
            j = judge_night(st, cluster, rng, night, confirm, slow, flagged)
            judged.append(j)
            node_runs += j.node_runs
            if not step:  # GPU-hours of confirmations at no change (a real step is confirmed)
                c["gpu_h"] += st.model.gpu_hours()
                c["confirm_gpu_h"] += j.confirmations * st.model.gpu_hours()
                c["confirmations"] += j.confirmations
        final = [j.ev.verdict for j in judged]
        if fdr is not None:
            keep = benjamini_hochberg([_p(j.ev) for j in judged], fdr)
            final = [
                v if v != "REGRESSION" or k else "INCONCLUSIVE"
                for v, k in zip(final, keep, strict=True)
            ]
        for i, (st, j, v) in enumerate(zip(states, judged, final, strict=True)):
            _grow(st, j, night)
            if step:
                s = steps_at[i]
                if s <= night < s + WITHIN and v in ("SHIFT", "REGRESSION"):
                    c[f"found:{i}"] = 1
        if not step:
            bad = sum(v == "REGRESSION" for v in final)
            c["nights"] += 1
            c["row_nights"] += rows
            c["false"] += bad
            c["green"] += bad == 0
            c["first_false"] += sum(j.first.verdict == "REGRESSION" for j in judged)
            c["unconfirmed"] += sum(v == "UNCONFIRMED" for v in final)
            for s in PROBES:  # a slowed copy of one row: its own launches, not in the history
                st = states[int(rng.integers(rows))]
                j = judge_night(st, cluster, rng, night, confirm, s, flagged)
                c[f"probe:{s}"] += 1
                c[f"caught:{s}"] += j.ev.verdict == "REGRESSION"
    if step:
        c["series"] = rows
        c["found"] = sum(v for k, v in c.items() if k.startswith("found:"))
        for k in [k for k in c if k.startswith("found:")]:
            del c[k]
    c["flagged_nodes_true"] = (
        sum(1 for n in flagged if n in cluster.slow) if model == "cluster" else 0
    )
    c["flagged_nodes_false"] = sum(1 for n in flagged if n not in cluster.slow)
    return dict(c)


def _p(ev: verdicts.Evaluation) -> float:
    """The p-value BH sees: the row's own comparison (a confirmed row: its confirmation's)."""
    confirmed = [c for c in ev.confirmed_by if c.comparison is not None]
    comp = confirmed[-1].comparison if confirmed else ev.comparison
    return comp.p_slower if comp is not None else math.nan


# --- the experiment ---------------------------------------------------------------------------


def _season_job(job: tuple) -> dict[str, float]:
    seed, model, rows, nights, confirm, fdr, step = job
    return season(np.random.default_rng(seed), model, rows, nights, confirm, fdr, step)


def simulate(
    seed: int,
    model: str,
    rows: int,
    nights: int,
    seasons: int,
    confirm: int,
    fdr: float | None,
    jobs: int = 1,
) -> dict[str, float]:
    """seasons of no-change nights (with slowed-row probes) and seasons of 3% steps."""
    import multiprocessing

    seeds = np.random.SeedSequence(seed).spawn(2 * seasons)
    work = [(s, model, rows, nights, confirm, fdr, False) for s in seeds[:seasons]]
    work += [(s, model, rows, nights, confirm, fdr, True) for s in seeds[seasons:]]
    if jobs > 1:
        with multiprocessing.get_context("fork").Pool(jobs) as pool:
            parts = pool.map(_season_job, work)
    else:
        parts = [_season_job(w) for w in work]
    total: dict[str, float] = defaultdict(float)
    for p in parts:
        for k, v in p.items():
            total[k] += v
    t = total
    out = {
        "rows": rows,
        "nights": t["nights"],
        "false_per_row": t["false"] / t["row_nights"],
        "first_false_per_row": t["first_false"] / t["row_nights"],
        "unconfirmed_per_night": t["unconfirmed"] / t["nights"],
        "false_per_night": t["false"] / t["nights"],
        "all_green_nights": t["green"] / t["nights"],
        "confirm_gpu_share": t["confirm_gpu_h"] / t["gpu_h"],
        "step_series": t["series"],
        "step_found_within": t["found"] / t["series"],
        "flagged_nodes_true": t["flagged_nodes_true"] / (2 * seasons),
        "flagged_nodes_false": t["flagged_nodes_false"] / (2 * seasons),
    }
    for s in PROBES:
        out[f"caught_{s:.0%}"] = t[f"caught:{s}"] / t[f"probe:{s}"]
    return out


def report(res: dict, args: dict) -> str:
    """Markdown lines: per row and per night."""
    confirm = args["confirm"]
    how = f"--confirm {confirm}" if confirm else "no confirmation"
    if args.get("fdr"):
        how += f", --fdr {args['fdr']:g}"
    if args.get("history_noise"):
        how += f", history noise {args['history_noise']}"
    return "\n".join(
        [
            f"## Nightly matrix: {res['rows']} rows, slow nodes {args['slow_nodes']}, {how}, "
            f"tolerance {TOLERANCE:.0%}, {res['nights']:.0f} nights",
            "",
            "| measure | value |",
            "|---|---|",
            f"| false REGRESSION per row, no change (before confirmation) | "
            f"{res['false_per_row']:.3%} ({res['first_false_per_row']:.2%}) |",
            f"| false REGRESSIONs per night | {res['false_per_night']:.2f} |",
            f"| nights with every row green (no REGRESSION) | {res['all_green_nights']:.1%} |",
            f"| UNCONFIRMED rows per night (pass with a warning) | "
            f"{res['unconfirmed_per_night']:.2f} |",
            f"| one row slowed 5%: REGRESSION | {res['caught_5%']:.1%} |",
            f"| one row slowed 8%: REGRESSION | {res['caught_8%']:.1%} |",
            f"| persistent {STEP:.0%} step flagged (SHIFT/REGRESSION) within {WITHIN} nights | "
            f"{res['step_found_within']:.1%} of {res['step_series']:.0f} rows |",
            f"| confirmation GPU-hours / the night's | {res['confirm_gpu_share']:.1%} |",
            f"| slow nodes flagged by perfgate nodes per season (true / false) | "
            f"{res['flagged_nodes_true']:.1f} / {res['flagged_nodes_false']:.1f} |",
        ]
    )
