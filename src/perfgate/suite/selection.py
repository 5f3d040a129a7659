"""Rows as tests: their markers, the parametrization of the benchmark files, --gpus selection."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import pytest

from perfgate import catalog, models
from perfgate.catalog import Row

# Markers of the suite's own tests (tests/), registered beside the row markers in pytest.ini.
SUITE_MARKERS = ("slurm", "nemo")
ROW_ARG = "perfgate_row"


def family_of(model: str) -> str:
    """The model family marker of a catalog model name (from perfgate.models)."""
    return models.get(model).family


def row_markers(row: Row) -> list[str]:
    """Marker names of a row: gpu, precision, task, model family, backend."""
    return [row.gpu, row.precision, row.task, family_of(row.model), row.backend]


def marker_names(rows: Iterable[Row]) -> set[str]:
    """Every marker these rows produce."""
    return {m for row in rows for m in row_markers(row)}


def params(rows: Sequence[Row]) -> list:
    """pytest.param per row: the row id is the test id, the markers are the row's."""
    return [
        pytest.param(row, id=row.id, marks=[getattr(pytest.mark, m) for m in row_markers(row)])
        for row in rows
    ]


def rows_for(cat: catalog.Catalog, tasks: Sequence[str]) -> list[Row]:
    """Rows of these tasks, in file order."""
    return [row for row in cat.rows if row.task in tasks]


def gpu_predicate(spec: str | None) -> Callable[[int], bool] | None:
    """None when --gpus is not given, else the predicate of catalog.parse_gpu_counts."""
    return None if spec is None else catalog.parse_gpu_counts(spec)


def row_of(item: pytest.Item) -> Row | None:
    """The row a collected test runs, or None for tests that are not rows."""
    callspec = getattr(item, "callspec", None)
    if callspec is None:
        return None
    row = callspec.params.get(ROW_ARG)
    return row if isinstance(row, Row) else None


def split_by_gpus(
    items: list[pytest.Item], keep: Callable[[int], bool]
) -> tuple[list[pytest.Item], list[pytest.Item]]:
    """(kept, deselected): row tests whose GPU count fails the predicate are deselected."""
    kept: list[pytest.Item] = []
    dropped: list[pytest.Item] = []
    for item in items:
        row = row_of(item)
        (dropped if row is not None and not keep(row.num_gpus) else kept).append(item)
    return kept, dropped
