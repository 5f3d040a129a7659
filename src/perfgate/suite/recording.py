"""The session's side of the history store: what it records, when, and what it reads back.

Live sessions are stored (rows sbatch refused are not: a session that submitted nothing
leaves no session); dry runs never; replays only with --store-replay, and the example
logs of examples/replay never (they are not measurements). The session row is inserted
with the first row that finishes, each row's runs as the row finishes (one transaction
each, by the controller only: xdist workers read, never write), the end at session end.
The command line is stored with secrets redacted.
"""

from __future__ import annotations

import os
import shlex
import socket
import subprocess
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from perfgate.errors import PerfgateError
from perfgate.history import nodes, records
from perfgate.history.store import HistoryStore, Session
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


class HistoryRecorder:
    """Writes this session's rows into the history store and reads rows' earlier points."""

    def __init__(
        self, settings: Settings, root: Path, is_worker: bool, args: Sequence[str] = ()
    ) -> None:
        self.settings = settings
        self.args = tuple(args)
        self.root = root
        self.store = HistoryStore(settings.history) if settings.history else None
        self.writes = self.store is not None and not is_worker and self._mode_stored()
        self.session_id: int | None = None
        self.error: str | None = None
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

    def points(self, row_id: str) -> list[Point]:
        """The row's trend so far, without runs on the nodes the history flags as slow (empty
        without a store or when it cannot be read)."""
        if self.store is None:
            return []
        try:
            found = self.store.points(row_id, os.environ.get("SLURM_CLUSTER_NAME"))
        except PerfgateError as e:  # a broken history must not stop the gate: say so once
            self.error = self.error or str(e)
            return []
        return off_slow_nodes(found, frozenset(self.slow_nodes()))

    def slow_nodes(self) -> list[str]:
        """The nodes `perfgate nodes` flags in this history ([] without one), read once: the
        session's rows all judge by the same list."""
        if self._slow is None:
            self._slow = []
            if self.store is not None:
                try:
                    runs = self.store.node_runs(os.environ.get("SLURM_CLUSTER_NAME"))
                except PerfgateError as e:
                    self.error = self.error or str(e)
                    return []
                self._slow = [f.node for f in nodes.slow_nodes(runs) if f.flagged]
        return self._slow

    def runs(self, row_id: str) -> list[dict[str, Any]]:
        """The row's stored runs, oldest first (empty without a store or when unreadable)."""
        if self.store is None:
            return []
        try:
            return self.store.runs(row_id)
        except PerfgateError as e:
            self.error = self.error or str(e)
            return []

    def add(self, rec: RowRecord) -> None:
        """Store one finished row (its runs), starting the session with the first."""
        if not self.writes or rec.get("verdict") in ("SKIPPED", "DRY_RUN"):
            return
        assert self.store is not None
        if self.settings.mode == "live" and not (rec.get("job") or {}).get("job_id"):
            return  # never submitted (sbatch refused it): a session of none leaves no trace
        try:
            runs = records.runs_from_record(rec, self.settings.window)
            if self.session_id is None:
                self.session_id = self.store.start_session(
                    Session(
                        mode=self.session_mode(),
                        host=socket.gethostname(),
                        cluster=os.environ.get("SLURM_CLUSTER_NAME"),
                        images=tuple(records.images_of([rec]))
                        or tuple(
                            i
                            for i in (
                                self.settings.launch.container_image,
                                self.settings.launch.candidate_image,
                            )
                            if i
                        ),
                        perfgate_version=_version(),
                        git_describe=_git_describe(self.root),
                        command=redact(shlex.join(["pytest", *mask_env_args(self.args)])),
                    )
                )
            self.store.add_runs(self.session_id, runs)
        except PerfgateError as e:
            self.error = self.error or str(e)

    def finish(self) -> None:
        """Record the session's end (nothing when it stored no row)."""
        if self.store is None or self.session_id is None:
            return
        try:
            self.store.finish_session(self.session_id)
        except PerfgateError as e:
            self.error = self.error or str(e)
