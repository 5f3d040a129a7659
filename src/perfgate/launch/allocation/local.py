"""This host as the allocation (--executor local): N ranks with torch.distributed's variables.

The same job function as on Slurm, with no scheduler: the ranks of a launch are started here,
one process each, and one failing rank ends the others, as srun's --kill-on-bad-exit would.
"""

from __future__ import annotations

import socket
import subprocess
import time
from pathlib import Path

from perfgate.launch.allocation.base import stop
from perfgate.launch.jobcontext import JobContext

LOCAL_BAD_EXIT_S = 5  # local ranks: after one fails, the rest get this long (srun -K style)


def local_argv(ctx: JobContext, rdir: Path) -> list[str]:
    """What each local rank runs (the executor sets RANK/LOCAL_RANK/WORLD_SIZE per rank)."""
    return [ctx.python, "-m", "perfgate.workload", str(rdir / "spec.json")]


class LocalAllocation:
    """This host, no scheduler: no job id, rank 0 on the loopback address."""

    job_id = None

    def __init__(self, ctx: JobContext) -> None:
        self.ctx = ctx

    def nodes(self) -> list[str]:
        """This host."""
        return [socket.gethostname()]

    def mpi(self, notes: list[str]) -> str | None:
        """None: the ranks are plain processes."""
        return None

    def master_addr(self, nodes: list[str]) -> str:
        """The loopback address: every rank is on this host."""
        return "127.0.0.1"

    def world_size(self) -> int | None:
        """None: the ranks get WORLD_SIZE from us, not from a scheduler that could lose it."""
        return None

    def command(self, rdir: Path, image: str | None, mpi: str | None) -> list[str]:
        """What each rank runs."""
        return local_argv(self.ctx, rdir)

    def run(
        self, argv: list[str], rdir: Path, env: dict[str, str], procs: list[subprocess.Popen]
    ) -> int:
        """N ranks on this node with torch.distributed's variables; one failure ends them all."""
        ctx = self.ctx
        n = ctx.tasks_per_node
        if ctx.cuda_visible_devices is None:
            env.pop("CUDA_VISIBLE_DEVICES", None)  # submitit's local controller set its own
        else:
            env["CUDA_VISIBLE_DEVICES"] = ctx.cuda_visible_devices
        files = []
        for rank in range(n):
            renv = {
                **env,
                "RANK": str(rank),
                "LOCAL_RANK": str(rank),
                "WORLD_SIZE": str(n),
                "LOCAL_WORLD_SIZE": str(n),
                "GROUP_RANK": "0",
            }
            f = open(rdir / f"rank-{rank}.log", "wb")  # noqa: SIM115 (closed below)
            files.append(f)
            procs.append(subprocess.Popen(argv, env=renv, stdout=f, stderr=subprocess.STDOUT))
        try:
            codes: dict[int, int] = {}
            bad_since: float | None = None
            while len(codes) < n:
                for rank, p in enumerate(procs):
                    if rank not in codes and p.poll() is not None:
                        codes[rank] = p.returncode
                        if p.returncode != 0 and bad_since is None:
                            bad_since = time.monotonic()
                if bad_since is not None and time.monotonic() - bad_since > LOCAL_BAD_EXIT_S:
                    stop(procs)
                time.sleep(0.2)
            first_bad = next((codes[r] for r in sorted(codes) if codes[r] != 0), 0)
            if first_bad:
                bad = [r for r in sorted(codes) if codes[r] != 0]
                with open(rdir / "launcher.log", "a") as f:
                    for r in bad:
                        f.write(f"local: error: task {r}: Exited with exit code {codes[r]}\n")
            return first_bad
        finally:
            for f in files:
                f.close()

    def state(self, ok: bool) -> str:
        """LOCAL either way: the result's runs and diagnosis say how it went."""
        return "LOCAL"
