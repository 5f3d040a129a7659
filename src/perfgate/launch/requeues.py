"""Why a requeued job's earlier attempts ended: node failure (and which node), preemption.

Slurm requeues a job after a node failure or a preemption; the job keeps its id, and the job
function starts again in a new attempt folder. sacct keeps one record per attempt (-D), whose
state is the cause; after a node failure, the dead attempt's srun output names the node
("srun: error: Node failure on n2"), where slurmstepd's kill notice names the batch host.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Sequence
from pathlib import Path

from perfgate import diagnose as dg
from perfgate.launch.collect import attempts, requeue_note, run_logs
from perfgate.launch.slurmstate import JobInfo
from perfgate.runs import RunResult

Causes = tuple[str | None, ...]  # why each earlier attempt ended; None: not known yet

# What a job that was running shows once Slurm has requeued it.
REQUEUE_STATES = frozenset({"PENDING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED"})


def requeued(before: str | None, now: str) -> bool:
    """True when a job seen running is now queued again: Slurm requeued it."""
    return before in ("RUNNING", "COMPLETING") and now in REQUEUE_STATES


def track(
    causes: Causes,
    job_dir: str | os.PathLike[str],
    job_id: str | None,
    recorded: Callable[[str], list[JobInfo]],
) -> Causes:
    """causes completed: one per earlier attempt, named where accounting has said why.

    An attempt folder beyond len(causes) is a requeue no poll saw; recorded(job_id) gives
    every attempt the scheduler keeps (the executor's attempts), looked up again on later
    polls while slurmdbd lags.
    """
    out = list(causes)
    tried = attempts(job_dir)
    while tried and len(out) < tried[-1]:
        out.append(None)
    if None not in out or job_id is None:
        return tuple(out)
    ended = [a for a in recorded(job_id) if not a.active]
    for k, cause in enumerate(out):
        if cause is None and k < len(ended):
            out[k] = _cause(Path(job_dir) / f"attempt-{k}", ended[k])
    return tuple(out)


def _cause(adir: Path, info: JobInfo) -> str:
    logs = [log for rdir in sorted(adir.glob("run-*")) for log in run_logs(rdir)]
    nodes = dg.failed_nodes(logs)
    if nodes:
        return f"{info.state} on {', '.join(nodes)}"
    return f"{info.state} ({info.nodes})" if info.nodes else info.state


def named(causes: Sequence[str | None]) -> tuple[str, ...]:
    """The causes as shown: "a requeue" where accounting has not said why (yet)."""
    return tuple(c or "a requeue" for c in causes)


def name_in_result(result: RunResult, causes: Sequence[str | None]) -> RunResult:
    """The result of a requeued job, saying why each earlier attempt ended."""
    if not causes:
        return result
    why = named(causes)
    note = requeue_note(len(why) + 1, why)
    notes = tuple(note if n.startswith("job requeued") else n for n in result.notes)
    return dataclasses.replace(result, requeues=why, notes=notes)
