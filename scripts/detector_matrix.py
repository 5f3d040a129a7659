"""The nightly matrix scenario of scripts/evaluate_detector.py: whole nights of rows, judged by
perfgate's own verdict, confirmation, node and exclusion code.

    python scripts/evaluate_detector.py --matrix [--slow-nodes cluster|memoryless|none]
        [--shape default|heavy] [--confirm auto|N] [--rows 147] [--seasons 4] [--nights 30]
        [--probes 5] [--fdr Q] [--no-avoid] [--seed S] [--json]

Rows, launches and the cluster come from scripts/detector_generator.py (its --shape and
--slow-nodes models). A row's baseline is stored from 3 runs, then 10 nights of history precede
the first judged night, and the history grows by a night each night (the first run, or its
reruns when it was UNCONFIRMED, as the history store keeps them). Each night:

  - `perfgate nodes` (perfgate.history.nodes) runs on the history so far; first runs are kept
    off the nodes it flags, within the cap (perfgate.launch.avoid; --no-avoid: not);
  - every row is judged by perfgate.verdicts.evaluate (the nightly mode: history noise, change
    points) and its reruns by perfgate.verdicts.confirm.confirm, the suite's own loop, kept off
    the first run's nodes and the flagged ones (perfgate.launch.avoid);
  - tonight's first runs are searched for nodes that slowed several rows
    (perfgate.history.night_nodes).

The rerun policies compared (POLICIES) see the same launches: a row's n-th rerun is drawn
once, when the first policy asks for it, and every policy that asks for it gets that one. The
policy of --confirm decides what the history keeps; the others are judged on the same nights
(their histories would differ only by the rare nights where they disagree).

Measured, per policy: false REGRESSIONs per row and per night, nights all green, a slowed copy
of --probes random rows per night (5% and 8%: caught after its reruns), reruns' GPU-hours as a
share of the first runs' (no-change nights), and in separate seasons a persistent 3% step per
row, flagged (SHIFT or REGRESSION) within 5 nights. For the --confirm policy also: SHIFT
verdicts per night at no change, what UNCONFIRMED verdicts name (a node that was really slow:
cluster, the slow node among those named; memoryless, the first launch was slow), and the
nodes tonight's runs single out (slow / healthy).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import detector_generator as gen
import numpy as np

from perfgate import verdicts
from perfgate.catalog import Baseline, BaselineRun, Provenance
from perfgate.history import nodes as hnodes
from perfgate.history.night_nodes import NightRun, slow_tonight
from perfgate.history.trend import Point, off_slow_nodes
from perfgate.launch.avoid import exclusions
from perfgate.stats import Noise, summarize_run
from perfgate.stats.matrix import benjamini_hochberg
from perfgate.verdicts.confirm import AUTO, RerunPolicy, confirm, contradicts, wants_confirmation

TOLERANCE = gen.TOLERANCE
HISTORY_NIGHTS = 10
STEP = 0.03
WITHIN = 5
SLOWDOWNS = (0.05, 0.08)
# History noise with slow launches clipped when confirming (the suite's default);
# evaluate_detector --plain-history measures the plain sum of squares instead.
ROBUST = True


# --- rerun policies ---------------------------------------------------------------------------

Launch = Callable[[int], verdicts.Evaluation]  # the row's n-th rerun, judged (drawn once)
Pool = Callable[[list[verdicts.Evaluation]], verdicts.Evaluation]  # launches judged together
Policy = Callable[[verdicts.Evaluation, Launch, Pool, frozenset], verdicts.Evaluation]


def _suite(policy: RerunPolicy) -> Policy:
    """The suite's own rule (perfgate.verdicts.confirm.confirm) under this rerun policy."""

    def judged(first, launch, pool, flagged):
        return confirm(first, launch, policy, pool=pool, flagged=flagged)

    return judged


def _as(first: verdicts.Evaluation, verdict: str) -> verdicts.Evaluation:
    return first if first.verdict == verdict else replace(first, verdict=verdict)


def _every(first, launch, pool, flagged):
    """Every launch must be a REGRESSION: a second rerun only when the first reproduced."""
    if launch(1).verdict != "REGRESSION":
        return _as(first, "UNCONFIRMED")
    return first if launch(2).verdict == "REGRESSION" else _as(first, "UNCONFIRMED")


