"""The two history stores side by side: the same semantics on sqlite and on a real PostgreSQL
server (tests/pgserver.py), the same door for what they hand back, and export/import between
them exact to every field."""

from __future__ import annotations

import json
import math
import random
import sqlite3
from pathlib import Path

import psycopg
import pytest

from perfgate.cli import main as perfgate_main
from perfgate.errors import ConfigError, PerfgateError
from perfgate.history import nodes
from perfgate.history.sqlite import SqliteStore
from perfgate.history.store import SCHEMA_VERSION, Run, Session
from perfgate.history.stores import open_store

from .test_nodes import store_history


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def store(request: pytest.FixtureRequest, tmp_path: Path):
    """An empty history of each kind."""
    if request.param == "sqlite":
        yield SqliteStore(tmp_path / "h.sqlite")
        return
    s = open_store(request.getfixturevalue("pg_url"))
    yield s
    s.close()


def _run(row: str, t: float | None, launch: int = 1, job: str | None = "101", **kw) -> Run:
    return Run(row, "stored", "baseline", launch, t is not None, t, 0.002, 40, job, **kw)


def test_the_same_semantics_on_both_stores(store) -> None:
    assert store.sessions() == [] and store.points("r") == [] and store.row_ids() == []
    a = store.start_session(
        Session("live", started_at="2026-05-01T01:00:00+00:00", cluster="eos", images=("i",))
    )
    first = [_run("r", 2.0, image="nemo:26.02", versions={"nemo": "2.6"}, baseline_s=1.98)]
    assert store.add_runs(a, first) == 1
    assert store.add_runs(a, first) == 0  # written twice (a replayed spool): kept once
    store.finish_session(a)
    store.finish_session(a, "2030-01-01T00:00:00+00:00")  # a second end is not recorded
    b = store.start_session(Session("live", started_at="2026-05-02T01:00:00+00:00"))
    assert (
        store.add_runs(b, [_run("r", 2.1, job="102"), _run("r", None, 2, job="102", cause="OOM")])
        == 2
    )
    store.add_runs(b, [_run("other", 5.0, job="103", nodes=("n1", "n2"))])
    again = Session("live", uid="fixed-uid")
    assert store.start_session(again) == store.start_session(again)  # one session per uid

    sessions = store.sessions()
    assert [s["id"] for s in sessions[:2]] == [a, b] and len(sessions) == 3
    assert sessions[0]["finished_at"] != "2030-01-01T00:00:00+00:00"
    assert sessions[0]["images"] == ["i"] and sessions[0]["cluster"] == "eos"
    assert sessions[1]["finished_at"] is None  # interrupted
    (run,) = [r for r in store.runs("r") if r["job_id"] == "101"]
    assert run["versions"] == {"nemo": "2.6"} and run["steady"] is True
    assert run["baseline_s"] == 1.98 and run["rel_se"] == 0.002 and run["n_steady"] == 40
    assert [p.step_time_s for p in store.points("r")] == [2.0, 2.1]  # INFRA: not in the trend
    assert [p.step_time_s for p in store.points("r", cluster="other")] == [2.1]
    assert store.row_ids() == ["other", "r"]
    store.forget(a, "weak nodes that day")
    assert [p.step_time_s for p in store.points("r")] == [2.1]
    assert store.sessions()[0]["excluded"] == "weak nodes that day"
    assert len(store.runs("r")) == 3  # forgetting deletes nothing
    with pytest.raises(ConfigError, match="no session 99"):
        store.forget(99, "x")
    assert store.notes == []


def test_the_node_sums_in_sql_are_the_runs_sums(store) -> None:
    store_history(store, random.Random(3), nights=6, slow={"n5": 0.05})
    by_sql = {t.node: t for t in store.node_totals()}
    by_runs = {t.node: t for t in nodes.totals(store.node_runs())}
    assert by_sql.keys() == by_runs.keys() == {f"n{i}" for i in range(16)}
    for node, t in by_runs.items():
        got = by_sql[node]
        assert (got.runs, got.slow_runs) == (t.runs, t.slow_runs)
        assert got.sum_percentile == pytest.approx(t.sum_percentile, rel=1e-12)
        assert got.sum_variance == pytest.approx(t.sum_variance, rel=1e-12)
    flagged = [f.node for f in nodes.findings(by_sql.values()) if f.flagged]
    assert flagged == [f.node for f in nodes.slow_nodes(store.node_runs()) if f.flagged]
    assert flagged[:1] == ["n5"]
    assert store.node_totals(cluster="elsewhere") != []  # sessions without a cluster count


HOSTILE = [
    "'; DROP TABLE runs; --",
    'a"b\\c',
    "ünïcödé ✓ 🚀",
    "x" * 5000,
    "%s %(x)s ? $1",
    "\u202etxt.exe",
]


