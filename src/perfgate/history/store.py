"""The history store: every session's runs in one sqlite file, append-only.

Tables (schema version in PRAGMA user_version):
    sessions      one per pytest session that ran rows: when, where (host, Slurm cluster), the
                  images, perfgate's version, `git describe` of the checkout, the command line
                  (secrets redacted), the mode (live / ab / repeat / replay)
    session_ends  when a session finished (a session killed before its end has none: its
                  rows are kept, it is shown as interrupted)
    runs          one per launch of a row: label (baseline / candidate), job id, attempt,
                  steady median step time, within-run rel SE, steady flag, steps, tokens/s/GPU,
                  MFU, nodes, image and digest, versions, the row's verdict and INFRA cause
    exclusions    `perfgate history --forget SESSION`: a session left out of trends and noise
                  (a known-bad cluster day), recorded by inserting a row, never by deleting

The suite only inserts. Every write is one transaction under a file lock (<file>.lock, the
`filelock` package) with journal_mode=DELETE and synchronous=FULL, because the file often
lives on a shared or network filesystem where sqlite's WAL mode and its own locks are not
safe: a writer killed mid-transaction leaves the previous state, never half a row.

Every row read back goes through perfgate.history.stored (typed records; a corrupt run is
left out with one warning naming the file and its id), and a file that is not a perfgate
history of this schema (another sqlite database, missing tables or columns) is one line.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from perfgate import charset, notices
from perfgate.errors import ConfigError, PerfgateError
from perfgate.history import stored
from perfgate.history.nodes import NodeRun
from perfgate.history.trend import Point

if TYPE_CHECKING:
    from filelock import FileLock

SCHEMA_VERSION = 1
LOCK_TIMEOUT_S = 120.0
DEFAULT_NAME = "history.sqlite"

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
    command TEXT
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
    delta REAL
);
CREATE INDEX runs_by_row ON runs(row_id, session_id);
CREATE TABLE exclusions (
    session_id INTEGER NOT NULL REFERENCES sessions(id),
    reason TEXT NOT NULL,
    created_at TEXT NOT NULL
);
"""


# The columns every reader needs, by table: a file without them is not this schema.
_COLUMNS = {
    table: tuple(
        line.split()[0]
        for line in body.split("\n")
        if line.strip() and not line.strip().startswith(("CREATE", ")"))
    )
    for table, body in (
        (part.split("(", 1)[0].split()[-1], part.split("(", 1)[1])
        for part in _DDL.split("CREATE TABLE")[1:]
    )
}


def now() -> str:
    """UTC timestamp, ISO 8601, seconds."""
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat()


@dataclass(frozen=True)
class Session:
    """What a session records about itself (secrets already redacted from command)."""

    mode: str  # live, ab, repeat or replay
    started_at: str = field(default_factory=now)
    host: str | None = None
    cluster: str | None = None
    images: tuple[str, ...] = ()
    perfgate_version: str | None = None
    git_describe: str | None = None
    command: str | None = None


@dataclass(frozen=True)
class Run:
    """One launch of a row, as the store keeps it."""

    row_id: str
    mode: str  # stored (one run vs baseline), repeat, paired
    label: str
    launch: int  # 1-based position in its job
    steady: bool
    step_time_s: float | None = None
    rel_se: float | None = None
    n_steady: int | None = None
    job_id: str | None = None
    attempt: int | None = None
    tokens_per_s_per_gpu: float | None = None
    mfu: float | None = None
    nodes: tuple[str, ...] = ()
    image: str | None = None
    image_digest: str | None = None
    versions: dict[str, str] = field(default_factory=dict)
    verdict: str | None = None
    cause: str | None = None
    delta: float | None = None