def _pooled(with_first: bool):
    """When the first rerun reproduced, one more; the row judged on the reruns together (and
    the first run, with_first)."""

    def policy(first, launch, pool, flagged):
        if launch(1).verdict != "REGRESSION":
            return _as(first, "UNCONFIRMED")
        both = pool([first, launch(1), launch(2)] if with_first else [launch(1), launch(2)])
        return first if both.verdict == "REGRESSION" else _as(first, "UNCONFIRMED")

    return policy


def _veto1(first, launch, pool, flagged):
    """One rerun that may only veto (a PASS, or an interval wholly below the first run's)."""
    return _as(first, "UNCONFIRMED") if contradicts(launch(1), first) else first


def _lean(p_max: float) -> Policy:
    """auto, and an INCONCLUSIVE first run with p(slower) <= p_max rerun too: a REGRESSION
    only when its reruns reproduce one (the first run itself is never pooled in)."""

    def policy(first, launch, pool, flagged):
        if first.verdict == "REGRESSION":
            return confirm(first, launch, AUTO, pool=pool, flagged=flagged)
        as_if = replace(first, verdict="REGRESSION")
        ev = confirm(as_if, launch, AUTO, pool=pool, flagged=flagged)
        return _as(first, "REGRESSION") if ev.verdict == "REGRESSION" else first

    return policy


# policies that also rerun an INCONCLUSIVE first run leaning slow: p(slower) at most this
LEAN = {"auto": AUTO.lean_p, "auto+lean 5%": 0.05, "auto+lean 3%": 0.03, "auto+lean 2%": 0.02}


def _wants(name: str, first: verdicts.Evaluation) -> bool:
    return wants_confirmation(first, lean_p=LEAN.get(name)) is not None


# name -> (what it does, policy); "confirm N" and "auto" are the suite's own rules
POLICIES: dict[str, tuple[str, Policy]] = {
    "confirm 0": ("no rerun", lambda first, launch, pool, flagged: first),
    "confirm 1": ("one rerun must reproduce", _suite(RerunPolicy(1))),
    "confirm 2": (
        "a second rerun when the first reproduced, which may veto",
        _suite(RerunPolicy(2)),
    ),
    "auto": (
        "--confirm auto: a rerun shown within tolerance at alpha/10 vetoes; a reproduced "
        "REGRESSION gets a second that may veto; any other rerun a second, both judged "
        "together (INCONCLUSIVE when they disagree); an INCONCLUSIVE first run with "
        "p(slower) <= 2% is rerun too",
        _suite(AUTO),
    ),
    "auto with PASS vetoes": (
        "as auto, but a rerun's own PASS vetoes, and no INCONCLUSIVE first run is rerun",
        _suite(RerunPolicy(2, pool_open=True)),
    ),
    "every 3": ("a second rerun when the first reproduced, which must reproduce too", _every),
    "pooled reruns": (
        "a second rerun when the first reproduced; both reruns judged together",
        _pooled(False),
    ),
    "pooled 3": (
        "a second rerun when the first reproduced; all three launches together",
        _pooled(True),
    ),
    "veto 1": ("one rerun, which may only veto", _veto1),
    "auto+lean 5%": ("as auto, an INCONCLUSIVE first run with p(slower) <= 5% rerun", _lean(0.05)),
    "auto+lean 3%": ("auto; an INCONCLUSIVE first run with p(slower) <= 3% rerun too", _lean(0.03)),
    "auto+lean 2%": ("auto; an INCONCLUSIVE first run with p(slower) <= 2% rerun too", _lean(0.02)),
}


def policy_name(confirm_opt: str) -> str:
    """The POLICIES name of a --confirm value (auto, or N)."""
    return "auto" if confirm_opt == "auto" else f"confirm {int(confirm_opt)}"


# --- a row, its baseline and history ---------------------------------------------------------


@dataclass
class RowState:
    """A row's stored baseline and its history so far."""

    model: gen.RowModel
    row: object
    points: list[Point]
    level: float = 1.0  # the cross-night drift so far


