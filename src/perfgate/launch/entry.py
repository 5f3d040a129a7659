"""One row's job in a launch session: what the session knows of it, and how its RunResult is
made when the job ends (its result pickle, its folder, a deadline) or never starts.

An Entry never changes: the session replaces it (dataclasses.replace) as its job moves, so a
reader holds a consistent view. Its one clock, `since`, says when the job was last queued or
last started running (`phase`): the queue timeout and the time limit both count from it.
The session (perfgate.launch.session) decides when; this module says what the result is.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from pathlib import Path

from submitit.core.utils import pickle_load

from perfgate.catalog import Row
from perfgate.launch.collect import collect_job
from perfgate.launch.jobcontext import JobContext
from perfgate.launch.requeues import requeued
from perfgate.launch.slurmstate import JobInfo
from perfgate.launch.types import JobPlan, LaunchOptions
from perfgate.runs import Diagnosis, RunResult

QUEUED = ("PENDING", "REQUEUED")  # states that (re)start the queue clock


@dataclass(frozen=True)
class Entry:
    """One row's job: its plan, the scheduler's latest word on it, and its result once over."""

    row: Row
    plan: JobPlan
    ctx: JobContext
    test_id: str | None = None
    job_id: str | None = None
    submitted_at: float | None = None  # wall clock, for the state file only (no deadline)
    info: JobInfo | None = None  # the scheduler's latest answer (kept while it has none)
    phase: str = "PENDING"  # what `since` counts: PENDING (queue timeout), RUNNING (time limit)
    since: float = 0.0  # monotonic time the job last entered its phase
    result: RunResult | None = None
    resumed: bool = False
    # Why each earlier attempt ended ("NODE_FAIL on n2", "PREEMPTED"); None while accounting
    # has not recorded it yet (looked up again on the next polls).
    requeues: tuple[str | None, ...] = ()
    key: str | None = None  # the session's name for it: the row id, or row~confirm-N
    options: LaunchOptions | None = None  # what it was planned with, where not the session's

    @property
    def id(self) -> str:
        """The session's name for this job: its row's id, or `<row>~confirm-N` for the N-th
        confirmation of the row on other nodes."""
        return self.key or self.row.id

    @property
    def done(self) -> bool:
        """The job is over (or was never submitted): its result is final."""
        return self.result is not None

    def submitted(self, job_id: str) -> Entry:
        """Just submitted: queued from now."""
        now = time.monotonic()
        return dataclasses.replace(
            self, job_id=job_id, submitted_at=time.time(), phase="PENDING", since=now
        )

    def reattached(self, job_id: str, info: JobInfo, submitted_at: float) -> Entry:
        """Taken over from an earlier session: a running job's clock counts from its start."""
        now = time.monotonic()
        running = info.state == "RUNNING"
        return dataclasses.replace(
            self,
            job_id=job_id,
            submitted_at=submitted_at,
            resumed=True,
            info=info,
            phase="RUNNING" if running else "PENDING",
            since=now - (info.elapsed_s or 0.0) if running else now,
        )

    def seen(self, info: JobInfo, now: float) -> Entry:
        """After the scheduler's latest answer: a requeue noted, the clock restarted when the
        job starts running or queues again (a requeued job's queue clock restarts)."""
        was = self.info.state if self.info else None
        causes = (*self.requeues, None) if requeued(was, info.state) else self.requeues
        phase, since = self.phase, self.since
        if info.state == "RUNNING" and was != "RUNNING":
            phase, since = "RUNNING", now
        if info.state in QUEUED and was not in QUEUED:
            phase, since = "PENDING", now
        return dataclasses.replace(self, info=info, requeues=causes, phase=phase, since=since)

    def ended(self, result: RunResult) -> Entry:
        """With its final result."""
        return dataclasses.replace(self, result=result)


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
