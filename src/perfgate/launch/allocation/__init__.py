"""The in-allocation side of each executor: what the job function asks where it runs.

The pickled JobContext names its executor; allocation_for() turns the name into the object the
job function (perfgate.launch.job) asks for its job id, nodes, rank 0's address, MPI plugin,
how a launch's ranks start and the state word of its result. The login node's side of the same
executors is perfgate.launch.executors; nothing here imports it.
"""

from __future__ import annotations

from collections.abc import Callable

from perfgate.launch.allocation.base import Allocation
from perfgate.launch.allocation.local import LocalAllocation
from perfgate.launch.allocation.slurm import SlurmAllocation
from perfgate.launch.jobcontext import JobContext

# One per executor name of perfgate.launch.executors.EXECUTORS (a test holds them equal).
ALLOCATIONS: dict[str, Callable[[JobContext], Allocation]] = {
    "slurm": SlurmAllocation,
    "local": LocalAllocation,
}


def allocation_for(ctx: JobContext) -> Allocation:
    """Where this job runs, for the executor its context names."""
    return ALLOCATIONS[ctx.executor](ctx)


__all__ = ["ALLOCATIONS", "Allocation", "allocation_for"]