def _point(night: int, ev: verdicts.Evaluation, job: str) -> Point | None:
    if ev.measured is None:
        return None
    stamp = f"2026-{1 + night // 28:02d}-{1 + night % 28:02d}T01:00:00+00:00"
    nodes = ev.result.nodes if ev.result is not None else ()
    return Point(
        night + 100, stamp, ev.measured.step_time_s, job_id=job, verdict=ev.verdict, nodes=nodes
    )


def new_row(
    m: gen.RowModel, cluster: gen.Cluster, rng: np.random.Generator, common: list[float]
) -> tuple[RowState, list]:
    """The row with a 3-run baseline and HISTORY_NIGHTS nights of history; its node runs.

    common: the shared night effects of the history nights (one per night)."""
    runs, node_runs = [], []
    for i in range(3):
        factor, nodes = cluster.launch(m)
        s = summarize_run(gen.run_steps(m, rng, factor * gen.launch_effect(m, rng)))
        if s.steady:
            runs.append(BaselineRun(s.median_s, s.rel_se, job_id=f"b{i}", date="2026-01-01"))
            node_runs.append(hnodes.NodeRun(m.row.id, s.median_s, nodes))
    gm = math.exp(sum(math.log(r.step_time_s) for r in runs) / len(runs))
    base = Baseline(
        gm, Provenance("perfgate sim", date="2026-01-01"), n_runs=len(runs), runs=tuple(runs),
        tolerance=TOLERANCE,
    )  # fmt: skip
    state = RowState(m, replace(m.row, baseline=base), [])
    drift = gen.SHAPES[m.shape].night_drift
    for k, night in enumerate(range(-HISTORY_NIGHTS, 0)):
        state.level *= math.exp(rng.normal(0, drift))
        factor, nodes = cluster.launch(m)
        f = state.level * common[k] * factor * gen.launch_effect(m, rng)
        s = summarize_run(gen.run_steps(m, rng, f))
        if s.steady:
            job = f"h{night}"
            state.points.append(Point(night + 100, f"2026-01-{night + 30:02d}T01:00:00+00:00",
                                      s.median_s, s.rel_se, job_id=job, nodes=nodes))  # fmt: skip
            node_runs.append(hnodes.NodeRun(m.row.id, s.median_s, nodes, job))
    return state, node_runs


# --- one row's night -------------------------------------------------------------------------


@dataclass
class Night:
    """What one row's night took: the launches (drawn on demand), every policy's verdict."""

    first: verdicts.Evaluation
    first_factor: float
    launches: list[tuple[verdicts.Evaluation, float, tuple[str, ...]]] = field(
        default_factory=list
    )  # the reruns: (evaluation, slow factor, nodes)
    final: dict[str, verdicts.Evaluation] = field(default_factory=dict)
    used: dict[str, int] = field(default_factory=dict)  # policy -> reruns it asked for
    node_runs: list = field(default_factory=list)


