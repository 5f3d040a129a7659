"""A stored baseline's own within-run error is part of a comparison's standard error (#25)."""

from __future__ import annotations

import math

import pytest

from perfgate import stats
from perfgate.catalog import Baseline, BaselineRun, Provenance
from perfgate.stats.noise import baseline_within


def _steps(median: float, cv: float, n: int = 60) -> list[float]:
    # 5 warm-up steps, then a deterministic pattern with the given per-step CV
    return [3 * median] * 5 + [
        median * (1 + cv * math.sqrt(2) * math.sin(1.7 * i)) for i in range(n)
    ]


def test_a_one_run_baseline_carries_its_runs_error() -> None:
    run = stats.summarize_run(_steps(2.0, 0.03))
    assert run.rel_se > 0.003  # a noisy 60-step run: its median is known to ~0.4%
    with_error = Baseline(run.median_s, Provenance("perfgate run"), n_runs=1,
                          runs=(BaselineRun(run.median_s, run.rel_se),))  # fmt: skip
    without = Baseline(run.median_s, Provenance("perfgate run"), n_runs=1)
    assert baseline_within(with_error) == pytest.approx(run.rel_se**2)
    assert baseline_within(without) == 0.0
    cand = _steps(2.0 * 1.01, 0.03)
    kw = {"prior_sigma": 0.0045, "prior_df": 11}
    a = stats.compare_to_baseline([cand], with_error, 0.05, **kw)
    b = stats.compare_to_baseline([cand], without, 0.05, **kw)
    assert a.se == pytest.approx(math.sqrt(b.se**2 + run.rel_se**2))
    assert a.ci_high - a.ci_low > b.ci_high - b.ci_low


def test_a_k_run_baseline_adds_the_error_of_its_mean() -> None:
    runs = tuple(BaselineRun(2.0, 0.004) for _ in range(3))
    base = Baseline(2.0, Provenance("perfgate run"), n_runs=3, runs=runs)
    assert baseline_within(base) == pytest.approx(3 * 0.004**2 / 9)
