"""results.json: atomic rewrite per row, strict JSON, clear one-line errors on bad files."""

from __future__ import annotations

import pytest

from perfgate import atomic
from perfgate.errors import ConfigError
from perfgate.report import results


def test_each_add_leaves_a_complete_file(tmp_path):
    f = results.ResultsFile(tmp_path / "out" / "results.json", {"mode": "replay"})
    f.add({"row_id": "a", "verdict": "PASS", "x": float("nan")})
    first = results.read(f.path)
    assert list(first["rows"]) == ["a"]
    assert first["rows"]["a"]["x"] is None  # NaN is not JSON: stored as null
    f.add({"row_id": "b", "verdict": "REGRESSION"})
    assert list(results.read(f.path)["rows"]) == ["a", "b"]
    assert first["session"]["finished"] is None
    f.finish({"NeMo": "2.5.0"})
    done = results.read(f.path)
    assert done["session"]["finished"] and done["environment"] == {"NeMo": "2.5.0"}


def test_a_crash_while_writing_keeps_the_previous_file(tmp_path, monkeypatch):
    f = results.ResultsFile(tmp_path / "results.json", {"mode": "live"})
    f.add({"row_id": "a", "verdict": "PASS"})
    before = f.path.read_text()

    def boom(*a, **k):
        raise KeyboardInterrupt

    # Interrupted after the new content went to the temp file, before the rename.
    monkeypatch.setattr(atomic.os, "fsync", boom)
    with pytest.raises(KeyboardInterrupt):
        f.add({"row_id": "b", "verdict": "PASS"})
    assert f.path.read_text() == before
    assert [p.name for p in tmp_path.iterdir()] == ["results.json"]  # no temp file left


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "no such results file"),
        ("{", "not a readable results.json"),
        ('{"schema": "other"}', "field 'schema' is 'other'"),
        ('{"schema": "perfgate.results/1", "rows": []}', "field 'rows' must be an object"),
    ],
)
def test_bad_results_files(tmp_path, content, message):
    path = tmp_path / "r.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(ConfigError) as e:
        results.read(path)
    assert str(path) in str(e.value) and message in str(e.value)
    assert "\n" not in str(e.value)