def judge_night(
    state: RowState,
    cluster: gen.Cluster,
    rng: np.random.Generator,
    night: int,
    primary: str,
    policies: tuple[str, ...],
    slowdown: float = 0.0,
    flagged: tuple[str, ...] = (),
    avoid_first: frozenset[str] = frozenset(),
    common: float = 1.0,
) -> Night:
    """Tonight's run of the row, judged with its history, and every policy's reruns."""
    m = state.model
    f = state.level * common * (1 + slowdown)
    confirming = primary != "confirm 0"
    flag_set = frozenset(flagged)
    # as the suite reads a row's history: without runs on the nodes perfgate nodes flags
    history = off_slow_nodes(state.points, flag_set) if confirming else state.points
    noise = Noise(confirming=ROBUST and confirming)

    def judge(result):
        return verdicts.evaluate(
            state.row, result, source="live", tolerance=TOLERANCE, noise=noise, history=history
        )

    factor, nodes = cluster.launch(m, avoid_first)
    first_res = gen.result(m, gen.run_steps(m, rng, f * factor * gen.launch_effect(m, rng)),
                           nodes, f"j{night}")  # fmt: skip
    night_row = Night(judge(first_res), factor)
    first = night_row.first
    results = [first_res]

    def launch(n: int) -> verdicts.Evaluation:
        while len(night_row.launches) < n:
            k = len(night_row.launches) + 1
            earlier = [x for r in results for x in r.nodes]
            avoid = exclusions(flagged, must=earlier, partition=cluster.nodes or None, need=m.nodes)
            cf, cnodes = cluster.launch(m, frozenset(avoid.nodes))
            res = gen.result(m, gen.run_steps(m, rng, f * cf * gen.launch_effect(m, rng)),
                             cnodes, f"c{night}.{k}")  # fmt: skip
            results.append(res)
            night_row.launches.append((judge(res), cf, cnodes))
        return night_row.launches[n - 1][0]

    def pool(launches: list[verdicts.Evaluation]) -> verdicts.Evaluation:
        got = [e.result for e in launches if e.result is not None]
        return judge(replace(got[0], runs=tuple(run for r in got for run in r.runs)))

    for name in policies:
        asked = [0]

        def counted(n: int, asked=asked) -> verdicts.Evaluation:
            asked[0] = max(asked[0], n)
            return launch(n)

        if name == "confirm 0" or not _wants(name, first):
            night_row.final[name], night_row.used[name] = first, 0
            continue
        night_row.final[name] = POLICIES[name][1](first, counted, pool, flag_set)
        night_row.used[name] = asked[0]
    for ev in (first, *(e for e, _, _ in night_row.launches)):
        if ev.measured is not None:
            run_nodes = ev.result.nodes if ev.result is not None else ()
            night_row.node_runs.append(hnodes.NodeRun(m.row.id, ev.measured.step_time_s, run_nodes))
    return night_row


def _grow(state: RowState, j: Night, night: int, primary: str) -> None:
    """Tonight's point(s) join the history as the store keeps them (the primary policy's)."""
    ev = j.final[primary]
    if ev.verdict != "UNCONFIRMED":
        p = _point(night, j.first, f"j{night}")
        if p is not None:
            state.points.append(p)
    for k, c in enumerate(ev.confirmed_by):
        p = _point(night, c, f"c{night}.{k + 1}")
        if p is not None:
            state.points.append(p)


def _named_truth(j: Night, cluster: gen.Cluster, primary: str) -> tuple[bool, bool, int] | None:
    """(names a node, the named nodes hold a really slow one, healthy nodes named) of an
    UNCONFIRMED verdict."""
    ev = j.final[primary]
    if ev.verdict != "UNCONFIRMED" or ev.confirmation is None:
        return None
    named = ev.confirmation.get("suspect_nodes") or []
    if cluster.model == "cluster":
        healthy = sum(n not in cluster.slow for n in named)
        return bool(named), any(n in cluster.slow for n in named), healthy
    return bool(named), j.first_factor > 1, 0 if j.first_factor > 1 else len(named)


def _says_slow_launch(j: Night, primary: str) -> bool:
    """The UNCONFIRMED verdict says its first run was one slow launch (and names no node)."""
    why = (j.final[primary].confirmation or {}).get("suspects_why") or ""
    return "one slow launch" in why


