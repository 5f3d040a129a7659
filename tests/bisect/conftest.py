"""Fixtures of the bisect tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from rowfactory import command_row

from perfgate.catalog import dump_rows

ROW = command_row("bisect", steps=20, time_limit_min=2)


@pytest.fixture
def where(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder with baselines/h100.json (one command row) and three squashfs files."""
    (tmp_path / "baselines").mkdir()
    (tmp_path / "baselines" / "h100.json").write_text(dump_rows([ROW]))
    for i, text in enumerate(("a", "b", "c"), 1):
        (tmp_path / f"n{i}.sqsh").write_text(text)
    monkeypatch.chdir(tmp_path)
    return tmp_path
