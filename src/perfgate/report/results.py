"""results.json's records: every number of the report, one record per row.

Where they are written, as each row finishes, and how they are read back is
perfgate.report.sessionfiles. `perfgate report results.json` renders from them alone.
A record holds a list of runs (label, image, versions, per-step times) so an A/B row can carry
two containers; single-mode rows have one run labelled "baseline". A/B records (mode
"paired") add "ab": both sides (image, digest, versions, pooled step time), the versions that
changed, every pair (order, step times, delta), the stored-baseline drift.
"""

from __future__ import annotations

import math
from dataclasses import asdict
from datetime import date
from typing import Any

from perfgate import catalog
from perfgate.errors import PerfgateError
from perfgate.history.records import stored_summary
from perfgate.launch.types import JobPlan
from perfgate.report import phases as report_phases
from perfgate.report.decimate import decimate
from perfgate.report.sessionfiles import now
from perfgate.rowrecord import RowRecord, RunEntry
from perfgate.runs import RunRecord
from perfgate.secrets import mask_tree, recorded, redact
from perfgate.stats import json_ready, summarize_run
from perfgate.verdicts import Evaluation


def _finite(x: float | None) -> float | None:
    return x if x is not None and math.isfinite(x) else None


def _baseline_dict(b: catalog.Baseline | None) -> dict[str, Any] | None:
    if b is None:
        return None
    return {
        "step_time_s": b.step_time_s,
        "step_time_spread_s": b.step_time_spread_s,
        "n_runs": b.n_runs,
        "tokens_per_s_per_gpu": b.tokens_per_s_per_gpu,
        "tflops_per_gpu": b.tflops_per_gpu,
        "flops_convention": b.flops_convention,
        "mfu": b.mfu,
        "peak_memory_gib": b.peak_memory_gib,
        "tolerance": b.tolerance,
        "source": b.provenance.source,
        "container": b.provenance.container,
        "framework_version": b.provenance.framework_version,
        "date": b.provenance.date,
        "notes": b.provenance.notes,
        "phases_s": dict(b.phases_s),
    }


def plan_dict(plan: JobPlan) -> dict[str, Any]:
    """The dry-run plan of a row, as results.json and the report keep it."""
    return {
        "nodes": plan.nodes,
        "tasks_per_node": plan.tasks_per_node,
        "time_limit_min": plan.time_limit_min,
        "gpu_hours": plan.gpu_hours,
        "sbatch_script": plan.sbatch_script,
        "srun_command": plan.srun_command,
        "workload_spec": plan.workload_spec,
        "job_dir": plan.job_dir,
        "launches": [{"label": label, "image": image} for label, image in plan.launches],
        "max_pairs": plan.max_pairs,
    }