def season(
    rng: np.random.Generator,
    model: str,
    rows: int,
    nights: int,
    primary: str,
    fdr: float | None,
    step: bool = False,
    *,
    shape: str = "default",
    probes: int = 5,
    policies: tuple[str, ...] = (),
    avoid: bool = True,
) -> dict[str, float]:
    """One season of the whole matrix; counts for the rates of the module doc."""
    sh = gen.SHAPES[shape]
    policies = tuple(dict.fromkeys((primary, *policies)))
    cluster = gen.Cluster(model, rng, sh)
    history_common = [math.exp(rng.normal(0, sh.night_common)) for _ in range(HISTORY_NIGHTS)]
    states, node_runs = [], []
    for i in range(rows):
        st, nr = new_row(gen.draw_row(i, rng, shape), cluster, rng, history_common)
        states.append(st)
        node_runs += nr
    largest = max(st.model.nodes for st in states)
    c: dict[str, float] = defaultdict(float)
    steps_at = {i: int(rng.integers(5, nights - WITHIN + 1)) for i in range(rows)} if step else {}
    for night in range(nights):
        flagged = tuple(f.node for f in hnodes.slow_nodes(node_runs) if f.flagged)
        first_avoid = frozenset()
        if avoid and primary != "confirm 0":
            part = cluster.nodes or None
            first_avoid = frozenset(
                exclusions(flagged, partition=part, need=largest, first_run=True).nodes
            )
        common = math.exp(rng.normal(0, sh.night_common))
        judged: list[Night] = []
        for i, st in enumerate(states):
            st.level *= math.exp(rng.normal(0, sh.night_drift))
            slow = STEP if step and night >= steps_at[i] else 0.0
            j = judge_night(st, cluster, rng, night, primary, policies, slow, flagged,
                            first_avoid, common)  # fmt: skip
            judged.append(j)
            node_runs += j.node_runs
        finals = {p: [j.final[p].verdict for j in judged] for p in policies}
        if fdr is not None:
            for p in policies:
                keep = benjamini_hochberg([_p(j.final[p]) for j in judged], fdr)
                finals[p] = [
                    v if v != "REGRESSION" or k else "INCONCLUSIVE"
                    for v, k in zip(finals[p], keep, strict=True)
                ]
        for i, (st, j) in enumerate(zip(states, judged, strict=True)):
            _grow(st, j, night, primary)
            low = _shift_low(j.final[primary])
            if step:
                s = steps_at[i]
                for p in policies:
                    v = finals[p][i]
                    if s <= night < s + WITHIN and v in ("SHIFT", "REGRESSION"):
                        c[f"found:{p}:{i}"] = 1
                        if v == "REGRESSION":
                            c[f"found_regression:{p}:{i}"] = 1
                if s <= night < s + WITHIN:  # what other SHIFT bars would have flagged
                    for x in SHIFT_BARS:
                        hit = finals[primary][i] == "REGRESSION" or low >= x * TOLERANCE
                        c[f"found_bar:{x}:{i}"] = max(c[f"found_bar:{x}:{i}"], hit)
            else:
                for x in SHIFT_BARS:
                    c[f"shift_bar:{x}"] += low >= x * TOLERANCE
        if step:
            continue
        c["nights"] += 1
        c["row_nights"] += rows
        c["first_false"] += sum(j.first.verdict == "REGRESSION" for j in judged)
        c["first_on_flagged"] += sum(
            bool(set(j.first.result.nodes) & set(flagged)) for j in judged if j.first.result
        )
        c["first_slow"] += sum(j.first_factor > 1 for j in judged)
        for p in policies:
            bad = sum(v == "REGRESSION" for v in finals[p])
            c[f"false:{p}"] += bad
            c[f"green:{p}"] += bad == 0
            c[f"unconfirmed:{p}"] += sum(v == "UNCONFIRMED" for v in finals[p])
            c[f"gpu_h_reruns:{p}"] += sum(
                j.used[p] * st.model.gpu_hours() for j, st in zip(judged, states, strict=True)
            )
        c["gpu_h"] += sum(st.model.gpu_hours() for st in states)
        c["shift"] += sum(v == "SHIFT" for v in finals[primary])
        for j in judged:
            if j.final[primary].verdict == "REGRESSION":
                c[f"false_path:{_path(j, primary)}"] += 1
        for j in judged:  # how large the steps no-change nights call SHIFT are
            step_info = (j.final[primary].history or {}).get("step") or {}
            if j.final[primary].verdict == "SHIFT":
                d = step_info.get("delta") or 0.0
                c[f"shift_size:{_bucket(d)}"] += 1
        for j in judged:
            truth = _named_truth(j, cluster, primary)
            if truth is not None:
                c["unconfirmed_named"] += truth[0]
                c["unconfirmed_named_slow"] += truth[0] and truth[1]
                c["unconfirmed_named_healthy"] += truth[2]
                c["unconfirmed_slow"] += j.first_factor > 1
                launch = _says_slow_launch(j, primary)
                c["unconfirmed_launch"] += launch
                c["unconfirmed_launch_slow"] += launch and j.first_factor > 1
        noted = slow_tonight(
            NightRun(
                st.row.id,
                j.first.comparison.p_slower,
                j.first.verdict == "REGRESSION",
                j.first.result.nodes,
            )
            for st, j in zip(states, judged, strict=True)
            if j.first.comparison is not None and j.first.result is not None
        )
        c["noted_slow"] += sum(n.node in cluster.slow for n in noted)
        c["noted_healthy"] += sum(n.node not in cluster.slow for n in noted)
        for s in SLOWDOWNS:  # slowed copies of random rows: their own launches, not in history
            for _ in range(probes):
                st = states[int(rng.integers(rows))]
                j = judge_night(st, cluster, rng, night, primary, policies, s, flagged,
                                first_avoid, common)  # fmt: skip
                c[f"probe:{s}"] += 1
                c[f"probe_first:{s}:{j.first.verdict}"] += 1
                if s == SLOWDOWNS[0] and j.final[primary].verdict != "REGRESSION":
                    c[f"probe_lost:{_path(j, primary)}"] += 1
                for p in policies:
                    c[f"caught:{s}:{p}"] += j.final[p].verdict == "REGRESSION"
                truth = _named_truth(j, cluster, primary)
                if truth is not None and s == SLOWDOWNS[0]:
                    c["probe_unconfirmed"] += 1
                    c["probe_unconfirmed_named"] += truth[0]
    if step:
        c["series"] = rows
        for x in SHIFT_BARS:
            c[f"found_bar:{x}"] = sum(v for k, v in c.items() if k.startswith(f"found_bar:{x}:"))
        for k in [k for k in c if k.startswith("found_bar:") and k.count(":") == 2]:
            del c[k]
        for p in policies:
            c[f"found:{p}"] = sum(v for k, v in c.items() if k.startswith(f"found:{p}:"))
            c[f"found_regression:{p}"] = sum(
                v for k, v in c.items() if k.startswith(f"found_regression:{p}:")
            )
        for k in [k for k in c if k.count(":") == 2 and k.startswith("found")]:
            del c[k]
    c["flagged_nodes_true"] = sum(1 for n in flagged if n in cluster.slow)
    c["flagged_nodes_false"] = sum(1 for n in flagged if n not in cluster.slow)
    return dict(c)


