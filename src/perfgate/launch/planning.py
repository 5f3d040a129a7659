"""From a row and the user's options to what runs: the sbatch script and the srun line.

One code path: `plan()` renders exactly what `--dry-run` shows and what the session submits
(the sbatch script is submitit's own rendering of the same parameters the executor gets), and
the job function builds its srun line with the same `srun_argv()`. Works without Slurm.
"""

from __future__ import annotations

import os
import shlex
import sys
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# submitit has no public way to render a script without submitting it; this is the
# function its SlurmExecutor calls, so the dry-run shows byte for byte what is submitted.
from submitit.slurm.slurm import _make_sbatch_string

import perfgate
from perfgate.catalog import EXECUTORS, RUNTIMES, Row
from perfgate.errors import ConfigError
from perfgate.launch import checks, images, runtimes
from perfgate.launch.envs import job_env
from perfgate.launch.types import JobPlan, LaunchOptions
from perfgate.runs import Launches
from perfgate.workload import backends
from perfgate.workload.spec import WorkloadSpec

DEFAULT_RUN_LIMIT_MIN = 30  # per workload launch, when neither the row nor the user sets one
SIGNAL_DELAY_S = 60


@dataclass(frozen=True)
class JobContext:
    """Everything the job function needs, pickled into the job: no secret values in here."""

    row_id: str
    row: Row
    job_dir: str
    executor: str
    nodes: int
    tasks_per_node: int
    launches: Launches
    steps: int
    time_limit_min: int
    env: dict[str, str] = field(default_factory=dict)
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
        row=ctx.row,
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


def container_env_names(ctx: JobContext) -> list[str]:
    """Variables whose host value must win over the image's (pyxis --container-env)."""
    fixed = ["MASTER_ADDR", "MASTER_PORT", "PERFGATE_IMAGE", "PERFGATE_RUN_LABEL"]
    return sorted({*ctx.env, *ctx.secret_env, *fixed})


def srun_argv(ctx: JobContext, rdir: Path, image: str | None, mpi: str | None) -> list[str]:
    """The srun line of one launch over the whole allocation (the runtime's part at the end).

    image is what the runtime gets (pyxis: an absolute squashfs path, imported URIs
    included), or None.
    """
    argv = [
        "srun",
        f"--nodes={ctx.nodes}",
        f"--ntasks-per-node={ctx.tasks_per_node}",
        f"--ntasks={ctx.nodes * ctx.tasks_per_node}",
        "--kill-on-bad-exit=1",
        f"--output={rdir}/rank-%t.log",
    ]
    if mpi:
        argv.append(f"--mpi={mpi}")
    return argv + runtimes.task_argv(ctx, rdir, image, container_env_names(ctx))


def local_argv(ctx: JobContext, rdir: Path) -> list[str]:
    """What each local rank runs (the executor sets RANK/LOCAL_RANK/WORLD_SIZE per rank)."""
    return [ctx.python, "-m", "perfgate.workload", str(rdir / "spec.json")]


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
    return (("baseline", options.container_image),) * max(1, options.repeat)


def row_command(row: Row, options: LaunchOptions) -> tuple[tuple[str, ...] | None, dict]:
    """(argv or None, the spec's overrides) for the row, as its backend makes them."""
    return backends.get(row.backend).command_line(row, options.overrides)


def time_limit_min(row: Row, options: LaunchOptions, n_launches: int) -> int:
    """The allocation's limit: per-launch limit (user, row, else 30) x the most launches."""
    per_run = options.time_limit_min or row.time_limit_min or DEFAULT_RUN_LIMIT_MIN
    if per_run <= 0:
        raise ConfigError(f"row {row.id}: time limit {per_run} min must be positive")
    return int(per_run * n_launches)


def new_job_dir(results_dir: str | os.PathLike[str], row_id: str) -> Path:
    """A fresh folder for one submission: job ids restart on a new cluster, folders never do."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    return Path(results_dir).resolve() / "jobs" / row_id / f"{stamp}-{uuid.uuid4().hex[:6]}"


def context(row: Row, options: LaunchOptions, job_dir: Path, more_pairs=None) -> JobContext:
    """The pickled argument of the job function for this row and these options."""
    if options.executor not in EXECUTORS:
        raise ConfigError(
            f"--executor {options.executor!r}: expected one of {', '.join(EXECUTORS)}"
        )
    if options.container_runtime not in RUNTIMES:
        raise ConfigError(
            f"container runtime {options.container_runtime!r}: "
            f"expected one of {', '.join(RUNTIMES)}"
        )
    if options.executor == "local" and row.nodes > 1:
        raise ConfigError(f"row {row.id}: {row.nodes} nodes cannot run on the local executor")
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
        if options.executor == "local" and any(img for _, img in launches):
            raise ConfigError(
                "--executor local runs in the current environment and cannot start a container:"
                " run it inside the container and drop --container-image"
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


def sbatch_parameters(row: Row, options: LaunchOptions, ctx: JobContext) -> dict[str, Any]:
    """submitit SlurmExecutor parameters: the function runs once, in the batch step."""
    params: dict[str, Any] = {
        "job_name": f"{options.job_name_prefix}-{row.id}",
        "time": ctx.time_limit_min,
        "nodes": ctx.nodes,
        "ntasks_per_node": ctx.tasks_per_node,
        "gpus_per_node": options.gpus_per_node or ctx.tasks_per_node,
        # Run the job function once on the first node (not one copy per task through srun):
        # it starts the workload itself with its own srun over the allocation.
        "use_srun": False,
        "signal_delay_s": SIGNAL_DELAY_S,
        # submitit always asks for a USR2 warning before the time limit. Sent to the steps it
        # would kill the ranks (Python's default action); sent to the batch shell (B:) it
        # would kill the shell. So: the shell only, and the shell ignores it. The time limit
        # itself still ends the job with SIGTERM, which the job function handles.
        "additional_parameters": {"signal": f"B:USR2@{SIGNAL_DELAY_S}", **options.slurm_params},
        "setup": ["trap '' USR2"],
    }
    if options.exclusive:
        params["exclusive"] = True
    for key in ("partition", "account", "qos"):
        if getattr(options, key):
            params[key] = getattr(options, key)
    checks.sbatch_parameters(params)
    return params


def submitit_command(folder: str | os.PathLike[str]) -> str:
    """The batch command submitit writes: run the pickled job function in this Python."""
    return " ".join(
        [shlex.quote(sys.executable), "-u -m submitit.core._submit", shlex.quote(str(folder))]
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
    if ctx.executor == "slurm":
        params = sbatch_parameters(row, options, ctx)
        command = submitit_command(jdir / "submitit")
        try:
            script = _make_sbatch_string(command=command, folder=jdir / "submitit", **params)
        except (TypeError, ValueError) as e:
            raise ConfigError(f"row {row.id}: bad sbatch parameter ({e})") from None
        checks.script(script, [*params["setup"], "export SUBMITIT_EXECUTOR=slurm", command])
        shown_image = image
        if image and ctx.container_runtime == "pyxis" and not images.is_squashfs(image):
            shown_image = str(jdir / "images" / images.sqsh_name(image))  # imported once per job
        mpi = "pmix" if ctx.mpi == "auto" else (None if ctx.mpi == "none" else ctx.mpi)
        argv = srun_argv(ctx, rdir, shown_image, mpi)
    else:
        script = ""
        argv = local_argv(ctx, rdir)
        argv = [f"RANK=0..{ctx.tasks_per_node - 1}", f"WORLD_SIZE={ctx.tasks_per_node}", *argv]
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
