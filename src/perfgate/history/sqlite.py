"""The embedded history store: one sqlite file (the default, `<baselines-dir>/history.sqlite`).

Every write is one transaction under a file lock (<file>.lock, the `filelock` package) with
journal_mode=DELETE and synchronous=FULL, because the file often lives on a shared or network
filesystem where sqlite's WAL mode and its own locks are not safe: a writer killed
mid-transaction leaves the previous state, never half a row. Schema version in PRAGMA
user_version; a version-1 file (before session uids) is upgraded in place on its first write.
"""

from __future__ import annotations

import itertools
import json
import math
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from perfgate import limits, nodenames
from perfgate.errors import ConfigError, PerfgateError
from perfgate.history import nodes, sql
from perfgate.history.decode import decode_row
from perfgate.history.nodes import NodeRun, NodeTotal
from perfgate.history.sqlstore import SqlStore
from perfgate.history.store import (
    SCHEMA_VERSION,
    new_uid,
)

if TYPE_CHECKING:
    from filelock import FileLock

LOCK_TIMEOUT_S = 120.0
D = sql.SQLITE

_DDL = """
CREATE TABLE sessions (
    id INTEGER PRIMARY KEY,
    started_at TEXT NOT NULL,
    host TEXT,
    cluster TEXT,
    mode TEXT NOT NULL,
    images TEXT NOT NULL DEFAULT '[]',
    perfgate_version TEXT,
    git_describe TEXT,
    command TEXT,
    uid TEXT NOT NULL
);
CREATE TABLE session_ends (
    session_id INTEGER NOT NULL REFERENCES sessions(id),
    finished_at TEXT NOT NULL
);
CREATE TABLE runs (
    id INTEGER PRIMARY KEY,
    session_id INTEGER NOT NULL REFERENCES sessions(id),
    row_id TEXT NOT NULL,
    mode TEXT NOT NULL,
    label TEXT NOT NULL,
    launch INTEGER NOT NULL,
    job_id TEXT,
    attempt INTEGER,
    recorded_at TEXT NOT NULL,
    step_time_s REAL,
    rel_se REAL,
    steady INTEGER NOT NULL,
    n_steady INTEGER,
    tokens_per_s_per_gpu REAL,
    mfu REAL,
    nodes TEXT NOT NULL DEFAULT '[]',
    image TEXT,
    image_digest TEXT,
    versions TEXT NOT NULL DEFAULT '{}',
    verdict TEXT,
    cause TEXT,
    delta REAL,
    baseline_s REAL,
    tolerance REAL
);
CREATE INDEX runs_by_row ON runs(row_id, session_id);
CREATE TABLE exclusions (
    session_id INTEGER NOT NULL REFERENCES sessions(id),
    reason TEXT NOT NULL,
    created_at TEXT NOT NULL
);
"""
# Version 2: a session's uid and a run written twice kept once (both for the spool); the
# baseline and tolerance each run was judged against (runs: baseline_s, tolerance).
_KEYS = """
CREATE UNIQUE INDEX sessions_by_uid ON sessions(uid);
CREATE UNIQUE INDEX runs_once ON runs(session_id, row_id, label, launch, COALESCE(job_id, ''));
"""


