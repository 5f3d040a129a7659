"""Read a job folder back into a RunResult: the same code in the job and in the session.

The job function writes, per attempt (requeues make several), a manifest `runs.json` of the
launches it started and how each ended; rank 0 writes each launch's steps.json. The job
function collects them when it finishes; when Slurm killed it (time limit, preemption, node
failure, scancel) the session collects the same files, so what was measured before the kill
is kept. Only the last attempt is measured.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from perfgate import atomic, inputs, nodenames, notices
from perfgate import diagnose as dg
from perfgate.errors import PerfgateError
from perfgate.logs import stepfile, stragglers
from perfgate.logs.components import versions_of_files
from perfgate.logs.phases import phases_of_run
from perfgate.runs import Diagnosis, RunRecord, RunResult

MANIFEST = "runs.json"
JOB_LOG = "job.log"
MAX_RANK_LOGS = 16  # rank logs read for a diagnosis: failing ranks first, then rank 0, others


def write_json(path: Path, data: dict[str, Any]) -> None:
    """Atomically replace path with JSON (a reader never sees half a file)."""
    atomic.write_json(path, data)


def attempts(job_dir: str | os.PathLike[str]) -> list[int]:
    """Attempt numbers present in a job folder, ascending (0 first; 1 after one requeue...)."""
    out = []
    for p in Path(job_dir).glob("attempt-*"):
        m = re.fullmatch(r"attempt-(\d+)", p.name)
        if m and p.is_dir():
            out.append(int(m.group(1)))
    return sorted(out)


def read_manifest(attempt_dir: Path) -> dict[str, Any] | None:
    """The manifest of one attempt, or None when the job function never wrote one."""
    try:
        return json.loads(inputs.read_text(attempt_dir / MANIFEST))
    except (OSError, ValueError, PerfgateError):
        return None


def rank_logs(rdir: Path) -> list[Path]:
    """Per-rank output files of a launch, in rank order."""
    found = []
    for p in rdir.glob("rank-*.log"):
        m = re.fullmatch(r"rank-(\d+)\.log", p.name)
        if m:
            found.append((int(m.group(1)), p))
    return [p for _, p in sorted(found)]


def run_logs(rdir: Path, extra: list[Path] = ()) -> list[tuple[str, str]]:  # type: ignore[assignment]
    """(path, text) of the logs worth reading for one launch, most telling first."""
    launcher = rdir / "launcher.log"
    launcher_text = dg.read_log(launcher) if launcher.exists() else ""
    ranks = rank_logs(rdir)
    by_rank = {int(p.stem.split("-")[1]): p for p in ranks}
    order: list[Path] = [by_rank[t] for t in dg.failing_tasks(launcher_text) if t in by_rank]
    order += [p for p in ranks if p not in order]
    order = order[:MAX_RANK_LOGS]
    logs = [(str(p), dg.read_log(p)) for p in order]
    if launcher.exists():
        logs.append((str(launcher), launcher_text))
    logs += [(str(p), dg.read_log(p)) for p in extra if p.exists()]
    return logs


def slowest_of(log: Path, nodes: list[str], tasks: int | None) -> dict[str, Any] | None:
    """The slowest rank that a launch's rank-0 log reports (straggler detectors), with its
    node: the report's own, else where Slurm's block layout put that rank."""
    found = (
        stragglers.slowest_rank(dg.read_log(log).splitlines(), str(log)) if log.exists() else None
    )
    if found is None:
        return None
    out = found.to_dict()
    if out["node"] is None and nodes and tasks:
        out["node"] = stragglers.node_of(found.rank, nodes, max(1, tasks // len(nodes)))
    return out


def collect_run(
    entry: dict[str, Any], nodes: list[str] | None = None
) -> tuple[RunRecord, stepfile.StepRecord | None]:
    """The RunRecord of one launch from its folder (series None when no steps.json exists);
    nodes: the job's, in Slurm's order (for the rank a straggler report names)."""
    rdir = Path(entry["run_dir"])
    record: stepfile.StepRecord | None = None
    try:
        record = stepfile.read(rdir / "steps.json")
    except PerfgateError as e:
        if (rdir / "steps.json").exists():  # there, but not a steps file: say which field
            notices.warn(str(e))
        record = None
    series = record.to_series(str(rdir / "steps.json")) if record else None
    rank0 = rdir / "rank-0.log"
    # Megatron's last rank prints the timers (NeMo 2's printer may be rank 0); rank 0 and the
    # last rank state the versions. What the workload measured itself wins over a log line.
    ranks = rank_logs(rdir)
    ends = list(dict.fromkeys(ranks[-1:] + ranks[:1]))
    versions = {**versions_of_files(ends), **(record.versions if record else {})}
    run = RunRecord(
        image=entry.get("image"),
        label=entry.get("label", "baseline"),
        series=series,
        versions=versions,
        exit_code=entry.get("exit_code"),
        log_path=str(rank0) if rank0.exists() else None,
        mock_data=record.mock_data if record else True,
        image_digest=entry.get("image_digest"),
        image_stamp=tuple(entry["image_stamp"]) if entry.get("image_stamp") else None,
        slowest=slowest_of(rank0, list(nodes or ()), entry.get("tasks")),
        phases=phases_of_run(ends),
    )
    return run, record


def world_mismatch(
    entry: dict[str, Any], rec: stepfile.StepRecord | None, job_id: str | None
) -> Diagnosis | None:
    """A launch whose rank 0 saw another world size than srun started: its ranks were lost.

    A container runtime that does not pass the host's environment leaves every task without
    SLURM_PROCID/SLURM_NTASKS: each believes it is rank 0 of 1, and the run looks fine.
    """
    tasks = entry.get("tasks")
    if not tasks or rec is None or rec.world_size in (None, tasks):
        return None
    cause = "CONTAINER" if entry.get("image") else "UNKNOWN"
    why = (
        "the container runtime did not pass Slurm's variables (SLURM_PROCID, SLURM_NTASKS)"
        if entry.get("image")
        else "Slurm's variables (SLURM_PROCID, SLURM_NTASKS) did not reach the workload"
    )
    rank0 = Path(entry["run_dir"]) / "rank-0.log"
    return Diagnosis(
        cause,
        f"job {job_id}: rank 0 saw a world of {rec.world_size} task(s) but srun started "
        f"{tasks}: {why}",
        f"world_size {rec.world_size} in {Path(entry['run_dir']) / 'steps.json'}",
        dg.tail(dg.read_log(rank0)) if rank0.exists() else "",
    )


def batch_logs(job_dir: Path, job_id: str | None) -> list[Path]:
    """submitit's stdout/stderr of the batch step (slurmstepd's kill notices land there)."""
    folder = job_dir / "submitit"
    if job_id:
        return [folder / f"{job_id}_0_log.err", folder / f"{job_id}_0_log.out"]
    return sorted(folder.glob("*_log.err")) + sorted(folder.glob("*_log.out"))


def collect_job(
    job_dir: str | os.PathLike[str],
    row_id: str,
    job_id: str | None,
    state: str,
    expected_steps: int | None = None,
    sbatch_script: str | None = None,
    wall_s: float | None = None,
) -> RunResult:
    """Everything the last attempt of a job measured, with a diagnosis when it failed."""
    jdir = Path(job_dir)
    tried = attempts(jdir)
    extra = batch_logs(jdir, job_id)
    notes: list[str] = []
    if not tried:
        diag = dg.diagnose(
            state, None, [(str(p), dg.read_log(p)) for p in extra if p.exists()], job_id=job_id
        )
        if diag is None:
            diag = Diagnosis("UNKNOWN", f"job {job_id}: the job function never started ({state})")
        return RunResult(
            row_id,
            job_id,
            state,
            diagnosis=diag,
            sbatch_script=sbatch_script,
            wall_s=wall_s,
            job_dir=str(jdir),
        )
    last = tried[-1]
    adir = jdir / f"attempt-{last}"
    if last > 0:
        notes.append(requeue_note(last + 1))
    manifest = read_manifest(adir) or {"runs": []}
    extra = [adir / JOB_LOG, *extra]
    runs: list[RunRecord] = []
    diag: Diagnosis | None = None
    planned = int(manifest.get("planned", 0))
    nodes = nodenames.names(manifest.get("nodes"), f"{adir}: manifest nodes", notices.warn)
    for entry in manifest.get("runs", []):
        run, rec = collect_run(entry, list(nodes))
        runs.append(run)
        if diag is None:
            ended = entry.get("exit_code") is not None
            diag = dg.diagnose(
                state if not ended or entry.get("exit_code") != 0 else "",
                entry.get("exit_code"),
                run_logs(Path(entry["run_dir"]), extra),
                series=run.series,
                expected_steps=expected_steps,
                step_error=rec.error if rec else None,
                job_id=job_id,
            )
            if diag is None:
                diag = world_mismatch(entry, rec, job_id)
            if diag is not None and len(manifest.get("runs", [])) > 1:
                where = f"run {entry.get('index')} ({run.label})"
                diag = Diagnosis(
                    diag.cause, f"{where}: {diag.message}", diag.evidence, diag.log_tail
                )
    if diag is None and manifest.get("error"):
        logs = [(str(p), dg.read_log(p)) for p in extra if p.exists()]
        diag = dg.diagnose(state, 1, logs, job_id=job_id) or Diagnosis(
            "UNKNOWN", f"job {job_id}: {manifest['error']}", manifest["error"]
        )
    if diag is None and len(runs) < planned:
        logs = [(str(p), dg.read_log(p)) for p in extra if p.exists()]
        diag = dg.diagnose(state or "FAILED", 1, logs, job_id=job_id) or Diagnosis(
            "UNKNOWN", f"job {job_id}: {len(runs)} of {planned} launches ran ({state})"
        )
    return RunResult(
        row_id=row_id,
        job_id=job_id,
        state=state,
        runs=tuple(runs),
        nodes=nodes,
        log_paths=tuple(r.log_path for r in runs if r.log_path),
        diagnosis=diag,
        attempts=last + 1,
        wall_s=wall_s,
        sbatch_script=sbatch_script,
        job_dir=str(jdir),
        notes=tuple(notes + list(manifest.get("notes", []))),
    )


def requeue_note(attempts_made: int, causes: tuple[str, ...] = ()) -> str:
    """The note a requeued job's result carries: how often, why, and what was measured."""
    why = f"after {', '.join(causes)}" if causes else "(preempted or requeued)"
    return (
        f"job requeued {attempts_made - 1} time(s) {why}: only attempt {attempts_made} was measured"
    )


def progress(
    job_dir: str | os.PathLike[str], total_steps: int, several: bool, attempt: int | None = None
) -> tuple[int | None, int | None, str | None]:
    """(last finished step, total steps, "2/6 candidate" when several runs) of a live job.

    attempt: the 0-based attempt Slurm runs now; a requeued job that has not started again
    has no progress yet (the dead attempt's steps are not shown as if they were live).
    """
    tried = attempts(job_dir)
    if not tried or (attempt is not None and attempt not in tried):
        return None, None, None
    manifest = (
        read_manifest(Path(job_dir) / f"attempt-{tried[-1] if attempt is None else attempt}") or {}
    )
    runs = manifest.get("runs", [])
    if not runs:
        return None, total_steps, None
    last = runs[-1]
    run = f"{len(runs)}/{manifest.get('planned', len(runs))} {last['label']}" if several else None
    try:
        rec = stepfile.read(Path(last["run_dir"]) / "steps.json")
    except PerfgateError:
        return None, total_steps, run
    return (rec.steps[-1]["step"] if rec.steps else None), total_steps, run
