"""A small shared history and one-field corruptions of it, for the history reader's fuzz
(tests/history/test_history_door.py) and scripts/fuzz_readers.py. Uses only the store's
writer, so it builds the same file under any perfgate version (before and after figures)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from perfgate.history.sqlite import SqliteStore
from perfgate.history.store import Run, Session

ROWS = ("pretrain-a", "pretrain-b")
# What a hand edit, another tool or a hostile writer can leave in one column.
HOSTILE_SQL = (
    None,
    "not json",
    "[1, 2]",
    '"abc"',
    '["../../etc/passwd", "n7,n8", "gpu[001-512]", "a\\nb", "ok1"]',
    "{}",
    -1,
    0,
    1e308,
    2**62,
    "NaN",
    "\x1b]0;pwned\x07\n",
    b"\x00\xff",
)


def build(path: Path) -> SqliteStore:
    """A history of 3 sessions x 2 rows x 2 launches, on nodes n0..n5 (node_runs finds runs)."""
    store = SqliteStore(path)
    for s in range(3):
        sid = store.start_session(
            Session(mode="live", started_at=f"2026-05-0{s + 1}T01:00:00+00:00", cluster="c1",
                    images=("nemo.sqsh",), command="pytest -m h100")
        )  # fmt: skip
        for i, row in enumerate(ROWS):
            runs = [
                Run(row, "repeat", "baseline", k + 1, True, step_time_s=1.0 + 0.01 * (s + k + i),
                    rel_se=0.001, n_steady=20, job_id=str(100 + s), nodes=(f"n{s + k}",),
                    image="nemo.sqsh", versions={"nemo": "2.4.0"}, verdict="PASS")
                for k in range(2)
            ]  # fmt: skip
            store.add_runs(sid, runs)
        store.finish_session(sid)
    return store


def corrupt(path: Path, table: str, column: str, value: object, row: int = 2) -> None:
    """Set one column of one row (by rowid) to value, as another writer could."""
    con = sqlite3.connect(path)
    try:
        con.execute("PRAGMA foreign_keys=OFF")
        con.execute(f"UPDATE {table} SET {column} = ? WHERE rowid = ?", (value, row))
        con.commit()
    finally:  # a refused UPDATE (NOT NULL) must not leave its write lock behind
        con.close()


COLUMNS = {
    "runs": ("session_id", "row_id", "mode", "label", "launch", "job_id", "attempt",
             "recorded_at", "step_time_s", "rel_se", "steady", "n_steady",
             "tokens_per_s_per_gpu", "mfu", "nodes", "image", "image_digest", "versions",
             "verdict", "cause", "delta"),
    "sessions": ("started_at", "host", "cluster", "mode", "images", "perfgate_version",
                 "git_describe", "command"),
}  # fmt: skip
CASES = [(t, c) for t, cols in COLUMNS.items() for c in cols]
