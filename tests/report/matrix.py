"""Judged matrices of any size, for the report's scale test and scripts/bench_report.py.

Each of N rows (tests/rowfactory: a model, a scale and a variant of its own) is judged by
perfgate.verdicts on synthetic step times and recorded by perfgate.report.results, as a live
session records it; a results.json of them is written by perfgate.report.sessionfiles. With
nights > 0 each row carries a history of that many nights (a +3% step in some), judged with
it, so its record holds the trend the verdict searched.

The verdicts come from the real rule on numbers chosen to give them (KINDS): a night's mix
of mostly PASS, a share to look at (INCONCLUSIVE, IMPROVEMENT, NO_BASELINE, SHIFT) and a few
that block (REGRESSION, INFRA).
"""

from __future__ import annotations

import math
import random
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from rowfactory import make_row

from perfgate import catalog, flops, verdicts
from perfgate.history.trend import Point
from perfgate.logs import Step, StepSeries
from perfgate.report import results, sessionfiles
from perfgate.rowrecord import RowRecord
from perfgate.runs import Diagnosis, RunRecord, RunResult

# (what the row's night is, share per 100 rows): the factor on the baseline's step time
# and the history's step decide the verdict; "infra" fails with an OOM, "new" has no baseline.
KINDS = (
    ("pass", 72),
    ("inconclusive", 14),
    ("regression", 4),
    ("improvement", 3),
    ("new", 3),
    ("infra", 4),
)
FACTOR = {"pass": 1.0, "inconclusive": 1.02, "regression": 1.09, "improvement": 0.9, "new": 1.0}
SHAPES = (  # (model, num_gpus, tp, pp): varied ids and cells, each a valid row
    ("llama3_8b", 8, 1, 1),
    ("llama3_70b", 64, 4, 4),
    ("nemotron4_15b", 64, 2, 1),
    ("nemotron4_340b", 256, 8, 8),
    ("mixtral_8x7b", 64, 1, 4),
    ("qwen25_32b", 32, 4, 1),
)
STEPS = 100  # logged steps per run: a nightly run's length
SBATCH = "#!/bin/bash\n" + "".join(f"#SBATCH --option-{i}=value-{i}\n" for i in range(24))
OOM_TAIL = "".join(f"[rank{i}] step {i}: loss 2.31 | grad norm 1.02\n" for i in range(40)) + (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB\n"
)
SESSION_START = "2027-01-01T01:00:00+00:00"
FIRST_NIGHT = datetime(2026, 1, 1, 1, tzinfo=timezone.utc)


def plausible_step_s(row: catalog.Row) -> float:
    """The step time at which the row runs at 40% MFU (nemo2's count)."""
    t = flops.of_row(row, 1.0, "nemo2")
    assert t is not None, row.id
    return t.mfu / 0.40


def kind_of(i: int) -> str:
    """The kind of row i: KINDS' shares, spread evenly over the rows."""
    total = sum(w for _, w in KINDS)
    slot = (i * 37) % total  # 37 is prime to 100: every kind recurs along the rows
    for kind, weight in KINDS:
        if slot < weight:
            return kind
        slot -= weight
    raise AssertionError(slot)


def _baseline(step_s: float, published: bool = False) -> catalog.Baseline:
    """A stored baseline of five runs (0.4% apart): a night at it passes at 5%; or a
    published number (one run, no spread), which one night resolves only to about 11%."""
    prov = catalog.Provenance(source="perfgate run", container="nemo:26.02", date="2026-01-01")
    if published:
        return catalog.Baseline(step_s, replace(prov, source="published table"))
    runs = tuple(
        catalog.BaselineRun(step_s * (1 + 0.004 * k), 0.002, job_id=f"b{k}", date="2026-01-01")
        for k in range(-2, 3)
    )
    return catalog.Baseline(step_s, prov, n_runs=5, step_time_spread_s=0.008 * step_s, runs=runs)


def history(nights: int, step_s: float, rng: random.Random, step_at: float | None) -> list[Point]:
    """nights nightly points at step_s with 0.8% launch noise; +3% from the fraction step_at
    of the nights on (a new container), when given."""
    out = []
    for n in range(nights):
        shifted = step_at is not None and n >= int(nights * step_at)
        level = step_s * (1.03 if shifted else 1.0) * math.exp(rng.gauss(0, 0.008))
        day = (FIRST_NIGHT + timedelta(days=n)).isoformat()
        image = "nemo:26.04" if shifted else "nemo:26.02"
        out.append(Point(n + 1, day, level, 0.002, job_id=f"h{n}", container=image))
    return out


