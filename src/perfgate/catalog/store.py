"""The baselines files on disk: read and validate them, and write them atomically under a lock.

Reading: one JSON list of rows per GPU type (baselines/<gpu>.json), every row validated, ids
unique across files. Writing: concurrent writers (pytest-xdist workers, two sessions) each take
the lock beside the JSON file (<file>.lock, the `filelock` package), re-read the file under it
so no other row's change is lost, write a temporary file in the same folder, fsync it and
os.replace it over the original, so a reader sees either the old or the new file, never half
of one.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from perfgate import atomic, inputs, limits
from perfgate.catalog import validate
from perfgate.catalog.rows import GPUS, Baseline, Row, parse_gpu_counts
from perfgate.catalog.schema import dump_rows, row_from_dict
from perfgate.errors import ConfigError, PerfgateError

if TYPE_CHECKING:
    from filelock import FileLock

LOCK_TIMEOUT_S = 120.0


def _read_json(path: Path) -> Any:
    try:
        text = inputs.read_text(
            path, ConfigError, max_bytes=limits.MAX_BASELINES_BYTES, what="baselines file"
        )
    except OSError as e:
        raise ConfigError(f"{path}: cannot read baselines file ({e.strerror})") from None
    except UnicodeDecodeError as e:
        raise ConfigError(f"{path}: not UTF-8 text (byte {e.start})") from None
    return inputs.strict_json(text, str(path), ConfigError)


def load_file(path: str | Path) -> list[Row]:
    """Read and validate one baselines/<gpu>.json file: its rows in file order."""
    path = Path(path)
    data = _read_json(path)
    if not isinstance(data, list):
        raise ConfigError(f"{path}: a baselines file must hold a JSON list of rows")
    rows: list[Row] = []
    seen: set[str] = set()
    for index, item in enumerate(data):
        row = row_from_dict(item, str(path), index=index)
        if row.gpu != path.stem:
            raise ConfigError(
                f"{path}: row {row.id}: field 'gpu': a {row.gpu!r} row belongs in "
                f"{row.gpu}.json, not {path.name}"
            )
        if row.id in seen:
            raise ConfigError(f"{path}: row {row.id}: field 'id': duplicate id in this file")
        seen.add(row.id)
        rows.append(row)
    return rows


def _file_order(path: Path) -> tuple[int, str]:
    names = list(GPUS)
    return (names.index(path.stem) if path.stem in names else len(names), path.name)


@dataclass(frozen=True)
class Catalog:
    """Every row of a baselines folder: rows in file order (files in GPU order), by id."""

    rows: tuple[Row, ...]
    by_id: dict[str, Row]
    files: dict[str, Path]

    def file_of(self, row_id: str) -> Path:
        """The file that holds this row."""
        try:
            return self.files[row_id]
        except KeyError:
            raise ConfigError(f"unknown row id {row_id!r}") from None

    def get(self, row_id: str) -> Row:
        """The row with this id; a clear error when there is none."""
        try:
            return self.by_id[row_id]
        except KeyError:
            raise ConfigError(f"unknown row id {row_id!r}") from None

    def select(
        self,
        *,
        gpu: str | None = None,
        num_gpus: str | Callable[[int], bool] | None = None,
        task: str | None = None,
        model: str | None = None,
        backend: str | None = None,
    ) -> tuple[Row, ...]:
        """Rows matching every given filter; num_gpus takes a spec like "8,32-64"."""
        counts = parse_gpu_counts(num_gpus) if isinstance(num_gpus, str) else num_gpus
        return tuple(
            r
            for r in self.rows
            if (gpu is None or r.gpu == gpu)
            and (counts is None or counts(r.num_gpus))
            and (task is None or r.task == task)
            and (model is None or r.model == model)
            and (backend is None or r.backend == backend)
        )


def load_catalog(directory: str | Path = "baselines") -> Catalog:
    """Load every <gpu>.json of a folder; ids must be unique across files."""
    directory = Path(directory)
    if not directory.is_dir():
        raise ConfigError(f"{directory}: baselines folder not found")
    rows: list[Row] = []
    files: dict[str, Path] = {}
    for path in sorted(directory.glob("*.json"), key=_file_order):
        if path.stem not in GPUS:
            known = ", ".join(f"{g}.json" for g in GPUS)
            raise ConfigError(f"{path}: not a baselines file name; expected one of {known}")
        for row in load_file(path):
            if row.id in files:
                raise ConfigError(
                    f"{path}: row {row.id}: field 'id': duplicate of a row in {files[row.id]}"
                )
            files[row.id] = path
            rows.append(row)
    return Catalog(rows=tuple(rows), by_id={r.id: r for r in rows}, files=files)


def lock_for(path: Path) -> FileLock:
    """The lock that guards one baselines file (a sibling <name>.lock file)."""
    # filelock loads only to write: the workload imports perfgate.catalog inside containers
    # that promise nothing beyond the standard library.
    from filelock import FileLock

    return FileLock(str(path) + ".lock", timeout=LOCK_TIMEOUT_S)


def write_atomic(path: Path, text: str) -> None:
    """Replace path's content with text atomically (temp file in the same folder, fsync, rename)."""
    atomic.write_text(path, text)


