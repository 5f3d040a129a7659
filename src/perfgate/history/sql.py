"""The SQL both history stores run: one text per query, in sqlite's dialect, with what differs
in PostgreSQL's (JSON columns, identity keys, placeholders) filled in by `Dialect`.

sqlite keeps JSON as text and orders exclusions by rowid; PostgreSQL keeps JSON as jsonb (so
the node list can be taken apart in SQL, and Grafana reads it) and gives every table an
identity key. Timestamps are ISO 8601 text in both (the stores compare and sort them as
text, as the sqlite store always has; the PostgreSQL views cast them for Grafana).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from perfgate.errors import ConfigError
from perfgate.history.store import Dump, Run, Session, finite

SESSION_COLUMNS = (
    "uid",
    "started_at",
    "host",
    "cluster",
    "mode",
    "images",
    "perfgate_version",
    "git_describe",
    "command",
)
RUN_COLUMNS = (
    "session_id",
    "row_id",
    "mode",
    "label",
    "launch",
    "job_id",
    "attempt",
    "recorded_at",
    "step_time_s",
    "rel_se",
    "steady",
    "n_steady",
    "tokens_per_s_per_gpu",
    "mfu",
    "nodes",
    "image",
    "image_digest",
    "versions",
    "verdict",
    "cause",
    "delta",
    "baseline_s",
    "tolerance",
)
JSON_COLUMNS = ("images", "nodes", "versions")
SLOW_PERCENTILE = 0.8  # perfgate.history.nodes.SLOW_PERCENTILE (tested equal)


@dataclass(frozen=True)
class Dialect:
    """What one database spells differently."""

    name: str  # sqlite or postgresql
    param: str  # the placeholder
    last_exclusion: str  # the column that orders exclusions (latest wins)

    def sql(self, text: str) -> str:
        """A query written with ? placeholders, in this dialect."""
        if self.param == "?":
            return text
        return text.replace("%", "%%").replace("?", self.param)

    def value(self, column: str) -> str:
        """The placeholder of one inserted column (JSON text cast where JSON is a type)."""
        if self.name == "postgresql" and column in JSON_COLUMNS:
            return "CAST(? AS jsonb)"
        return "?"


SQLITE = Dialect("sqlite", "?", "rowid")
POSTGRESQL = Dialect("postgresql", "%s", "id")


def insert_session(d: Dialect) -> str:
    """Insert a session unless its uid is there."""
    cols = ", ".join(SESSION_COLUMNS)
    vals = ", ".join(d.value(c) for c in SESSION_COLUMNS)
    return d.sql(f"INSERT INTO sessions ({cols}) VALUES ({vals}) ON CONFLICT DO NOTHING")


def insert_run(d: Dialect) -> str:
    """Insert a run unless the same (session, row, label, launch, job) is there."""
    cols = ", ".join(RUN_COLUMNS)
    vals = ", ".join(d.value(c) for c in RUN_COLUMNS)
    return d.sql(f"INSERT INTO runs ({cols}) VALUES ({vals}) ON CONFLICT DO NOTHING")


def _text_only(values: tuple, names: tuple[str, ...], what: str) -> tuple:
    """The values, unless one holds a NUL character (PostgreSQL cannot store one: neither
    store does, so a history moves between them whole)."""
    for name, v in zip(names, values, strict=True):
        if isinstance(v, str) and ("\x00" in v or (name in JSON_COLUMNS and "\\u0000" in v)):
            raise ConfigError(f"history: {what}: {name} holds a NUL character; not stored")
    return values


def session_values(s: Session) -> tuple:
    """A Session as insert_session's parameters."""
    return _text_only(_session_values(s), SESSION_COLUMNS, "session")


def _session_values(s: Session) -> tuple:
    return (
        s.uid,
        s.started_at,
        s.host,
        s.cluster,
        s.mode,
        json.dumps(list(s.images)),
        s.perfgate_version,
        s.git_describe,
        s.command,
    )


def run_values(session_id: int, r: Run, recorded_at: str) -> tuple:
    """A Run as insert_run's parameters (non-finite numbers are stored as none)."""
    return _text_only(_run_values(session_id, r, recorded_at), RUN_COLUMNS, f"row {r.row_id!r}")