class HistoryStore:
    """One history file: open (creating it and its schema on first write), insert, read."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

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

    def _check_schema(self, con: sqlite3.Connection, create: bool) -> bool:
        try:
            version = con.execute("PRAGMA user_version").fetchone()[0]
        except sqlite3.DatabaseError as e:
            raise ConfigError(f"{self.path}: not a perfgate history database ({e})") from None
        if version == 0 and create:
            con.executescript(f"BEGIN; {_DDL} PRAGMA user_version={SCHEMA_VERSION}; COMMIT;")
            return True
        if version == 0:
            return False
        if version != SCHEMA_VERSION:
            raise ConfigError(
                f"{self.path}: history schema version {version}; this perfgate reads "
                f"{SCHEMA_VERSION} (upgrade perfgate, or point --history elsewhere)"
            )
        self._check_tables(con)
        return True

    def _check_tables(self, con: sqlite3.Connection) -> None:
        """One line when a table or column of the schema is missing (another database)."""
        try:
            for table, columns in _COLUMNS.items():
                found = {r[1] for r in con.execute(f"PRAGMA table_info({table})").fetchall()}
                missing = [c for c in columns if c not in found]
                if missing:
                    what = f"no table {table}" if not found else f"table {table} lacks {missing[0]}"
                    raise ConfigError(
                        f"{self.path}: not a perfgate history of schema {SCHEMA_VERSION} ({what})"
                    )
        except sqlite3.Error as e:
            raise ConfigError(f"{self.path}: not a perfgate history database ({e})") from None

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One locked write transaction: all of it is stored, or none of it."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            with self._lock():
                con = self._connect()
                try:
                    self._check_schema(con, create=True)
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

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Connection | None]:
        if not self.path.exists():
            yield None
            return
        con = self._connect()
        try:
            yield con if self._check_schema(con, create=False) else None
        finally:
            con.close()

    # --- writes (insert only) ----------------------------------------------------------------

    def start_session(self, s: Session) -> int:
        """Insert a session; its id."""
        with self._write() as con:
            cur = con.execute(
                "INSERT INTO sessions (started_at, host, cluster, mode, images, "
                "perfgate_version, git_describe, command) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    s.started_at,
                    s.host,
                    s.cluster,
                    s.mode,
                    json.dumps(list(s.images)),
                    s.perfgate_version,
                    s.git_describe,
                    s.command,
                ),
            )
            return int(cur.lastrowid or 0)

    def add_runs(self, session_id: int, runs: Sequence[Run]) -> None:
        """Insert one row's runs of a session, in one transaction."""
        stamp = now()
        with self._write() as con:
            con.executemany(
                "INSERT INTO runs (session_id, row_id, mode, label, launch, job_id, attempt, "
                "recorded_at, step_time_s, rel_se, steady, n_steady, tokens_per_s_per_gpu, mfu, "
                "nodes, image, image_digest, versions, verdict, cause, delta) VALUES "
                "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        session_id,
                        r.row_id,
                        r.mode,
                        r.label,
                        r.launch,
                        r.job_id,
                        r.attempt,
                        stamp,
                        r.step_time_s,
                        r.rel_se,
                        int(r.steady),
                        r.n_steady,
                        r.tokens_per_s_per_gpu,
                        r.mfu,
                        json.dumps(list(r.nodes)),
                        r.image,
                        r.image_digest,
                        json.dumps(r.versions, sort_keys=True),
                        r.verdict,
                        r.cause,
                        r.delta,
                    )
                    for r in runs
                ],
            )

    def finish_session(self, session_id: int) -> None:
        """Record that the session ended."""
        with self._write() as con:
            con.execute(
                "INSERT INTO session_ends (session_id, finished_at) VALUES (?, ?)",
                (session_id, now()),
            )

    def forget(self, session_id: int, reason: str) -> None:
        """Leave a session out of trends and noise from now on (an exclusion row)."""
        with self._write() as con:
            if not con.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,)).fetchone():
                raise ConfigError(f"{self.path}: no session {session_id}")
            con.execute(
                "INSERT INTO exclusions (session_id, reason, created_at) VALUES (?, ?, ?)",
                (session_id, reason, now()),
            )

    # --- reads --------------------------------------------------------------------------------

    def _query(self, sql: str, params: tuple = ()) -> list[sqlite3.Row]:
        """Rows of a read query ([] without a history); a database error is one line."""
        try:
            with self._read() as con:
                return [] if con is None else con.execute(sql, params).fetchall()
        except sqlite3.Error as e:
            raise ConfigError(f"{self.path}: not a readable perfgate history ({e})") from None

    _RUNS = (
        "SELECT r.*, s.started_at, s.mode AS session_mode, s.cluster, s.host, "
        "(SELECT reason FROM exclusions x WHERE x.session_id = s.id ORDER BY x.rowid "
        "DESC LIMIT 1) AS excluded FROM runs r JOIN sessions s ON s.id = r.session_id "
    )

    def _runs(self, where: str = "", params: tuple = ()) -> list[stored.StoredRun]:
        rows = self._query(f"{self._RUNS}{where} ORDER BY s.started_at, s.id, r.launch", params)
        return stored.read_runs(rows, str(self.path))

    def sessions(self) -> list[dict[str, Any]]:
        """Every session, oldest first, with finished_at and excluded (reason or None)."""
        rows = self._query(
            "SELECT s.*, (SELECT MAX(finished_at) FROM session_ends e WHERE "
            "e.session_id = s.id) AS finished_at, (SELECT reason FROM exclusions x WHERE "
            "x.session_id = s.id ORDER BY x.rowid DESC LIMIT 1) AS excluded FROM sessions s "
            "ORDER BY s.started_at, s.id"
        )
        return [s.to_dict() for s in stored.read_sessions(rows, str(self.path))]

    def runs(self, row_id: str) -> list[dict[str, Any]]:
        """Every stored run of a row with its session's fields, oldest first."""
        return [r.to_dict() for r in self._runs("WHERE r.row_id = ?", (row_id,))]

    def row_ids(self) -> list[str]:
        """Every row id with a stored run (an id that is not one is left out, with a warning)."""
        found = [r[0] for r in self._query("SELECT DISTINCT row_id FROM runs ORDER BY 1")]
        good = [r for r in found if isinstance(r, str) and charset.NAME.fullmatch(r)]
        if len(good) < len(found):
            bad = next(r for r in found if r not in good)
            notices.warn(
                f"{self.path}: {len(found) - len(good)} row id(s) left out, e.g. "
                f"{charset.shown(bad, 40)}: not a row id"
            )
        return good

    def node_runs(self, cluster: str | None = None) -> list[NodeRun]:
        """Every steady, undiagnosed run with its nodes, in sessions not forgotten (A/B and
        repeat runs too: a slow node slows any launch), for perfgate.history.nodes."""
        return stored.node_runs(
            self._runs("WHERE r.steady = 1 AND r.cause IS NULL AND r.step_time_s IS NOT NULL"),
            cluster,
        )

    def points(self, row_id: str, cluster: str | None = None) -> list[Point]:
        """The row's trend: steady, undiagnosed runs of single-image sessions not forgotten
        (perfgate.history.stored.trend_points says which)."""
        return stored.trend_points(self._runs("WHERE r.row_id = ?", (row_id,)), cluster)
