"""What the job function asks of the place it runs in, and the process helpers both answers use.

Only the standard library and perfgate.launch.jobcontext: this is code that runs in the
allocation, apart from the login node's (perfgate.launch.executors).
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path
from typing import Protocol

STOP_GRACE_S = 10  # between SIGTERM and SIGKILL of a launch we stop


class Allocation(Protocol):
    """Where one job runs, as its job function sees it from the first node."""

    job_id: str | None  # the scheduler's id of this job; None where there is no scheduler

    def nodes(self) -> list[str]:
        """The job's hosts, the one the job function runs on first."""
        ...

    def mpi(self, notes: list[str]) -> str | None:
        """The launcher's MPI plugin (None: none); why one was dropped goes into notes."""
        ...

    def master_addr(self, nodes: list[str]) -> str:
        """Where rank 0 of every launch listens (MASTER_ADDR)."""
        ...

    def world_size(self) -> int | None:
        """The tasks rank 0 must see (collect checks it); None where it is not checked."""
        ...

    def command(self, rdir: Path, image: str | None, mpi: str | None) -> list[str]:
        """The argv of one launch, as the job's manifest records it."""
        ...

    def run(
        self, argv: list[str], rdir: Path, env: dict[str, str], procs: list[subprocess.Popen]
    ) -> int:
        """Start one launch's processes (into procs, so a signal can stop them), wait for
        them, and return the launch's exit status."""
        ...

    def state(self, ok: bool) -> str:
        """The state word of the result the job function returns (ok: every launch ran)."""
        ...


def stop(procs: list[subprocess.Popen]) -> None:
    """SIGTERM the processes still running (srun forwards it to every task), SIGKILL those
    that linger past STOP_GRACE_S."""
    live = [p for p in procs if p.poll() is None]
    for p in live:
        p.terminate()
    deadline = time.monotonic() + STOP_GRACE_S
    for p in live:
        try:
            p.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def output(cmd: list[str], stderr: bool = False) -> str | None:
    """stdout (and stderr) of a short command, None when it fails or is missing."""
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if p.returncode != 0:
        return None
    return p.stdout + (p.stderr if stderr else "")
