"""What both history stores do the same way, over a DB-API connection: the inserts, reads,
node sums, export and import of perfgate.history.sql, in the store's dialect.

A store (perfgate.history.sqlite, perfgate.history.postgres) says how it connects: `_write()`
yields a connection inside one transaction (all of it is stored, or none of it), `_rows()`
runs a read query (no rows when there is no history yet). Rows come out as mappings by
column name, and through the one door (perfgate.history.decode).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any

from perfgate import charset
from perfgate.errors import ConfigError
from perfgate.history import sql
from perfgate.history.decode import ROW_ID, decode_rows
from perfgate.history.nodes import NodeRun, NodeTotal
from perfgate.history.store import Dump, Run, Session, now, trend_points
from perfgate.history.trend import Point


class SqlStore:
    """The store's operations in SQL; subclasses connect (see the module doc)."""

    dialect: sql.Dialect
    notes: list[str]

    @property
    def location(self) -> str:
        """Where it is, fit to print."""
        raise NotImplementedError

    def _write(self) -> AbstractContextManager[Any]:
        raise NotImplementedError

    def _rows(self, query: str, params: tuple = ()) -> list[Mapping[str, Any]]:
        raise NotImplementedError

    # --- writes (insert only) ----------------------------------------------------------------

    def start_session(self, s: Session) -> int:
        """Insert a session (or find it by its uid); its id."""
        d = self.dialect
        with self._write() as con:
            con.execute(sql.insert_session(d), sql.session_values(s))
            cur = con.execute(d.sql("SELECT id FROM sessions WHERE uid = ?"), (s.uid,))
            return int(cur.fetchone()["id"])

    def add_runs(self, session_id: int, runs: Sequence[Run]) -> int:
        """Insert one row's runs of a session, in one transaction; how many were new."""
        stamp = now()
        with self._write() as con:
            cur = con.cursor()
            cur.executemany(
                sql.insert_run(self.dialect), [sql.run_values(session_id, r, stamp) for r in runs]
            )
            return max(0, cur.rowcount)

    def finish_session(self, session_id: int, finished_at: str | None = None) -> None:
        """Record that the session ended (once)."""
        with self._write() as con:
            con.execute(sql.finish(self.dialect), (session_id, finished_at or now(), session_id))

    def forget(self, session_id: int, reason: str) -> None:
        """Leave a session out of trends and noise from now on (an exclusion row)."""
        d = self.dialect
        with self._write() as con:
            cur = con.execute(d.sql("SELECT 1 AS one FROM sessions WHERE id = ?"), (session_id,))
            if not cur.fetchone():
                raise ConfigError(f"{self.location}: no session {session_id}")
            con.execute(
                d.sql("INSERT INTO exclusions (session_id, reason, created_at) VALUES (?, ?, ?)"),
                (session_id, reason, now()),
            )

    # --- reads --------------------------------------------------------------------------------

    def _query(self, query: str, params: tuple = (), table: str = "runs") -> list[dict[str, Any]]:
        """Rows of a read query, through the one door ([] without a history)."""
        return decode_rows(self._rows(query, params), self.location, table, self.notes)

    def sessions(self) -> list[dict[str, Any]]:
        """Every session, oldest first, with finished_at and excluded (reason or None)."""
        return self._query(sql.sessions(self.dialect), table="sessions")

    def runs(self, row_id: str) -> list[dict[str, Any]]:
        """Every stored run of a row with its session's fields, oldest first."""
        return self._query(sql.runs(self.dialect), (row_id,))

    def row_ids(self) -> list[str]:
        """Every row id with a stored run (one that is not a row id is left out, with a note)."""
        found = [r["row_id"] for r in self._rows(sql.ROW_IDS)]
        good = [r for r in found if isinstance(r, str) and ROW_ID.fullmatch(r)]
        if len(good) < len(found):
            bad = next(r for r in found if r not in good)
            self.notes.append(
                f"{self.location}: {len(found) - len(good)} row id(s) left out, e.g. "
                f"{charset.shown(bad, 40)}: not a row id"
            )
        return good

    def points(self, row_id: str, cluster: str | None = None) -> list[Point]:
        """The row's trend (perfgate.history.store.trend_points)."""
        return trend_points(self.runs(row_id), cluster)

    def node_runs(self, cluster: str | None = None) -> list[NodeRun]:
        """Every steady, undiagnosed run with its nodes, in sessions not forgotten (A/B and
        repeat runs too: a slow node slows any launch), for perfgate.history.nodes."""
        rows = self._query(sql.node_runs(self.dialect), (cluster, cluster))
        return [
            NodeRun(r["row_id"], r["step_time_s"], tuple(r["nodes"]), r["job_id"])
            for r in rows
            if r["nodes"]
        ]

    def node_totals(self, cluster: str | None = None) -> list[NodeTotal]:
        """The node test's sums per node (each store adds them up its own way)."""
        raise NotImplementedError

    # --- export / import ----------------------------------------------------------------------

    def session_uids(self) -> list[str]:
        """Every session's uid, oldest first."""
        return [r["uid"] for r in self._rows(sql.SESSION_UIDS)]

    def dump(self, uid: str) -> Dump:
        """One session with its ends, runs and exclusions."""
        q = sql.dump_queries(self.dialect)
        return Dump(*(self._query(q[t], (uid,), table=t) for t in q))

    def load(self, dump: Dump) -> dict[str, int]:
        """Insert a dump in one transaction (what is already here is skipped)."""
        with self._write() as con:
            return sql.load_dump(self.dialect, con.cursor(), dump)
