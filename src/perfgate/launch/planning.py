"""From a row and the user's options to what runs: the job's context and what --dry-run shows.

One code path: `plan()` renders exactly what `--dry-run` shows and what the session submits
(the executor renders its batch script from the same parameters it submits with: for Slurm,
submitit's own sbatch script), and the job function builds its srun line with the same
`srun_argv()` (perfgate.launch.allocation.slurm). Works without Slurm.
"""

from __future__ import annotations

import os
import shlex
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import perfgate
from perfgate import nodenames, notices
from perfgate.catalog import RUNTIMES, Row
from perfgate.errors import ConfigError
from perfgate.launch import checks, images, runtimes
from perfgate.launch.envs import job_env
from perfgate.launch.executors import executor_for
from perfgate.launch.jobcontext import JobContext, pair_launches, run_dir, workload_spec
from perfgate.launch.types import JobPlan, LaunchOptions
from perfgate.runs import Launches
from perfgate.workload import backends

DEFAULT_RUN_LIMIT_MIN = 30  # per workload launch, when neither the row nor the user sets one


def launches_for(options: LaunchOptions) -> Launches:
    """Baseline only (--repeat K times), or options.pairs counterbalanced baseline/candidate
    pairs (AB BA AB..)."""
    if options.candidate_image:
        if not options.container_image:
            raise ConfigError("--candidate-image needs --container-image (the baseline image)")
        if options.pairs < 1 or options.max_pairs < options.pairs:
            raise ConfigError(
                f"--pairs {options.pairs} / --max-pairs {options.max_pairs}: need 1 <= pairs <= max"
            )
        out: Launches = ()
        for i in range(options.pairs):
            out += pair_launches(i, options.container_image, options.candidate_image)
        return out
    return ((options.run_label, options.container_image),) * max(1, options.repeat)


# sbatch options that pin a job to nodes: a confirmation on other nodes drops them
PINNING = ("nodelist", "w")


def confirmation_options(options: LaunchOptions, exclude: Sequence[str]) -> LaunchOptions:
    """The options of a confirmation run: one launch labelled "confirm", kept off `exclude`
    (perfgate.launch.avoid: in place of the first runs' list; the user's own --slurm-param
    exclude stays) and free of node pins."""
    params = {k: v for k, v in options.slurm_params.items() if k not in PINNING}
    avoid: tuple[str, ...] = ()
    if executor_for(options.executor).excludes_nodes:
        avoid = nodenames.names(list(exclude), "the confirmation's --exclude", notices.warn)
    return replace(
        options,
        repeat=1,
        candidate_image=None,
        run_label="confirm",
        slurm_params=params,
        avoid_nodes=avoid,
    )


def row_command(row: Row, options: LaunchOptions) -> tuple[tuple[str, ...] | None, dict]:
    """(argv or None, the spec's overrides) for the row, as its backend makes them."""
    return backends.get(row.backend).command_line(row, options.overrides)


def time_limit_min(row: Row, options: LaunchOptions, n_launches: int) -> int:
    """The allocation's limit: per-launch limit (user, row, else 30) x the most launches."""
    per_run = options.time_limit_min or row.time_limit_min or DEFAULT_RUN_LIMIT_MIN
    if per_run <= 0:
        raise ConfigError(f"row {row.id}: time limit {per_run} min must be positive")
    return int(per_run * n_launches)


