"""The live path of the plugin: drive a launch.LaunchSession and make long waits visible.

All selected rows are submitted when the test loop starts; each test then waits only for its
own row, polling every job meanwhile and showing where each stands: on a terminal one block
redrawn in place, elsewhere a line when a job's state changes (perfgate.suite.display).
Under pytest-xdist every worker submits the rows of its own tests when they start (the
controller never sees the items).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Sequence
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import pytest

from perfgate.catalog import Row
from perfgate.charset import for_terminal
from perfgate.errors import ConfigError
from perfgate.launch import LaunchSession, images
from perfgate.launch.digests import ImageDigests
from perfgate.launch.session import RESULT_CHECK_S
from perfgate.launch.types import LaunchOptions
from perfgate.runs import JobStatus, RunResult
from perfgate.suite.display import BlockDisplay, SparseDisplay

Display = SparseDisplay | BlockDisplay

POLL_S = 5.0


def say(config: pytest.Config, line: str) -> None:
    """Print a line on the terminal now, even while a test's output is being captured."""
    tr = config.pluginmanager.get_plugin("terminalreporter")
    if tr is None:
        return
    with _uncaptured(config):
        _fresh_line(tr)
        tr.write_line(for_terminal(line))


def _uncaptured(config: pytest.Config) -> Any:
    capman = config.pluginmanager.get_plugin("capturemanager")
    return capman.global_and_fixture_disabled() if capman is not None else nullcontext()


def _fresh_line(tr: Any) -> None:
    tr.ensure_newline()
    if tr._tw.width_of_current_line:  # after progress dots: start a fresh line
        tr._tw.line()


def terminal_display(config: pytest.Config) -> Display:
    """A block redrawn in place when pytest writes to a terminal, else sparse lines."""
    tr = config.pluginmanager.get_plugin("terminalreporter")
    if tr is None or not tr.isatty() or hasattr(config, "workerinput"):
        return SparseDisplay(lambda line: say(config, line))

    def write(text: str) -> None:
        with _uncaptured(config):
            _fresh_line(tr)
            # Straight to the file: pytest's writer would count the escape codes as text.
            tr._tw._file.write(text)
            tr._tw._file.flush()

    return BlockDisplay(write, lambda: tr._tw.fullwidth)