def record(
    ev: Evaluation | None,
    row: catalog.Row,
    *,
    nodeid: str,
    outcome: str,
    repro: str,
    source: str,
    plan: JobPlan | None = None,
    description: str | None = None,
    skip_reason: str | None = None,
    window: Any = "auto",
) -> RowRecord:
    """The results.json record of one row (JSON-able; every text masked by the one masking
    rule, perfgate.secrets.mask_tree: log tails, messages, notes, overrides)."""
    rec: RowRecord = {
        "row_id": row.id,
        "nodeid": nodeid,
        "row": _row_dict(row),
        "source": source,
        "outcome": outcome,
        "verdict": ev.verdict if ev else ("DRY_RUN" if source == "dry-run" else "SKIPPED"),
        "message": ev.message if ev else (skip_reason or ""),
        "mode": ev.mode if ev else None,
        "tolerance": ev.tolerance if ev else None,
        "convention": ev.convention if ev else None,
        "repro": repro,
        "baseline": _baseline_dict(row.baseline),
        "measured": None,
        "comparison": None,
        "runs": [],
        "job": None,
        "diagnosis": None,
        "plan": plan_dict(plan) if plan else None,
        "description": description,
        "notes": list(ev.notes) if ev else [],
        "ab": ev.ab if ev else None,
        "history": ev.history if ev else None,
        "confirmation": ev.confirmation if ev else None,
    }
    if ev is None:
        return mask_tree(rec)
    if ev.trend is not None:  # the history the verdict searched, with its change points
        rec["trend"] = ev.trend
    if ev.measured is not None:
        m = asdict(ev.measured)
        m["window"] = list(ev.measured.window)
        rec["measured"] = m
    if ev.comparison is not None:
        c = ev.comparison
        rec["comparison"] = {
            "verdict": c.verdict,
            "delta": c.delta,
            "ci_low": _finite(c.ci_low),
            "ci_high": _finite(c.ci_high),
            "se": _finite(c.se),
            "resolution": _finite(c.resolution),
            "tolerance": c.tolerance,
            "mode": c.mode,
            "reason": c.reason,
            "baseline_step_time_s": c.baseline_step_time_s,
            "candidate_step_time_s": c.candidate_step_time_s,
            "pair_deltas": list(c.pair_deltas),
            "detectable": _finite(c.detectable),
            "alpha": c.alpha,
            "ci_level": c.ci_level,
            "df": _finite(c.df),
            "sigma": _finite(c.sigma),
            "n_baseline": c.n_baseline,
            "n_candidate": c.n_candidate,
            "n_unsteady": c.n_unsteady,
        }
    res = ev.result
    if res is not None:
        rec["runs"] = [_run_entry(run, window=window) for run in res.runs]
        for i, conf in enumerate(ev.confirmed_by, start=1):
            for run in conf.result.runs if conf.result is not None else ():
                entry = _run_entry(run, f"confirmation {i}", window)
                entry["job_id"] = conf.result.job_id
                entry["nodes"] = list(conf.result.nodes)
                rec["runs"].append(entry)
        rec["job"] = {
            "job_id": res.job_id,
            "state": res.state,
            "nodes": list(res.nodes),
            "attempts": res.attempts,
            "wall_s": res.wall_s,
            "log_paths": list(res.log_paths),
            "sbatch_script": res.sbatch_script,
        }
        if res.diagnosis is not None:
            d = res.diagnosis
            rec["diagnosis"] = {
                "cause": d.cause,
                "message": redact(d.message),
                "evidence": redact(d.evidence) if d.evidence else None,
                "log_tail": redact(d.log_tail),
            }
    if ev.mode != "paired":  # A/B rows compare phases pair by pair (ab["phases"])
        rec["phases"] = report_phases.versus_baseline(rec)
    if ev.cause and rec["diagnosis"] is None:
        rec["diagnosis"] = {
            "cause": ev.cause,
            "message": ev.message,
            "evidence": None,
            "log_tail": "",
        }
    return mask_tree(rec)


# A run longer than this keeps MAX_STORED_POINTS of its steps in results.json (the fastest
# and slowest of each bucket: perfgate.report.decimate) and the summary of all of them:
# results.json is rewritten after every row, and 4 M steps as pairs were 180 MB.
MAX_STORED_STEPS = 20_000
MAX_STORED_POINTS = 10_000


def _row_dict(row: catalog.Row) -> dict[str, Any]:
    """The row as results.json keeps it: its variables that are not knobs shown as ***."""
    d = catalog.row_to_dict(row)
    if "env" in d:
        d["env"] = recorded(d["env"])
    return d