def _path(j: Night, policy: str) -> str:
    """The launches a policy's verdict rests on: first>rerun>... verdicts, slow ones marked *."""
    marks = [f"{j.first.verdict}{'*' if j.first_factor > 1 else ''}"]
    marks += [f"{e.verdict}{'*' if f > 1 else ''}" for e, f, _ in j.launches[: j.used[policy]]]
    return ">".join(marks)


SHIFT_BUCKETS = (0.005, 0.01, 0.02)
SHIFT_BARS = (0.0, 0.1, 0.2, 0.3, 0.4)  # SHIFT at a step shown above this share of tolerance


def _shift_low(ev: verdicts.Evaluation) -> float:
    """The lower bound of a step within tolerance that tonight's verdict would let stand as a
    SHIFT (-inf: none): what trend.SHIFT_SHARE is compared with."""
    step = (ev.history or {}).get("step") or {}
    if ev.verdict not in ("PASS", "INCONCLUSIVE", "SHIFT") or step.get("verdict") not in (
        "PASS",
        "SHIFT",
    ):
        return -math.inf
    low = step.get("ci_low")
    return low if low is not None and low > 0 else -math.inf


def _bucket(d: float) -> str:
    """The size class of a step: <0.5%, 0.5-1%, 1-2%, >=2%."""
    for i, top in enumerate(SHIFT_BUCKETS):
        if d < top:
            return f"{SHIFT_BUCKETS[i - 1]:.1%}-{top:.1%}" if i else f"<{top:.1%}"
    return f">={SHIFT_BUCKETS[-1]:.1%}"


def _p(ev: verdicts.Evaluation) -> float:
    """The p-value BH sees: the row's own comparison (a confirmed row: its weakest run's)."""
    comps = [e.comparison for e in (ev, *ev.confirmed_by) if e.comparison is not None]
    return max((x.p_slower for x in comps), default=math.nan)


# --- the experiment ---------------------------------------------------------------------------


def _season_job(job: tuple) -> dict[str, float]:
    seed, model, rows, nights, primary, fdr, step, kw = job
    return season(np.random.default_rng(seed), model, rows, nights, primary, fdr, step, **kw)


