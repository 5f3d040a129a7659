"""The session's side of the history store: what it records, when, and what it reads back.

Live sessions are stored (rows sbatch refused are not: a session that submitted nothing
leaves no session); dry runs never; replays only with --store-replay, and the example
logs of examples/replay never (they are not measurements). The session row is inserted
with the first row that finishes, each row's runs as the row finishes (one transaction
each, by the controller only: xdist workers read, never write), the end at session end.
The command line is stored with secrets redacted. A store that cannot be reached does not
stop the session: its writes are spooled to the session folder (perfgate.history.spool).
"""

from __future__ import annotations

import os
import shlex
import socket
import subprocess
import time
from collections.abc import Callable, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from perfgate.errors import PerfgateError
from perfgate.history import nodes, records
from perfgate.history.spool import Spool, replay
from perfgate.history.store import Session, now
from perfgate.history.stores import open_store
from perfgate.history.trend import Point, off_slow_nodes
from perfgate.rowrecord import RowRecord
from perfgate.secrets import mask_env_args, redact
from perfgate.suite.settings import Settings


def is_example_replay(path: Path | None) -> bool:
    """True for examples/replay (or a folder in it): example logs, never measurements."""
    if path is None:
        return False
    for folder in (path.resolve(), *path.resolve().parents):
        if folder.name == "replay" and (folder / "make_examples.py").exists():
            return True
    return False


