"""What the login node asks of an executor: submit, states, cancel, the final state, requeues,
the nodes a job ran on.

Modelled on submitit's Executor and Job (submit a function with its argument, read a job's
state, cancel it), with what a session also needs: states of many jobs in one query, the
scheduler's final word once the result is written, and the attempts of a requeued job.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, Protocol

from perfgate.errors import PerfgateError
from perfgate.launch.jobcontext import JobContext
from perfgate.launch.slurmstate import JobInfo
from perfgate.launch.types import LaunchOptions

JobFunction = Callable[[JobContext], Any]  # what runs in the job: perfgate.launch.job.run_job


class Refused(PerfgateError):
    """The executor would not take the job (a bad partition, account, QOS, limit)."""

    def __init__(self, line: str) -> None:
        super().__init__(line)
        self.line = line  # the submitter's own complaint, on one line


class Executor(Protocol):
    """One way to run jobs, as a launch session and the planner use it."""

    name: str  # what --executor says
    max_nodes: int | None  # rows with more nodes are refused when planned; None: no bound
    starts_containers: bool  # False: launches run in the current environment, images refused
    resumable: bool  # its jobs outlive the session: --resume re-attaches to them
    parallel_submit: bool  # several submissions may run at once, in threads
    excludes_nodes: bool  # a job can be kept off given nodes (a confirmation on other nodes)

    def require(self) -> None:
        """Raise a one-line PerfgateError where this machine cannot submit (no commands)."""
        ...

    def render(
        self, options: LaunchOptions, ctx: JobContext, rdir: Path, image: str | None
    ) -> tuple[str, list[str]]:
        """What --dry-run shows of the job: its batch script ("": none) and the argv of its
        first launch (rdir: that launch's folder)."""
        ...

    def submit(self, fn: JobFunction, ctx: JobContext, options: LaunchOptions) -> str:
        """Submit fn(ctx) as a job and return its id; raise Refused when it is not taken."""
        ...

    def states(self, job_ids: Iterable[str]) -> dict[str, JobInfo]:
        """Where each job stands now; ids the scheduler has no record of are absent."""
        ...

    def cancel(self, job_ids: Sequence[str]) -> None:
        """Cancel these jobs (the caller asks once per job)."""
        ...

    def final_state(self, job_id: str) -> tuple[str, JobInfo | None]:
        """The final state of a job whose result is written, and its latest record (None:
        no new one)."""
        ...

    def attempts(self, job_id: str) -> list[JobInfo]:
        """Every attempt of a requeued job, oldest first ([] where none is recorded)."""
        ...

    def nodes(self, job_id: str) -> list[str]:
        """The nodes the scheduler gave the job (its accounting), [] where it has no record."""
        ...

    def partition_nodes(self, partition: str | None) -> list[str] | None:
        """The nodes a job of this partition (None: the default) may get; None: unknown."""
        ...


def one_line(text: str) -> str:
    """The submitter's own complaint, on one line: its `sbatch: ...` lines (not the "Try
    sbatch --help" hint), else the lines that say error, else the last line."""
    lines = [x.strip() for x in text.strip().splitlines() if x.strip()]
    said = [x for x in lines if x.startswith("sbatch:")]
    said = said or [x for x in lines if "error" in x.lower()] or lines[-1:]
    return "; ".join(said)
