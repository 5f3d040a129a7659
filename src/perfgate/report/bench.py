"""Feed the measured steady step times of a row to pytest-benchmark, honestly.

pytest-benchmark times a callable with a timer. Here the "callable" is one training step that
already happened on the cluster, and the timer is a replay clock: it reads 0 before the call
and the measured step time after it, so each stored round is exactly one measured step time
(not the few microseconds Python needs to replay it). Rounds = steady steps, iterations = 1,
no warm-up rounds (warm-up was removed by perfgate.stats). The benchmark JSON's options.timer
names this clock so nobody mistakes the numbers for local timings.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from typing import Any

import pytest

from perfgate.verdicts import Evaluation
from perfgate.verdicts.paired import candidate_steady_steps

MAX_ROUNDS = 10_000


class StepClock:
    """A pytest-benchmark timer that replays measured step times, one per round."""

    __name__ = "perfgate_measured_step_time"
    __module__ = "perfgate.report.bench"

    def __init__(self) -> None:
        self._times: list[float] = []
        self._next = 0
        self._reading = 0.0

    def load(self, step_times: Sequence[float]) -> None:
        """Set the step times the next rounds replay, in order."""
        self._times = [float(t) for t in step_times]
        self._next = 0
        self._reading = 0.0

    def __call__(self) -> float:
        # Read once before the step (0) and once after (its measured duration).
        value, self._reading = self._reading, 0.0
        return value

    def step(self) -> None:
        """The benchmarked callable: one measured step 'happens'."""
        self._reading = self._times[self._next]
        self._next += 1


def feed(benchmark: Any, clock: StepClock, steady: Sequence[float], info: dict[str, Any]) -> None:
    """Record the steady step times as the benchmark's rounds (no-op when there are none).

    At most MAX_ROUNDS: a longer steady window gives every k-th step (an even sample; each
    round costs pytest-benchmark a timed call, and a million of them took minutes).
    """
    if not steady:
        return
    if len(steady) > MAX_ROUNDS:
        stride = -(-len(steady) // MAX_ROUNDS)
        info = {**info, "rounds_sampled": f"every {stride}th of {len(steady)} steady steps"}
        steady = steady[::stride]
    clock.load(steady)
    benchmark.extra_info.update(info)
    benchmark.pedantic(clock.step, rounds=len(steady), iterations=1, warmup_rounds=0)


def steady_step_times(ev: Evaluation) -> list[float]:
    """The steady step times a row's benchmark records (A/B: the candidate's, run by run)."""
    m, series = ev.measured, ev.series
    if m is None or series is None:
        return []
    if ev.mode == "paired":  # each candidate run in its own window
        return candidate_steady_steps(ev)
    numbers = series.step_numbers  # in step order: the window is one slice
    a, b = bisect_left(numbers, m.window[0]), bisect_right(numbers, m.window[1])
    return series.step_times[a:b]


def feed_evaluation(request: pytest.FixtureRequest, ev: Evaluation) -> None:
    """Give pytest-benchmark (when active) the row's steady steps, grouped by GPU type."""
    config = request.config
    if not config.pluginmanager.hasplugin("benchmark") or config.getoption("benchmark_skip", False):
        return
    m = ev.measured
    if m is None or ev.series is None:
        return
    clock = StepClock()
    request.node.add_marker(pytest.mark.benchmark(timer=clock, group=ev.row.gpu))
    info = {
        "row_id": ev.row.id,
        "verdict": ev.verdict,
        "source": ev.source,
        "window": list(m.window),
        "window_method": m.window_method,
        "baseline_step_time_s": ev.row.baseline.step_time_s if ev.row.baseline else None,
        "tokens_per_s_per_gpu": m.tokens_per_s_per_gpu,
    }
    feed(request.getfixturevalue("benchmark"), clock, steady_step_times(ev), info)
