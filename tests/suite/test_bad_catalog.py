"""A malformed baselines file stops the session in one line, exit status 2 (docs/suite.md,
"Verdicts, outcomes and exit status"), whatever else the command line asks: no collection
errors per module, no unknown-marker error for -m, no traceback from --update-baselines."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]


@pytest.mark.parametrize(
    "args",
    [(), ("-m", "h100"), ("--update-baselines",), ("-m", "h100", "--update-baselines")],
    ids=["plain", "marker", "update", "marker-update"],
)
def test_a_malformed_baselines_file_is_one_line_exit_2(suite, args):
    suite.shipped_rows()
    path = suite.baselines_dir / "h100.json"
    path.write_text(path.read_text()[:-200])  # truncated mid-row
    result = suite.run("--replay=.", *args)
    lines = [ln for ln in [*result.outlines, *result.errlines] if ln.strip()]
    assert result.ret == 2, lines
    assert len(lines) == 1, lines
    assert str(path) in lines[0] and "not valid JSON" in lines[0]


def test_help_still_works_with_a_malformed_baselines_file(suite):
    suite.shipped_rows()
    (suite.baselines_dir / "h100.json").write_text("[{")
    result = suite.run("--help")
    assert result.ret == 0 and any("--replay" in ln for ln in result.outlines)
