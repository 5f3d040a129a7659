"""The sqlite history store: append-only, atomic per row, safe for concurrent and killed writers."""

from __future__ import annotations

import multiprocessing
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from perfgate.errors import ConfigError
from perfgate.history.sqlite import SqliteStore
from perfgate.history.store import SCHEMA_VERSION, Run, Session


def _runs(row: str, times: list[float], **kw) -> list[Run]:
    return [
        Run(
            row_id=row,
            mode="stored",
            label="baseline",
            launch=i + 1,
            steady=True,
            step_time_s=t,
            rel_se=0.002,
            job_id=str(100 + i),
            **kw,
        )
        for i, t in enumerate(times)
    ]


def test_the_file_is_safe_on_a_shared_filesystem(tmp_path: Path) -> None:
    """What only the sqlite store has (the semantics both stores share are tested side by
    side in test_two_stores.py): its schema version, rollback journal, and nothing until a
    first write."""
    store = SqliteStore(tmp_path / "h.sqlite")
    assert store.sessions() == [] and store.points("r") == [] and not store.path.exists()
    store.add_runs(store.start_session(Session("live")), _runs("r", [2.0]))
    con = sqlite3.connect(store.path)
    assert con.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "delete"


def test_a_foreign_or_newer_file_is_a_one_line_error(tmp_path: Path) -> None:
    bad = tmp_path / "notes.sqlite"
    bad.write_text("not a database at all, just text " * 100)
    with pytest.raises(ConfigError, match=r"notes.sqlite: not a perfgate history database"):
        SqliteStore(bad).sessions()
    newer = tmp_path / "newer.sqlite"
    con = sqlite3.connect(newer)
    con.execute(f"PRAGMA user_version={SCHEMA_VERSION + 1}")
    con.close()
    newer = f"history schema version {SCHEMA_VERSION + 1}; this perfgate reads {SCHEMA_VERSION}"
    with pytest.raises(ConfigError, match=newer):
        SqliteStore(tmp_path / "newer.sqlite").add_runs(1, [])


def _writer(path: str, tag: int, n: int) -> None:
    store = SqliteStore(path)
    for i in range(n):
        sid = store.start_session(Session("live", host=f"writer{tag}"))
        store.add_runs(sid, _runs(f"row{tag}", [1.0 + i / 100, 1.01 + i / 100]))


def test_two_processes_writing_at_once_lose_nothing(tmp_path: Path) -> None:
    path = str(tmp_path / "h.sqlite")
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(path, k, 25)) for k in (1, 2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    store = SqliteStore(path)
    assert len(store.sessions()) == 50
    assert len(store.runs("row1")) == len(store.runs("row2")) == 50
    con = sqlite3.connect(path)
    assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_a_writer_killed_mid_transaction_leaves_no_partial_row(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite"
    store = SqliteStore(path)
    sid = store.start_session(Session("live"))
    store.add_runs(sid, _runs("r", [2.0]))
    ready = tmp_path / "ready"
    script = textwrap.dedent(
        f"""
        import time
        from pathlib import Path
        from perfgate.history.store import Run
        from perfgate.history.sqlite import SqliteStore
        store = SqliteStore({str(path)!r})
        with store._write() as con:  # the same transaction add_runs uses, held open
            for i in range(500):
                con.execute(
                    "INSERT INTO runs (session_id, row_id, mode, label, launch, recorded_at, "
                    "steady) VALUES (?, 'r', 'stored', 'baseline', ?, 'now', 1)", ({sid}, i)
                )
            Path({str(ready)!r}).write_text("inserted")
            time.sleep(60)
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", script])
    deadline = time.monotonic() + 60
    while not ready.exists():
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(30)
    # None of the 500 inserts is visible; the file is intact and the lock free for the next.
    assert [r["step_time_s"] for r in store.runs("r")] == [2.0]
    store.add_runs(store.start_session(Session("live")), _runs("r", [2.05]))
    assert len(store.runs("r")) == 2
    con = sqlite3.connect(path)
    assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
