"""This machine as the executor (--executor local): submitit's LocalExecutor, one row at a time.

The job function runs in a local process and starts each launch's ranks itself
(perfgate.launch.allocation.local). Nothing outlives the session, so there is no --resume.
"""

from __future__ import annotations

import socket
from collections.abc import Iterable, Sequence
from pathlib import Path

import submitit

from perfgate.launch.allocation.local import local_argv
from perfgate.launch.executors.base import JobFunction, Refused, one_line
from perfgate.launch.jobcontext import JobContext
from perfgate.launch.slurmstate import JobInfo
from perfgate.launch.types import LaunchOptions

# submitit's LocalJob states, in the words the session reads (anything else: FAILED)
STATES = {"RUNNING": "RUNNING", "FINISHED": "COMPLETED"}


class LocalExecutor:
    """Jobs as local processes, one node's worth, in the current environment."""

    name = "local"
    max_nodes = 1
    starts_containers = False
    resumable = False  # the jobs are this session's children
    parallel_submit = False
    excludes_nodes = False  # one host: there are no other nodes

    def __init__(self) -> None:
        self.jobs: dict[str, submitit.LocalJob] = {}

    def require(self) -> None:
        """Nothing to check: submitit runs the job in a process of its own."""

    def render(
        self, options: LaunchOptions, ctx: JobContext, rdir: Path, image: str | None
    ) -> tuple[str, list[str]]:
        """No batch script; each rank's command with the ranks it runs as."""
        n = ctx.tasks_per_node
        return "", [f"RANK=0..{n - 1}", f"WORLD_SIZE={n}", *local_argv(ctx, rdir)]

    def submit(self, fn: JobFunction, ctx: JobContext, options: LaunchOptions) -> str:
        """Start fn(ctx) in a local process, killed at the job's time limit."""
        try:
            ex = submitit.LocalExecutor(folder=Path(ctx.job_dir) / "submitit")
            ex.update_parameters(timeout_min=ctx.time_limit_min, tasks_per_node=1, nodes=1)
            job = ex.submit(fn, ctx)
        except Exception as err:
            raise Refused(one_line(str(err))) from err
        self.jobs[str(job.job_id)] = job
        return str(job.job_id)

    def states(self, job_ids: Iterable[str]) -> dict[str, JobInfo]:
        """From each local process: RUNNING, COMPLETED, else FAILED."""
        out = {}
        for job_id in job_ids:
            job = self.jobs.get(job_id)
            state = STATES.get(job.state if job is not None else "UNKNOWN", "FAILED")
            out[job_id] = JobInfo(job_id, state, source="local")
        return out

    def cancel(self, job_ids: Sequence[str]) -> None:
        """Kill each job's process."""
        for job_id in job_ids:
            job = self.jobs.get(job_id)
            if job is not None:
                job.cancel(check=False)

    def final_state(self, job_id: str) -> tuple[str, JobInfo | None]:
        """LOCAL: no scheduler has a word on how it ended; the result has its own."""
        return "LOCAL", None

    def attempts(self, job_id: str) -> list[JobInfo]:
        """[]: a local job is never requeued."""
        return []

    def nodes(self, job_id: str) -> list[str]:
        """This host: a local job has no other."""
        return [socket.gethostname()]

    def partition_nodes(self, partition: str | None) -> list[str] | None:
        """No partition: one host, nothing to keep a job off."""
        return None
