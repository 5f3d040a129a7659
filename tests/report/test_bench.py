"""pytest-benchmark receives exactly the measured step times (replay clock), nothing local."""

from __future__ import annotations

import json

from perfgate.report.bench import StepClock

pytest_plugins = ["pytester"]

TIMES = [5.6628, 5.6532, 5.6478, 5.6559, 5.6832, 5.6643]


def test_clock_reads_zero_then_the_step_time():
    clock = StepClock()
    clock.load(TIMES[:2])
    assert clock() == 0.0
    clock.step()
    assert clock() == TIMES[0]
    assert clock() == 0.0
    clock.step()
    assert clock() == TIMES[1]


def test_benchmark_json_holds_the_measured_step_times(pytester):
    pytester.makepyfile(
        f"""
        import pytest
        from perfgate.report.bench import StepClock, feed

        def test_row(request):
            clock = StepClock()
            request.node.add_marker(pytest.mark.benchmark(timer=clock, group="b200"))
            feed(request.getfixturevalue("benchmark"), clock, {TIMES!r}, {{"row_id": "r1"}})
        """
    )
    result = pytester.runpytest("-p", "no:cacheprovider", "--benchmark-json=bench.json")
    result.assert_outcomes(passed=1)
    data = json.loads((pytester.path / "bench.json").read_text())
    (b,) = data["benchmarks"]
    assert b["group"] == "b200"
    assert b["extra_info"] == {"row_id": "r1"}
    assert b["options"]["timer"] == "perfgate_measured_step_time"
    assert b["stats"]["rounds"] == len(TIMES)
    assert b["stats"]["data"] == TIMES
    assert b["stats"]["min"] == min(TIMES) and b["stats"]["max"] == max(TIMES)