def _run_values(session_id: int, r: Run, recorded_at: str) -> tuple:
    return (
        session_id,
        r.row_id,
        r.mode,
        r.label,
        r.launch,
        r.job_id,
        r.attempt,
        recorded_at,
        finite(r.step_time_s),
        finite(r.rel_se),
        int(r.steady),
        r.n_steady,
        finite(r.tokens_per_s_per_gpu),
        finite(r.mfu),
        json.dumps(list(r.nodes)),
        r.image,
        r.image_digest,
        json.dumps(r.versions, sort_keys=True),
        r.verdict,
        r.cause,
        finite(r.delta),
        finite(r.baseline_s),
        finite(r.tolerance),
    )


def excluded(d: Dialect, session: str = "s.id") -> str:
    """The latest exclusion reason of a session (NULL when it is not forgotten)."""
    return (
        f"(SELECT reason FROM exclusions x WHERE x.session_id = {session} "
        f"ORDER BY x.{d.last_exclusion} DESC LIMIT 1)"
    )


def sessions(d: Dialect) -> str:
    """Every session, oldest first, with its end and exclusion."""
    return (
        "SELECT s.*, (SELECT MAX(finished_at) FROM session_ends e WHERE e.session_id = s.id) "
        f"AS finished_at, {excluded(d)} AS excluded FROM sessions s ORDER BY s.started_at, s.id"
    )


def runs(d: Dialect) -> str:
    """A row's runs with their session's fields, oldest first."""
    return d.sql(
        "SELECT r.*, s.started_at, s.mode AS session_mode, s.cluster, s.host, "
        f"{excluded(d)} AS excluded FROM runs r JOIN sessions s ON s.id = r.session_id "
        "WHERE r.row_id = ? ORDER BY s.started_at, s.id, r.launch, r.id"
    )


ROW_IDS = "SELECT DISTINCT row_id FROM runs ORDER BY 1"

# The node test's runs: steady, undiagnosed, with a step time and nodes, not forgotten.
_NODE_FILTER = (
    "r.steady = 1 AND r.cause IS NULL AND r.step_time_s > 0 AND r.step_time_s < 1e308 "
    "AND NOT EXISTS (SELECT 1 FROM exclusions x WHERE x.session_id = s.id) "
    "AND (CAST(? AS TEXT) IS NULL OR s.cluster IS NULL OR s.cluster = ?)"
)


def node_runs(d: Dialect) -> str:
    """Every run the node test uses, oldest first (one by one: small histories, tests)."""
    return d.sql(
        "SELECT r.id, r.row_id, r.step_time_s, r.nodes, r.job_id FROM runs r "
        f"JOIN sessions s ON s.id = r.session_id WHERE {_NODE_FILTER} "
        "ORDER BY s.started_at, s.id, r.launch, r.id"
    )


def node_rows(d: Dialect) -> str:
    """The node test's runs grouped by row (a store that adds them up row by row)."""
    return d.sql(
        "SELECT r.id, r.row_id, r.step_time_s, r.nodes, r.job_id FROM runs r "
        f"JOIN sessions s ON s.id = r.session_id WHERE {_NODE_FILTER} ORDER BY r.row_id"
    )


def node_totals() -> str:
    """PostgreSQL: per node, runs, sum of mid-rank percentiles, of their variances, slow runs.

    A run's percentile is (runs of its row faster + half of those as fast) / its row's runs,
    over the runs with nodes (rows with one such run say nothing and are left out), computed
    with the same floating-point steps as perfgate.history.nodes; one window (one sort), and
    each run's nodes made distinct on their own (no sort of every (run, node) pair). CASE,
    not AND: the database need not skip the length of what is not an array."""
    return POSTGRESQL.sql(
        "WITH ok AS (SELECT r.id, r.row_id, r.step_time_s, r.nodes FROM runs r "
        f"JOIN sessions s ON s.id = r.session_id WHERE {_NODE_FILTER} AND (CASE WHEN "
        "jsonb_typeof(r.nodes) = 'array' THEN jsonb_array_length(r.nodes) ELSE 0 END) > 0), "
        "ranked AS (SELECT id, nodes, RANK() OVER w AS rk, CUME_DIST() OVER w AS cd, "
        "COUNT(*) OVER (w ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) AS n "
        "FROM ok WINDOW w AS (PARTITION BY row_id ORDER BY step_time_s)), "
        "per_run AS (SELECT id, nodes, CAST(n AS DOUBLE PRECISION) AS n, "
        "((rk - 1) + (ROUND(cd * n) - (rk - 1)) / CAST(2 AS DOUBLE PRECISION)) / n AS u "
        "FROM ranked WHERE n >= 2) "
        "SELECT node, COUNT(*) AS runs, SUM(u) AS sum_percentile, "
        "SUM((n * n - 1) / (12 * n * n)) AS sum_variance, "
        f"SUM(CAST(u >= {SLOW_PERCENTILE} AS INTEGER)) AS slow_runs "
        "FROM per_run, LATERAL (SELECT DISTINCT j #>> '{}' AS node "
        "FROM jsonb_array_elements(per_run.nodes) j WHERE jsonb_typeof(j) = 'string') nodes "
        "GROUP BY node ORDER BY node"
    )