def test_hostile_values_are_stored_exactly_and_read_only_through_the_door(store) -> None:
    """Values go in as parameters, never as SQL text: each is stored exactly. What readers get
    comes through the door (#29, perfgate.history.decode): a row id that is not one, a node
    name outside the grammar, a bidi override in an image name never reach a verdict, an
    --exclude or a terminal; each run or session left out says so in a note."""
    sid = store.start_session(
        Session("live", host=HOSTILE[0], command=HOSTILE[4], images=tuple(HOSTILE))
    )
    runs = [
        _run(v, 1.0 + i, job=v, image=v, nodes=(v, "n1"), versions={v: v}, verdict=v)
        for i, v in enumerate(HOSTILE)
    ]
    assert store.add_runs(sid, runs) == len(HOSTILE)
    raw = store._rows("SELECT row_id, job_id, image, nodes, versions FROM runs")
    for r in raw:
        v = r["row_id"]
        nodes_ = r["nodes"] if isinstance(r["nodes"], list) else json.loads(r["nodes"])
        versions = r["versions"] if isinstance(r["versions"], dict) else json.loads(r["versions"])
        assert (r["job_id"], r["image"], nodes_, versions) == (v, v, [v, "n1"], {v: v})
    assert sorted(r["row_id"] for r in raw) == sorted(HOSTILE)
    assert store.row_ids() == []  # none of them is a row id
    assert all(store.runs(v) == [] for v in HOSTILE)
    assert store.sessions() == []  # its images hold a bidi override
    assert any("row id(s) left out" in n for n in store.notes)
    assert any("sessions row" in n and "control character" in n for n in store.notes)
    with pytest.raises(ConfigError, match=r"row 'bad': image holds a NUL character"):
        store.add_runs(sid, [_run("bad", 1.0, image="a\x00b")])
    with pytest.raises(ConfigError, match="nodes holds a NUL character"):
        store.add_runs(sid, [_run("bad", 1.0, nodes=("a\x00",))])
    assert store.runs("bad") == []
    # NaN and infinities are no measurement: stored as none by both
    store.add_runs(sid, [_run("nan", math.nan, job="9", delta=math.inf)])
    (r,) = store.runs("nan")
    assert r["step_time_s"] is None and r["delta"] is None


def _corrupt(store, statements: list[str]) -> None:
    """Write rows perfgate never would, behind the store's back."""
    if isinstance(store, SqliteStore):
        con = sqlite3.connect(store.path)
        for s in statements:
            con.execute(s)
        con.commit()
        con.close()
    else:
        with psycopg.connect(store._url, autocommit=True) as con:
            for s in statements:
                con.execute(s)


def test_corrupt_rows_are_left_out_with_one_note_each(store) -> None:
    sid = store.start_session(Session("live", started_at="2026-05-01T01:00:00+00:00"))
    store.add_runs(sid, [_run("r", 2.0, nodes=("n1",)), _run("r", 2.1, 2, job="7")])
    cols = (
        "session_id, row_id, mode, label, launch, job_id, recorded_at, step_time_s, steady, nodes"
    )
    bad_nodes = "'{\"a\": 1}'" if not isinstance(store, SqliteStore) else "'not json'"
    _corrupt(
        store,
        [
            f"INSERT INTO runs ({cols}) VALUES ({sid}, 'r', 'stored', 'baseline', 3, '8', "
            f"'2026-05-01T02:00:00+00:00', -1.0, 1, '[]')",
            f"INSERT INTO runs ({cols}) VALUES ({sid}, 'r', 'stored', 'baseline', 4, '9', "
            f"'2026-05-01T02:00:00+00:00', 2.2, 1, {bad_nodes})",
            f"INSERT INTO runs ({cols}) VALUES ({sid}, 'r', 'stored', 'baseline', 5, '10', "
            "'yesterday', 2.3, 1, '[]')",
        ],
    )
    assert [p.step_time_s for p in store.points("r")] == [2.0, 2.1]
    assert len(store.notes) == 3
    assert all(n.startswith(f"{store.location}: runs row ") for n in store.notes)
    joined = "\n".join(store.notes)
    assert "step_time_s is -1.0" in joined and "nodes is not" in joined
    assert "recorded_at is not an ISO 8601 time" in joined
    assert [t.node for t in store.node_totals()] == []  # one good run with nodes: no rank
    assert {r.job_id for r in store.node_runs()} == {"101"}


