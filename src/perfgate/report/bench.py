"""Feed the measured steady step times of a row to pytest-benchmark, honestly.

pytest-benchmark times a callable with a timer. Here the "callable" is one training step that
already happened on the cluster, and the timer is a replay clock: it reads 0 before the call
and the measured step time after it, so each stored round is exactly one measured step time
(not the few microseconds Python needs to replay it). Rounds = steady steps, iterations = 1,
no warm-up rounds (warm-up was removed by perfgate.stats). The benchmark JSON's options.timer
names this clock so nobody mistakes the numbers for local timings.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


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
    """Record the steady step times as the benchmark's rounds (no-op when there are none)."""
    if not steady:
        return
    clock.load(steady)
    benchmark.extra_info.update(info)
    benchmark.pedantic(clock.step, rounds=len(steady), iterations=1, warmup_rounds=0)