# Export, one session at a time (by uid), each table in the order it was written.
SESSION_UIDS = "SELECT uid FROM sessions ORDER BY started_at, id"


def dump_queries(d: Dialect) -> dict[str, str]:
    """Per table, the query of one session's rows (parameter: its uid)."""
    return {
        "sessions": d.sql("SELECT * FROM sessions WHERE uid = ?"),
        "session_ends": d.sql(
            "SELECT s.uid AS session_uid, e.finished_at FROM session_ends e "
            "JOIN sessions s ON s.id = e.session_id WHERE s.uid = ? ORDER BY e.finished_at"
        ),
        "runs": d.sql(
            "SELECT s.uid AS session_uid, r.* FROM runs r JOIN sessions s ON s.id = r.session_id "
            "WHERE s.uid = ? ORDER BY r.id"
        ),
        "exclusions": d.sql(
            "SELECT s.uid AS session_uid, x.reason, x.created_at FROM exclusions x "
            f"JOIN sessions s ON s.id = x.session_id WHERE s.uid = ? ORDER BY x.{d.last_exclusion}"
        ),
    }


def finish(d: Dialect) -> str:
    """Insert a session's end unless it has one."""
    return d.sql(
        "INSERT INTO session_ends (session_id, finished_at) SELECT ?, ? WHERE NOT EXISTS "
        "(SELECT 1 FROM session_ends WHERE session_id = ?)"
    )


def exclusion_once(d: Dialect) -> str:
    """Insert an exclusion unless the same one (session, reason, time) is there (import)."""
    return d.sql(
        "INSERT INTO exclusions (session_id, reason, created_at) SELECT ?, ?, ? WHERE NOT "
        "EXISTS (SELECT 1 FROM exclusions WHERE session_id = ? AND reason = ? AND "
        "created_at = ?)"
    )


def load_dump(d: Dialect, cur: Any, dump: Dump) -> dict[str, int]:
    """Insert a dump with a DB-API cursor of either store, inside the caller's transaction;
    rows added per table (a session is matched by its uid, the rest by their unique keys)."""

    def values(row: dict[str, Any], columns: tuple[str, ...]) -> list[Any]:
        return [
            json.dumps(row[c], sort_keys=True) if c in JSON_COLUMNS else row[c] for c in columns
        ]

    added = dict.fromkeys(dump.counts(), 0)
    ids: dict[str, int] = {}
    for s in dump.sessions:
        cur.execute(insert_session(d), values(s, SESSION_COLUMNS))
        added["sessions"] += max(0, cur.rowcount)
        cur.execute(d.sql("SELECT id FROM sessions WHERE uid = ?"), (s["uid"],))
        ids[s["uid"]] = cur.fetchone()["id"]
    for e in dump.ends:
        sid = ids[e["session_uid"]]
        cur.execute(finish(d), (sid, e["finished_at"], sid))
        added["session_ends"] += max(0, cur.rowcount)
    rows = [
        values({**r, "session_id": ids[r["session_uid"]], "steady": int(r["steady"])}, RUN_COLUMNS)
        for r in dump.runs
    ]
    if rows:
        cur.executemany(insert_run(d), rows)
        added["runs"] += max(0, cur.rowcount)
    for x in dump.exclusions:
        sid = ids[x["session_uid"]]
        cur.execute(
            exclusion_once(d),
            (sid, x["reason"], x["created_at"], sid, x["reason"], x["created_at"]),
        )
        added["exclusions"] += max(0, cur.rowcount)
    return added
