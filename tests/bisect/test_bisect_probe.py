"""One probe (perfgate.bisect.probe) with its jobs stood in for: the options each job gets, an
INCONCLUSIVE probe's extension job, and the pairs of both jobs judged together."""

from __future__ import annotations

from pathlib import Path

import pytest
from rowfactory import command_row

from perfgate.bisect import probe as probe_mod
from perfgate.bisect.probe import ProbeConfig, merged, run_probe
from perfgate.launch.digests import ImageDigests
from perfgate.launch.types import LaunchOptions
from perfgate.logs import Step, StepSeries
from perfgate.runs import RunRecord, RunResult

ROW = command_row("bisect", steps=40, time_limit_min=2)
GOOD, MID = "nightly-1", "nightly-4"


def run(label: str, factor: float) -> RunRecord:
    steps = tuple(
        Step(i, 0.1 * factor * (3.0 if i == 0 else 1.0 + 0.001 * (i % 3))) for i in range(40)
    )
    return RunRecord(
        image=GOOD if label == "baseline" else MID,
        label=label,
        series=StepSeries("perfgate", steps),
        exit_code=0,
    )


def result(job: str, deltas: list[float], trailing: bool = False) -> RunResult:
    """Counterbalanced pairs whose candidate is slower by each delta (AB BA AB ..)."""
    runs: list[RunRecord] = []
    for i, d in enumerate(deltas):
        a, b = run("baseline", 1.0), run("candidate", 1.0 + d)
        runs += [a, b] if i % 2 == 0 else [b, a]
    if trailing:  # a pair cut short: its first launch only
        runs.append(run("baseline", 1.0))
    return RunResult(
        ROW.id, job, "COMPLETED", runs=tuple(runs), nodes=(f"n{job}",), job_dir=f"/j/{job}"
    )


class Jobs:
    """run_jobs' stand-in: hands out prepared results and records what each job was asked."""

    def __init__(self, *results: RunResult) -> None:
        self.results, self.asked = list(results), []

    def __call__(self, cfg, opts, rows, adaptive, say):
        self.asked.append((opts, [r.id for r in rows], adaptive))
        return {ROW.id: self.results.pop(0)}


def probe(monkeypatch, jobs: Jobs, tmp_path: Path, cap: int = 6) -> dict:
    monkeypatch.setattr(probe_mod, "run_jobs", jobs)
    opts = LaunchOptions(executor="local", container_runtime="none")
    cfg = ProbeConfig(rows=(ROW,), options=opts, pairs=3, max_pairs=3, cap=cap, tolerance=0.05)
    said: list[str] = []
    out = run_probe(cfg, GOOD, MID, tmp_path, said.append, ImageDigests())
    return {"ev": out[ROW.id], "said": said}


NOISY = [0.04, -0.04, 0.045]  # launch noise of +-4%: neither within 5% nor surely slower


def test_a_clear_probe_is_one_adaptive_job_against_the_good_end(monkeypatch, tmp_path):
    jobs = Jobs(result("7", [0.12, 0.12, 0.12]))
    got = probe(monkeypatch, jobs, tmp_path)
    opts, rows, adaptive = jobs.asked[0]
    assert (opts.container_image, opts.candidate_image) == (GOOD, MID)
    assert (opts.pairs, opts.max_pairs, adaptive) == (3, 3, True)
    assert opts.results_dir == str(tmp_path / "job") and rows == [ROW.id]
    ev = got["ev"]
    assert ev["verdict"] == "REGRESSION" and ev["jobs"] == [
        {"job_id": "7", "job_dir": "/j/7", "nodes": ["n7"]}
    ]
    assert ev["comparison"]["delta"] == pytest.approx(0.12, abs=0.002)


def test_an_inconclusive_probe_gets_an_extension_job_then_stops_at_the_cap(monkeypatch, tmp_path):
    jobs = Jobs(result("7", NOISY), result("8", NOISY))
    got = probe(monkeypatch, jobs, tmp_path)
    assert len(jobs.asked) == 2
    opts, _, adaptive = jobs.asked[1]
    assert (opts.pairs, opts.max_pairs, adaptive) == (3, 3, False)  # the 3 pairs left to 6
    assert opts.results_dir == str(tmp_path / "extension-1")
    assert got["said"] == [
        f"perfgate bisect: {ROW.id} INCONCLUSIVE after 3 pair(s): 3 more pair(s) in extension "
        "job 1 (up to 6)"
    ]
    ev = got["ev"]
    assert ev["verdict"] == "INCONCLUSIVE" and ev["ab"]["pairs_run"] == 6
    assert [j["job_id"] for j in ev["jobs"]] == ["7", "8"]
    assert ev["comparison"]["ci_low"] < 0 < 0.05 < ev["comparison"]["ci_high"]  # honest interval
    assert "6 pairs (3 added, at most 6)" in ev["message"]


def test_extensions_until_the_pairs_of_all_jobs_settle_the_probe(monkeypatch, tmp_path):
    steady = [result(str(8 + i), [0.0, 0.001, -0.001]) for i in range(4)]
    jobs = Jobs(result("7", NOISY), *steady)
    ev = probe(monkeypatch, jobs, tmp_path, cap=16)["ev"]
    assert ev["verdict"] == "PASS" and 2 <= len(jobs.asked) <= 5
    assert ev["ab"]["pairs_run"] == 3 * len(jobs.asked)  # every job's pairs judged together
    assert jobs.asked[-1][0].results_dir == str(tmp_path / f"extension-{len(jobs.asked) - 1}")


def test_merged_keeps_complete_pairs_in_launch_order():
    a, b = result("7", [0.0, 0.0], trailing=True), result("8", [0.1])
    both = merged(a, b)
    assert [r.label for r in both.runs] == [
        "baseline",
        "candidate",
        "candidate",
        "baseline",
        "baseline",
        "candidate",
    ]
    assert both.nodes == ("n7", "n8") and both.job_id == "7"
    assert both.notes[-1] == "pairs of job 8 added (probe extension)"
