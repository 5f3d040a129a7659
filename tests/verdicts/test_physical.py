"""A run faster than the GPU can be is INFRA IMPOSSIBLE, not a measurement (issue #25 item 4).

The issue's case: a `command` row (llama3_8b, 2 H100s, gbs 8 x seq_len 128) whose script
trained something far smaller than Llama 3 8B measured 383% MFU and passed as a PASS; only
the baseline write refused it.
"""

from __future__ import annotations

import random
from dataclasses import replace

from rowfactory import make_row

from perfgate import flops, runs
from perfgate.catalog import Baseline, Provenance
from perfgate.logs import Step, StepSeries
from perfgate.runs import RunRecord, RunResult
from perfgate.verdicts import INFRA, PASS, evaluate
from perfgate.verdicts.paired import evaluate_ab
from perfgate.verdicts.physical import impossible, mfu_by_convention

ROW = make_row(
    model="llama3_8b", num_gpus=2, gbs=8, mbs=1, seq_len=128, tp=1, backend="command", variant="ok"
)
# 0.0305 s is what the stand-in trainer takes: MFU ~0.77. A fifth of it is 383%.
REAL_S, FAST_S = 0.0305, 0.0305 / 5


def _result(*levels: float, labels: tuple[str, ...] = ()) -> RunResult:
    rng = random.Random(5)
    out = []
    for i, level in enumerate(levels):
        times = [level * (3.0 if k < 3 else 1.0) * (1 + rng.gauss(0, 0.01)) for k in range(40)]
        series = StepSeries("perfgate", tuple(Step(k, t) for k, t in enumerate(times)))
        label = labels[i] if labels else "baseline"
        out.append(RunRecord(image=f"img-{label}", label=label, series=series))
    return RunResult(ROW.id, "77", "LOCAL", runs=tuple(out))


def test_the_issues_run_is_infra_impossible_with_every_conventions_mfu():
    row = ROW
    ev = evaluate(row, _result(FAST_S), source="live")
    assert ev.verdict == INFRA and ev.cause == "IMPOSSIBLE" and "IMPOSSIBLE" in runs.CAUSES
    mfu = mfu_by_convention(row, ev.measured.step_time_s)
    assert set(mfu) == set(flops.CONVENTIONS) and min(mfu.values()) > 3.5
    for conv, value in mfu.items():
        assert f"{conv} {value:.2f}" in ev.message
    assert "dense BF16 peak (989 TFLOP/s per GPU" in ev.message
    # the likely reasons, with the row's own tokens per step
    assert "another row's" in ev.message and "gbs 8 x seq_len 128 = 1024" in ev.message
    assert "smaller model than the row's llama3_8b" in ev.message


def test_a_physical_run_is_judged_as_before():
    base = Baseline(REAL_S, Provenance("perfgate run"), tolerance=0.5)
    row = replace(ROW, baseline=base)
    assert impossible(row, REAL_S) is None
    assert evaluate(row, _result(REAL_S), source="live").verdict == PASS


def test_one_impossible_run_of_k_makes_the_row_impossible():
    ev = evaluate(ROW, _result(REAL_S, FAST_S, REAL_S), source="replay")
    assert ev.verdict == INFRA and ev.cause == "IMPOSSIBLE"


def test_mfu_just_above_one_under_one_convention_only_is_not_impossible():
    # nemo2 counts attention twice as much as the others: a step time between their two
    # counts is MFU > 1 under nemo2 only. The conventions disagree; no verdict from that.
    lo, hi = sorted(mfu_by_convention(ROW, 1.0).values())[:: len(flops.CONVENTIONS) - 1]
    assert hi > lo
    step = (lo + hi) / 2  # MFU = step / step_time at 1 s: above 1 for hi only
    assert impossible(ROW, step) is None


def test_an_ab_job_that_ran_something_else_is_infra_impossible():
    labels = ("baseline", "candidate", "candidate", "baseline", "baseline", "candidate")
    res = _result(*[FAST_S] * 6, labels=labels)
    ev = evaluate_ab(ROW, res, source="live", first_pairs=3, max_pairs=3)
    assert ev.verdict == INFRA and ev.cause == "IMPOSSIBLE" and ev.ab is not None
