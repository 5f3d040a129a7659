"""One row's job in a launch session: what the session knows of it, and how its RunResult is
made when the job ends (its result pickle, its folder, a deadline) or never starts.

The session (perfgate.launch.session) decides when; this module says what the result is.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from submitit.core.utils import pickle_load

from perfgate.catalog import Row
from perfgate.launch import planning
from perfgate.launch.collect import collect_job
from perfgate.launch.slurmstate import JobInfo
from perfgate.launch.types import JobPlan
from perfgate.runs import Diagnosis, RunResult


@dataclass
class Entry:
    row: Row
    plan: JobPlan
    ctx: planning.JobContext
    test_id: str | None = None
    job_id: str | None = None
    submitted_at: float | None = None  # wall clock
    running_since: float | None = None
    pending_since: float | None = None
    unknown_since: float | None = None
    info: JobInfo | None = None
    result: RunResult | None = None
    local_job: Any = None  # submitit LocalJob (local executor)
    resumed: bool = False
    # Why each earlier attempt ended ("NODE_FAIL on n2", "PREEMPTED"); None while accounting
    # has not recorded it yet (looked up again on the next polls).
    requeues: list[str | None] = dataclasses.field(default_factory=list)

    @property
    def done(self) -> bool:
        return self.result is not None


def pickle_path(e: Entry, job_id: str | None = None) -> Path:
    """Where submitit writes the job function's result."""
    return Path(e.plan.job_dir) / "submitit" / f"{job_id or e.job_id}_0_result.pkl"


def collect(e: Entry, state: str) -> RunResult:
    """The result read back from the job folder (logs, steps), in a final state."""
    wall = e.info.elapsed_s if e.info else None
    return collect_job(
        e.plan.job_dir,
        e.row.id,
        e.job_id,
        state,
        e.ctx.steps,
        sbatch_script=e.plan.sbatch_script,
        wall_s=wall,
    )


def from_pickle(e: Entry, pickle: Path, state: str) -> RunResult:
    """The result the job function returned, or (it raised) the folder's, naming the error."""
    try:
        outcome, value = pickle_load(pickle)
    except Exception:
        time.sleep(1)  # written by rename, but a lagging filesystem may show it early
        outcome, value = pickle_load(pickle)
    if outcome == "success" and isinstance(value, RunResult):
        if state not in ("COMPLETED", "FAILED"):
            # Slurm ended it (TIMEOUT, PREEMPTED, NODE_FAIL, CANCELLED): that is the cause,
            # whatever the killed launch made the job function conclude.
            return collect(e, state)
        if value.state == "FAILED":  # the batch step exits 0 after a failed launch
            state = "FAILED"
        return dataclasses.replace(
            value, job_id=e.job_id, state=state, sbatch_script=e.plan.sbatch_script
        )
    # The job function itself raised: keep what it measured, name the exception.
    last = str(value).strip().splitlines()[-1] if str(value).strip() else "no traceback"
    res = collect(e, state)
    return dataclasses.replace(
        res,
        diagnosis=Diagnosis(
            "UNKNOWN",
            f"job {e.job_id}: the job function failed: {last}",
            last,
            str(value)[-4000:],
        ),
    )


def given_up(e: Entry, cause: str, message: str) -> RunResult:
    """The folder's result with the session's reason for giving the job up."""
    res = collect(e, e.info.state if e.info else "UNKNOWN")
    return dataclasses.replace(
        res,
        diagnosis=Diagnosis(cause, message, None, res.diagnosis.log_tail if res.diagnosis else ""),
    )


def not_submitted(e: Entry, line: str) -> RunResult:
    """sbatch refused the job (a bad partition, account, QOS, limit): its own words."""
    return RunResult(
        e.row.id,
        None,
        "NOT_SUBMITTED",
        diagnosis=Diagnosis("SUBMIT", f"sbatch refused the job: {line}", line),
        sbatch_script=e.plan.sbatch_script,
        job_dir=e.plan.job_dir,
    )


def never_submitted(e: Entry) -> RunResult:
    """A row the session was interrupted before submitting."""
    return RunResult(
        e.row.id,
        None,
        "CANCELLED",
        diagnosis=Diagnosis(
            "CANCELLED", "the session was interrupted before this row was submitted"
        ),
        job_dir=e.plan.job_dir,
    )