def new_job_dir(results_dir: str | os.PathLike[str], row_id: str, tag: str = "") -> Path:
    """A fresh folder for one submission: job ids restart on a new cluster, folders never do.
    tag names what the job is for beside the row's first job (confirm-1: a confirmation)."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    name = f"{stamp}-{uuid.uuid4().hex[:6]}" + (f"-{tag}" if tag else "")
    return Path(results_dir).resolve() / "jobs" / row_id / name


def context(row: Row, options: LaunchOptions, job_dir: Path, more_pairs=None) -> JobContext:
    """The pickled argument of the job function for this row and these options."""
    executor = executor_for(options.executor)
    if options.container_runtime not in RUNTIMES:
        raise ConfigError(
            f"container runtime {options.container_runtime!r}: "
            f"expected one of {', '.join(RUNTIMES)}"
        )
    if executor.max_nodes is not None and row.nodes > executor.max_nodes:
        raise ConfigError(
            f"row {row.id}: {row.nodes} nodes cannot run on the {executor.name} executor"
        )
    checks.row(row.id, row.env)
    checks.options(options)
    launches = launches_for(options)
    runtime = options.container_runtime
    template = ()
    if options.container_command:
        if runtime != "command":
            raise ConfigError(
                f"--container-command is the runtime 'command', not {runtime!r}: drop "
                "--container-runtime or set it to command"
            )
        template = runtimes.parse_template(options.container_command)
    elif runtime == "command":
        raise ConfigError("--container-runtime command needs --container-command TEMPLATE")
    if runtime != "none":
        launches = tuple((label, images.resolve_for(runtime, img)) for label, img in launches)
        if not executor.starts_containers and any(img for _, img in launches):
            raise ConfigError(
                f"--executor {executor.name} runs in the current environment and cannot start a"
                " container: run it inside the container and drop --container-image"
            )
    pyxis = options.container_runtime == "pyxis" and any(img for _, img in launches)
    src = str(Path(perfgate.__file__).resolve().parents[1])
    checks.job_path("job folder", str(job_dir), pyxis)
    checks.job_path("perfgate source folder", src, pyxis)
    command, overrides = row_command(row, options)
    plain, secrets_ = job_env(row.env, options.env)
    max_launches = 2 * options.max_pairs if options.candidate_image else max(1, options.repeat)
    return JobContext(
        row_id=row.id,
        row=row,
        job_dir=str(job_dir),
        executor=options.executor,
        nodes=row.nodes,
        tasks_per_node=row.tasks_per_node,
        launches=launches,
        steps=row.steps or options.steps,
        time_limit_min=time_limit_min(row, options, max_launches),
        env=plain,
        secret_env=secrets_,
        overrides=overrides,
        command=command,
        container_runtime=options.container_runtime,
        container_mounts=tuple(options.container_mounts),
        container_command=template,
        mpi=options.mpi,
        finetune_data=options.finetune_data,
        mock_data=not options.finetune_data or options.mock_finetune_data,
        perfgate_src=src,
        max_pairs=options.max_pairs if options.candidate_image else 0,
        more_pairs=more_pairs,
        cuda_visible_devices=os.environ.get("CUDA_VISIBLE_DEVICES"),
    )


def plan(
    row: Row,
    options: LaunchOptions,
    job_dir: str | os.PathLike[str] | None = None,
    more_pairs: Callable[[Sequence[Any]], bool | str] | None = None,
) -> JobPlan:
    """What would run for this row: sbatch script, srun line, spec, GPU-hours. No Slurm needed."""
    checks.options(options)  # before any path is resolved: a NUL would fail in the OS call
    jdir = Path(job_dir) if job_dir else new_job_dir(options.results_dir, row.id)
    ctx = context(row, options, jdir, more_pairs)
    label, image = ctx.launches[0]
    rdir = run_dir(jdir, 0, 1, label)
    spec = workload_spec(ctx, rdir, label, image)
    gpus_per_node = options.gpus_per_node or ctx.tasks_per_node
    script, argv = executor_for(ctx.executor).render(options, ctx, rdir, image)
    return JobPlan(
        row_id=row.id,
        nodes=ctx.nodes,
        tasks_per_node=ctx.tasks_per_node,
        time_limit_min=ctx.time_limit_min,
        gpu_hours=round(ctx.nodes * gpus_per_node * ctx.time_limit_min / 60.0, 3),
        sbatch_script=script,
        srun_command=shlex.join(argv),
        workload_spec=spec.to_dict(),
        job_dir=str(jdir),
        executor=ctx.executor,
        launches=ctx.launches,
        max_pairs=ctx.max_pairs,
        env=dict(ctx.env),
        secret_env=ctx.secret_env,
    )
