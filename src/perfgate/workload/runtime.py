"""What every backend shares inside the job: rank discovery, node list, and rank 0's recorder.

Pure stdlib (plus perfgate.logs.stepfile): the command backend must work in any container.
"""

from __future__ import annotations

import datetime as _dt
import os
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from perfgate import nodenames, notices
from perfgate.errors import ConfigError
from perfgate.logs import Step, stepfile
from perfgate.secrets import redact

STEPS_FILE = "steps.json"  # in spec.output_dir, written by rank 0 only
RANK0_LOG = "rank0.log"  # in spec.output_dir: rank 0's tee of a command's output


@dataclass(frozen=True)
class RankInfo:
    """Where this process sits in the job: global rank, world size, rank on its node."""

    rank: int
    world_size: int
    local_rank: int
    source: str  # "torch" (RANK/WORLD_SIZE), "slurm" (SLURM_PROCID/...), or "single"

    @property
    def is_rank0(self) -> bool:
        """True on the rank that records steps."""
        return self.rank == 0

    def env(self) -> dict[str, str]:
        """The torch.distributed-style variables a child process needs to know its rank."""
        return {
            "RANK": str(self.rank),
            "WORLD_SIZE": str(self.world_size),
            "LOCAL_RANK": str(self.local_rank),
        }


def _int_env(environ: Mapping[str, str], name: str) -> int:
    value = environ[name]
    try:
        number = int(value)
    except ValueError:
        raise ConfigError(f"environment variable {name}={value!r} is not an integer") from None
    if number < 0:
        raise ConfigError(f"environment variable {name}={value!r} is negative")
    return number


def rank_info(environ: Mapping[str, str] | None = None) -> RankInfo:
    """Rank from RANK/WORLD_SIZE/LOCAL_RANK (torchrun), else SLURM_PROCID/NTASKS/LOCALID."""
    environ = os.environ if environ is None else environ
    # torchrun's variables win: inside an srun step that starts torchrun, SLURM_PROCID
    # numbers the launcher, not the worker.
    for source, (r, w, lr) in (
        ("torch", ("RANK", "WORLD_SIZE", "LOCAL_RANK")),
        ("slurm", ("SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID")),
    ):
        if r in environ:
            rank = _int_env(environ, r)
            world = _int_env(environ, w) if w in environ else 1
            local = _int_env(environ, lr) if lr in environ else 0
            if rank >= world:
                raise ConfigError(f"environment variable {r}={rank} is not below {w}={world}")
            return RankInfo(rank, world, local, source)
    return RankInfo(0, 1, 0, "single")


def expand_nodelist(nodelist: str) -> list[str]:
    """Expand a Slurm hostlist ('gpu[001-003,007],login1') as `scontrol show hostnames` does
    (perfgate.nodenames: the one grammar; BadNodes when it is not a host list)."""
    return nodenames.expand(nodelist)


def job_nodes(environ: Mapping[str, str] | None = None) -> list[str]:
    """The job's nodes from SLURM_JOB_NODELIST (or SLURM_NODELIST); [] outside Slurm."""
    environ = os.environ if environ is None else environ
    nodelist = environ.get("SLURM_JOB_NODELIST") or environ.get("SLURM_NODELIST") or ""
    return list(nodenames.host_list(nodelist, "SLURM_JOB_NODELIST", notices.warn))


def now_iso() -> str:
    """UTC timestamp, second resolution, ISO 8601."""
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat()


