"""A results.json with every kind of record perfgate writes, made by perfgate's own code.

records() judges made-up runs with the real verdict code and turns them into results.json
records with the real writer: a one-run REGRESSION confirmed on other nodes (its straggler
report, phases against stored phases, the history's step and its trend; a trend in the list
form of earlier results.json files), an A/B pair set with
phases, an INFRA job with its diagnosis and redacted tail, a long run (decimated steps and
its summary), NO_BASELINE, a dry-run plan and a skipped row. write() stores them as a
finished session (environment and metadata included): the input of the readers' fuzz
(tests/report/test_results_fuzz.py) and of scripts/fuzz_results.py.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path
from typing import Any

from rowfactory import make_row

from perfgate import verdicts
from perfgate.catalog import Baseline, Provenance, Row
from perfgate.history.trend import Point
from perfgate.launch import planning
from perfgate.launch.types import LaunchOptions
from perfgate.logs import Step, StepSeries
from perfgate.logs.phases import PhaseSeries
from perfgate.report import results, sessionfiles
from perfgate.runs import Diagnosis, RunRecord, RunResult
from perfgate.verdicts.confirm import combine
from perfgate.verdicts.paired import evaluate_ab

STORED_PHASES = {"forward-backward": 0.6, "all-grads-sync": 0.2, "optimizer": 0.2}


def _row(variant: str, step_s: float | None = 1.0, phases: bool = False) -> Row:
    base = None
    if step_s is not None:
        base = Baseline(
            step_time_s=step_s,
            provenance=Provenance("perfgate test", container="nemo-25.07.sqsh"),
            tolerance=0.03,
            n_runs=3,
            step_time_spread_s=0.004,
            phases_s=STORED_PHASES if phases else {},
        )
    return make_row(
        model="llama3_8b", num_gpus=8, tp=1, gbs=8, mbs=1, seq_len=8192, variant=variant,
        baseline=base,
    )  # fmt: skip


def _run(median: float, label: str = "baseline", n: int = 30, k: int = 0, **kw: Any) -> RunRecord:
    times = [3.0 * median] * 5 + [median * (1 + 0.004 * math.sin(i + k)) for i in range(n - 5)]
    cols = {name: tuple(share * t for t in times) for name, share in STORED_PHASES.items()}
    return RunRecord(
        image=f"/lustre/nemo-{label}.sqsh",
        label=label,
        series=StepSeries("perfgate", tuple(Step(i, t) for i, t in enumerate(times))),
        versions={"nemo": "2.4.0", "torch": "2.7.0"},
        exit_code=0,
        log_path="/jobs/rank-0.log",
        image_digest="sha256:" + "a" * 64,
        phases=PhaseSeries(tuple(range(n)), cols),
        **kw,
    )


def _record(ev: verdicts.Evaluation, row: Row, source: str = "live") -> dict[str, Any]:
    outcome = "failed" if ev.verdict in ("REGRESSION", "INFRA") else "passed"
    return results.record(
        ev, row, nodeid=f"benchmarks/t.py::t[{row.id}]", outcome=outcome, repro="pytest -k x",
        source=source,
    )  # fmt: skip


def _history() -> list[Point]:
    """Twelve nights: six at 1.0 s, six at 1.06 s (a step the baseline missed)."""
    out = []
    for i in range(12):
        t = (1.0 if i < 6 else 1.06) * (1 + 0.002 * math.sin(i))
        out.append(
            Point(i + 1, f"2026-05-{i + 1:02d}T01:00:00+00:00", t, 0.001, str(100 + i),
                  "nemo.sqsh", {"nemo": "2.4.0"}, "PASS", "baseline", (f"n{i}",))
        )  # fmt: skip
    return out


def _trend_runs(points: list[Point]) -> list[dict[str, Any]]:
    """A trend as a list of stored runs: what results.json kept before change points were."""
    return [
        {"session_id": p.session_id, "started_at": p.started_at, "step_time_s": p.step_time_s,
         "job_id": p.job_id, "image": p.container, "verdict": p.verdict, "label": p.label,
         "steady": True, "cause": None, "excluded": None, "mode": "stored", "rel_se": p.rel_se,
         "versions": p.versions, "nodes": list(p.nodes)}
        for p in points
    ]  # fmt: skip


def records() -> list[dict[str, Any]]:
    """One record of each kind (see the module doc)."""
    out = []
    # a one-run REGRESSION, confirmed on other nodes, with phases, history and a straggler
    row = _row("confirmed", phases=True)
    slow = {"rank": 3, "node": "n7", "reports": 4, "of": 5, "how": "NVRx straggler report"}
    first = RunResult(row.id, "101", "COMPLETED", runs=(_run(1.08, slowest=slow),),
                      nodes=("n7", "n8"))  # fmt: skip
    rerun = RunResult(row.id, "102", "COMPLETED", runs=(_run(1.0, k=1),), nodes=("n9",))
    hist = _history()
    ev1 = verdicts.evaluate(row, first, source="live", history=hist)
    ev2 = verdicts.evaluate(row, rerun, source="live", history=hist)
    ev = combine(ev1, [ev2], excluded=["n7", "n8"])
    rec = _record(ev, row)
    assert rec["trend"]["change_points"], rec["trend"]  # the verdict's own, with the step
    rec["duration_s"] = 12.5
    out.append(rec)
    # an A/B gate: three pairs AB BA AB, the candidate 8% slower
    row = _row("ab")
    runs = []
    for i in range(3):
        pair = [_run(1.0, "baseline", k=i), _run(1.08, "candidate", k=i)]
        runs += pair if i % 2 == 0 else pair[::-1]
    res = RunResult(row.id, "103", "COMPLETED", runs=tuple(runs), nodes=("n1",))
    out.append(_record(evaluate_ab(row, res, source="live", first_pairs=3, max_pairs=8), row))
    # a failed job: its cause, evidence and log tail
    row = _row("oom")
    diag = Diagnosis("OOM", "CUDA out of memory (rank-3.log)", "torch.OutOfMemoryError: ...",
                     "step 3\nWANDB_API_KEY=" + "0" * 40 + "\ntorch.OutOfMemoryError")  # fmt: skip
    res = RunResult(row.id, "104", "FAILED", diagnosis=diag, nodes=("n2",), attempts=2)
    out.append(_record(verdicts.evaluate(row, res, source="live"), row))
    # a long run: its steps decimated, with the summary of all of them
    row = _row("long")
    long_run = _run(1.0, n=results.MAX_STORED_STEPS + 50)
    res = RunResult(row.id, "105", "COMPLETED", runs=(long_run,), nodes=("n3",))
    rec = _record(verdicts.evaluate(row, res, source="replay"), row, "replay")
    rec["trend"] = _trend_runs(_history())  # the form results.json had before change points
    out.append(rec)
    # no baseline
    row = _row("new", step_s=None)
    res = RunResult(row.id, "106", "COMPLETED", runs=(_run(1.0),), nodes=("n4",))
    out.append(_record(verdicts.evaluate(row, res, source="live"), row))
    # a dry run's plan, and a skipped row
    row = _row("plan")
    opts = LaunchOptions(partition="p", account="a", container_image="nvcr.io#nvidia/nemo:25.07")
    plan = planning.plan(row, opts, job_dir=Path("/tmp/perfgate-plan") / row.id)
    out.append(
        results.record(None, row, nodeid="t::plan", outcome="skipped", repro="pytest",
                       source="dry-run", plan=plan, description="llama3_8b on 8 H100s")
    )  # fmt: skip
    row = _row("skipped")
    out.append(
        results.record(None, row, nodeid="t::skip", outcome="skipped", repro="pytest",
                       source="live", skip_reason="no run found under logs/")
    )  # fmt: skip
    return out


def write(path: Path) -> Path:
    """A finished session's results.json at path holding records(); path."""
    f = sessionfiles.ResultsFile(
        path,
        {"mode": "live", "user": "me", "host": "login1", "deselected": ["a-b"],
         "options": {"--partition": "p"}},
    )  # fmt: skip
    for rec in records():
        f.add(rec)
    f.finish({"NeMo": "2.4.0", "Container image": "/lustre/nemo.sqsh"},
             {"Python": "3.11", "Platform": "Linux"})  # fmt: skip
    return path


def record(row_id: str, verdict: str = "PASS", **fields: Any) -> dict[str, Any]:
    """A minimal record of a row with this id (no run), as a session writes a skipped row,
    with its verdict and fields set: for tests of the results files themselves."""
    row = make_row(id=row_id)
    rec = results.record(None, row, nodeid=f"t::{row_id}", outcome="passed", repro="pytest",
                         source="live")  # fmt: skip
    return {**rec, "verdict": verdict, **fields}


def ab_record(row: Row, good: str, bad: str, verdict: str, slowdown: float = 0.004) -> dict:
    """The A/B gate's record of row on images good (A) and bad (B), its verdict set."""
    runs = []
    for i in range(3):
        pair = [_run(1.0, "baseline", k=i), _run(1.0 + slowdown, "candidate", k=i)]
        runs += pair if i % 2 == 0 else pair[::-1]
    runs = [replace(r, image=good if r.label == "baseline" else bad) for r in runs]
    res = RunResult(row.id, "107", "COMPLETED", runs=tuple(runs), nodes=("n1",))
    rec = _record(evaluate_ab(row, res, source="live", first_pairs=3, max_pairs=8), row)
    return {**rec, "verdict": verdict}