class SqliteStore(SqlStore):
    """One history file: open (creating it and its schema on first write), insert, read."""

    dialect = sql.SQLITE

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.notes: list[str] = []  # rows left out by the reader (perfgate.history.decode)

    @property
    def location(self) -> str:
        """The file."""
        return str(self.path)

    # --- connection, lock, schema -----------------------------------------------------------

    def _lock(self) -> FileLock:
        # filelock loads only here: perfgate.history is imported where only stdlib is promised.
        from filelock import FileLock

        return FileLock(str(self.path) + ".lock", timeout=LOCK_TIMEOUT_S)

    def _connect(self) -> sqlite3.Connection:
        try:
            con = sqlite3.connect(self.path, timeout=LOCK_TIMEOUT_S, isolation_level=None)
            con.execute("PRAGMA journal_mode=DELETE")
            con.execute("PRAGMA synchronous=FULL")
            con.execute("PRAGMA foreign_keys=ON")
        except sqlite3.Error as e:
            raise ConfigError(f"{self.path}: not a perfgate history database ({e})") from None
        con.row_factory = sqlite3.Row
        return con

    def _version(self, con: sqlite3.Connection) -> int:
        try:
            version = con.execute("PRAGMA user_version").fetchone()[0]
        except sqlite3.DatabaseError as e:
            raise ConfigError(f"{self.path}: not a perfgate history database ({e})") from None
        if version > SCHEMA_VERSION:
            raise ConfigError(
                f"{self.path}: history schema version {version}; this perfgate reads "
                f"{SCHEMA_VERSION} (upgrade perfgate, or point --history elsewhere)"
            )
        return version

    def _upgrade(self, con: sqlite3.Connection) -> None:
        """Create the schema, or bring a version-1 file to version 2 (inside the write lock)."""
        version = self._version(con)
        if version == SCHEMA_VERSION:
            return
        con.execute("BEGIN IMMEDIATE")
        try:
            if version == 0:
                _script(con, _DDL)
            else:  # 1: sessions get uids of their own (unique across every store)
                con.execute("ALTER TABLE sessions ADD COLUMN uid TEXT NOT NULL DEFAULT ''")
                con.execute("ALTER TABLE runs ADD COLUMN baseline_s REAL")
                con.execute("ALTER TABLE runs ADD COLUMN tolerance REAL")
                for (sid,) in con.execute("SELECT id FROM sessions").fetchall():
                    con.execute("UPDATE sessions SET uid = ? WHERE id = ?", (new_uid(), sid))
            _script(con, _KEYS)
            con.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
            con.execute("COMMIT")
        except sqlite3.IntegrityError as e:
            con.execute("ROLLBACK")
            raise ConfigError(f"{self.path}: cannot upgrade the history ({e})") from None
        except BaseException:
            if con.in_transaction:
                con.execute("ROLLBACK")
            raise

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One locked write transaction: all of it is stored, or none of it."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self._lock():
                con = self._connect()
                try:
                    self._upgrade(con)
                    con.execute("BEGIN IMMEDIATE")
                    try:
                        yield con
                    except BaseException:
                        con.execute("ROLLBACK")
                        raise
                    con.execute("COMMIT")
                finally:
                    con.close()
        except TimeoutError:  # filelock.Timeout
            raise PerfgateError(
                f"{self.path}: could not lock {self.path}.lock within {LOCK_TIMEOUT_S:.0f} s"
            ) from None
        except sqlite3.Error as e:
            raise PerfgateError(f"{self.path}: history write failed ({e})") from None
        except OSError as e:
            raise PerfgateError(f"{self.path}: history write failed ({e.strerror})") from None

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Connection | None]:
        if not self.path.exists():
            yield None
            return
        con = self._connect()
        try:
            yield con if self._version(con) > 0 else None
        except sqlite3.Error as e:
            raise PerfgateError(f"{self.path}: history read failed ({e})") from None
        finally:
            con.close()

    def check(self) -> None:
        """Read the schema version (a file not there yet is fine)."""
        with self._read():
            pass

    def close(self) -> None:
        """Nothing held between calls."""

    def _rows(self, query: str, params: tuple = ()) -> list[sqlite3.Row]:
        with self._read() as con:
            return [] if con is None else con.execute(query, params).fetchall()

    def node_totals(self, cluster: str | None = None) -> list[NodeTotal]:
        """The node test's sums per node, added up row by row as sqlite hands the runs over
        in row order (one row's runs held at a time; sqlite's window functions over the same
        runs cost twice the CPU)."""
        with self._read() as con:
            if con is None:
                return []
            cur = con.execute(sql.node_rows(D), (cluster, cluster))
            rows = itertools.groupby(cur, key=lambda r: r["row_id"])
            return nodes.totals_of_rows(
                [run for r in group if (run := self._node_run(r)) is not None] for _, group in rows
            )

    def _node_run(self, r: sqlite3.Row) -> NodeRun | None:
        """One run for the node test, through the door when it is not what perfgate writes."""
        step, names = r["step_time_s"], r["nodes"]
        try:
            names = json.loads(names)
        except (TypeError, ValueError):
            names = None
        if (
            type(step) is float
            and math.isfinite(step)
            and 0 < step <= limits.STEP_TIME_S.value
            and type(names) is list
            and all(nodenames.is_name(n) for n in names)
        ):
            return NodeRun(r["row_id"], step, tuple(names), r["job_id"]) if names else None
        row = decode_row(dict(r), self.location, "runs", self.notes)  # the note naming it
        if row is None or not row["nodes"] or row["step_time_s"] is None:
            return None
        return NodeRun(row["row_id"], row["step_time_s"], tuple(row["nodes"]), row["job_id"])

    def session_uids(self) -> list[str]:
        """Every session's uid, oldest first (a version-1 file is upgraded first: its
        sessions get uids)."""
        if not self.path.exists():
            return []
        with self._write() as con:
            return [r[0] for r in con.execute(sql.SESSION_UIDS)]


def _script(con: sqlite3.Connection, text: str) -> None:
    """Statements one by one, inside the caller's transaction (executescript would commit)."""
    for statement in text.split(";"):
        if statement.strip():
            con.execute(statement)