def _type_and_text(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def one_line_error(exc: BaseException, limit: int = 500) -> str:
    """An exception as one redacted line: 'Type: message', cut to limit characters.

    An exception raised while another was being handled (a framework's cleanup failing
    after the real error, as Lightning's teardown does) names the first one first: that is
    the cause a person needs.
    """
    line = _type_and_text(exc)
    first = exc.__context__
    if first is not None and exc.__cause__ is None and not exc.__suppress_context__:
        line = f"{_type_and_text(first)} (then, while handling it: {line})"
    line = redact(line)
    return line if len(line) <= limit else line[: limit - 3] + "..."


class Recorder:
    """Rank 0's live steps.json, every write atomic; steps written off the training thread.

    A finished step is appended in O(1) and a writer thread rewrites the file at most every
    WRITE_EVERY_S (and at most a tenth of the time: a long run or a slow disk widens the gap),
    so perfgate's own serialisation and fsyncs never run inside a measured step: written at
    every step they cost 12-32 ms a step on the CI disk, inside megatron_core's step clock
    (3-8% of a 0.4 s step) and between NeMo's steps. A killed job keeps the steps written up
    to WRITE_EVERY_S before it died; status changes and the final record are written at once.
    Thread-safe: the command backend refreshes steps from a watcher thread while the main
    thread sets the final status.
    """

    WRITE_EVERY_S = 1.0

    def __init__(self, path: str | os.PathLike[str], record: stepfile.StepRecord) -> None:
        self.path = Path(path)
        self.record = record
        # Lock order: _disk, then _lock. _disk orders every write of the file so an older
        # snapshot never lands after a newer one; _lock guards the record and is held only
        # briefly by the writer, so add_step never waits for the disk.
        self._disk = threading.Lock()
        self._lock = threading.Lock()
        self._dirty = threading.Condition(self._lock)
        self._pending = False
        self._writer: threading.Thread | None = None
        self._closed = False
        self._closing = threading.Event()
        self.writes = 0  # how many times the file was written (the tests count them)

    def _write(self) -> None:
        """Write the record now (the caller holds _disk and _lock)."""
        stepfile.write(self.path, self.record)
        self._pending = False
        self.writes += 1

    def update(self, **fields: Any) -> None:
        """Set record fields (status, versions, nodes, ...) and write."""
        with self._disk, self._lock:
            for name, value in fields.items():
                if name not in stepfile.StepRecord.__dataclass_fields__:
                    raise AttributeError(f"StepRecord has no field {name!r}")
                setattr(self.record, name, value)
            self._write()

    def set_steps(self, steps: Iterable[Step]) -> None:
        """Replace the recorded steps (a re-parse of the whole log) and write."""
        with self._disk, self._lock:
            self.record.steps = [asdict(s) for s in steps]
            self._write()

    def add_step(self, step: Step) -> None:
        """Append one finished step; the writer thread writes it within WRITE_EVERY_S."""
        with self._lock:
            self.record.steps.append(asdict(step))
            self._pending = True
            if self._writer is None and not self._closed:
                self._writer = threading.Thread(target=self._write_loop, daemon=True)
                self._writer.start()
            self._dirty.notify()

    def flush(self) -> None:
        """Write the steps not written yet, now; on return every step added is on disk."""
        # _disk first: a snapshot the writer thread is writing lands before this returns.
        with self._disk, self._lock:
            if self._pending:
                self._write()

    def _write_loop(self) -> None:
        gap = self.WRITE_EVERY_S
        while True:
            with self._lock:
                while not self._pending and not self._closed:
                    self._dirty.wait()
                if self._closed:
                    return
            with self._disk:
                with self._lock:
                    if self._closed:
                        return
                    if not self._pending:  # a flush or an update wrote them meanwhile
                        continue
                    snapshot = replace(self.record, steps=list(self.record.steps))
                    self._pending = False
                started = time.monotonic()
                try:
                    # Serialised outside _lock: add_step never waits for the disk.
                    stepfile.write(self.path, snapshot)
                except OSError as e:
                    print(f"perfgate.workload: cannot write {self.path}: {e}", flush=True)
                with self._lock:
                    self.writes += 1
            gap = max(self.WRITE_EVERY_S, 9 * (time.monotonic() - started))
            self._closing.wait(timeout=gap)  # steps keep coming meanwhile; close ends the wait

    def finish(self, status: str, error: str | None = None) -> None:
        """Final status ('completed' or 'failed'), the redacted one-line error, end time."""
        with self._lock:
            self._closed = True
            self._closing.set()
            self._dirty.notify_all()
            writer = self._writer
        if writer is not None:
            writer.join()
        with self._disk, self._lock:
            self.record.status = status
            self.record.error = redact(" ".join(error.split())) if error else None
            self.record.finished_at = now_iso()
            self._write()


def torch_dist_env(rank: RankInfo, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """Rank variables plus MASTER_ADDR/MASTER_PORT for torch.distributed's env:// rendezvous.

    What torchrun would set, for backends whose ranks srun starts directly: the job's first
    node is the master; the port is derived from the job id so two jobs sharing a node differ.
    Values the rank inherited win.
    """
    environ = os.environ if environ is None else environ
    env = rank.env()
    if not environ.get("MASTER_ADDR"):
        nodes = job_nodes(environ)
        env["MASTER_ADDR"] = nodes[0] if nodes else "127.0.0.1"
    if not environ.get("MASTER_PORT"):
        job = environ.get("SLURM_JOB_ID", "")
        env["MASTER_PORT"] = str(29500 + int(job) % 1000 if job.isdigit() else 29500)
    return env