def _rewrite(path: Path, change: Callable[[list[Row]], list[Row]]) -> tuple[str, str]:
    """Under the file's lock: re-read, change the rows, write the canonical text if it differs.

    Returns (old text, new text). Every writer goes through here, so a file perfgate wrote is
    always in the one canonical form (dump_rows), whatever wrote it.
    """
    try:
        with lock_for(path):
            # A writer killed mid-write (kill -9) left its temp file: no writer holds the
            # lock now, so it is garbage (.gitignore covers it meanwhile).
            atomic.remove_leftovers(path)
            old_text = inputs.read_text(path, ConfigError)
            new_text = dump_rows(change(load_file(path)))
            if new_text != old_text:
                write_atomic(path, new_text)
    except TimeoutError:  # filelock.Timeout
        raise PerfgateError(
            f"{path}: could not lock {path}.lock within {LOCK_TIMEOUT_S:.0f} s"
        ) from None
    except OSError as e:  # a read-only folder or file, a full disk: one line, nothing written
        raise PerfgateError(
            f"{path}: cannot write the new baselines ({e.strerror or e}): make "
            f"{path.parent} writable, or rerun with --baselines-dir pointing at a copy"
        ) from None
    return old_text, new_text


def _diff(path: Path, old_text: str, new_text: str) -> str:
    diff = difflib.unified_diff(
        old_text.splitlines(keepends=True),
        new_text.splitlines(keepends=True),
        fromfile=f"a/{path}",
        tofile=f"b/{path}",
    )
    return "".join(diff)


def _apply(path: Path, updates: Mapping[str, Baseline]) -> str:
    """Set these rows' baselines in one file; return the diff."""

    def change(rows: list[Row]) -> list[Row]:
        missing = sorted(set(updates) - {r.id for r in rows})
        if missing:
            raise ConfigError(f"{path}: row {missing[0]}: no longer in this file")
        new_rows: list[Row] = []
        for row in rows:
            if row.id in updates:
                row = replace(row, baseline=updates[row.id])
                validate.validate_row(row, f"{path}: row {row.id}")
            new_rows.append(row)
        return new_rows

    return _diff(path, *_rewrite(path, change))


def format_file(path: str | Path, *, write: bool = True) -> bool:
    """Bring one baselines file to the canonical form (`perfgate fmt`); True if it was not.

    The canonical form is dump_rows' text: a JSON list, 2-space indent, keys in ROW_KEYS order
    with defaults left out, non-ASCII kept, one final newline: what --update-baselines writes.
    """
    path = Path(path)
    if not write:
        return inputs.read_text(path, ConfigError) != dump_rows(load_file(path))
    old_text, new_text = _rewrite(path, lambda rows: rows)
    return old_text != new_text


def update_baselines(directory: str | Path, updates: Mapping[str, Baseline]) -> str:
    """Store new baselines for these row ids, atomically and under a lock per file.

    Each file is re-read under its lock so concurrent writers (pytest-xdist workers) lose no
    change; returns the unified diff of what changed (empty when nothing did).
    """
    if not updates:
        return ""
    for rid, baseline in updates.items():
        if not isinstance(baseline, Baseline):
            raise ConfigError(
                f"row {rid}: update must be a Baseline, not {type(baseline).__name__}"
            )
    found = load_catalog(directory)
    by_file: dict[Path, dict[str, Baseline]] = {}
    for rid, baseline in updates.items():
        by_file.setdefault(found.file_of(rid), {})[rid] = baseline
    return "".join(_apply(path, group) for path, group in sorted(by_file.items()))
