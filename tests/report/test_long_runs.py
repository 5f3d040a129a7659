"""A million-step run downstream of the parser: the plot, results.json, the benchmark and the
history stay bounded (perfgate.report.decimate), and keep what a reader looks for."""

from __future__ import annotations

import json
import math
import random
import re
import time

import pytest

from perfgate.history.records import stored_summary
from perfgate.logs import Step, StepSeries
from perfgate.report import results
from perfgate.report.bench import MAX_ROUNDS, StepClock, feed
from perfgate.report.decimate import MAX_POINTS, decimate
from perfgate.report.plot import Trace, step_time_svg
from perfgate.runs import RunRecord
from perfgate.stats import summarize_run

N = 1_000_000


@pytest.fixture(scope="module")
def long_run() -> tuple[list[int], list[float]]:
    rng = random.Random(2)
    times = [6.0 + rng.gauss(0, 0.02) for _ in range(N)]
    times[0], times[777_777], times[123_456] = 60.0, 9.5, 4.1  # warm-up, a spike, a dip
    return list(range(N)), times


def test_decimation_keeps_the_spikes_and_the_findings(long_run):
    numbers, times = long_run
    with_nan = list(times)
    with_nan[500_000] = math.nan
    pts = decimate(numbers, with_nan)
    assert len(pts) <= MAX_POINTS + 1
    kept = dict(pts)
    assert kept[0] == 60.0 and kept[777_777] == 9.5 and kept[123_456] == 4.1
    assert math.isnan(kept[500_000])
    assert [s for s, _ in pts] == sorted(s for s, _ in pts)
    assert decimate([1, 2], [3.0, 4.0]) == [(1, 3.0), (2, 4.0)]


def test_a_million_point_plot_is_small_and_shows_the_spike(long_run):
    numbers, times = long_run
    start = time.process_time()
    points = list(zip(numbers, times, strict=True))
    svg = step_time_svg([Trace("t", points)], "long", window=(10, N - 1), median_s=6.0)
    assert time.process_time() - start < 30
    assert len(svg) < 300_000, len(svg)
    # The 9.5 s spike is the polyline's highest point (an average per bucket would lose it).
    polyline = re.search(r'<polyline class="steps" points="([^"]*)"', svg).group(1)
    ys = [float(p.split(",")[1]) for p in polyline.split()]
    assert min(ys) < 100 and len(ys) <= MAX_POINTS + 1


def test_results_json_keeps_a_long_run_bounded_with_its_full_summary(long_run):
    numbers, times = long_run
    series = StepSeries(
        "nemo2", [Step(s, t) for s, t in zip(numbers[:30], times[:30], strict=True)]
    )
    short = results._run_entry(RunRecord(image=None, label="baseline", series=series))
    assert "n_steps" not in short and len(short["steps"]) == 30
    series = StepSeries("nemo2", [Step(s, t) for s, t in zip(numbers, times, strict=True)])
    entry = results._run_entry(RunRecord(image=None, label="baseline", series=series))
    assert entry["n_steps"] == N and len(entry["steps"]) <= results.MAX_STORED_POINTS + 1
    assert len(json.dumps(entry)) < 1_000_000
    full = summarize_run(times)
    # The history and --update-baselines take the stored summary of every step.
    got = stored_summary(json.loads(json.dumps(entry)), "auto")
    assert got == full  # every field, reason None included


def test_the_benchmark_gets_an_even_sample_of_a_long_steady_window():
    calls = {}

    class Bench:
        def __init__(self) -> None:
            self.extra_info: dict = {}

        def pedantic(self, fn, rounds, iterations, warmup_rounds):
            calls["rounds"] = rounds
            for _ in range(rounds):
                fn()

    bench = Bench()
    feed(bench, StepClock(), [6.0] * (MAX_ROUNDS * 3 + 1), {})
    assert calls["rounds"] <= MAX_ROUNDS
    assert "every 4th" in bench.extra_info["rounds_sampled"]
