"""A step in a row's history is counted in nights, not points (perfgate.verdicts.nightly): a
night whose REGRESSION was reproduced keeps its first run and its reruns, and on the next
night those runs must not read as a persistent step. Real 8-GPU B200 series (Megatron-Bridge,
NeMo 26.02, tests/verdicts/conftest.py) as tonight's run."""

from __future__ import annotations

from perfgate import verdicts
from perfgate.catalog import Row
from perfgate.history.trend import Point
from perfgate.logs import Step, StepSeries
from perfgate.runs import RunRecord, RunResult
from perfgate.stats import Noise

# 20 quiet nights around the baseline (+-0.4%), as step-time factors
QUIET = [1.000, 0.997, 1.003, 1.001, 0.996, 1.002, 0.999, 1.004, 0.998, 1.000,
         1.001, 0.997, 1.003, 0.999, 1.002, 0.996, 1.000, 1.003, 0.998, 1.001]  # fmt: skip


def _points(row: Row, late: list[tuple[int, float]]) -> list[Point]:
    """QUIET nights 1..20, then (night, factor) runs; runs of one night share its session."""
    base = row.baseline.step_time_s
    nights = list(enumerate(QUIET, start=1)) + late
    return [
        Point(100 + n, f"2026-03-{n:02d}T01:00:00+00:00", base * f, 0.001, job_id=f"j{n}.{i}")
        for i, (n, f) in enumerate(nights)
    ]


def _tonight(row: Row, steps: list[float]) -> RunResult:
    series = StepSeries("megatron", tuple(Step(i, t) for i, t in enumerate(steps)))
    run = RunRecord(image="nemo:26.02", label="baseline", series=series)
    return RunResult(row.id, "j30", "COMPLETED", runs=(run,), nodes=("n1",))


def _judge(row: Row, steps: list[float], late: list[tuple[int, float]]) -> verdicts.Evaluation:
    return verdicts.evaluate(
        row,
        _tonight(row, steps),
        source="live",
        noise=Noise(confirming=True),
        history=_points(row, late),
    )


def test_three_slow_runs_of_one_night_are_not_a_step(row, steps) -> None:
    # night 21: a first run and two reruns, all 6% slow (a REGRESSION reproduced by two slow
    # launches); tonight the row runs at its baseline
    ev = _judge(row, steps, [(21, 1.06), (21, 1.062), (21, 1.058)])
    assert ev.verdict == "PASS" and ev.mode == "stored"
    assert ev.history["step"] is None
    assert ev.history["change_points"]  # the search sees the change; the step needs nights


def test_the_same_runs_on_three_nights_are_a_step(row, steps) -> None:
    ev = _judge(row, steps, [(21, 1.06), (22, 1.062), (23, 1.058)])
    assert ev.mode == "history" and ev.verdict in ("REGRESSION", "SHIFT")
    step = ev.history["step"]
    assert step["index"] == 20 and step["n_after"] == 4
    assert step["delta"] > 0.03