def _fill(store, sessions: int = 3) -> None:
    for k in range(sessions):
        sid = store.start_session(
            Session(
                "live",
                started_at=f"2026-05-0{k + 1}T01:00:00+00:00",
                host=f"login{k}",
                cluster="eos",
                images=("nemo:26.02",),
                perfgate_version="0.1.0",
                git_describe="v1-3-gabc",
                command="pytest -m h100",
            )
        )
        store.add_runs(
            sid,
            [
                Run(
                    f"row{j}",
                    "stored",
                    "baseline",
                    1,
                    True,
                    1.0 + j / 10 + k / 1000,
                    0.0021,
                    45,
                    f"{k}{j}",
                    1,
                    12345.678,
                    0.4321,
                    ("n1", f"n{j}"),
                    "nemo:26.02",
                    "sha256:ab",
                    {"nemo": "2.6", "te": "2.1"},
                    "PASS",
                    None,
                    0.0123,
                    1.01,
                    0.05,
                )
                for j in range(4)
            ]
            + [Run("row0", "stored", "baseline", 2, False, job_id=f"x{k}", cause="OOM")],
        )
        if k < 2:
            store.finish_session(sid)
    store.forget(1, "weak nodes")


def _everything(store) -> list:
    return [store.dump(uid) for uid in store.session_uids()]


def _without_ids(dumps: list) -> str:
    out = []
    for d in dumps:
        for table in (d.sessions, d.ends, d.runs, d.exclusions):
            out.append(
                [{k: v for k, v in r.items() if k not in ("id", "session_id")} for r in table]
            )
    return json.dumps(out, sort_keys=True)


@pytest.mark.postgres
def test_export_and_import_are_exact_both_ways(tmp_path: Path, pg_url: str, capsys) -> None:
    src = tmp_path / "site.sqlite"
    _fill(SqliteStore(src))
    assert perfgate_main(["history", "export", pg_url, "--history", str(src)]) == 0
    out = capsys.readouterr().out
    assert "3 of 3 sessions, 2 of 2 session_ends, 15 of 15 runs, 1 of 1 exclusions new" in out
    pg = open_store(pg_url)
    assert _without_ids(_everything(pg)) == _without_ids(_everything(SqliteStore(src)))
    assert [p.step_time_s for p in pg.points("row1")] == [
        p.step_time_s for p in SqliteStore(src).points("row1")
    ]
    # again: nothing new, still checked
    assert perfgate_main(["history", "export", pg_url, "--history", str(src)]) == 0
    assert "0 of 3 sessions, 0 of 2 session_ends, 0 of 15 runs" in capsys.readouterr().out
    # and back into a new sqlite file, through import
    back = tmp_path / "back.sqlite"
    assert perfgate_main(["history", "import", pg_url, "--history", str(back)]) == 0
    assert _without_ids(_everything(SqliteStore(back))) == _without_ids(_everything(pg))
    pg.close()


def test_a_version_1_file_is_upgraded_and_exported(tmp_path: Path) -> None:
    path = tmp_path / "v1.sqlite"
    con = sqlite3.connect(path)
    con.executescript(
        """
        CREATE TABLE sessions (id INTEGER PRIMARY KEY, started_at TEXT NOT NULL, host TEXT,
            cluster TEXT, mode TEXT NOT NULL, images TEXT NOT NULL DEFAULT '[]',
            perfgate_version TEXT, git_describe TEXT, command TEXT);
        CREATE TABLE session_ends (session_id INTEGER NOT NULL, finished_at TEXT NOT NULL);
        CREATE TABLE runs (id INTEGER PRIMARY KEY, session_id INTEGER NOT NULL,
            row_id TEXT NOT NULL, mode TEXT NOT NULL, label TEXT NOT NULL,
            launch INTEGER NOT NULL, job_id TEXT, attempt INTEGER, recorded_at TEXT NOT NULL,
            step_time_s REAL, rel_se REAL, steady INTEGER NOT NULL, n_steady INTEGER,
            tokens_per_s_per_gpu REAL, mfu REAL, nodes TEXT NOT NULL DEFAULT '[]', image TEXT,
            image_digest TEXT, versions TEXT NOT NULL DEFAULT '{}', verdict TEXT, cause TEXT,
            delta REAL);
        CREATE TABLE exclusions (session_id INTEGER NOT NULL, reason TEXT NOT NULL,
            created_at TEXT NOT NULL);
        INSERT INTO sessions VALUES (1, '2026-01-01T00:00:00+00:00', 'h', NULL, 'live', '[]',
            NULL, NULL, NULL);
        INSERT INTO runs (session_id, row_id, mode, label, launch, job_id, recorded_at,
            step_time_s, steady) VALUES (1, 'r', 'stored', 'baseline', 1, '5',
            '2026-01-01T00:10:00+00:00', 2.0, 1);
        PRAGMA user_version=1;
        """
    )
    con.close()
    store = SqliteStore(path)
    assert [p.step_time_s for p in store.points("r")] == [2.0]  # read as it is
    (uid,) = store.session_uids()  # upgraded: the session has a uid of its own
    assert len(uid) == 32 and sqlite3.connect(path).execute("PRAGMA user_version").fetchone() == (
        SCHEMA_VERSION,
    )
    assert store.add_runs(1, [_run("r", 2.1, job="6")]) == 1
    assert [p.step_time_s for p in store.points("r")] == [2.0, 2.1]
    copy = tmp_path / "copy.sqlite"
    assert perfgate_main(["history", "export", str(copy), "--history", str(path)]) == 0
    assert _without_ids(_everything(SqliteStore(copy))) == _without_ids(_everything(store))


