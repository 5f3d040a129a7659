"""Rows as tests: their markers, the parametrization of the benchmark files, --gpus selection.

Row markers are registered from the loaded catalog (pytest_configure), with descriptions made
from the catalog's value lists: a marker exists exactly when some row carries it, and a new
row value (a GPU, precision, task, backend or model family perfgate knows) needs no edit.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import pytest

from perfgate import catalog, hardware, models
from perfgate.catalog import Row
from perfgate.suite import expression

# Markers of the suite's own tests (tests/), registered beside the row markers in pytest.ini.
SUITE_MARKERS = ("slurm", "nemo", "bridge", "postgres", "chromium", "long")
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


def marker_descriptions() -> dict[str, str]:
    """Every marker a row may produce, with its `pytest --markers` text (from the value lists)."""
    out = {
        gpu: f"rows on NVIDIA {gpu.upper()} ({hardware.GPUS[gpu].gpus_per_node} GPUs per node)"
        for gpu in catalog.GPUS
    }
    out.update({p: f"{p.upper()} rows" for p in catalog.PRECISIONS})
    out.update({t: f"{t} rows" for t in catalog.TASKS})
    out.update({b: f"rows run by the {b} backend" for b in catalog.BACKENDS})
    families: dict[str, list[str]] = {}
    for name, arch in models.MODELS.items():
        families.setdefault(arch.family, []).append(name)
    out.update({f: f"model family {f} ({', '.join(ms)})" for f, ms in families.items()})
    return out


def marker_lines(rows: Iterable[Row]) -> list[str]:
    """The `markers` ini lines of the markers these rows carry (sorted)."""
    text = marker_descriptions()
    return [f"{m}: {text[m]}" for m in sorted(marker_names(rows))]


def rowless_markers(markexpr: str, rows: Iterable[Row], strict: bool = False) -> str | None:
    """A one-line reason when -m names a marker no row carries, else None.

    Values perfgate knows (b300, nvfp4, ...) are named as such; other names only when strict
    (perfgate list; pytest reports those itself).
    """
    on_rows = marker_names(rows)
    have = on_rows | set(SUITE_MARKERS)  # the suite's own markers select no row, but are valid
    known = marker_descriptions()
    names = expression.identifiers(markexpr)
    rowless = [n for n in dict.fromkeys(names) if n in known and n not in have]
    unknown = [n for n in dict.fromkeys(names) if n not in known and n not in have]
    if rowless:
        return (
            f"-m {markexpr!r}: no row of the catalog has {', '.join(rowless)} yet (perfgate "
            f"knows the value; the rows' markers: {', '.join(sorted(on_rows))})"
        )
    if strict and unknown:
        return unknown_marker(markexpr, unknown, on_rows)
    return None


def unknown_marker(markexpr: str, unknown: Sequence[str], on_rows: Iterable[str]) -> str:
    """The one line for -m names no marker has: the nearest row marker of the first, if one is
    close (b2000: b200), and the rows' markers."""
    markers = sorted(on_rows)
    close = difflib.get_close_matches(unknown[0], markers, n=1, cutoff=0.6)
    hint = f" (did you mean {close[0]}?)" if close else ""
    return (
        f"-m {markexpr!r}: unknown marker {', '.join(unknown)}{hint}; the rows' markers: "
        + ", ".join(markers)
    )


def unregistered_markers(
    markexpr: str, rows: Iterable[Row], registered: Iterable[str]
) -> str | None:
    """unknown_marker's line when -m names a marker neither a row nor pytest's registry
    (ini, plugins, the suite's own) has, else None: pytest's own error offers no nearest one."""
    on_rows = marker_names(rows)
    have = on_rows | set(registered) | set(SUITE_MARKERS)
    names = expression.identifiers(markexpr)
    unknown = [n for n in dict.fromkeys(names) if n not in have]
    return unknown_marker(markexpr, unknown, on_rows) if unknown else None


def gpu_counts_line(spec: str, rows: Sequence[Row]) -> str:
    """What an empty --gpus selection says: the GPU counts the selected rows have."""
    counts = sorted({r.num_gpus for r in rows})
    return (
        f"perfgate: --gpus {spec} keeps none of the {len(rows)} row(s) selected; their GPU "
        f"counts: {', '.join(map(str, counts))}"
    )


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


def _asks_for_rows(path: Path) -> bool:
    """Whether a test module takes the row argument (only its tests can be rows)."""
    try:
        with path.open("rb") as f:
            return ROW_ARG.encode() in f.read(1 << 20)
    except OSError:
        return False


def rows_of_ids(cat: catalog.Catalog, nodeids: Iterable[str], rootdir: Path) -> list[Row]:
    """The rows of collected test ids (path::test[row id]), in id order; others are ignored.

    The xdist controller sees only ids, so a test elsewhere that happens to be parametrized
    by a row id (the suite's own tests are) must not count: only modules that take the row
    argument hold rows."""
    out = []
    asks: dict[str, bool] = {}
    for nodeid in nodeids:
        param = nodeid.rsplit("[", 1)[1][:-1] if nodeid.endswith("]") else None
        row = cat.by_id.get(param) if param else None
        if row is None:
            continue
        file = nodeid.split("::", 1)[0]
        if file not in asks:
            asks[file] = _asks_for_rows(rootdir / file)
        if asks[file]:
            out.append(row)
    return out


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
