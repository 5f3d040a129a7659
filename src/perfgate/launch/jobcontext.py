"""What the job function gets (JobContext, pickled into the job) and what it derives from it.

Both sides read this module: the login node builds the context (perfgate.launch.planning) and
the job function runs it in the allocation (perfgate.launch.job), so it imports neither.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from perfgate.catalog import Row
from perfgate.runs import Launches
from perfgate.secrets import is_knob, recorded
from perfgate.workload.spec import WorkloadSpec


@dataclass(frozen=True)
class JobContext:
    """Everything the job function needs, pickled into the job: no secret values in here."""

    row_id: str
    row: Row
    job_dir: str
    executor: str  # a name: the job function resolves it (perfgate.launch.allocation)
    nodes: int
    tasks_per_node: int
    launches: Launches
    steps: int
    time_limit_min: int
    env: dict[str, str] = field(default_factory=dict)  # performance knobs only
    # Names of the user's other variables: their values travel in the environment
    # (perfgate.launch.envs.export_env), never in this pickle.
    secret_env: tuple[str, ...] = ()
    overrides: dict[str, Any] = field(default_factory=dict)
    command: tuple[str, ...] | None = None
    container_runtime: str = "pyxis"
    container_mounts: tuple[str, ...] = ()
    container_command: tuple[str, ...] = ()  # runtime "command": the template's words
    mpi: str = "auto"
    finetune_data: str | None = None
    mock_data: bool = True
    perfgate_src: str = ""
    python: str = sys.executable
    max_pairs: int = 0  # A/B: the most pairs more_pairs may grow the job to
    # A/B: called with the job's RunRecords after its last planned pair; truthy asks for one
    # more pair (a non-empty str also says why, for the job's notes). Runs inside the job.
    more_pairs: Callable[[Sequence[Any]], bool | str] | None = None
    cuda_visible_devices: str | None = None  # local executor: the user's GPU selection

    @property
    def ab(self) -> bool:
        """True when the job alternates a baseline and a candidate image."""
        return any(label == "candidate" for label, _ in self.launches)


def run_dir(job_dir: str | os.PathLike[str], attempt: int, index: int, label: str) -> Path:
    """Folder of one workload launch: job_dir/attempt-K/run-NN-label (K counts requeues)."""
    return Path(job_dir) / f"attempt-{attempt}" / f"run-{index:02d}-{label}"


def workload_spec(ctx: JobContext, rdir: Path, label: str, image: str | None) -> WorkloadSpec:
    """The spec every rank of one launch reads (plain env only, for the record)."""
    return WorkloadSpec(
        row=masked_row(ctx.row),
        steps=ctx.steps,
        output_dir=str(rdir),
        overrides=dict(ctx.overrides),
        env=dict(ctx.env),
        label=label,
        image=image,
        finetune_data=ctx.finetune_data,
        mock_data=ctx.mock_data,
        command=list(ctx.command) if ctx.command else None,
    )


def masked_row(row: Row) -> Row:
    """The row as spec.json shows it: its variables that are not knobs as *** (the workload
    keeps what the job's environment gives them: row_env_by_environment)."""
    if all(is_knob(k) for k in row.env):
        return row
    return replace(row, env=recorded(row.env))


def row_env_by_environment(ctx: JobContext) -> dict[str, str]:
    """The row's variables that are not knobs, set in the launch's environment by the job
    function (the user's --env of the same name, already there, wins)."""
    return {k: v for k, v in ctx.row.env.items() if not is_knob(k) and k not in ctx.secret_env}


def container_env_names(ctx: JobContext) -> list[str]:
    """Variables whose host value must win over the image's (pyxis --container-env)."""
    fixed = ["MASTER_ADDR", "MASTER_PORT", "PERFGATE_IMAGE", "PERFGATE_RUN_LABEL"]
    return sorted({*ctx.env, *ctx.secret_env, *row_env_by_environment(ctx), *fixed})


def pair_launches(index: int, baseline: str | None, candidate: str | None) -> Launches:
    """Launches of pair `index` (0-based), counterbalanced: AB for even pairs, BA for odd.

    Two launches back to back on the same nodes are not exchangeable: on real A/A pairs the
    second launch is ~0.4% slower (Megatron-LM CI ckpt-resume pairs, median). With the
    candidate always second that order effect reads as a regression (false alarms 1.5-4.4%
    instead of <1% in scripts/evaluate_detector.py --abab); alternating the order cancels it
    over each two pairs and turns the rest into noise the paired test accounts for.
    """
    a, b = ("baseline", baseline), ("candidate", candidate)
    return (a, b) if index % 2 == 0 else (b, a)