def _run_entry(run: RunRecord, label: str | None = None, window: Any = "auto") -> RunEntry:
    series = run.series
    numbers = series.step_numbers if series is not None else []
    times = series.step_times if series is not None else []
    entry: RunEntry = {
        "label": label or run.label,
        "image": run.image,
        "image_digest": run.image_digest,
        "versions": dict(run.versions),
        "mock_data": run.mock_data,
        "log_path": run.log_path,
        "format": run.series.format if run.series is not None else None,
        "log_interval": run.series.log_interval if run.series is not None else 1,
        "steps": [[s, t] for s, t in zip(numbers, times, strict=True)],
        "slowest": run.slowest,
        "phases": run.phases.to_dict() if run.phases is not None else None,
    }
    if run.job_id:  # a replayed launch of its own job
        entry["job_id"] = run.job_id
    if series is not None and series.min_rel_se:
        entry["min_rel_se"] = series.min_rel_se
    if len(times) > MAX_STORED_STEPS:
        # A long run: its spikes and shape (decimate), and the summary of every step, which
        # the history and --update-baselines take instead of summarizing the points kept.
        entry["steps"] = [[s, t] for s, t in decimate(numbers, times, MAX_STORED_POINTS)]
        entry["n_steps"] = len(times)
        floor = series.min_rel_se if series is not None else 0.0
        entry["summary"] = _summary_of(times, numbers, window, floor)
    return entry


def _summary_of(
    times: list[float], numbers: list[int], window: Any, min_rel_se: float
) -> dict[str, Any] | None:
    try:
        summary = summarize_run(times, window, step_numbers=numbers, min_rel_se=min_rel_se)
        return json_ready(asdict(summary))
    except PerfgateError:  # e.g. a negative step time: the run is not steady
        return None


def _runs(
    rec: RowRecord, window: Any, label: str, used: set[int] | None = None
) -> tuple[list[catalog.BaselineRun], list[float], dict[str, float]]:
    """Each steady run of one label as a BaselineRun (step time, rel SE, job, date, image),
    the unrounded medians, and the runs' median phase times (baseline.phases_s)."""
    job = rec.get("job") or {}
    job_id = str(job["job_id"]) if job.get("job_id") else None
    stamp = now()
    out, medians, phases = [], [], []
    runs = [r for r in rec.get("runs") or () if (r.get("label") or "baseline") == label]
    for i, (run, s) in enumerate(zip(runs, _summaries(runs, window), strict=True)):
        if s is None or not s.steady or (used is not None and i not in used):
            continue
        out.append(
            catalog.BaselineRun(
                step_time_s=round(s.median_s, 6),
                rel_se=round(s.rel_se, 6),
                job_id=str(run["job_id"]) if run.get("job_id") else job_id,
                date=stamp,
                container=run.get("image"),
                digest=run.get("image_digest"),
            )
        )
        medians.append(s.median_s)
        phases.append(report_phases.window_medians(run, s.window_start, s.window_end))
    return out, medians, report_phases.stored_phases(phases)


def _summaries(runs: list[dict[str, Any]], window: Any) -> list[Any]:
    return [stored_summary(run, window) for run in runs]


def _job_ids(job: dict[str, Any], runs: list[catalog.BaselineRun]) -> tuple[str, ...]:
    """The jobs behind a baseline: the record's job, else its runs' own (replayed launches)."""
    if job.get("job_id"):
        return (str(job["job_id"]),)
    return tuple(dict.fromkeys(r.job_id for r in runs if r.job_id))