class LiveRunner:
    """Submits rows through launch.LaunchSession and waits for one row at a time."""

    def __init__(
        self,
        options: LaunchOptions,
        results_dir: Path,
        *,
        resume: bool,
        announce: Callable[[str], None],
        display: Display | None = None,
        poll_s: float = POLL_S,
        more_pairs_for: Callable[[Row], Callable[..., bool | str]] | None = None,
        on_done: Callable[[Row, RunResult], None] | None = None,
    ) -> None:
        self._session = LaunchSession(
            options, results_dir, resume=resume, more_pairs_for=more_pairs_for
        )
        self._digests = ImageDigests()
        if options.container_runtime in ("pyxis", "command"):  # hash the user's image files
            self._digests.start(_image_files(options))
        self._display = display or SparseDisplay(announce)
        self._poll_s = poll_s
        self._submitted: set[str] = set()
        self._handlers = False
        self._on_done = on_done  # called once per row when its first job ends
        self._told: set[str] = set()

    def install_signal_handlers(self) -> None:
        """SIGINT/SIGTERM cancel every job of the session (only in the main thread)."""
        try:
            self._session.install_signal_handlers()
            self._handlers = True
        except ValueError:  # not the main thread (e.g. an embedding runner)
            pass

    def submit(self, rows: Iterable[Row], test_ids: dict[str, str] | None = None) -> None:
        """Submit the rows not submitted yet (the session caps concurrency)."""
        new = [r for r in rows if r.id not in self._submitted]
        if new:
            self._session.submit_all(new, test_ids=test_ids)
            self._submitted.update(r.id for r in new)
            for r in new:
                e = self._session.entries[r.id]
                if e.resumed:
                    self._display.say(f"perfgate: {r.id}: re-attached to job {e.job_id} (--resume)")

    def _show(self) -> dict[str, JobStatus]:
        """Poll every job and show where each stands (see perfgate.suite.display)."""
        polled = self._session.poll()
        self._display.update(polled)
        return {st.row_id: st for st in polled}

    def wait(self, row: Row, test_id: str | None = None) -> RunResult:
        """Block until this row's job is over, showing job states meanwhile."""
        self.submit([row], {row.id: test_id} if test_id else None)
        return self._wait(row.id)

    def _wait(self, key: str) -> RunResult:
        entries = self._session.entries  # the session replaces an entry as its job moves
        shown_at = -math.inf
        try:
            while not entries[key].done:
                if time.monotonic() - shown_at >= self._poll_s:
                    shown_at = time.monotonic()
                    self._show()
                else:  # between two displays, notice the result within RESULT_CHECK_S
                    self._session.pump()
                self._notice_done()
                if not entries[key].done:
                    time.sleep(min(RESULT_CHECK_S, self._poll_s))
        finally:
            self._display.pause()
        return self._digests.fill(self._session.result(key))

    def _notice_done(self) -> None:
        """Tell on_done about each row whose first job just ended (once): it may start a
        confirmation run at once, while other rows' tests still wait."""
        if self._on_done is None:
            return
        for key in self._session.order:
            e = self._session.entries[key]
            if e.done and e.key is None and key not in self._told:
                self._told.add(key)
                assert e.result is not None
                self._on_done(e.row, self._digests.fill(e.result))

    def start_confirmation(self, row: Row, n: int, exclude: Sequence[str]) -> str:
        """Queue the n-th confirmation run of a row, kept off `exclude`; returns its key."""
        key = self._session.submit_confirmation(row, n, exclude)
        self._display.say(
            f"perfgate: {row.id}: confirmation {n} on other nodes"
            + (f" (--exclude {','.join(exclude)})" if exclude else "")
        )
        return key

    def has(self, key: str) -> bool:
        """Whether a job of this key (a row id, or `<row>~confirm-<n>`) was queued."""
        return key in self._session.entries

    def confirmation(self, row: Row, n: int, exclude: Sequence[str]) -> RunResult:
        """The n-th confirmation run's result (queued now unless on_done queued it already)."""
        key = f"{row.id}~confirm-{n}"
        if key not in self._session.entries:
            self.start_confirmation(row, n, exclude)
        return self._wait(key)

    def nodes_of(self, key: str) -> list[str]:
        """The nodes a finished job of this session ran on (its record, else accounting)."""
        return self._session.nodes_of(key)

    def partition_nodes(self) -> list[str] | None:
        """The usable nodes of the session's partition (None: unknown, or no partition)."""
        return self._session.partition_nodes() if self.excludes_nodes else None

    def planned_gpu_hours(self) -> dict[str, float]:
        """Each row's first job's GPU-hours as planned (time-limit bound), by row id."""
        return {
            e.row.id: e.plan.gpu_hours
            for key, e in self._session.entries.items()
            if e.key is None and key == e.row.id
        }

    @property
    def excludes_nodes(self) -> bool:
        """Whether this executor can keep a job off given nodes (no: the local executor)."""
        return self._session.executor.excludes_nodes

    def finish(self) -> list[str]:
        """At the end of the session: cancel the jobs no test waited for (e.g. -x stopped the
        session) and restore signal handlers; returns "row (job J, STATE)" per job cancelled."""
        try:
            return self.cancel_all() if self._submitted else []
        finally:
            if self._handlers:
                self._session.restore_signal_handlers()

    def cancel_all(self) -> list[str]:
        """Cancel every job of the session not cancelled yet; "row (job J, STATE)" for each."""
        done = len(self._session.cancelled)
        self._session.cancel_all()
        return [_cancelled(*c) for c in self._session.cancelled[done:]]

    def cancelled(self) -> list[str]:
        """Every job the session cancelled so far (a signal handler may have done it)."""
        return [_cancelled(*c) for c in self._session.cancelled]


def _cancelled(row_id: str, job_id: str, state: str) -> str:
    return f"{row_id} (job {job_id}, {state})"


def _image_files(options: LaunchOptions) -> list[str]:
    """The image files among the session's images, as the jobs name them (absolute)."""
    out = []
    for image in (options.container_image, options.candidate_image):
        try:
            path = images.resolve_for(options.container_runtime, image)
        except ConfigError:  # a missing file: planning reports it, with the row
            continue
        if path and "://" not in path and images.is_squashfs(path):
            out.append(path)
    return out
