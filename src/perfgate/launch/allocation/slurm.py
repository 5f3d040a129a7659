"""A Slurm allocation seen from its batch step: its nodes, rank 0's address, one srun a launch.

The job function runs once, on the first node, outside any container; each launch is one srun
over the whole allocation (the container runtime's part at the end of the line).
"""

from __future__ import annotations

import os
import socket
import subprocess
from pathlib import Path

from perfgate import nodenames, notices
from perfgate.launch import runtimes
from perfgate.launch.allocation.base import output
from perfgate.launch.jobcontext import JobContext, container_env_names


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


class SlurmAllocation:
    """The allocation Slurm gave the job (SLURM_JOB_ID, SLURM_JOB_NODELIST)."""

    def __init__(self, ctx: JobContext) -> None:
        self.ctx = ctx
        self.job_id = os.environ.get("SLURM_JOB_ID")

    def nodes(self) -> list[str]:
        """The allocation's hosts, SLURM_JOB_NODELIST expanded by Slurm's rules (the one
        grammar, perfgate.nodenames); this host without it."""
        nodelist = os.environ.get("SLURM_JOB_NODELIST", "")
        found = nodenames.host_list(nodelist, "SLURM_JOB_NODELIST", notices.warn)
        return list(found) or [socket.gethostname()]

    def mpi(self, notes: list[str]) -> str | None:
        """--mpi for srun: the user's plugin, or pmix where srun lists it and it loads."""
        if self.ctx.mpi == "none":
            return None
        if self.ctx.mpi != "auto":
            return self.ctx.mpi
        listed = output(["srun", "--mpi=list"], stderr=True) or ""
        if "pmix" not in listed:
            return None
        # Listed is not loadable: the plugin may be built while libpmix is missing on the node.
        probe = output(["srun", "--mpi=pmix", "--nodes=1", "--ntasks=1", "true"])
        if probe is None:
            notes.append("srun lists pmix but cannot load it: using --mpi=none")
            return None
        return "pmix"

    def master_addr(self, nodes: list[str]) -> str:
        """Address of the first node as Slurm knows it (node names need not resolve)."""
        if not nodes:
            return "127.0.0.1"
        out = output(["scontrol", "show", "node", nodes[0]]) or ""
        for token in out.split():
            if token.startswith("NodeAddr="):
                return token.split("=", 1)[1]
        return nodes[0]

    def world_size(self) -> int | None:
        """Every task of the srun line: nodes x tasks per node."""
        return self.ctx.nodes * self.ctx.tasks_per_node

    def command(self, rdir: Path, image: str | None, mpi: str | None) -> list[str]:
        """The launch's srun line."""
        return srun_argv(self.ctx, rdir, image, mpi)

    def run(
        self, argv: list[str], rdir: Path, env: dict[str, str], procs: list[subprocess.Popen]
    ) -> int:
        """One srun; its own output (task failures, node failures) goes to launcher.log."""
        with open(rdir / "launcher.log", "wb") as out:
            srun = subprocess.Popen(argv, env=env, stdout=out, stderr=subprocess.STDOUT)
            procs.append(srun)
            return srun.wait()

    def state(self, ok: bool) -> str:
        """COMPLETED, or FAILED after a launch failed (the batch step itself exits 0)."""
        return "COMPLETED" if ok else "FAILED"
