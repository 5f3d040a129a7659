"""A team's shared PostgreSQL history under stress, on a real server: 8 sessions of two clusters
writing at once, a server killed mid-session (nothing lost: the session folder's spool is
written when it returns, or by `perfgate history sync`), a server down at the start."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

import psycopg
import pytest

from perfgate.cli import main as perfgate_main
from perfgate.history import spool
from perfgate.history.store import Run, Session
from perfgate.history.stores import open_store
from perfgate.launch.types import LaunchOptions
from perfgate.suite import recording
from perfgate.suite.recording import HistoryRecorder
from perfgate.suite.settings import Settings

pytestmark = pytest.mark.postgres

ROWS = 12  # per session


def _writer(url: str, password: str, cluster: str, k: int, ready: multiprocessing.Event) -> None:
    import os

    os.environ["PGPASSWORD"] = password
    store = open_store(url)
    ready.wait(60)  # every writer starts together
    session = Session("live", cluster=cluster, host=f"{cluster}-login", uid=f"{cluster}-{k}")
    sid = store.start_session(session)
    for j in range(ROWS):
        runs = [
            Run(
                f"row{j}", "stored", "baseline", 1, True, 1.0 + k / 100, job_id=f"{cluster}{k}-{j}"
            ),
            Run(f"row{j}", "stored", "confirmation 1", 2, True, 1.0, job_id=f"{cluster}{k}-{j}c"),
        ]
        store.add_runs(sid, runs)
        if j % 3 == 0:  # a spool replayed over what already reached the server
            assert store.add_runs(store.start_session(session), runs) == 0
    store.finish_session(sid)
    store.close()


def test_eight_sessions_of_two_clusters_at_once_lose_and_repeat_nothing(pg_url: str) -> None:
    import os

    ctx = multiprocessing.get_context("spawn")
    ready = ctx.Event()
    procs = [
        ctx.Process(target=_writer, args=(pg_url, os.environ["PGPASSWORD"], c, k, ready))
        for c in ("eos", "selene")
        for k in range(4)
    ]
    for p in procs:
        p.start()
    ready.set()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    with psycopg.connect(pg_url) as con:
        (sessions,) = con.execute("SELECT count(*) FROM sessions").fetchone()
        total, distinct = con.execute(
            "SELECT count(*), count(DISTINCT (session_id, row_id, label, launch, job_id)) FROM runs"
        ).fetchone()
        (ends,) = con.execute("SELECT count(*) FROM session_ends").fetchone()
    assert sessions == 8 and ends == 8
    assert total == distinct == 8 * ROWS * 2  # 0 lost, 0 written twice
    store = open_store(pg_url)
    assert len(store.points("row3")) == 16 and len(store.points("row3", cluster="eos")) == 8
    store.close()


def _settings(tmp_path: Path, url: str, **kw) -> Settings:
    return Settings(
        launch=LaunchOptions(),
        baselines_dir=tmp_path / "baselines",
        results_dir=tmp_path / "results",
        history=url,
        **kw,
    )


def _record(row: str, job: str, t: float) -> dict:
    steps = [[i, t * (1 + 0.001 * ((i * 7) % 5 - 2))] for i in range(1, 61)]
    return {
        "row_id": row,
        "verdict": "PASS",
        "job": {"job_id": job, "nodes": ["n1", "n2"], "attempts": 1},
        "runs": [{"label": "baseline", "steps": steps, "image": "nemo:26.02", "versions": {}}],
        "measured": {"step_time_s": t, "tokens_per_s_per_gpu": 1000.0, "mfu": {"nemo2": 0.4}},
        "baseline": {"step_time_s": 2.0},
        "tolerance": 0.05,
        "comparison": {"delta": t / 2.0 - 1},
    }


def _recorder(tmp_path: Path, url: str, lines: list[str]) -> HistoryRecorder:
    rec = HistoryRecorder(_settings(tmp_path, url), tmp_path, False, announce=lines.append)
    rec.folder = tmp_path / "session"
    rec.folder.mkdir()
    return rec


def _job_ids(url: str) -> list[str]:
    with psycopg.connect(url) as con:
        return [r[0] for r in con.execute("SELECT job_id FROM runs ORDER BY job_id")]


def test_a_server_killed_mid_session_loses_nothing(tmp_path, pg_server, pg_url, monkeypatch):
    monkeypatch.setattr(recording, "RETRY_S", 0.0)  # try again on every row, not after 30 s
    lines: list[str] = []
    rec = _recorder(tmp_path, pg_url, lines)
    assert rec.connect() is None
    rec.add(_record("row1", "11", 2.0))
    pg_server.stop()  # killed: the next writes cannot reach it
    try:
        rec.add(_record("row2", "12", 2.01))
        rec.add(_record("row3", "13", 2.02))
        assert rec.points("row1") == []  # judged without history meanwhile, not stopped
        kept = rec.folder / spool.NAME
        assert kept.is_file() and sum(1 for _ in kept.open()) == 4  # header, session, 2 rows
        assert len(lines) == 1 and "connection" in lines[0] and str(kept) in lines[0]
    finally:
        pg_server.start()
    rec.add(_record("row4", "14", 2.03))  # it answers: kept rows, then this one, in order
    assert "answers again; wrote 3 run(s)" in lines[-1]
    rec.finish()
    assert "every kept row written when it answered again" in (rec.error or "")
    assert _job_ids(pg_url) == ["11", "12", "13", "14"]
    store = open_store(pg_url)
    (session,) = store.sessions()
    assert session["finished_at"] is not None
    assert [p.job_id for p in store.points("row2")] == ["12"]
    store.close()


def test_rows_kept_until_the_end_are_written_by_history_sync(
    tmp_path, pg_server, pg_url, monkeypatch, capsys
):
    monkeypatch.setattr(recording, "RETRY_S", 0.0)
    lines: list[str] = []
    rec = _recorder(tmp_path, pg_url, lines)
    rec.add(_record("row1", "21", 2.0))
    pg_server.stop()
    try:
        rec.add(_record("row2", "22", 2.0))
        rec.finish()  # still down at the end: kept, and said so
        assert "`perfgate history sync" in (rec.error or "")
        assert spool.Spool(rec.folder).pending() == 3  # the session, the row, its end
    finally:
        pg_server.start()
    args = ["history", "sync", str(rec.folder)]  # the spool names its store
    assert perfgate_main(args) == 0
    assert "wrote 1 run(s)" in capsys.readouterr().out
    assert perfgate_main(args) == 0  # again: nothing written twice
    out = capsys.readouterr().out
    assert "wrote 0 run(s)" in out and "(1 already there)" in out
    assert _job_ids(pg_url) == ["21", "22"]
    store = open_store(pg_url)
    assert store.sessions()[0]["finished_at"] is not None
    store.close()


def test_a_server_down_at_the_start_is_one_line_and_the_session_goes_on(tmp_path, pg_server):
    url = pg_server.url("never").replace(str(pg_server.port), "1")
    lines: list[str] = []
    rec = _recorder(tmp_path, url, lines)
    line = rec.connect()
    assert line is not None and "\n" not in line and "cannot connect" in line
    assert "rows are judged without history" in line
    assert rec.points("row1") == [] and rec.slow_nodes() == []
    rec.add(_record("row1", "31", 2.0))
    rec.finish()
    assert spool.Spool(rec.folder).pending() == 3  # the session, its row, its end
