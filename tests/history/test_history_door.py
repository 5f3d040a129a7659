"""The shared history read at the door (#29, perfgate.history.decode): a corrupt run left out
with one note naming the file and the run, a bad node name dropped with the run kept, a file
that is not a perfgate history one line; never a traceback from `perfgate nodes`, `history`
or `calibrate`, and never a raw escape, whatever any one field holds."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest
from historydata import CASES, HOSTILE_SQL, ROWS, build, corrupt
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from perfgate import nodenames
from perfgate.cli import main as perfgate_main
from perfgate.errors import PerfgateError
from perfgate.history.sqlite import SqliteStore


@pytest.fixture
def history(tmp_path: Path) -> Path:
    path = tmp_path / "history.sqlite"
    build(path)
    return path


def test_a_corrupt_run_is_left_out_with_one_note_naming_file_and_run(history):
    corrupt(history, "runs", "nodes", "not json")
    corrupt(history, "runs", "step_time_s", -1.0, row=3)
    corrupt(history, "runs", "label", "x\x1b]0;pwned\x07", row=5)
    store = SqliteStore(history)
    runs = store.runs(ROWS[0]) + store.runs(ROWS[1])
    store.points(ROWS[0])  # read again: noted once
    assert len(runs) == 9 and {r["id"] for r in runs}.isdisjoint({2, 3, 5})
    assert store.notes == [  # rows 2 and 5 are the first row's, 3 the second's
        f"{history}: runs row 2 left out: nodes is not JSON",
        f"{history}: runs row 5 left out: label holds control character '\\x1b'",
        f"{history}: runs row 3 left out: step_time_s is -1.0",
    ]


def test_bad_node_names_are_dropped_and_the_run_kept(history):
    corrupt(history, "runs", "nodes", HOSTILE_SQL[4])
    store = SqliteStore(history)
    runs = [r for r in store.runs(ROWS[0]) if r["id"] == 2]
    assert runs[0]["nodes"] == ["ok1"]  # the run stays, with its one host name
    assert len(store.notes) == 1
    assert store.notes[0].startswith(
        f"{history}: runs row 2: nodes: node name '../../etc/passwd' left out: not a host name"
    )
    totals = SqliteStore(history).node_totals()
    assert all(nodenames.is_name(t.node) for t in totals) and "ok1" in {t.node for t in totals}


def test_a_row_id_that_is_not_one_is_left_out(history):
    corrupt(history, "runs", "row_id", "a\nb")
    store = SqliteStore(history)
    assert store.row_ids() == list(ROWS)
    assert store.notes == [f"{history}: 1 row id(s) left out, e.g. 'a\\nb': not a row id"]


@pytest.mark.parametrize(
    "setup",
    [
        "CREATE TABLE other (x); PRAGMA user_version=1;",
        "CREATE TABLE sessions (id); CREATE TABLE runs (id); PRAGMA user_version=1;",
    ],
)
def test_a_file_that_is_not_this_schema_is_one_line(tmp_path, setup):
    path = tmp_path / "h.sqlite"
    con = sqlite3.connect(path)
    con.executescript(setup)
    con.close()
    with pytest.raises(PerfgateError) as e:
        SqliteStore(path).runs("x")
    assert str(e.value).startswith(f"{path}: history read failed (no such ")
    assert "\n" not in str(e.value)


def test_perfgate_nodes_never_prints_a_bad_name(history, capsys):
    corrupt(history, "runs", "nodes", '["n0", "\\u001b]0;x\\u0007", "a\\nb"]')
    code = perfgate_main(["nodes", "--history", str(history), "--all", "--min-runs", "2"])
    out, err = capsys.readouterr()
    assert code == 0 and "\x1b" not in out + err and "\x07" not in out + err
    assert err.count("\n") == 1
    assert "runs row 2: nodes: node name '\\x1b]0;x\\x07' left out" in err, err


_TEMPLATE: list[Path] = []


def _template(factory: pytest.TempPathFactory) -> Path:
    """One built history, copied for each example (building costs its locked writes)."""
    if not _TEMPLATE:
        _TEMPLATE.append(build(factory.mktemp("template") / "history.sqlite").path)
    return _TEMPLATE[0]


# capsys is read (and so emptied) once per example
@settings(
    max_examples=250, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.sampled_from(CASES),
    st.sampled_from(HOSTILE_SQL),
    st.integers(1, 6),
    st.sampled_from(["nodes", "history", "calibrate", "history-row"]),
)
def test_fuzz_one_corrupt_field_is_never_a_traceback(
    tmp_path_factory, capsys, case, value, row, command
):
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
    try:
        code = perfgate_main([*argv, "--history", str(path)])
    except SystemExit as e:  # argparse only
        code = e.code
    out, err = capsys.readouterr()
    assert code in (0, 2)
    assert not any(ch in out + err for ch in "\x1b\x07\r")
    assert all(line.startswith(("history: ", "perfgate ")) for line in err.splitlines()), err
