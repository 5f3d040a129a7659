"""A rank's workload run as a child process: rank 0 tees its output and reads steps live.

Shared by the backends that run a program rather than train in this process (command,
automodel): the program prints its usual log lines, perfgate.logs turns rank 0's log into
steps while it runs and once more at the end. Pure stdlib.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO, BinaryIO

from perfgate.errors import ConfigError, LogParseError
from perfgate.logs import parse_files
from perfgate.workload.dispatch import Terminated, WorkloadFailed
from perfgate.workload.runtime import RANK0_LOG, Recorder
from perfgate.workload.spec import WorkloadSpec

REFRESH_S = 5.0  # how often rank 0 re-parses the growing log (PERFGATE_REFRESH_S overrides)
TERM_GRACE_S = 10.0  # after forwarding SIGTERM, wait this long before SIGKILL
_CHUNK = 1 << 16
_MAX_PENDING = 1 << 20  # a line longer than this (tqdm redraws) goes to the log unbroken


def _write_through(sink: IO[str] | IO[bytes], data: bytes) -> None:
    buffer: BinaryIO | None = getattr(sink, "buffer", None)
    if buffer is not None:
        buffer.write(data)
        buffer.flush()
    else:  # a text-only stream (e.g. a test's capture)
        sink.write(data.decode(errors="replace"))  # type: ignore[arg-type]
        sink.flush()


def _pump(src: BinaryIO, sink: IO[str], log: BinaryIO | None, lock: threading.Lock) -> None:
    """Copy a child's pipe to this rank's stream at once, and whole lines to the log."""
    pending = b""
    fd = src.fileno()
    while chunk := os.read(fd, _CHUNK):
        _write_through(sink, chunk)
        if log is None:
            continue
        pending += chunk
        # Whole lines only, so stdout and stderr do not glue mid-line in the log.
        cut = pending.rfind(b"\n") + 1 or (len(pending) if len(pending) > _MAX_PENDING else 0)
        if cut:
            with lock:
                log.write(pending[:cut])
                log.flush()
            pending = pending[cut:]
    if log is not None and pending:
        with lock:
            log.write(pending)
            log.flush()


def refresh_steps(log_path: Path, recorder: Recorder, final: bool) -> int:
    """Re-parse rank 0's log into the record; returns the number of steps found.

    While running, a log without step times yet is normal (0 is returned); at the end it is a
    LogParseError naming the log.
    """
    try:
        series = parse_files([log_path])
    except LogParseError:
        if final:
            raise
        return 0
    recorder.record.log_format = series.format
    recorder.record.log_interval = series.log_interval
    recorder.set_steps(series.steps)
    return len(series.steps)


def _watch(log_path: Path, recorder: Recorder, stop: threading.Event, interval: float) -> None:
    last_size = -1
    while not stop.wait(interval):
        try:
            size = log_path.stat().st_size
            if size != last_size:
                last_size = size
                refresh_steps(log_path, recorder, final=False)
        except Exception as e:
            # The run matters more than a live refresh: say it once and stop refreshing.
            print(f"perfgate.workload: live step refresh stopped: {e}", file=sys.stderr)
            return


def _wait(proc: subprocess.Popen[bytes]) -> int:
    """Wait for the child; on SIGTERM/SIGINT forward it, give it a grace period, then kill."""
    try:
        return proc.wait()
    except Terminated as t:
        proc.send_signal(t.signum)
        try:
            proc.wait(timeout=TERM_GRACE_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        raise


def _spawn(argv: list[str], env: dict[str, str], piped: bool) -> subprocess.Popen[bytes]:
    pipe = subprocess.PIPE if piped else None
    try:
        return subprocess.Popen(argv, env=env, stdout=pipe, stderr=pipe, stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        raise ConfigError(f"spec field 'command': program {argv[0]!r} not found") from None
    except PermissionError:
        raise ConfigError(f"spec field 'command': program {argv[0]!r} is not executable") from None


def run_argv(
    spec: WorkloadSpec, argv: list[str], env: dict[str, str], recorder: Recorder | None
) -> None:
    """Run argv as this rank's workload (rank 0: tee, live steps from its log); fail on exit."""
    if recorder is None:
        code = _wait(_spawn(argv, env, piped=False))  # output goes straight to the rank's log
    else:
        code = _run_rank0(spec, argv, env, recorder)
    if code != 0:
        if code < 0:  # killed by a signal: exit as a shell would report it
            raise WorkloadFailed(f"command {argv[0]!r} was killed by signal {-code}", 128 - code)
        raise WorkloadFailed(f"command {argv[0]!r} exited with status {code}", code)


def _run_rank0(spec: WorkloadSpec, argv: list[str], env: dict[str, str], rec: Recorder) -> int:
    out_dir = Path(spec.output_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    log_path = out_dir / RANK0_LOG
    interval = float(os.environ.get("PERFGATE_REFRESH_S", REFRESH_S))
    with open(log_path, "wb") as log:
        proc = _spawn(argv, env, piped=True)
        rec.update(status="running", log_path=str(log_path))
        lock = threading.Lock()
        assert proc.stdout is not None and proc.stderr is not None
        pumps = [
            threading.Thread(target=_pump, args=(proc.stdout, sys.stdout, log, lock), daemon=True),
            threading.Thread(target=_pump, args=(proc.stderr, sys.stderr, log, lock), daemon=True),
        ]
        stop = threading.Event()
        watcher = threading.Thread(target=_watch, args=(log_path, rec, stop, interval), daemon=True)
        for t in (*pumps, watcher):
            t.start()
        try:
            code = _wait(proc)
        finally:
            for t in pumps:
                t.join(timeout=TERM_GRACE_S)
            stop.set()
            watcher.join()
            try:
                # Keep whatever steps the log holds, also when the command failed or was killed.
                refresh_steps(log_path, rec, final=False)
            except Exception as e:
                print(f"perfgate.workload: cannot read steps from {log_path}: {e}", file=sys.stderr)
    if code == 0:
        try:
            refresh_steps(log_path, rec, final=True)
        except LogParseError as e:
            raise WorkloadFailed(f"command succeeded but its log has no step times: {e}") from None
    return code