def test_a_url_with_a_password_is_refused_and_never_shown(tmp_path: Path, capsys) -> None:
    for url in (
        "postgresql://pg:s3cret-pw@db.example/perf",
        "postgresql://pg@db/perf?password=s3cret-pw",
    ):
        with pytest.raises(ConfigError, match=r"PGPASSWORD") as e:
            open_store(url)
        assert "s3cret-pw" not in str(e.value) and "***" in str(e.value)
        assert perfgate_main(["history", "--history", url]) == 2
        err = capsys.readouterr().err
        assert "s3cret-pw" not in err and "PGPASSWORD" in err
    with pytest.raises(ConfigError, match="name the database"):
        open_store("postgresql://pg@db.example")


@pytest.mark.postgres
def test_the_password_comes_from_the_environment(pg_url: str, monkeypatch) -> None:
    open_store(pg_url).check()  # PGPASSWORD from the fixture
    monkeypatch.setenv("PGPASSWORD", "wrong-password-123")
    with pytest.raises(PerfgateError) as e:
        open_store(pg_url).check()
    text = str(e.value)
    assert "\n" not in text and "cannot connect" in text and "password authentication" in text
    assert "wrong-password-123" not in text
    monkeypatch.setenv("PGPASSWORD", "")
    monkeypatch.setenv("PGPASSFILE", "/nonexistent")
    with pytest.raises(PerfgateError, match="cannot connect"):
        open_store(pg_url).check()


@pytest.mark.postgres
def test_an_unreachable_server_is_one_line(pg_server) -> None:
    url = pg_server.url("nodb").replace(str(pg_server.port), "1")  # nothing listens on port 1
    with pytest.raises(PerfgateError) as e:
        open_store(url).check()
    assert "\n" not in str(e.value) and str(e.value).startswith(
        "postgresql://perfgate@127.0.0.1:1/nodb: cannot connect"
    )


@pytest.mark.postgres
def test_a_foreign_database_or_schema_is_one_line(pg_url: str) -> None:
    with psycopg.connect(pg_url, autocommit=True) as con:
        con.execute("CREATE TABLE runs (x int)")
    with pytest.raises(ConfigError, match="has a 'runs' table but is not a perfgate history"):
        open_store(pg_url).start_session(Session("live"))
    with psycopg.connect(pg_url, autocommit=True) as con:
        con.execute("DROP TABLE runs")
    store = open_store(pg_url)
    store.start_session(Session("live"))
    with psycopg.connect(pg_url, autocommit=True) as con:
        con.execute("UPDATE perfgate_meta SET value = '99' WHERE key = 'schema_version'")
    with pytest.raises(ConfigError, match="history schema version 99; this perfgate reads"):
        open_store(pg_url).sessions()
    store.close()


@pytest.mark.postgres
def test_the_grafana_views_read_what_the_store_holds(pg_url: str) -> None:
    store = open_store(pg_url)
    _fill(store)
    with psycopg.connect(pg_url) as con:
        trend = con.execute(
            "SELECT row_id, step_time_s, delta_vs_baseline, time FROM perfgate_trend "
            "WHERE row_id = 'row1' ORDER BY time"
        ).fetchall()
        base = con.execute(
            "SELECT baseline_s, band_low_s, band_high_s FROM perfgate_baselines "
            "WHERE row_id = 'row1'"
        ).fetchone()
        runs = con.execute(
            "SELECT count(*), count(*) FILTER (WHERE in_trend) FROM perfgate_runs"
        ).fetchone()
        sessions = con.execute(
            "SELECT count(*), count(finished_at), count(excluded) FROM perfgate_sessions"
        ).fetchone()
    assert [t[1] for t in trend] == [p.step_time_s for p in store.points("row1")]
    assert trend[0][2] == pytest.approx(trend[0][1] / 1.01 - 1)
    assert str(trend[0][3]).startswith("2026-05-02 01:00:00")  # session 1 is forgotten
    assert base == pytest.approx((1.01, 1.01 * 0.95, 1.01 * 1.05))
    assert runs == (15, 8) and sessions == (3, 2, 1)
    store.close()
