"""The job function: runs once per allocation, on its first node, outside any container.

It prepares images (a registry URI is imported once per allocation, and the file it made is
hashed; a squashfs file given by the user is only stat'ed here: the session hashes it on the
login node, in no allocation's time), then starts each workload launch in order
(counterbalanced AB BA AB.. in A/B mode) the way its executor starts ranks (one srun over the
whole allocation, or N local ranks: perfgate.launch.allocation); waits; and collects what rank
0 recorded. In A/B mode a callback may ask for one more pair, in the same alternating order,
while time allows. On SIGTERM (time limit, scancel, preemption) it stops the launch, records
how far it got and exits WITHOUT a result, so the session reads the folder with Slurm's final
state instead of a half-truth.
"""

from __future__ import annotations

import datetime as _dt
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from perfgate.launch.allocation import allocation_for
from perfgate.launch.allocation.base import output, stop
from perfgate.launch.collect import JOB_LOG, MANIFEST, collect_job, write_json
from perfgate.launch.jobcontext import (
    JobContext,
    container_env_names,
    pair_launches,
    row_env_by_environment,
    run_dir,
    workload_spec,
)
from perfgate.launch.jobimages import JobImages
from perfgate.runs import RunResult, ab_images


class Stop(Exception):
    """A signal told the job to stop (time limit, scancel, preemption)."""


