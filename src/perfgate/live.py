"""The live path of the plugin: drive a launch.LaunchSession and make long waits visible.

All selected rows are submitted when the test loop starts; each test then waits only for its
own row, polling every job meanwhile and printing each job's state when it changes (queued
with Slurm's reason, running with step and time left, done). Under pytest-xdist every worker
submits the rows of its own tests when they start (the controller never sees the items).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import pytest

from perfgate.catalog import Row
from perfgate.launch.types import LaunchOptions, RunResult

POLL_S = 15.0


def say(config: pytest.Config, line: str) -> None:
    """Print a line on the terminal now, even while a test's output is being captured."""
    tr = config.pluginmanager.get_plugin("terminalreporter")
    if tr is None:
        return
    capman = config.pluginmanager.get_plugin("capturemanager")
    ctx = capman.global_and_fixture_disabled() if capman is not None else nullcontext()
    with ctx:
        tr.ensure_newline()
        tr.write_line(line)


def _fmt_time(seconds: float | None) -> str:
    if seconds is None:
        return ""
    m, s = divmod(int(seconds), 60)
    h, m = divmod(m, 60)
    return f"{h}h{m:02d}m" if h else f"{m}m{s:02d}s"


def status_line(st: Any) -> str:
    """One status of LaunchSession.poll() in words."""
    g = lambda name: getattr(st, name, None)  # noqa: E731 - statuses are launch's dataclass
    state = str(g("state") or "?")
    parts = [f"perfgate: {g('row_id')}", f"job {g('job_id') or '-'}", state.lower()]
    if g("reason") and state.upper() in ("PENDING", "QUEUED", "CONFIGURING"):
        parts[-1] += f" ({g('reason')})"
    if g("step") is not None:
        total = f"/{g('total_steps')}" if g("total_steps") else ""
        parts.append(f"step {g('step')}{total}")
    if g("time_left_s") is not None:
        parts.append(f"{_fmt_time(g('time_left_s'))} left")
    return ", ".join(parts)


class LiveRunner:
    """Submits rows through launch.LaunchSession and waits for one row at a time."""

    def __init__(
        self,
        options: LaunchOptions,
        results_dir: Path,
        *,
        resume: bool,
        announce: Callable[[str], None],
        poll_s: float = POLL_S,
    ) -> None:
        from perfgate.launch import LaunchSession  # lazy: submitit only on the live path

        self._session = LaunchSession(options, results_dir, resume=resume)
        self._announce = announce
        self._poll_s = poll_s
        self._submitted: set[str] = set()
        self._consumed: set[str] = set()
        self._last: dict[str, str] = {}

    def submit(self, rows: Iterable[Row]) -> None:
        """Submit the rows not submitted yet (the session caps concurrency)."""
        new = [r for r in rows if r.id not in self._submitted]
        if new:
            self._session.submit_all(new)
            self._submitted.update(r.id for r in new)

    def _show(self) -> bool:
        changed = False
        for st in self._session.poll():
            line = status_line(st)
            key = str(getattr(st, "row_id", ""))
            # Time left changes every poll: report a running job again only on a new step.
            fingerprint = line.split(", ")[2:4].__str__()
            if self._last.get(key) != fingerprint:
                self._last[key] = fingerprint
                self._announce(line)
                changed = True
        return changed

    def wait(self, row: Row) -> RunResult:
        """Block until this row's job is done, printing job states as they change."""
        self.submit([row])
        while not self._session.done(row.id):
            self._show()
            time.sleep(self._poll_s)
        self._show()
        self._consumed.add(row.id)
        return self._session.result(row.id)

    def cancel_unconsumed(self) -> list[str]:
        """Cancel jobs whose rows never ran (e.g. -x stopped the session); returns their ids."""
        left = sorted(self._submitted - self._consumed)
        if left:
            self._session.cancel(left)
        return left

    def cancel_all(self) -> None:
        """Cancel every job of the session (interrupt)."""
        self._session.cancel_all()
