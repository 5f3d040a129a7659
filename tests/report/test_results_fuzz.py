"""results.json read back at the door (#29): one field changed anywhere, to any of 13 hostile
values, is a report with that row left out and one warning, or one line and exit 2; never a
traceback, never a raw escape on the terminal. The exhaustive run (every field path x every
value, the HTML page too) is scripts/fuzz_readers.py; this test draws from the same cases."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mutation import ESCAPES, HOSTILE, mutated, paths, shown
from resultsdata import write
from suite.pytester_suite import EXAMPLES

from perfgate import cli, notices
from perfgate.report import readback, sessionfiles

pytest_plugins = ["pytester"]
_BASE: list[dict] = []


def base(factory: pytest.TempPathFactory) -> dict:
    """The fixture session's results.json, lists cut to 4 items (a long run's 10,000 points
    add nothing a mutation could find)."""
    if not _BASE:

        def cut(v):
            if isinstance(v, dict):
                return {k: cut(x) for k, x in v.items()}
            return [cut(x) for x in v[:4]] if isinstance(v, list) else v

        _BASE.append(cut(json.loads(write(factory.mktemp("fx") / "results.json").read_text())))
    return _BASE[0]


def report(capsys, path: Path, html: bool) -> tuple[int, str, str]:
    argv = ["report", str(path)] + (["--html", str(path.with_suffix(".html"))] if html else [])
    code = cli.main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_the_fixture_reads_back_whole_with_no_warning(tmp_path):
    path = write(tmp_path / "results.json")
    said: list[str] = []
    with notices.routed(said.append):
        data = sessionfiles.read(path)
    assert len(data["rows"]) == 7 and said == []
    assert "0" * 40 not in path.read_text()  # the WANDB key in the OOM row's tail: masked
    assert (
        "WANDB_API_KEY=***"
        in data["rows"][next(r for r in data["rows"] if "oom" in r)]["diagnosis"]["log_tail"]
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"schema": "perfgate.results/1", "rows": {}, "x": NaN}', "NaN is not a JSON number"),
        ('{"schema": "perfgate.results/1", "rows": {}, "x": Infinity}', "Infinity is not a JSON"),
        ('{"schema": "perfgate.results/1", "rows": {}, "rows": {}}', "duplicate key 'rows'"),
        ('{"schema": "perfgate.results/1", "rows": {}, "x": 1e400}', "number 1e400 is out of"),
        ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
        ('{"schema": "perfgate.results/1", "rows": {}, "x": ' + "[" * 70 + "]" * 70 + "}",
         "expected at most 64 levels of nesting"),
        ('{"schema": "perfgate.results/1", "session": [], "rows": {}}', "field 'session'"),
    ],
)  # fmt: skip
def test_a_file_that_is_not_strict_json_of_this_schema_is_one_line(tmp_path, capsys, text, message):
    path = tmp_path / "r.json"
    path.write_text(text)
    code, out, err = report(capsys, path, html=False)
    assert code == 2 and out == "" and err.count("\n") == 1 and message in err, err


def test_a_bad_row_is_left_out_with_one_warning_and_the_rest_shown(
    tmp_path, tmp_path_factory, capsys
):
    data = base(tmp_path_factory)
    rid = next(iter(data["rows"]))
    bad = mutated(data, ("rows", rid, "job"), "x")  # was an AttributeError in #29
    path = tmp_path / "r.json"
    path.write_text(json.dumps(bad))
    code, out, err = report(capsys, path, html=True)
    assert code == 0 and out.endswith(f"wrote {path.with_suffix('.html')}\n")
    assert err == (
        f"perfgate: warning: {path}: row '{rid}' left out: field 'job': expected an object "
        "or null, not 'x'\n"
    )
    page = path.with_suffix(".html").read_text()
    assert rid not in page and all(other in page for other in list(data["rows"])[1:-1])


def test_an_escape_in_a_message_is_printed_escaped(tmp_path, tmp_path_factory, capsys):
    data = base(tmp_path_factory)
    rid = next(iter(data["rows"]))
    path = tmp_path / "r.json"
    path.write_text(json.dumps(mutated(data, ("rows", rid, "message"), ESCAPES)))
    code, out, err = report(capsys, path, html=False)
    assert code == 0 and "\x1b" not in out + err and "\x07" not in out + err and "\r" not in out
    assert "\\x1b]0;pwned\\x07" in out


# capsys is read (and so emptied) once per example
@settings(
    max_examples=350, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.data())
def test_fuzz_one_field_changed_is_never_a_traceback_nor_a_raw_escape(
    tmp_path_factory, capsys, data
):
    doc = base(tmp_path_factory)
    path_ = data.draw(st.sampled_from(list(paths(doc))), label="field")
    value = data.draw(st.sampled_from(HOSTILE), label="value")
    html = data.draw(st.booleans(), label="html")
    path = tmp_path_factory.mktemp("m") / "results.json"
    path.write_text(json.dumps(mutated(doc, path_, value)))
    code, out, err = report(capsys, path, html)  # anything but perfgate's error propagates
    assert code in (0, 2), shown(path_)
    assert "\x1b" not in out + err and "\x07" not in out + err, shown(path_)
    assert "Traceback" not in err
    if code == 2:
        assert err.count("\n") == 1 and err.startswith("perfgate report: error: ")
    else:
        assert all(line.startswith("perfgate: warning: ") for line in err.splitlines())


def test_the_rows_log_of_an_unfinished_session_is_read_the_same_way(tmp_path, tmp_path_factory):
    data = base(tmp_path_factory)
    recs = list(data["rows"].values())
    folder = tmp_path / "s"
    folder.mkdir()
    head = {**data, "rows": {}, "rows_log": "rows.jsonl"}
    head["session"] = {**data["session"], "finished": None}
    (folder / "results.json").write_text(json.dumps(head))
    lines = [json.dumps(recs[0]), json.dumps({**recs[1], "verdict": 7}), '{"row_id": "cut", "v']
    (folder / "rows.jsonl").write_text("\n".join(lines))
    said: list[str] = []
    with notices.routed(said.append):
        got = readback.read(folder / "results.json")
    assert list(got["rows"]) == [recs[0]["row_id"]]
    err = "\n".join(said)
    assert "rows.jsonl: line 2 left out: field 'verdict': expected a string, not 7" in err
    assert "line 3" not in err  # the torn last line of a session killed mid-write


@pytest.mark.parametrize("mode", ["replay", "dry-run"])
def test_what_a_session_writes_reads_back_typed(suite, mode):
    """The declarations the reader checks against are what sessions write: every record of
    a replay of the examples and of a dry run passes the door."""
    suite.shipped_rows()
    args = [f"--replay={EXAMPLES}"] if mode == "replay" else ["--dry-run", "--gpus", "8"]
    suite.run(*args, "-m", "h100")
    path = sessionfiles.session_files(suite.path / "perfgate-results")[-1]
    rows = json.loads(path.read_text())["rows"]
    assert len(rows) > 5
    for key, rec in rows.items():
        readback.check_record(rec, key)