def simulate(
    seed: int,
    model: str,
    rows: int,
    nights: int,
    seasons: int,
    primary: str,
    fdr: float | None,
    jobs: int = 1,
    **kw,
) -> dict:
    """seasons of no-change nights (with slowed-row probes) and seasons of 3% steps.

    kw: season()'s shape, probes, policies, avoid."""
    import multiprocessing

    seeds = np.random.SeedSequence(seed).spawn(2 * seasons)
    work = [(s, model, rows, nights, primary, fdr, False, kw) for s in seeds[:seasons]]
    work += [(s, model, rows, nights, primary, fdr, True, kw) for s in seeds[seasons:]]
    if jobs > 1:
        with multiprocessing.get_context("fork").Pool(jobs) as pool:
            parts = pool.map(_season_job, work)
    else:
        parts = [_season_job(w) for w in work]
    t: dict[str, float] = defaultdict(float)
    for part in parts:
        for k, v in part.items():
            t[k] += v
    policies = tuple(dict.fromkeys((primary, *kw.get("policies", ()))))
    per: dict[str, dict] = {}
    for p in policies:
        per[p] = {
            "rule": POLICIES[p][0],
            "false_per_row": t[f"false:{p}"] / t["row_nights"],
            "false_per_night": t[f"false:{p}"] / t["nights"],
            "all_green_nights": t[f"green:{p}"] / t["nights"],
            "unconfirmed_per_night": t[f"unconfirmed:{p}"] / t["nights"],
            "rerun_gpu_share": t[f"gpu_h_reruns:{p}"] / t["gpu_h"],
            "step_found_within": t[f"found:{p}"] / t["series"],
            "step_regression_within": t[f"found_regression:{p}"] / t["series"],
            **{f"caught_{s:.0%}": t[f"caught:{s}:{p}"] / t[f"probe:{s}"] for s in SLOWDOWNS},
        }
    named = t["unconfirmed_named"]
    return {
        "rows": rows,
        "nights": t["nights"],
        "probes": t[f"probe:{SLOWDOWNS[0]}"],
        "step_series": t["series"],
        "primary": primary,
        "policies": per,
        "first_false_per_row": t["first_false"] / t["row_nights"],
        "first_slow_per_row": t["first_slow"] / t["row_nights"],
        "first_on_flagged_per_row": t["first_on_flagged"] / t["row_nights"],
        "shift_per_night": t["shift"] / t["nights"],
        "shift_bars": {
            x: (t[f"shift_bar:{x}"] / t["nights"], t[f"found_bar:{x}"] / t["series"])
            for x in SHIFT_BARS
        },
        "shift_sizes": {
            k.split(":", 1)[1]: v / t["nights"] for k, v in t.items() if k.startswith("shift_size:")
        },
        "unconfirmed_named_share": named / max(1.0, t[f"unconfirmed:{primary}"]),
        "unconfirmed_named_slow": t["unconfirmed_named_slow"] / named if named else math.nan,
        "unconfirmed_slow": t["unconfirmed_slow"] / max(1.0, t[f"unconfirmed:{primary}"]),
        "named_healthy_per_night": t["unconfirmed_named_healthy"] / t["nights"],
        "unconfirmed_launch_share": t["unconfirmed_launch"] / max(1.0, t[f"unconfirmed:{primary}"]),
        "unconfirmed_launch_slow": (
            t["unconfirmed_launch_slow"] / t["unconfirmed_launch"]
            if t["unconfirmed_launch"]
            else math.nan
        ),
        "probe_unconfirmed_named": t["probe_unconfirmed_named"],
        "probe_unconfirmed": t["probe_unconfirmed"],
        "probe_first": {
            k.split(":", 1)[1]: v / t[f"probe:{k.split(':')[1]}"]
            for k, v in t.items()
            if k.startswith("probe_first:")
        },
        "probe_lost": {k.split(":", 1)[1]: v for k, v in t.items() if k.startswith("probe_lost:")},
        "false_paths": {k.split(":", 1)[1]: v for k, v in t.items() if k.startswith("false_path:")},
        "noted_slow_per_night": t["noted_slow"] / t["nights"],
        "noted_healthy_per_night": t["noted_healthy"] / t["nights"],
        "flagged_nodes_true": t["flagged_nodes_true"] / (2 * seasons),
        "flagged_nodes_false": t["flagged_nodes_false"] / (2 * seasons),
    }


