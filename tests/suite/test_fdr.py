"""--fdr: the night's REGRESSIONs held to a Benjamini-Hochberg bar across its rows."""

from __future__ import annotations

import math
from dataclasses import replace

from rowfactory import make_row

from perfgate.catalog import Baseline, Provenance
from perfgate.logs import Step, StepSeries
from perfgate.runs import RunRecord, RunResult
from perfgate.suite.matrix import apply_fdr, p_value
from perfgate.verdicts import evaluate


def judged(name: str, slowdown: float, cv: float = 0.01):
    """A row judged on one 60-step run `slowdown` slower than its 1-run perfgate baseline
    (per-step CV about cv)."""
    row = make_row(variant=name)
    row = replace(row, baseline=Baseline(2.0, Provenance("perfgate run"), n_runs=1,
                                         tolerance=0.05))  # fmt: skip
    wave = [math.sin(i) for i in range(60)]
    steps = [6.0] * 3 + [2.0 * (1 + slowdown) * (1 + cv * 1.41 * w) for w in wave]
    series = StepSeries("nemo2", tuple(Step(i, t) for i, t in enumerate(steps)))
    res = RunResult(row.id, "1", "COMPLETED", runs=(RunRecord("img", "baseline", series),))
    return row.id, evaluate(row, res, source="live", tolerance=0.05)


def test_a_lone_marginal_regression_does_not_pass_the_night_bar():
    night = dict(judged(f"r{i}", 0.0) for i in range(40))
    key, marginal = judged("marginal", 0.03, cv=0.05)
    assert marginal.verdict == "REGRESSION" and 1e-4 < p_value(marginal) < 0.01
    out = apply_fdr({**night, key: marginal, "skipped": "no log"}, 0.05)
    assert out[key].verdict == "INCONCLUSIVE"
    assert "not past the night's false-discovery bar (--fdr 0.05: p <= 0.0012 over 41 rows)" in (
        out[key].message
    )
    assert out["skipped"] == "no log"
    assert all(out[k].verdict == night[k].verdict for k in night)


def test_a_clear_regression_passes_it():
    night = dict(judged(f"r{i}", 0.0) for i in range(40))
    key, clear = judged("clear", 0.08)
    out = apply_fdr({**night, key: clear}, 0.05)
    assert out[key].verdict == "REGRESSION" and out[key].message == clear.message


pytest_plugins = ["pytester"]


def test_the_plugin_judges_the_night_first_with_fdr(suite):
    from .pytester_suite import EXAMPLES

    suite.shipped_rows()
    plain = suite.run(f"--replay={EXAMPLES}", "-m", "h100")
    before = {k: v["verdict"] for k, v in suite.results()["rows"].items()}
    night = suite.run(f"--replay={EXAMPLES}", "-m", "h100", "--fdr", "0.05")
    after = {k: v["verdict"] for k, v in suite.results()["rows"].items()}
    # the examples' +27% REGRESSION is far past any bar; nothing else changes
    assert before == after and "REGRESSION" in after.values()
    assert plain.ret == night.ret == 1
    assert suite.results()["session"]["options"]["fdr"] == 0.05
