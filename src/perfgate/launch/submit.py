"""Submitting one row's job: Slurm's commands present, the submitit executor, sbatch's words.

A refused submission (a bad partition, account, QOS, limit) becomes the row's NOT_SUBMITTED
result with sbatch's own complaint on one line; it never stops the other rows.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import submitit

from perfgate.errors import PerfgateError
from perfgate.launch import planning
from perfgate.launch.entry import Entry, not_submitted
from perfgate.launch.job import run_job
from perfgate.launch.types import LaunchOptions


def sbatch_error(text: str) -> str:
    """sbatch's own complaint, on one line: its `sbatch: ...` lines (not the "Try sbatch
    --help" hint), else the lines that say error, else the last line."""
    lines = [x.strip() for x in text.strip().splitlines() if x.strip()]
    said = [x for x in lines if x.startswith("sbatch:")]
    said = said or [x for x in lines if "error" in x.lower()] or lines[-1:]
    return "; ".join(said)


def require_slurm() -> None:
    """A one-line error on a machine without Slurm's commands, before any row is planned."""
    missing = [c for c in ("sbatch", "srun", "squeue", "scancel") if shutil.which(c) is None]
    if missing:
        raise PerfgateError(
            f"no Slurm here ({', '.join(missing)} not on PATH): run from a login node, or use "
            "--dry-run, --replay DIR or --executor local"
        )


def submit(e: Entry, options: LaunchOptions) -> None:
    """Submit e's job and note its id and clocks, or give e its NOT_SUBMITTED result."""
    folder = Path(e.plan.job_dir) / "submitit"
    try:
        if options.executor == "slurm":
            ex = submitit.SlurmExecutor(folder=folder)
            ex.update_parameters(**planning.sbatch_parameters(e.row, options, e.ctx))
        else:
            ex = submitit.LocalExecutor(folder=folder)
            ex.update_parameters(timeout_min=e.ctx.time_limit_min, tasks_per_node=1, nodes=1)
        job = ex.submit(run_job, e.ctx)
    except Exception as err:  # sbatch refused: a bad partition, account, QOS, limit
        e.result = not_submitted(e, sbatch_error(str(err)))
        return
    e.job_id = str(job.job_id)
    e.submitted_at = time.time()
    e.pending_since = time.monotonic()
    if options.executor == "local":
        e.local_job = job
