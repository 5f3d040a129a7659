"""Where the time went (perfgate.verdicts.phases): each phase A vs B with the paired statistics,
through a row's A/B verdict (evaluate_ab) and its report block (perfgate.report.phases).

The runs are seeded and synthetic: a 40-step series of three phases (forward-backward,
all-grads-sync, optimizer) with 1% step noise and a launch effect per run; the step time is
their sum. The candidate's slowdown is put in one phase only.
"""

from __future__ import annotations

import math
import random

import pytest
from rowfactory import make_row

from perfgate.logs import Step, StepSeries
from perfgate.logs.phases import PhaseSeries
from perfgate.report.ab import ab_html
from perfgate.report.phases import headline, phases_html
from perfgate.runs import RunRecord, RunResult
from perfgate.verdicts.paired import evaluate_ab

BASE = {"forward-backward": 0.080, "all-grads-sync": 0.010, "optimizer": 0.010}
STEPS = 40


def run(label: str, rng: random.Random, slow: dict[str, float], timers: bool = True) -> RunRecord:
    launch = rng.gauss(1.0, 0.004)
    cols: dict[str, list[float]] = {n: [] for n in BASE}
    steps = []
    for i in range(STEPS):
        warm = 3.0 if i == 0 else 1.0
        t = 0.0
        for name, s in BASE.items():
            x = s * (1 + slow.get(name, 0.0)) * launch * warm * rng.gauss(1.0, 0.01)
            cols[name].append(x)
            t += x
        steps.append(Step(i, t))
    phases = PhaseSeries(tuple(range(STEPS)), {n: tuple(v) for n, v in cols.items()})
    return RunRecord(
        image=f"/img/{label}.sqsh",
        label=label,
        series=StepSeries("megatron", tuple(steps)),
        versions={"nccl": "2.27.3" if label == "baseline" else "2.27.7", "torch": "2.8.0"},
        exit_code=0,
        phases=phases if timers else None,
    )


def judged(slow: dict[str, float], pairs: int = 4, seed: int = 7, timers: bool = True):
    rng = random.Random(seed)
    runs = []
    for i in range(pairs):
        a, b = run("baseline", rng, {}, timers), run("candidate", rng, slow, timers)
        runs += [a, b] if i % 2 == 0 else [b, a]
    # a 100 ms step the hardware can run: Llama 3.2 1B, 8 x 4096 tokens on 8 GPUs (~30% MFU)
    row = make_row(model="llama32_1b", num_gpus=8, gbs=8, mbs=1, seq_len=4096, tp=1)
    result = RunResult("r", "77", "COMPLETED", runs=tuple(runs), nodes=("n1",))
    return evaluate_ab(row, result, source="live", first_pairs=3, max_pairs=8, tolerance=0.03)


def by_name(ev) -> dict[str, dict]:
    return {p["name"]: p for p in ev.ab["phases"]["phases"]}


def test_a_slower_optimizer_moves_alone_and_its_share_is_its_part_of_the_step():
    ev = judged({"optimizer": 0.5})  # +5 ms on a 100 ms step
    assert ev.verdict == "REGRESSION"
    phases = by_name(ev)
    opt = phases["optimizer"]
    assert opt["moved"] == "slower" and opt["pairs"] == 4
    assert opt["delta"] == pytest.approx(0.5, abs=0.03)
    assert opt["ci_low"] > 0.3  # the interval excludes no change by far
    assert opt["share"] == pytest.approx(0.05, abs=0.005)  # 5 ms of a 100 ms step
    for name in ("forward-backward", "all-grads-sync"):
        assert phases[name]["moved"] == "flat", phases[name]
        assert phases[name]["ci_low"] < 0 < phases[name]["ci_high"]
    assert ev.ab["phases"]["moved"] == ["optimizer"]


def test_the_headline_names_the_moved_phase_the_flat_rest_and_what_changed():
    ev = judged({"all-grads-sync": 0.4})
    line = headline(ev.ab)
    assert line.startswith("Where the time went: all-grads-sync +")
    assert "(+4.0% of the step)" in line  # 4 ms of a 100 ms step
    assert "2 other phases flat" in line
    assert line.endswith("what changed: NCCL 2.27.3 -> 2.27.7")
    html = ab_html({"mode": "paired", "ab": ev.ab, "verdict": ev.verdict, "comparison": None})
    assert '<tr class="pg-changed"><td>all-grads-sync</td>' in html
    assert html.count('class="pg-changed"') >= 2  # the phase row and the NCCL version row


def test_no_change_moves_no_phase():
    ev = judged({}, seed=11)
    assert ev.verdict == "PASS"
    assert ev.ab["phases"]["moved"] == []
    assert headline(ev.ab).startswith("Where the time went: no phase moved (3 compared)")


def test_runs_without_timers_have_no_phase_block():
    ev = judged({"optimizer": 0.5}, timers=False)
    assert ev.ab["phases"] is None
    assert phases_html(ev.ab) == ""
    assert headline(ev.ab).startswith("Phases: the runs printed no timers")


def test_a_phase_only_one_side_timed_is_named_not_compared():
    ev = judged({"optimizer": 0.5})
    runs = list(ev.result.runs)
    extra = []
    for r in runs:
        if r.label == "candidate" and r.phases is not None:
            cols = dict(r.phases.phases)
            cols["optimizer-inner-step"] = tuple(0.004 for _ in cols["optimizer"])
            r = RunRecord(**{**r.__dict__, "phases": PhaseSeries(r.phases.steps, cols)})
        extra.append(r)
    row = ev.row
    again = evaluate_ab(
        row,
        RunResult("r", "77", "COMPLETED", runs=tuple(extra), nodes=("n1",)),
        source="live",
        first_pairs=3,
        max_pairs=8,
        tolerance=0.03,
    )
    inner = by_name(again)["optimizer-inner-step"]
    assert inner["pairs"] == 0 and "not timed in both runs" in inner["note"]
    assert "delta" not in inner and not math.isnan(by_name(again)["optimizer"]["delta"])