def report(res: dict, args: dict) -> str:
    """Markdown: one line per policy, then what the --confirm policy's nights showed."""
    how = [f"slow nodes {args['slow_nodes']}", f"shape {args['shape']}", f"seed {args['seed']}"]
    if args.get("fdr"):
        how.append(f"--fdr {args['fdr']:g}")
    if not args.get("avoid", True):
        how.append("first runs not kept off flagged nodes")
    if args.get("history_noise") == "plain":
        how.append("history noise plain")
    out = [
        f"## Nightly matrix: {res['rows']} rows, {', '.join(how)}, tolerance {TOLERANCE:.0%}, "
        f"{res['nights']:.0f} nights, {res['probes']:.0f} probes per slowdown, "
        f"{res['step_series']:.0f} stepped rows",
        "",
        "| rerun policy | false REGRESSIONs per night | nights all green | UNCONFIRMED per night "
        "| one row slowed 5% caught | slowed 8% caught | 3% step flagged within 5 nights "
        "(as REGRESSION) | rerun GPU-hours / first runs' |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, p in res["policies"].items():
        mark = " (--confirm)" if name == res["primary"] else ""
        out.append(
            f"| {name}{mark}: {p['rule']} | {p['false_per_night']:.3f} | "
            f"{p['all_green_nights']:.1%} | {p['unconfirmed_per_night']:.2f} | "
            f"{p['caught_5%']:.1%} | {p['caught_8%']:.1%} | {p['step_found_within']:.1%} "
            f"({p['step_regression_within']:.1%}) | {p['rerun_gpu_share']:.2%} |"
        )
    out += [
        "",
        f"- first runs REGRESSION before reruns: {res['first_false_per_row']:.2%} of rows; "
        f"slow launches {res['first_slow_per_row']:.2%}; on a flagged node "
        f"{res['first_on_flagged_per_row']:.2%}",
        f"- SHIFT per night at no change: {res['shift_per_night']:.3f} ("
        + ", ".join(f"{k}: {v:.3f}" for k, v in sorted(res["shift_sizes"].items()))
        + ")",
        "- SHIFT bar (share of tolerance the step's lower bound must clear): SHIFT per night at "
        "no change / 3% step flagged within 5 nights: "
        + ", ".join(f"{x:.0%}: {a:.3f} / {b:.1%}" for x, (a, b) in res["shift_bars"].items()),
        f"- UNCONFIRMED naming nodes: {res['unconfirmed_named_share']:.1%}; of those, naming a "
        f"node that was really slow: {res['unconfirmed_named_slow']:.1%} (first launch really "
        f"slow: {res['unconfirmed_slow']:.1%} of UNCONFIRMED); healthy nodes named per night: "
        f"{res['named_healthy_per_night']:.3f}; saying one slow launch: "
        f"{res['unconfirmed_launch_share']:.1%}, of those really slow: "
        f"{res['unconfirmed_launch_slow']:.1%}",
        f"- slowed 5% rows passed as UNCONFIRMED: {res['probe_unconfirmed']:.0f}, naming nodes: "
        f"{res['probe_unconfirmed_named']:.0f}",
        "- slowed rows' first runs: "
        + ", ".join(f"{k} {v:.1%}" for k, v in sorted(res["probe_first"].items())),
        "- slowed 5% rows not caught, by path (* slow launch): "
        + ", ".join(f"{k} {v:.0f}" for k, v in sorted(res["probe_lost"].items())),
        "- false REGRESSIONs by path: "
        + ", ".join(f"{k} {v:.0f}" for k, v in sorted(res["false_paths"].items())),
        f"- nodes tonight's runs single out, per night: slow {res['noted_slow_per_night']:.2f}, "
        f"healthy {res['noted_healthy_per_night']:.3f}",
        f"- slow nodes flagged by perfgate nodes per season (true / false): "
        f"{res['flagged_nodes_true']:.1f} / {res['flagged_nodes_false']:.1f}",
    ]
    return "\n".join(out)
