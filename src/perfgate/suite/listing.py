"""Rows chosen without pytest, as a pytest session would choose them (`perfgate list`,
`perfgate bisect`).

-m over the row's markers (perfgate.suite.selection.row_markers) with pytest's expression
grammar (perfgate.suite.expression), -k over the row id and markers (case-insensitive
substrings, as pytest's -k matches a row test's name and markers), --gpus as the plugin
applies it.
"""

from __future__ import annotations

from perfgate.catalog import Row
from perfgate.errors import ConfigError
from perfgate.suite import expression, selection


def select(rows: list[Row], markexpr: str = "", keyword: str = "", gpus: str | None = None):
    """The rows that -m, -k and --gpus keep, in catalog order."""
    keep = selection.gpu_predicate(gpus)
    rowless = selection.rowless_markers(markexpr, rows, strict=True)
    if rowless:
        raise ConfigError(rowless)
    return [
        row
        for row in rows
        if expression.matches(markexpr, set(selection.row_markers(row)).__contains__, "-m")
        and expression.matches(keyword, _names_of(row), "-k")
        and (keep is None or keep(row.num_gpus))
    ]


def _names_of(row: Row):
    """-k's matcher for a row: a case-insensitive substring of its id or a marker name."""
    names = [row.id.lower(), *selection.row_markers(row)]
    return lambda s: any(s.lower() in n for n in names)