def judged_record(i: int, nights: int = 0, rng: random.Random | None = None) -> RowRecord:
    """Row i of a matrix: judged on a synthetic night (and its history), then recorded."""
    rng = rng or random.Random(i)
    kind = kind_of(i)
    model, gpus, tp, pp = SHAPES[i % len(SHAPES)]
    row = make_row(model=model, num_gpus=gpus, tp=tp, pp=pp, variant=f"m{i}")
    step_s = plausible_step_s(row) * (1 + (i % 50) / 100)
    if kind != "new":
        row = replace(row, baseline=_baseline(step_s, published=kind == "inconclusive"))
    job = str(3_000_000 + i)
    if kind == "infra":
        diag = Diagnosis("OOM", "CUDA out of memory", "CUDA out of memory", OOM_TAIL)
        result = RunResult(row.id, job, "FAILED", nodes=("n1",), diagnosis=diag)
    else:
        f = FACTOR[kind]
        times = [step_s * f * math.exp(rng.gauss(0, 0.01)) for _ in range(STEPS)]
        times[0] *= 6  # the first step's warm-up
        series = StepSeries("megatron", tuple(Step(k + 1, t) for k, t in enumerate(times)))
        run = RunRecord("nemo:26.04", "baseline", series, versions={"nemo": "2.6.0"})
        result = RunResult(row.id, job, "COMPLETED", (run,), ("n1", "n2"), sbatch_script=SBATCH)
    step_at = 0.7 if nights and i % 3 == 0 else None
    points = history(nights, step_s, rng, step_at) if nights else []
    ev = verdicts.evaluate(row, result, source="live", history=points)
    nodeid = f"benchmarks/test_perf.py::test_perf[{row.id}]"
    rec = results.record(
        ev,
        row,
        nodeid=nodeid,
        outcome="failed" if ev.verdict in ("REGRESSION", "INFRA") else "passed",
        repro=f"pytest '{nodeid}'",
        source="live",
    )
    rec["duration_s"] = 1800.0 + i
    return rec


def matrix(n: int, nights: int = 0, distinct: int | None = None) -> dict[str, RowRecord]:
    """n judged rows by row id. distinct: judge only that many rows of each kind and give
    the others their records under their own row (a year of history costs the verdict's
    change-point search per row; what the report does with the records does not change)."""
    recs: dict[str, RowRecord] = {}
    done: dict[str, list[RowRecord]] = {}
    for i in range(n):
        kind = kind_of(i)
        seen = done.setdefault(kind, [])
        if distinct is None or len(seen) < distinct:
            rec = judged_record(i, nights)
            seen.append(rec)
        else:
            rec = _as_row(seen[i % len(seen)], i)
        recs[rec["row_id"]] = rec
    return recs


def _as_row(rec: RowRecord, i: int) -> RowRecord:
    """rec under row i's identity (id, test id, row fields, job)."""
    model, gpus, tp, pp = SHAPES[i % len(SHAPES)]
    row = make_row(model=model, num_gpus=gpus, tp=tp, pp=pp, variant=f"m{i}")
    nodeid = f"benchmarks/test_perf.py::test_perf[{row.id}]"
    out: dict[str, Any] = {**rec, "row_id": row.id, "nodeid": nodeid}
    out["row"] = {
        **rec["row"],
        **{k: v for k, v in catalog.row_to_dict(row).items() if k != "baseline"},
    }
    out["message"] = rec["message"].replace(rec["row_id"], row.id)
    out["job"] = {**(rec["job"] or {}), "job_id": str(3_000_000 + i)}
    return out  # type: ignore[return-value]


def write_results(path: Path, recs: dict[str, RowRecord]) -> Path:
    """A finished results.json of the records (perfgate.report.sessionfiles' format)."""
    f = sessionfiles.ResultsFile(Path(path), {"mode": "live", "deselected": []}, durable=False)
    f.data["session"]["started"] = SESSION_START
    for rec in recs.values():
        f.add(rec)
    f.finish({}, {"Python": "3.11"})
    return f.path