class Job:
    """One attempt of one job: its folder, manifest and launches."""

    def __init__(self, ctx: JobContext) -> None:
        self.ctx = ctx
        self.alloc = allocation_for(ctx)
        self.started = time.monotonic()
        self.attempt = int(os.environ.get("SLURM_RESTART_COUNT", "0") or 0)
        self.job_id = self.alloc.job_id
        self.dir = Path(ctx.job_dir) / f"attempt-{self.attempt}"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.launches: list[tuple[str, str | None]] = list(ctx.launches)
        self.manifest: dict[str, Any] = {
            "attempt": self.attempt,
            "job_id": self.job_id,
            "executor": ctx.executor,
            "host": socket.gethostname(),
            "nodes": self.alloc.nodes(),
            "planned": len(self.launches),
            "started_at": _now(),
            "runs": [],
            "notes": [],
        }
        self.proc: list[subprocess.Popen[bytes]] = []
        self.stopping = False  # a stop signal arrived: later ones are ignored
        self.images = JobImages(ctx.job_dir, self.log, self.manifest["notes"])
        self.save()

    # --- bookkeeping ---------------------------------------------------------------------

    def log(self, msg: str) -> None:
        """A line in the job log (read by the diagnosis) and in submitit's stdout."""
        line = f"perfgate: {msg}"
        print(line, flush=True)
        with open(self.dir / JOB_LOG, "a") as f:
            f.write(line + "\n")

    def save(self) -> None:
        write_json(self.dir / MANIFEST, self.manifest)

    def seconds_left(self) -> float:
        return self.ctx.time_limit_min * 60.0 - (time.monotonic() - self.started)

    # --- signals ---------------------------------------------------------------------------

    def on_signal(self, signum: int, frame: Any) -> None:
        # Once only: a second SIGTERM (Slurm signals the batch step again, srun forwards)
        # must not interrupt the cleanup (stopping the launch, writing the manifest: fsync)
        # with a traceback of our own in the job's log.
        if self.stopping:
            return
        self.stopping = True
        raise Stop(signal.Signals(signum).name)

    def install_signals(self) -> dict[int, Any]:
        """Our handlers in; returns the ones they replaced (restored when the job ends)."""
        old = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT, signal.SIGUSR2)}
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, self.on_signal)
        # submitit's USR2 handler would end the job as "timed out": a stray USR2 must not.
        signal.signal(signal.SIGUSR2, signal.SIG_IGN)
        return old

    # --- images -------------------------------------------------------------------------------

    def prepare_images(self) -> dict[str | None, str | None]:
        """What each launch image becomes on the srun line (imported once per allocation)."""
        wanted = {img for _, img in self.launches}
        runtime = self.ctx.container_runtime
        if runtime == "none" or wanted == {None}:
            return {img: None for img in wanted}
        return self.images.prepare(wanted, runtime, lambda: output(["srun", "--help"]) or "")

    # --- launches -------------------------------------------------------------------------------

    def env(self, label: str, image: str | None, addr: str) -> dict[str, str]:
        env = dict(os.environ)
        env.update(row_env_by_environment(self.ctx))
        env.update(self.ctx.env)
        env.update(
            MASTER_ADDR=addr,
            MASTER_PORT=str(_free_port()),
            PERFGATE_RUN_LABEL=label,
            PERFGATE_IMAGE=image or "",
        )
        # The batch step's own rank variables must not leak into the workload's ranks.
        for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"):
            env.pop(k, None)
        missing = [k for k in self.ctx.secret_env if k not in env]
        if missing:
            self.log(f"warning: secret variables not in the job's environment: {missing}")
        return env

    def launch(
        self,
        index: int,
        label: str,
        image: str | None,
        runtime_image: str | None,
        mpi: str | None,
        addr: str,
    ) -> int:
        ctx = self.ctx
        rdir = run_dir(ctx.job_dir, self.attempt, index, label)
        rdir.mkdir(parents=True, exist_ok=True)
        workload_spec(ctx, rdir, label, image).write(rdir / "spec.json")
        env = self.env(label, image, addr)
        entry = {
            "index": index,
            "label": label,
            "image": image,
            "image_digest": self.images.digests.get(image) if image else None,
            "image_stamp": self.images.stamps.get(image) if image else None,
            "run_dir": str(rdir),
            # what rank 0 must see as its world size (collect checks it)
            "tasks": self.alloc.world_size(),
            "exit_code": None,
            "started_at": _now(),
        }
        self.manifest["runs"].append(entry)
        t0 = time.monotonic()
        entry["command"] = argv = self.alloc.command(rdir, runtime_image, mpi)
        self.save()
        code = self.alloc.run(argv, rdir, env, self.proc)
        self.proc = []
        entry.update(exit_code=code, ended_at=_now(), wall_s=round(time.monotonic() - t0, 2))
        self.save()
        return code

    def stop_launch(self) -> None:
        """SIGTERM the running launch (srun forwards it to every task), SIGKILL if it lingers."""
        stop(self.proc)

    def want_more_pairs(self, durations: list[float]) -> bool:
        """After the last planned pair: ask the callback, then check the time left."""
        ctx = self.ctx
        pairs = sum(1 for label, _ in self.launches if label == "candidate")
        if not (ctx.ab and ctx.more_pairs) or pairs >= ctx.max_pairs:
            return False
        runs = collect_job(ctx.job_dir, ctx.row_id, self.job_id, "RUNNING", ctx.steps).runs
        try:
            answer = ctx.more_pairs(runs)
        except Exception as e:  # a broken callback must not lose the pairs measured
            self.manifest["notes"].append(f"more_pairs callback failed: {e!r}; no pair added")
            return False
        if not answer:
            return False
        why = answer if isinstance(answer, str) else "the comparison asked for more"
        need = 1.2 * (durations[-1] + durations[-2])
        if self.seconds_left() < need:
            self.manifest["notes"].append(
                f"pair {pairs + 1} was wanted ({why}) but {self.seconds_left():.0f} s are left "
                f"and a pair takes about {need / 1.2:.0f} s"
            )
            return False
        self.manifest["notes"].append(f"pair {pairs + 1} added: {why}")
        return True

    def add_pair(self) -> None:
        """Append the next pair in the counterbalanced order (AB BA AB ..)."""
        pairs = sum(1 for label, _ in self.launches if label == "candidate")
        self.launches += list(pair_launches(pairs, *ab_images(tuple(self.launches))))
        self.manifest["planned"] = len(self.launches)
        self.save()

    def run(self) -> RunResult:
        old = self.install_signals()
        try:
            return self._run()
        finally:
            for sig, handler in old.items():
                signal.signal(sig, handler)

    def _run(self) -> RunResult:
        ctx = self.ctx
        status = self.alloc.state(ok=True)
        try:
            mapping = self.prepare_images()
            mpi = self.alloc.mpi(self.manifest["notes"])
            addr = self.alloc.master_addr(self.manifest["nodes"])
            self.log(
                f"row {ctx.row_id}: {len(self.launches)} launch(es) on "
                f"{','.join(self.manifest['nodes'])}; MASTER_ADDR={addr}; mpi={mpi}; "
                f"container-env={','.join(container_env_names(ctx))}"
            )
            durations: list[float] = []
            i = 0
            while i < len(self.launches):
                label, image = self.launches[i]
                t0 = time.monotonic()
                code = self.launch(i + 1, label, image, mapping.get(image), mpi, addr)
                durations.append(time.monotonic() - t0)
                if code != 0:
                    self.log(f"launch {i + 1} ({label}) exited with status {code}: stopping")
                    status = self.alloc.state(ok=False)
                    break
                i += 1
                if i == len(self.launches) and self.want_more_pairs(durations):
                    self.add_pair()
        except Stop as stop:
            self.stop_launch()
            self.manifest["interrupted"] = stop.args[0]
            self.manifest["ended_at"] = _now()
            self.save()
            self.log(f"stopped by {stop.args[0]}; Slurm's final state will tell why")
            # SystemExit passes submitit's `except Exception`: no result pickle is written,
            # so nobody mistakes this attempt's partial result for the job's outcome.
            sys.exit(143)
        except RuntimeError as e:
            self.manifest["error"] = str(e)
            self.log(str(e))
            status = self.alloc.state(ok=False)
        self.manifest["ended_at"] = _now()
        self.save()
        return collect_job(
            ctx.job_dir,
            ctx.row_id,
            self.job_id,
            status,
            ctx.steps,
            wall_s=round(time.monotonic() - self.started, 2),
        )


def run_job(ctx: JobContext) -> RunResult:
    """Entry point submitit calls on the first node of the allocation (or locally)."""
    return Job(ctx).run()


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("", 0))
        return s.getsockname()[1]
