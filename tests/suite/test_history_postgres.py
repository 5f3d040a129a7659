"""A pytest session with the shared PostgreSQL history (--history postgresql://...): the same
records as the sqlite default, and the server's absence said in one line, or refused."""

from __future__ import annotations

import psycopg  # noqa: F401  (loaded before pytester's per-run module snapshots: its C part
import pytest  # keeps the first import's exception classes)

from perfgate.history.stores import open_store

from .test_history_replay import ROW, SEL, _logs

pytest_plugins = ["pytester"]


@pytest.mark.postgres
def test_a_replay_session_is_stored_in_postgresql(suite, pg_url):
    suite.shipped_rows()
    logs = _logs(suite)
    result = suite.run(f"--replay={logs}", *SEL, f"--history={pg_url}", "--store-replay")
    store = open_store(pg_url)
    (session,) = store.sessions()
    assert session["mode"] == "replay" and session["finished_at"]
    assert f"history: session {session['id']} in {pg_url}" in result.stdout.str()
    (run,) = store.runs(ROW)
    assert run["step_time_s"] == 2.63 and run["verdict"] == "INCONCLUSIVE"
    assert run["baseline_s"] is not None and run["tolerance"] is not None
    store.close()


@pytest.mark.postgres
def test_an_unreachable_history_is_one_line_or_a_refusal(suite, pg_server):
    suite.shipped_rows()
    logs = _logs(suite)
    url = pg_server.url("gone").replace(str(pg_server.port), "1")
    result = suite.run(f"--replay={logs}", *SEL, f"--history={url}", "--store-replay")
    out = result.stdout.str()
    lines = [line for line in out.splitlines() if "cannot connect" in line]
    assert lines[0].startswith(f"perfgate: history: {url}: cannot connect")
    assert "rows are judged without history; its rows are kept in the session folder" in lines[0]
    spooled = list((suite.path / "perfgate-results" / "sessions").glob("*/history-spool.jsonl"))
    assert len(spooled) == 1 and "perfgate history sync" in out
    refused = suite.run(
        f"--replay={logs}", *SEL, f"--history={url}", "--store-replay", "--require-history"
    )
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    assert "--require-history: not starting" in refused.stderr.str()
    # a plan stores nothing: it only reads the flagged nodes its first runs avoid, and says
    # once that it could not
    planned = suite.run("--dry-run", *SEL, f"--history={url}", "--require-history")
    said = [line for line in planned.outlines if "cannot connect" in line]
    assert planned.ret == 0 and len(said) == 1 and said[0].startswith(f"history: {url}")
    assert len(list((suite.path / "perfgate-results" / "sessions").glob("*/history-spool*"))) == 1


def test_a_password_in_the_url_is_refused_before_anything_runs(suite):
    suite.shipped_rows()
    result = suite.run("--dry-run", *SEL, "--history=postgresql://pg:hunter2-pw@db/perf")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert "PGPASSWORD" in err and "hunter2-pw" not in err + result.stdout.str()
