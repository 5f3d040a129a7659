"""The shared history read at the door (#29): every run typed, a corrupt run left out with one
warning naming the file and the run, a file that is not a perfgate history one line; never a
traceback from `perfgate nodes`, `history` or `calibrate`, whatever any one field holds."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest
from historydata import CASES, HOSTILE_SQL, ROWS, build, corrupt
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from perfgate import nodenames, notices
from perfgate.cli import main as perfgate_main
from perfgate.errors import PerfgateError
from perfgate.history import stored
from perfgate.history.store import HistoryStore


@pytest.fixture
def history(tmp_path: Path) -> Path:
    path = tmp_path / "history.sqlite"
    build(path)
    return path


def test_a_corrupt_run_is_left_out_with_one_warning_naming_file_and_run(history):
    corrupt(history, "runs", "nodes", "not json")
    corrupt(history, "runs", "step_time_s", -1.0, row=3)
    said: list[str] = []
    with notices.routed(said.append):
        store = HistoryStore(history)
        runs = store.runs(ROWS[0]) + store.runs(ROWS[1])
        store.points(ROWS[0])  # read again: said once
    assert len(runs) == 10 and {r["id"] for r in runs}.isdisjoint({2, 3})
    assert said == [
        f"perfgate: warning: {history}: run 2 left out: field 'nodes': expected JSON (a list), "
        "not 'not json'",
        f"perfgate: warning: {history}: run 3 left out: field 'step_time_s': expected a finite "
        "number above 0, at most 86400, not -1.0",
    ]


def test_bad_node_names_are_dropped_and_the_run_kept(history):
    corrupt(history, "runs", "nodes", HOSTILE_SQL[4])
    said: list[str] = []
    with notices.routed(said.append):
        runs = HistoryStore(history).node_runs()
    assert len(runs) == 12
    assert next(r for r in runs if r.job_id == "100" and r.row_id == ROWS[0]).nodes in (
        ("n0",),
        ("ok1",),
    )
    assert all(nodenames.is_name(n) for r in runs for n in r.nodes)
    assert len(said) == 1 and "run 2: nodes: node name '../../etc/passwd' left out" in said[0]


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        ("CREATE TABLE other (x); PRAGMA user_version=1;", "not a perfgate history of schema 1 "
                                                            "(no table sessions)"),
        ("CREATE TABLE sessions (id); CREATE TABLE runs (id); PRAGMA user_version=1;",
         "not a perfgate history of schema 1 (table sessions lacks started_at)"),
    ],
)  # fmt: skip
def test_a_file_that_is_not_this_schema_is_one_line(tmp_path, setup, message):
    path = tmp_path / "h.sqlite"
    con = sqlite3.connect(path)
    con.executescript(setup)
    con.close()
    with pytest.raises(PerfgateError) as e:
        HistoryStore(path).runs("x")
    assert str(e.value) == f"{path}: {message}"


def test_perfgate_nodes_never_prints_a_bad_name(history, capsys):
    corrupt(history, "runs", "nodes", '["n0", "\\u001b]0;x\\u0007", "a\\nb"]')
    code = perfgate_main(["nodes", "--history", str(history), "--all", "--min-runs", "2"])
    out, err = capsys.readouterr()
    assert code == 0 and "\x1b" not in out + err and "\x07" not in out + err
    assert err.count("\n") == 1 and "run 2: nodes: node name '\\x1b]0;x\\x07' left out" in err


_TEMPLATE: list[Path] = []


def _template(factory: pytest.TempPathFactory) -> Path:
    """One built history, copied for each example (building costs its locked writes)."""
    if not _TEMPLATE:
        _TEMPLATE.append(build(factory.mktemp("template") / "history.sqlite").path)
    return _TEMPLATE[0]


@settings(max_examples=250, deadline=None)
@given(
    st.sampled_from(CASES),
    st.sampled_from(HOSTILE_SQL),
    st.integers(1, 6),
    st.sampled_from(["nodes", "history", "calibrate", "history-row"]),
)
def test_fuzz_one_corrupt_field_is_never_a_traceback(tmp_path_factory, case, value, row, command):
    path = tmp_path_factory.mktemp("h") / "history.sqlite"
    shutil.copy(_template(tmp_path_factory), path)
    try:
        corrupt(path, *case, value, row=row)
    except sqlite3.IntegrityError:  # NULL in a NOT NULL column: no writer can leave it
        assume(False)
    argv = {
        "nodes": ["nodes", "--min-runs", "2", "--all"],
        "history": ["history"],
        "history-row": ["history", ROWS[0], "--json"],
        "calibrate": ["calibrate", "--out", str(path.parent / "prior.json")],
    }[command]
    said: list[str] = []
    with notices.routed(said.append):
        try:
            code = perfgate_main([*argv, "--history", str(path)])
        except SystemExit as e:  # argparse only
            code = e.code
    assert code in (0, 2)
    assert all(line.count("\n") == 0 and "\x1b" not in line for line in said)
    runs = stored.read_runs([], str(path))  # the door itself takes any row set
    assert runs == []
