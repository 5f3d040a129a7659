"""Phases outside A/B (#23): a one-run row's phases against the baseline's stored ones, and
--update-baselines storing phases_s from the runs it stores (report.results, catalog.schema)."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
from rowfactory import make_row

from perfgate import catalog, verdicts
from perfgate.catalog import Baseline, Provenance, Row
from perfgate.catalog.schema import baseline_from_dict, row_from_dict
from perfgate.errors import ConfigError
from perfgate.logs import Step, StepSeries
from perfgate.logs.phases import PhaseSeries
from perfgate.report import results
from perfgate.report.extras import detail_html
from perfgate.runs import RunRecord, RunResult

STORED = {"forward-backward": 0.060, "all-grads-sync": 0.020, "optimizer": 0.020}


def row(phases_s: dict[str, float] | None = None) -> Row:
    base = Baseline(step_time_s=0.1, provenance=Provenance("perfgate run"), phases_s=phases_s or {})
    return make_row(
        model="llama3_8b", num_gpus=8, gbs=128, mbs=1, seq_len=8192, tp=1, baseline=base
    )


def one_run(optimizer_s: float = 0.030) -> RunResult:
    """40 steps; from step 0 the optimizer takes optimizer_s (the step grows with it)."""
    cols = {"forward-backward": [], "all-grads-sync": [], "optimizer": []}
    steps = []
    for i in range(40):
        warm = 4.0 if i == 0 else 1.0 + 0.001 * (i % 3)
        parts = {"forward-backward": 0.06, "all-grads-sync": 0.02, "optimizer": optimizer_s}
        for k, v in parts.items():
            cols[k].append(v * warm)
        steps.append(Step(i, sum(parts.values()) * warm))
    run = RunRecord(
        image="nemo.sqsh",
        label="baseline",
        series=StepSeries("megatron", tuple(steps)),
        exit_code=0,
        phases=PhaseSeries(tuple(range(40)), {k: tuple(v) for k, v in cols.items()}),
    )
    return RunResult("r", "5", "COMPLETED", runs=(run,), nodes=("n1",))


def record(r: Row, result: RunResult) -> dict:
    ev = verdicts.evaluate(r, result, source="live")
    return results.record(ev, r, nodeid="x", outcome="passed", repro="pytest", source="live")


def test_one_run_shows_each_phase_against_the_stored_phases():
    rec = record(row(STORED), one_run(optimizer_s=0.030))
    phases = {p["name"]: p for p in rec["phases"]["phases"]}
    assert rec["phases"]["stored"] is True
    assert phases["optimizer"]["run_s"] == pytest.approx(0.03003, abs=1e-6)
    assert phases["optimizer"]["delta"] == pytest.approx(0.5, abs=0.01)  # 30 ms vs 20 ms
    assert phases["optimizer"]["share"] == pytest.approx(0.1, abs=0.002)  # 10 ms of 100 ms
    assert abs(phases["forward-backward"]["delta"]) < 0.01
    html = detail_html(rec)
    assert "one run against the baseline&#x27;s stored phase medians: point estimates" in html
    assert "<td>optimizer</td><td>30.03 ms</td><td>20 ms</td><td>+50.2%</td><td>+10.0%</td>" in html


def test_a_baseline_without_phases_says_how_to_store_them():
    rec = record(row(), one_run())
    assert rec["phases"]["stored"] is False
    assert all(p["baseline_s"] is None for p in rec["phases"]["phases"])
    assert "the baseline stores no phases yet (--update-baselines stores them)" in detail_html(rec)


def test_update_baselines_stores_the_runs_phase_medians_and_they_round_trip():
    rec = record(row(), one_run(optimizer_s=0.030))
    assert rec["runs"][0]["phases"]["option"] == "minmax"
    new = results.baseline_from_record(rec, row())
    assert new.phases_s["optimizer"] == pytest.approx(0.03003, abs=1e-6)
    assert set(new.phases_s) == set(STORED)
    # (the synthetic step is too fast for the row's MFU check: the phases travel on a 5 s one)
    stored = Baseline(step_time_s=5.0, provenance=Provenance("perfgate run"), phases_s=new.phases_s)
    data = catalog.row_to_dict(replace(row(), baseline=stored))
    assert data["baseline"]["phases_s"] == new.phases_s
    back = row_from_dict(data, "test")
    assert back.baseline is not None and back.baseline.phases_s == new.phases_s


@pytest.mark.parametrize(
    ("phases", "message"),
    [
        ([1, 2], "field 'baseline.phases_s': must be an object of phase: seconds, not [1, 2]"),
        ({"optimizer": -1.0}, "field 'baseline.phases_s.optimizer': must be seconds > 0, not -1"),
        ({"optimizer": math.inf}, "must be seconds > 0"),
        ({"bad name!": 0.1}, "field 'baseline.phases_s'"),
    ],
)
def test_bad_stored_phases_are_one_line(phases, message):
    data = {"step_time_s": 1.0, "provenance": {"source": "perfgate run"}, "phases_s": phases}
    with pytest.raises(ConfigError) as e:
        baseline_from_dict(data, "h100.json")
    assert message in str(e.value) and "\n" not in str(e.value)
