"""Container runtimes: what each task of a launch's srun runs to start the workload in an image.

- pyxis (default): srun's own --container-image/--container-mounts flags; enroot underneath.
- podman: every task runs `podman run` with the image from podman's storage or a registry
  (site settings such as GPUs or ulimits belong in its containers.conf).
- command: a site's own template (Apptainer, Singularity, `enroot start`, ...), e.g.
  `apptainer exec --nv --bind {mounts} --pwd {workdir} {image} {argv}`.
- none: no container; images only label the runs (bare-metal A/B of two environments).

In every container the job folder is mounted at its own path (spec.json's output_dir means
the same folder inside and out) and perfgate's source at CONTAINER_SRC, first on PYTHONPATH:
the workload imports only the standard library and the image's own NeMo stack.
"""

from __future__ import annotations

import shlex
import string
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from perfgate.catalog import RUNTIMES
from perfgate.errors import ConfigError

CONTAINER_SRC = "/opt/perfgate/src"  # where the perfgate source is mounted in the container
# --container-command placeholders: {image} and {argv} (a word of its own) are required.
TEMPLATE_FIELDS = {
    "image": "the image (a file's absolute path, or the reference as given)",
    "argv": "the command to run in the container, as separate words",
    "mounts": "SRC:DST[:ro],..: the job folder, perfgate source, --container-mounts",
    "workdir": "the launch's run folder (the same path inside)",
    "job_dir": "the job folder (mount it at the same path)",
    "src": f"perfgate's source folder on the host (mount it at {CONTAINER_SRC})",
    "env": "a word holding it is repeated for each variable the workload needs from the host "
    "(e.g. --env={env} for enroot start)",
}
# What the workload and the frameworks under it read from Slurm to know their rank and nodes
RANK_ENV = (
    "SLURM_PROCID",
    "SLURM_NTASKS",
    "SLURM_LOCALID",
    "SLURM_NODEID",
    "SLURM_NNODES",
    "SLURM_NTASKS_PER_NODE",
    "SLURM_TASKS_PER_NODE",
    "SLURM_JOB_ID",
    "SLURM_JOB_NAME",
    "SLURM_JOB_NODELIST",
    "SLURM_NODELIST",
    "SLURM_STEP_ID",
    "SLURM_RESTART_COUNT",
    "SLURMD_NODENAME",
    "CUDA_VISIBLE_DEVICES",
)
# podman passes no host variable unless asked: Slurm's (the rank's identity) and MPI's
PODMAN_ENV = ("SLURM_*", "PMIX_*", "PMI_*", "CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES")


def parse_template(template: str) -> tuple[str, ...]:
    """The words of a --container-command template, checked: one-line ConfigError if bad."""
    where = f"--container-command {template!r}"
    try:
        words = tuple(shlex.split(template))
    except ValueError as e:
        raise ConfigError(f"{where}: {e}") from None
    for word in words:
        try:
            names = [f for _, f, _, _ in string.Formatter().parse(word) if f is not None]
        except ValueError as e:
            raise ConfigError(f"{where}: {e} in {word!r}") from None
        unknown = [n for n in names if n not in TEMPLATE_FIELDS]
        if unknown:
            raise ConfigError(
                f"{where}: unknown placeholder {{{unknown[0]}}}; known: "
                + ", ".join(f"{{{k}}}" for k in TEMPLATE_FIELDS)
            )
        if "argv" in names and word != "{argv}":
            raise ConfigError(f"{where}: {{argv}} must be a word of its own, not in {word!r}")
        if "env" in names and len(names) > 1:
            raise ConfigError(f"{where}: {{env}} cannot share a word with another placeholder")
    if "{argv}" not in words or not any("{image}" in w for w in words):
        raise ConfigError(f"{where}: needs {{image}} and {{argv}}")
    return words


def container_mounts(ctx: Any) -> list[str]:
    """SRC:DST[:ro] of every launch: the job folder, perfgate's source, the user's extras."""
    return [
        f"{ctx.job_dir}:{ctx.job_dir}",
        f"{ctx.perfgate_src}:{CONTAINER_SRC}:ro",
        *ctx.container_mounts,
    ]


def boot_argv(spec: str) -> list[str]:
    """What runs first in the container: perfgate's source ahead of the image's PYTHONPATH."""
    boot = (
        f"export PYTHONPATH={CONTAINER_SRC}${{PYTHONPATH:+:$PYTHONPATH}}; "
        'exec python -m perfgate.workload "$0"'
    )
    return ["bash", "-c", boot, spec]


def task_argv(ctx: Any, rdir: Path, image: str | None, env_names: Sequence[str]) -> list[str]:
    """Everything after srun's own options for one launch of a job (ctx: a JobContext).

    image is what the runtime gets (pyxis: a squashfs file; podman: a reference; command:
    a file's absolute path or a reference), or None for no container. env_names: variables
    whose host value must reach the workload over the image's.
    """
    spec = str(rdir / "spec.json")
    runtime = ctx.container_runtime
    if image is None or runtime == "none":
        return [ctx.python, "-m", "perfgate.workload", spec]
    mounts = container_mounts(ctx)
    if runtime == "pyxis":
        return [
            f"--container-image={image}",
            f"--container-mounts={','.join(mounts)}",
            "--no-container-mount-home",
            f"--container-workdir={rdir}",
            f"--container-env={','.join(env_names)}",
            *boot_argv(spec),
        ]
    if runtime == "podman":
        env = [f"--env={n}" for n in (*PODMAN_ENV, *env_names)]
        return [
            "podman",
            "run",
            "--rm",
            "--network=host",  # NCCL and torch.distributed rendezvous on the node's addresses
            "--ipc=host",  # shared memory between ranks, as NeMo's data loaders need
            *env,
            *(f"--volume={m}" for m in mounts),
            f"--workdir={rdir}",
            image,
            *boot_argv(spec),
        ]
    if runtime == "command":
        fields = {
            "image": image,
            "mounts": ",".join(mounts),
            "workdir": str(rdir),
            "job_dir": str(ctx.job_dir),
            "src": str(ctx.perfgate_src),
        }
        names = [*RANK_ENV, *(n for n in env_names if n not in RANK_ENV)]
        out: list[str] = []
        for word in ctx.container_command:
            if word == "{argv}":
                out += boot_argv(spec)
            elif "{env}" in word:
                out += [word.format(env=n) for n in names]
            else:
                out.append(word.format(**fields))
        return out
    raise ConfigError(f"container runtime {runtime!r}: expected one of {', '.join(RUNTIMES)}")
