"""Slurm from the login node: sbatch through submitit, job states, scancel, requeues.

The job function runs once, in the batch step on the first node (perfgate.launch.allocation
.slurm starts each launch with srun from there). The sbatch script --dry-run shows is
submitit's own rendering of the same parameters the submission gets.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import submitit

# submitit has no public way to render a script without submitting it; this is the
# function its SlurmExecutor calls, so the dry-run shows byte for byte what is submitted.
from submitit.slurm.slurm import _make_sbatch_string

from perfgate import nodenames, notices
from perfgate.errors import ConfigError, PerfgateError
from perfgate.launch import checks, images
from perfgate.launch.allocation.slurm import srun_argv
from perfgate.launch.executors.base import JobFunction, Refused, one_line
from perfgate.launch.jobcontext import JobContext
from perfgate.launch.slurmstate import JobInfo, SlurmStates, query_partition_nodes
from perfgate.launch.types import LaunchOptions

SIGNAL_DELAY_S = 60
FINAL_STATE_WAIT_S = 30  # result pickle written, job still COMPLETING (KillWait, epilog)
COMMANDS = ("sbatch", "srun", "squeue", "scancel")
PING_TIMEOUT_S = 20
# What Slurm's clients say, fatally, when they find no slurm.conf and no configless source:
# every sbatch would then fail the same way, once per row.
NOT_CONFIGURED = (
    "Could not establish a configuration source",
    "Unable to process configuration file",
    "s_p_parse_file: cannot stat file",
)
NO_SLURM_HINT = "run from a login node, or use --dry-run, --replay DIR or --executor local"


def configuration_problem() -> str | None:
    """Why Slurm's clients here cannot reach a cluster's configuration, or None.

    SLURM_CONF naming no file is told at once (the clients would retry it for 60 s); else
    `scontrol ping` (sinfo where scontrol is missing) must not end in one of the fatal
    NOT_CONFIGURED errors. Any other failure (a controller down) is left to sbatch to say.
    """
    conf = os.environ.get("SLURM_CONF")
    if conf and not Path(conf).is_file():
        return f"SLURM_CONF={conf} names no file"
    tool = next((t for t in ("scontrol", "sinfo") if shutil.which(t)), None)
    if tool is None:
        return None
    argv = [tool, "ping"] if tool == "scontrol" else [tool, "-h", "-o", "%P"]
    try:
        out = subprocess.run(
            argv, capture_output=True, text=True, timeout=PING_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired):  # slow or odd: sbatch will say what it is
        return None
    text = out.stderr + out.stdout
    if out.returncode == 0 or not any(s in text for s in NOT_CONFIGURED):
        return None
    fatal = [ln for ln in text.splitlines() if "fatal:" in ln] or text.splitlines()
    return f"{fatal[-1].split('fatal:', 1)[-1].strip()} ({' '.join(argv)})"


def sbatch_parameters(options: LaunchOptions, ctx: JobContext) -> dict[str, Any]:
    """submitit SlurmExecutor parameters: the function runs once, in the batch step."""
    params: dict[str, Any] = {
        "job_name": f"{options.job_name_prefix}-{ctx.row_id}",
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
        "additional_parameters": {
            "signal": f"B:USR2@{SIGNAL_DELAY_S}",
            **options.slurm_params,
            **exclude_param(options),
        },
        "setup": ["trap '' USR2"],
    }
    if options.exclusive:
        params["exclusive"] = True
    for key in ("partition", "account", "qos"):
        if getattr(options, key):
            params[key] = getattr(options, key)
    checks.sbatch_parameters(params)
    return params


def exclude_param(options: LaunchOptions) -> dict[str, str]:
    """sbatch's --exclude: the user's own --slurm-param exclude, as written, followed by the
    nodes perfgate keeps the job off (host names only: perfgate.nodenames)."""
    own = str(options.slurm_params.get("exclude") or "")
    kept = {"exclude": own} if own else {}
    if not options.avoid_nodes:
        return kept
    nodes = set(nodenames.names(list(options.avoid_nodes), "the job's --exclude", notices.warn))
    try:  # the user's own list stays as written (a host range too); ours are added to it
        nodes -= set(nodenames.expand(own))
    except nodenames.BadNodes as e:  # e.g. a file name: sbatch reads it, we cannot add to it
        notices.warn(
            f"--slurm-param exclude={own}: not a host list ({e}): jobs keep it as given and "
            "cannot also be kept off other nodes"
        )
        return kept
    value = ",".join(filter(None, (own, nodenames.exclude_value(nodes))))
    return {"exclude": value} if value else {}


def submitit_command(folder: str | Path) -> str:
    """The batch command submitit writes: run the pickled job function in this Python."""
    return " ".join(
        [shlex.quote(sys.executable), "-u -m submitit.core._submit", shlex.quote(str(folder))]
    )


class SlurmExecutor:
    """Jobs on Slurm: one sbatch per row, states from squeue/sacct/scontrol, scancel."""

    name = "slurm"
    max_nodes = None
    starts_containers = True
    resumable = True  # a job keeps running when the session dies; its id finds it again
    parallel_submit = True  # sbatch takes ~0.1 s a call (bench-launch-sweep)
    excludes_nodes = True  # sbatch --exclude

    def __init__(self) -> None:
        self.slurm = SlurmStates()

    def require(self) -> None:
        """A one-line error on a machine without Slurm's commands, or whose commands find no
        cluster configuration, before any row is planned."""
        missing = [c for c in COMMANDS if shutil.which(c) is None]
        if missing:
            gone = ", ".join(missing)
            raise PerfgateError(f"no Slurm here ({gone} not on PATH): {NO_SLURM_HINT}")
        problem = configuration_problem()
        if problem:
            raise PerfgateError(f"Slurm here is not configured: {problem}; {NO_SLURM_HINT}")

    def render(
        self, options: LaunchOptions, ctx: JobContext, rdir: Path, image: str | None
    ) -> tuple[str, list[str]]:
        """The sbatch script submitit would write, and the first launch's srun line."""
        params = sbatch_parameters(options, ctx)
        folder = Path(ctx.job_dir) / "submitit"
        command = submitit_command(folder)
        try:
            script = _make_sbatch_string(command=command, folder=folder, **params)
        except (TypeError, ValueError) as e:
            raise ConfigError(f"row {ctx.row_id}: bad sbatch parameter ({e})") from None
        checks.script(script, [*params["setup"], "export SUBMITIT_EXECUTOR=slurm", command])
        shown_image = image
        if image and ctx.container_runtime == "pyxis" and not images.is_squashfs(image):
            # imported once per job, into the job folder
            shown_image = str(Path(ctx.job_dir) / "images" / images.sqsh_name(image))
        mpi = "pmix" if ctx.mpi == "auto" else (None if ctx.mpi == "none" else ctx.mpi)
        return script, srun_argv(ctx, rdir, shown_image, mpi)

    def submit(self, fn: JobFunction, ctx: JobContext, options: LaunchOptions) -> str:
        """sbatch through submitit; Refused carries sbatch's own complaint."""
        try:
            ex = submitit.SlurmExecutor(folder=Path(ctx.job_dir) / "submitit")
            ex.update_parameters(**sbatch_parameters(options, ctx))
            job = ex.submit(fn, ctx)
        except Exception as err:  # sbatch refused: a bad partition, account, QOS, limit
            raise Refused(one_line(str(err))) from err
        return str(job.job_id)

    def states(self, job_ids: Iterable[str]) -> dict[str, JobInfo]:
        """squeue for the jobs slurmctld holds, sacct and scontrol for the rest."""
        return self.slurm.query(job_ids)

    def cancel(self, job_ids: Sequence[str]) -> None:
        """One scancel for all of them."""
        if job_ids:
            subprocess.run(["scancel", *job_ids], capture_output=True, timeout=60)

    def final_state(self, job_id: str) -> tuple[str, JobInfo | None]:
        """Slurm's terminal state, waited for up to FINAL_STATE_WAIT_S (else COMPLETED)."""
        # The job writes its result before it ends; at a time limit the srun it waits on can
        # die first, so the result says FAILED while Slurm is still recording TIMEOUT.
        deadline = time.monotonic() + FINAL_STATE_WAIT_S
        latest = None
        while True:
            info = self.states([job_id]).get(job_id)
            if info is not None:
                latest = info
                if info.terminal:
                    return info.state, latest
            if time.monotonic() >= deadline:
                return "COMPLETED", latest
            time.sleep(0.5)

    def attempts(self, job_id: str) -> list[JobInfo]:
        """Accounting's record of each attempt (sacct -D); [] without accounting."""
        return self.slurm.attempts(job_id)

    def nodes(self, job_id: str) -> list[str]:
        """The job's nodes as accounting (else slurmctld) recorded them, one name each."""
        return self.slurm.nodes(job_id)

    def partition_nodes(self, partition: str | None) -> list[str] | None:
        """The partition's usable nodes as sinfo lists them (None: the default partition's;
        None back when sinfo cannot say)."""
        return query_partition_nodes(partition)
