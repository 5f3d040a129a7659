"""Read the spec, find this rank, run the row's backend, and have rank 0 record the outcome.

The backend comes from the table (backends.py), which imports it by name: the job imports
only the backend it runs (the command backend never imports NeMo), and a login node can
import this module without the NeMo stack.
"""

from __future__ import annotations

import argparse
import signal
import sys
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from types import FrameType

from perfgate import catalog
from perfgate.errors import ConfigError, PerfgateError
from perfgate.logs.stepfile import StepRecord
from perfgate.secrets import redact
from perfgate.workload import backends
from perfgate.workload.runtime import (
    STEPS_FILE,
    RankInfo,
    Recorder,
    job_nodes,
    now_iso,
    one_line_error,
    rank_info,
)
from perfgate.workload.spec import WorkloadSpec

EXIT_CONFIG = 2  # the spec or the row is wrong: nothing ran
EXIT_FAILED = 1  # the workload ran and failed


class WorkloadFailed(PerfgateError):
    """The workload ran and failed; exit_code is what this rank exits with."""

    def __init__(self, message: str, exit_code: int = EXIT_FAILED) -> None:
        super().__init__(message)
        self.exit_code = exit_code


class Terminated(BaseException):
    """SIGTERM/SIGINT reached this rank (scancel, time limit, srun killing a failed step)."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"terminated by {signal.Signals(signum).name}")
        self.signum = signum


def terminate_once() -> Callable[[int, FrameType | None], None]:
    """A SIGTERM/SIGINT handler raising Terminated the first time only.

    Slurm signals every process of a step and srun forwards signals too, so a second SIGTERM
    often arrives while the first is being handled (writing the rank's steps.json, fsync);
    raised there, it would end the rank with perfgate's own traceback in the log tail that
    the diagnosis shows. Later signals are ignored: SIGKILL follows after KillWait anyway.
    """
    fired = False

    def handler(signum: int, frame: FrameType | None) -> None:
        nonlocal fired
        if fired:
            return
        fired = True
        raise Terminated(signum)

    return handler


def backend_of(spec: WorkloadSpec, origin: str) -> str:
    """The row's backend name, checked against the known ones."""
    backend = spec.row.backend
    if backend not in catalog.BACKENDS:
        raise ConfigError(
            f"{origin}: field 'row.backend' is {backend!r}; known: {', '.join(catalog.BACKENDS)}"
        )
    return backend


def _error(rank: RankInfo | None, message: str) -> None:
    where = f"rank {rank.rank}" if rank else "rank ?"
    print(f"perfgate.workload ({where}): error: {redact(message)}", file=sys.stderr, flush=True)


def run_spec(spec: WorkloadSpec, rank: RankInfo, origin: str = "<spec>") -> int:
    """Run the spec's backend on this rank; rank 0 records the status. Returns the exit status."""
    recorder: Recorder | None = None
    try:
        backend = backend_of(spec, origin)
    except ConfigError as e:
        backend, config_error = spec.row.backend, e
    else:
        config_error = None
    if rank.is_rank0:
        record = StepRecord(
            row_id=spec.row.id,
            backend=backend,
            world_size=rank.world_size,
            nodes=job_nodes(),
            image=spec.image,
            mock_data=spec.mock_data,
            started_at=now_iso(),
        )
        recorder = Recorder(Path(spec.output_dir) / STEPS_FILE, record)
        recorder.update(status="starting")
    try:
        if config_error:
            raise config_error
        backends.get(backend).run(spec, rank, recorder)
    except WorkloadFailed as e:
        return _fail(rank, recorder, str(e), e.exit_code)
    except ConfigError as e:
        return _fail(rank, recorder, str(e), EXIT_CONFIG)
    except PerfgateError as e:
        return _fail(rank, recorder, str(e), EXIT_FAILED)
    except Terminated as e:
        return _fail(rank, recorder, str(e), 128 + e.signum)
    except Exception as e:
        # Unexpected: keep the traceback in the rank's log for diagnosis, redacted.
        print(redact(traceback.format_exc()), file=sys.stderr, flush=True)
        return _fail(rank, recorder, one_line_error(e), EXIT_FAILED)
    if recorder:
        recorder.finish("completed")
    return 0


def _fail(rank: RankInfo, recorder: Recorder | None, message: str, code: int) -> int:
    _error(rank, message)
    if recorder:
        recorder.finish("failed", message)
    return code


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of `python -m perfgate.workload SPEC.json`; returns the exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m perfgate.workload",
        description="Run one perfgate workload launch on this rank (inside the container).",
    )
    parser.add_argument("spec", help="the workload spec JSON written by the launcher")
    args = parser.parse_args(argv)
    rank: RankInfo | None = None
    try:
        rank = rank_info()
        spec = WorkloadSpec.read(args.spec)
    except PerfgateError as e:
        _error(rank, str(e))
        return EXIT_CONFIG
    previous = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    handler = terminate_once()
    for s in previous:
        signal.signal(s, handler)
    try:
        return run_spec(spec, rank, origin=args.spec)
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
