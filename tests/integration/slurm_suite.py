"""The perfgate suite in a temporary folder, run as a user runs it: `pytest` in a subprocess.

For the plugin-level integration tests on the local Slurm (test code): each session is a
real pytest process (so tests can interrupt or kill it), with the suite's conftest.py,
pytest.ini and benchmarks/ copied from the repository and its own baselines/*.json.
"""

from __future__ import annotations

import json
import os
import pty
import select
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from perfgate import catalog
from perfgate.catalog import Row
from perfgate.report import sessionfiles

REPO = Path(__file__).resolve().parents[2]


class SuiteDir:
    """A folder holding the suite; run() and start() launch pytest in it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.mkdir(parents=True, exist_ok=True)
        for name in ("conftest.py", "pytest.ini"):
            shutil.copy(REPO / name, path / name)
        shutil.copytree(REPO / "benchmarks", path / "benchmarks", dirs_exist_ok=True)
        self.baselines = path / "baselines"
        self.results_dir = path / "perfgate-results"

    def write_rows(self, rows: Iterable[Row]) -> None:
        """baselines/<gpu>.json from these rows."""
        self.baselines.mkdir(exist_ok=True)
        by_gpu: dict[str, list[Row]] = {}
        for r in rows:
            by_gpu.setdefault(r.gpu, []).append(r)
        for gpu, rs in by_gpu.items():
            (self.baselines / f"{gpu}.json").write_text(catalog.dump_rows(rs))

    def start(self, *args: str) -> subprocess.Popen[str]:
        """pytest in the background (stdout and stderr together, line-buffered)."""
        return subprocess.Popen(
            [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
            cwd=self.path,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1", "COLUMNS": "200"},
        )

    def run(self, *args: str, timeout: float = 300) -> tuple[int, str, float]:
        """pytest to the end: (exit status, output, wall seconds)."""
        t0 = time.monotonic()
        proc = self.start(*args)
        try:
            out, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGINT)  # the plugin cancels its jobs on Ctrl-C
            out, _ = proc.communicate(timeout=60)
            raise AssertionError(f"pytest did not finish in {timeout} s:\n{out}") from None
        return proc.returncode, out, time.monotonic() - t0

    def run_tty(self, *args: str, timeout: float = 300) -> tuple[int, str]:
        """pytest to the end on a pseudo-terminal, as in a user's shell: (status, raw output)."""
        master, slave = pty.openpty()
        proc = subprocess.Popen(
            [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
            cwd=self.path,
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env={**os.environ, "PYTHONUNBUFFERED": "1", "COLUMNS": "200", "TERM": "xterm"},
        )
        os.close(slave)
        chunks: list[bytes] = []
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.5)
            if ready:
                try:
                    data = os.read(master, 65536)
                except OSError:  # the child closed the terminal
                    break
                if not data:
                    break
                chunks.append(data)
            elif proc.poll() is not None:
                break
        else:
            proc.send_signal(signal.SIGINT)
        code = proc.wait(timeout=60)
        os.close(master)
        return code, b"".join(chunks).decode("utf-8", "replace")

    def results(self) -> dict[str, Any]:
        """results.json of the last session (its own, under sessions/)."""
        return sessionfiles.read(sessionfiles.session_files(self.results_dir)[-1])

    def session_jobs(self, timeout: float = 60, n: int = 1) -> dict[str, str]:
        """row id -> job id from the session state file, once n rows have a job."""
        deadline = time.monotonic() + timeout
        path = self.results_dir / "launch-session.json"
        while time.monotonic() < deadline:
            try:
                jobs = json.loads(path.read_text())["jobs"]
            except (OSError, ValueError, KeyError):
                jobs = {}
            found = {rid: j["job_id"] for rid, j in jobs.items() if j.get("job_id")}
            if len(found) >= n:
                return found
            time.sleep(0.2)
        raise AssertionError(f"no {n} submitted job(s) in {path} after {timeout} s")


def running(job_ids: Iterable[str], timeout: float = 60) -> None:
    """Wait until squeue shows every job RUNNING."""
    ids = set(job_ids)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        out = subprocess.run(
            ["squeue", "-h", "-t", "R", "-o", "%i"], capture_output=True, text=True
        ).stdout.split()
        if ids <= set(out):
            return
        time.sleep(0.3)
    raise AssertionError(f"jobs {sorted(ids)} not running after {timeout} s")


def sacct_fields(job_id: str, fields: str = "JobID,State,Submit,Start,End") -> dict[str, str]:
    """One job's accounting record (waits a little: slurmdbd lags slurmctld)."""
    keys = fields.split(",")
    deadline = time.monotonic() + 20
    while True:
        out = subprocess.run(
            ["sacct", "-X", "-P", "-n", "-o", fields, "-j", job_id],
            capture_output=True,
            text=True,
        ).stdout.strip()
        rec = dict(zip(keys, out.splitlines()[-1].split("|"), strict=True)) if out else {}
        if rec.get("End") not in (None, "", "Unknown") or time.monotonic() > deadline:
            return rec
        time.sleep(0.5)