def baseline_from_record(
    rec: RowRecord, row: catalog.Row, window: Any = "auto"
) -> catalog.Baseline:
    """The new Baseline of a row from its results.json record, with provenance and runs.

    Each steady run is stored (--repeat K: K runs; A/B: the candidate's runs of the pairs
    used); step_time_s is their geometric mean and the spread theirs.
    """
    m = rec["measured"]
    conv = rec.get("convention") or "nemo2"
    job = rec.get("job") or {}
    logs = job.get("log_paths") or []
    ab = rec.get("ab")
    notes = None
    if rec.get("mode") == "paired" and ab:
        side = ab["sides"]["candidate"]
        image, versions = side["image"], dict(side["versions"])
        used = {i for i, p in enumerate(ab.get("pairs") or ()) if p.get("used")}
        runs, medians, phases = _runs(rec, window, "candidate", used)
        source = "perfgate A/B run"
        comp = rec.get("comparison") or {}
        notes = (
            f"candidate of an A/B gate vs {ab['sides']['baseline']['image']}: "
            f"{ab['pairs_used']} pairs, delta {comp.get('delta', math.nan):+.2%}"
        )
    else:
        run = rec["runs"][-1] if rec.get("runs") else {}
        image, versions = run.get("image"), run.get("versions") or {}
        runs, medians, phases = _runs(rec, window, "baseline")
        source = "perfgate replay" if rec.get("source") == "replay" else "perfgate run"
        # Every launch the baseline pools, not only the last (--replay DIR --repeat 3).
        launched = [
            str(r["log_path"])
            for r in rec.get("runs") or ()
            if r.get("label") == "baseline" and r.get("log_path")
        ] or logs[-1:]
        if source == "perfgate replay" and launched:
            many = f"{len(launched)} launches: " if len(launched) > 1 else ""
            notes = f"replayed from {many}{', '.join(launched)}"
    step_time, spread = m["step_time_s"], None
    if runs:
        logs_ = [math.log(x) for x in medians]
        step_time = math.exp(math.fsum(logs_) / len(logs_))
        if len(runs) >= 2:
            mean = math.fsum(logs_) / len(logs_)
            sd = math.sqrt(math.fsum((x - mean) ** 2 for x in logs_) / (len(logs_) - 1))
            spread = step_time * sd
    versions = {k: str(v) for k, v in versions.items() if v is not None}
    scale = m["step_time_s"] / step_time  # throughput figures follow the pooled step time
    return catalog.Baseline(
        step_time_s=round(step_time, 6),
        step_time_spread_s=round(spread, 6) if spread is not None else None,
        provenance=catalog.Provenance(
            source=source,
            container=image,
            framework_version=versions.get("nemo") or versions.get("megatron_bridge"),
            date=date.today().isoformat(),
            job_ids=_job_ids(job, runs),
            versions=versions,
            notes=notes,
        ),
        n_runs=max(1, len(runs)),
        tokens_per_s_per_gpu=round(m["tokens_per_s_per_gpu"] * scale, 1),
        tflops_per_gpu=round(m["tflops_per_gpu"][conv] * scale, 1),
        flops_convention=conv,
        mfu=round(m["mfu"][conv] * scale, 4),
        peak_memory_gib=round(m["peak_memory_gib"], 2) if m.get("peak_memory_gib") else None,
        tolerance=row.baseline.tolerance if row.baseline is not None else None,
        runs=tuple(runs),
        phases_s=phases,
    )


def baseline_change(row_id: str, old: catalog.Baseline | None, new: catalog.Baseline) -> str:
    """A few lines per row for --update-baselines: old -> new step time, runs, spread, image."""
    head = f"{row_id}:"
    if old is None:
        head += f" new baseline {new.step_time_s:.4g} s"
    else:
        head += (
            f" {old.step_time_s:.4g} s -> {new.step_time_s:.4g} s "
            f"({new.step_time_s / old.step_time_s - 1:+.1%})"
        )
    spread = (
        f", spread {new.step_time_spread_s / new.step_time_s:.2%}"
        if new.step_time_spread_s is not None
        else ""
    )
    lines = [head, f"    {new.n_runs} run{'s' if new.n_runs != 1 else ''}{spread}"]
    if new.provenance.container or new.provenance.job_ids:
        where = ", ".join(
            x
            for x in (
                f"container {new.provenance.container}" if new.provenance.container else "",
                f"job {', '.join(new.provenance.job_ids)}" if new.provenance.job_ids else "",
            )
            if x
        )
        lines.append(f"    {where}")
    if old is not None and old.provenance.source != new.provenance.source:
        lines.append(f"    was: {old.provenance.source}")
    return "\n".join(lines)