def _git_describe(root: Path) -> str | None:
    try:
        out = subprocess.run(
            ["git", "describe", "--always", "--dirty", "--tags"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def _version() -> str | None:
    try:
        return metadata.version("perfgate")
    except metadata.PackageNotFoundError:
        return None


RETRY_S = 30.0  # a store that failed is tried again after this long (not on every row)


class HistoryRecorder:
    """Writes this session's rows into the history store and reads rows' earlier points.

    When the store cannot be reached at the start (connect) or fails later, the session goes
    on: rows are judged with what it has, and what it would have written is kept in the
    session folder (perfgate.history.spool) and written as soon as the store answers again
    (tried every RETRY_S), or later by `perfgate history sync SESSION_DIR`.
    """

    def __init__(
        self,
        settings: Settings,
        root: Path,
        is_worker: bool,
        args: Sequence[str] = (),
        announce: Callable[[str], None] = lambda _: None,
    ) -> None:
        self.settings = settings
        self.args = tuple(args)
        self.root = root
        self.announce = announce  # a line on the terminal now
        self.store = open_store(settings.history) if settings.history else None
        self.writes = self.store is not None and not is_worker and self._mode_stored()
        self.session: Session | None = None
        self.session_id: int | None = None
        self.error: str | None = None
        self.folder: Path | None = None  # the session folder (the spool goes there)
        self.spool: Spool | None = None  # while the store is away
        self.offline = False  # unreachable at the start: judged without history throughout
        self._down_until = 0.0  # reads and retries wait until then after a failure
        self._slow: list[str] | None = None  # the history's slow nodes, read on first use

    def _mode_stored(self) -> bool:
        s = self.settings
        if s.mode == "dry-run":
            return False
        if s.mode == "replay":
            return s.store_replay and not is_example_replay(s.replay)
        return True

    def session_mode(self) -> str:
        """live, ab, repeat or replay."""
        s = self.settings
        if s.mode == "replay":
            return "replay"
        return "ab" if s.ab else "repeat" if s.launch.repeat > 1 else "live"

    @property
    def location(self) -> str:
        """The store, fit to print (a URL without its password)."""
        return self.store.location if self.store is not None else "off"

    def connect(self) -> str | None:
        """At the session's start: reach the store; the one line to say when it cannot be
        reached (None when it can, or without a store)."""
        if self.store is None:
            return None
        try:
            self.store.check()
        except PerfgateError as e:
            self.offline = True
            self.error = str(e)
            kept = "; its rows are kept in the session folder" if self.writes else ""
            return f"history: {e}: rows are judged without history{kept}"
        return None

    def _failed(self, e: PerfgateError) -> None:
        self.error = self.error or str(e)
        self._down_until = time.monotonic() + RETRY_S

    def _readable(self) -> bool:
        return self.store is not None and not self.offline and time.monotonic() >= self._down_until

    def points(self, row_id: str) -> list[Point]:
        """The row's trend so far, without runs on the nodes the history flags as slow (empty
        without a store or when it cannot be read)."""
        if not self._readable():
            return []
        assert self.store is not None
        try:
            found = self.store.points(row_id, os.environ.get("SLURM_CLUSTER_NAME"))
        except PerfgateError as e:  # a broken history must not stop the gate: say so once
            self._failed(e)
            return []
        return off_slow_nodes(found, frozenset(self.slow_nodes()))

    def slow_nodes(self) -> list[str]:
        """The nodes `perfgate nodes` flags in this history ([] without one), read once: the
        session's rows all judge by the same list."""
        if self._slow is None:
            self._slow = []
            if self._readable():
                assert self.store is not None
                try:
                    totals = self.store.node_totals(os.environ.get("SLURM_CLUSTER_NAME"))
                except PerfgateError as e:
                    self._failed(e)
                    return []
                self._slow = [f.node for f in nodes.findings(totals) if f.flagged]
        return self._slow

    def runs(self, row_id: str) -> list[dict[str, Any]]:
        """The row's stored runs, oldest first (empty without a store or when unreadable)."""
        if not self._readable():
            return []
        assert self.store is not None
        try:
            return self.store.runs(row_id)
        except PerfgateError as e:
            self._failed(e)
            return []

    def _new_session(self, rec: RowRecord) -> Session:
        launch = self.settings.launch
        return Session(
            mode=self.session_mode(),
            host=socket.gethostname(),
            cluster=os.environ.get("SLURM_CLUSTER_NAME"),
            images=tuple(records.images_of([rec]))
            or tuple(i for i in (launch.container_image, launch.candidate_image) if i),
            perfgate_version=_version(),
            git_describe=_git_describe(self.root),
            command=redact(shlex.join(["pytest", *mask_env_args(self.args)])),
        )

    def add(self, rec: RowRecord) -> None:
        """Store one finished row (its runs), starting the session with the first."""
        if not self.writes or rec.get("verdict") in ("SKIPPED", "DRY_RUN"):
            return
        assert self.store is not None
        if self.settings.mode == "live" and not (rec.get("job") or {}).get("job_id"):
            return  # never submitted (sbatch refused it): a session of none leaves no trace
        runs = records.runs_from_record(rec, self.settings.window)
        if self.session is None:
            self.session = self._new_session(rec)
        if self.spool is None and self.offline and self.session_id is None:
            self._start_spool(None)  # unreachable at the start (said then)
        if self.spool is None:
            try:
                if self.session_id is None:
                    self.session_id = self.store.start_session(self.session)
                self.store.add_runs(self.session_id, runs)
                return
            except PerfgateError as e:
                self._failed(e)
                self._start_spool(str(e))
        assert self.spool is not None
        self.spool.add_runs(self.session.uid, runs)
        self._sync()

    def _start_spool(self, why: str | None) -> None:
        """From now on, writes go to the session folder's spool first."""
        assert self.session is not None
        self.spool = Spool(self.folder or self.settings.results_dir, self.location)
        self.spool.add_session(self.session)
        if why:
            self.announce(
                f"history: {why}: rows are kept in {self.spool.path} until it answers "
                f"(or `perfgate history sync {self.spool.path.parent}`)"
            )

    def _sync(self, force: bool = False) -> None:
        """Write the spool into the store if it answers now (at most every RETRY_S)."""
        if self.spool is None or self.store is None or self.session is None:
            return
        if not force and time.monotonic() < self._down_until:
            return
        try:
            done = replay(self.store, self.spool.path.parent)
            self.session_id = self.store.start_session(self.session)
        except PerfgateError as e:
            self._failed(e)
            return
        self.announce(
            f"history: {self.location} answers again; wrote {done['runs']} run(s) kept in "
            f"{self.spool.path}"
        )
        self.error = f"{self.error}; every kept row written when it answered again"
        self.spool = None  # written directly again (reads stay as they were: a session
        # that started without history judges every row so)

    def finish(self) -> None:
        """Record the session's end (nothing when it stored no row); say what is still kept."""
        if self.store is None or self.session is None:
            return
        if self.spool is None:
            try:
                assert self.session_id is not None
                self.store.finish_session(self.session_id)
                return
            except PerfgateError as e:
                self._failed(e)
                self._start_spool(None)
        assert self.spool is not None
        self.spool.add_finish(self.session.uid, now())
        self._sync(force=True)
        if self.spool is not None:
            self.error = (
                f"{self.error}; {self.spool.pending()} write(s) kept in {self.spool.path}: "
                f"`perfgate history sync {self.spool.path.parent}` writes them"
            )
