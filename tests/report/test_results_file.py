"""results.json: one folder per session, rows appended as they finish (linear cost), the
results-dir's results.json following live and replay sessions only, strict JSON, clear
one-line errors on bad files."""

from __future__ import annotations

import json
import threading

import pytest
from resultsdata import record

from perfgate import atomic
from perfgate.errors import ConfigError
from perfgate.report import sessionfiles


def test_each_add_is_readable_at_once_and_the_end_writes_everything(tmp_path):
    f = sessionfiles.ResultsFile(tmp_path / "out" / "results.json", {"mode": "replay"})
    f.add({**record("a", "PASS"), "x": float("nan")})
    first = sessionfiles.read(f.path)
    assert list(first["rows"]) == ["a"]
    assert first["rows"]["a"]["x"] is None  # NaN is not JSON: stored as null
    f.add(record("b", "REGRESSION"))
    assert list(sessionfiles.read(f.path)["rows"]) == ["a", "b"]
    assert first["session"]["finished"] is None
    f.finish({"NeMo": "2.5.0"})
    done = json.loads(f.path.read_text())  # the finished file alone holds every row
    assert done["session"]["finished"] and done["environment"] == {"NeMo": "2.5.0"}
    assert list(done["rows"]) == ["a", "b"]


def test_rows_are_appended_never_rewritten(tmp_path, monkeypatch):
    """The cost of a session's writes is linear in its rows: results.json is written whole
    twice (first row, end), each row once, as one line of the rows log."""
    written: list[str] = []
    real = atomic.write_text
    monkeypatch.setattr(atomic, "write_text", lambda p, t: (written.append(str(p)), real(p, t)))
    f = sessionfiles.ResultsFile(tmp_path / "results.json", {"mode": "dry-run"}, durable=False)
    for i in range(200):
        f.add(record(f"r{i}", "DRY_RUN"))
    f.finish({})
    assert written == [str(f.path)] * 2
    assert len(f.rows_log.read_text().splitlines()) == 200


def test_a_session_killed_mid_write_loses_no_finished_row(tmp_path, monkeypatch):
    f = sessionfiles.ResultsFile(tmp_path / "results.json", {"mode": "live"})
    f.add(record("a", "PASS"))
    f.add(record("b", "PASS"))
    with open(f.rows_log, "a") as log:  # the torn last line of a process killed mid-append
        log.write('{"row_id": "c", "verd')

    def boom(*a, **k):
        raise KeyboardInterrupt

    # Interrupted while writing the final file, before the rename: the old file stays.
    monkeypatch.setattr(atomic.os, "fsync", boom)
    with pytest.raises(KeyboardInterrupt):
        f.finish({})
    assert list(sessionfiles.read(f.path)["rows"]) == ["a", "b"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.json", "rows.jsonl"]


def test_only_live_and_replay_sessions_move_the_pointer(tmp_path):
    pointer = tmp_path / "results.json"
    live = sessionfiles.ResultsFile(
        sessionfiles.new_session_dir(tmp_path, "replay") / "results.json",
        {"mode": "replay"},
        pointer,
    )
    live.add(record("a", "REGRESSION"))
    mid = sessionfiles.read(pointer)  # while it runs, the pointer shows its rows so far
    assert mid["rows"]["a"]["verdict"] == "REGRESSION"
    live.finish({})
    dry = sessionfiles.ResultsFile(
        sessionfiles.new_session_dir(tmp_path, "dry-run") / "results.json", {"mode": "dry-run"}
    )
    dry.add(record("a", "DRY_RUN"))
    dry.finish({})
    latest = sessionfiles.read(pointer)
    assert latest["rows"]["a"]["verdict"] == "REGRESSION"  # a dry run never hides it
    assert latest["session"]["mode"] == "replay"
    assert (tmp_path / latest["session_dir"] / "results.json").samefile(live.path)
    assert len(sessionfiles.session_files(tmp_path)) == 2


def test_two_sessions_sharing_a_results_dir_keep_both_files(tmp_path):
    """#24 item 13: each session has its own folder; the pointer is replaced atomically and
    always names a complete session."""
    pointer = tmp_path / "results.json"
    files = [
        sessionfiles.ResultsFile(
            sessionfiles.new_session_dir(tmp_path, "live") / "results.json",
            {"mode": "live"},
            pointer,
            durable=False,
        )
        for _ in range(2)
    ]
    assert files[0].path != files[1].path

    def session(f, name):
        for i in range(50):
            f.add(record(f"{name}{i}", "PASS"))
        f.finish({})

    threads = [
        threading.Thread(target=session, args=(f, n)) for f, n in zip(files, "ab", strict=True)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for f, name in zip(files, "ab", strict=True):
        assert len(json.loads(f.path.read_text())["rows"]) == 50
        assert set(json.loads(f.path.read_text())["rows"]) == {f"{name}{i}" for i in range(50)}
    last = sessionfiles.read(pointer)
    assert len(last["rows"]) == 50 and last["session"]["finished"]
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_old_dry_runs_are_pruned_live_ones_kept(tmp_path):
    for mode in ["live"] + ["dry-run"] * (sessionfiles.KEEP_DRY_RUNS + 3):
        f = sessionfiles.ResultsFile(
            sessionfiles.new_session_dir(tmp_path, mode) / "results.json", {"mode": mode}
        )
        f.add(record("a", "PASS"))
        f.finish({})
    sessionfiles.prune_dry_runs(tmp_path)
    names = [p.parent.name for p in sessionfiles.session_files(tmp_path)]
    assert sum("-dry-run-" in n for n in names) == sessionfiles.KEEP_DRY_RUNS
    assert sum("-live-" in n for n in names) == 1


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "no such results file"),
        ("{", "not valid JSON"),
        ('{"schema": "other"}', "field 'schema' is 'other'"),
        (
            '{"schema": "perfgate.results/1", "rows": []}',
            "field 'rows': expected an object keyed by row id",
        ),
    ],
)
def test_bad_results_files(tmp_path, content, message):
    path = tmp_path / "r.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(ConfigError) as e:
        sessionfiles.read(path)
    assert str(path) in str(e.value) and message in str(e.value)
    assert "\n" not in str(e.value)
