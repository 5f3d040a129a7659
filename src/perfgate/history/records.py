"""A row's results.json record -> the runs the history store keeps (one per launch).

Each launch's steady median and within-run SE come from its own per-step times (the same
summary the verdict used); tokens/s/GPU and MFU scale from the row's measured numbers by
step time (both are inversely proportional to it).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from perfgate import nodenames, notices, stats
from perfgate.errors import PerfgateError
from perfgate.history.store import Run
from perfgate.rowrecord import RowRecord


def is_confirmation(run: dict[str, Any]) -> bool:
    """A confirmation run: another job of the row on other nodes (perfgate.verdicts.confirm)."""
    return str(run.get("label") or "").startswith("confirmation")


def record_mode(rec: RowRecord) -> str:
    """stored (one run vs its baseline), repeat (K runs of one image) or paired (A/B)."""
    if rec.get("mode") == "paired":
        return "paired"
    own = [r for r in rec.get("runs") or () if not is_confirmation(r)]
    return "repeat" if len(own) > 1 else "stored"


def summaries(rec: RowRecord, window: stats.Window = "auto") -> list[stats.RunSummary | None]:
    """Each run's steady-state summary (None for a run with too few steps to summarize)."""
    return [stored_summary(run, window) for run in rec.get("runs") or ()]


def stored_summary(run: Mapping[str, Any], window: stats.Window) -> stats.RunSummary | None:
    """One results.json run's steady-state summary: from its steps, or, for a long run whose
    steps were decimated (it has n_steps), the summary of every step stored beside them."""
    if "n_steps" in run:
        s = run.get("summary")
        if not s:
            return None
        floats = ("median_s", "mean_s", "se_s", "cv", "spike_fraction", "drift")
        return stats.RunSummary(  # JSON holds a NaN as null
            **{k: math.nan if v is None and k in floats else v for k, v in s.items()}
        )
    times = [t for _, t in run.get("steps") or ()]
    floor = run.get("min_rel_se") or 0.0  # whole-second stamps (StepSeries.min_rel_se)
    try:
        return stats.summarize_run(times, window, min_rel_se=floor) if times else None
    except PerfgateError:  # a broken run is stored as not steady
        return None


def runs_from_record(rec: RowRecord, window: stats.Window = "auto") -> list[Run]:
    """The store's runs of one row's record; an INFRA row keeps its cause on every run."""
    job = rec.get("job") or {}
    measured = rec.get("measured") or {}
    conv = rec.get("convention") or "nemo2"
    cause = (rec.get("diagnosis") or {}).get("cause")
    comparison = rec.get("comparison") or {}
    mode = record_mode(rec)
    runs = rec.get("runs") or ()
    confirmed = {r["role"]: r for r in (rec.get("confirmation") or {}).get("runs") or ()}
    baseline_s = (rec.get("baseline") or {}).get("step_time_s") if mode != "paired" else None
    tolerance = rec.get("tolerance")
    out = []
    for i, (run, s) in enumerate(zip(runs, summaries(rec, window), strict=True)):
        steady = s is not None and s.steady and cause is None
        step = s.median_s if s is not None and s.steady else None
        scale = (measured.get("step_time_s") / step) if step and measured else None
        tokens = measured.get("tokens_per_s_per_gpu")
        mfu = (measured.get("mfu") or {}).get(conv)
        job_id, nodes = _job_id(job), _nodes(rec, job.get("nodes"), "job.nodes")
        verdict, delta = rec.get("verdict"), comparison.get("delta") if mode != "paired" else None
        if is_confirmation(run):  # its own job, nodes and verdict
            own = confirmed.get(str(run["label"]), {})
            job_id = str(run["job_id"]) if run.get("job_id") else None
            nodes = _nodes(rec, run.get("nodes"), f"runs[{i}].nodes")
            verdict, delta = own.get("verdict"), own.get("delta")
        out.append(
            Run(
                row_id=rec["row_id"],
                mode=mode,
                label=run.get("label") or "baseline",
                launch=i + 1,
                steady=steady,
                step_time_s=step,
                rel_se=s.rel_se if s is not None and s.steady else None,
                n_steady=s.n_steady if s is not None else None,
                job_id=job_id,
                attempt=job.get("attempts"),
                tokens_per_s_per_gpu=tokens * scale if tokens and scale else None,
                mfu=mfu * scale if mfu and scale else None,
                nodes=nodes,
                image=run.get("image"),
                image_digest=run.get("image_digest"),
                versions={k: str(v) for k, v in (run.get("versions") or {}).items()},
                verdict=verdict,
                cause=cause,
                delta=delta,
                baseline_s=baseline_s,
                tolerance=tolerance,
            )
        )
    if not out and cause is not None:  # a job that never started a launch: keep its cause
        out.append(Run(rec["row_id"], mode, "baseline", 1, False, job_id=_job_id(job), cause=cause))
    return out


def images_of(records: Sequence[dict[str, Any]]) -> list[str]:
    """The distinct images of these records' runs, in order of appearance."""
    seen: dict[str, None] = {}
    for rec in records:
        for run in rec.get("runs") or ():
            if run.get("image"):
                seen[run["image"]] = None
    return list(seen)


def _nodes(rec: RowRecord, found: object, field: str) -> tuple[str, ...]:
    """A record's node names as the history stores them: host names only (nodenames)."""
    return nodenames.names(found, f"row {rec['row_id']}: {field}", notices.warn)


def _job_id(job: dict[str, Any]) -> str | None:
    return str(job["job_id"]) if job.get("job_id") else None
