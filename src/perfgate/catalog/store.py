"""Writing baselines: atomic replace under a per-file lock, with a reviewable diff.

Concurrent writers (pytest-xdist workers, two sessions) each take the lock beside the JSON file
(<file>.lock, the `filelock` package), re-read the file under it so no other row's change is
lost, write a temporary file in the same folder, fsync it and os.replace it over the original,
so a reader sees either the old or the new file, never half of one.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

from filelock import FileLock, Timeout

from perfgate import atomic, catalog
from perfgate.catalog import Baseline, Row, validate
from perfgate.errors import ConfigError, PerfgateError

LOCK_TIMEOUT_S = 120.0


def lock_for(path: Path) -> FileLock:
    """The lock that guards one baselines file (a sibling <name>.lock file)."""
    return FileLock(str(path) + ".lock", timeout=LOCK_TIMEOUT_S)


def write_atomic(path: Path, text: str) -> None:
    """Replace path's content with text atomically (temp file in the same folder, fsync, rename)."""
    atomic.write_text(path, text)


def _apply(path: Path, updates: Mapping[str, Baseline]) -> str:
    """Under the file's lock: re-read, set the baselines, write if changed; return the diff."""
    try:
        with lock_for(path):
            old_text = path.read_text(encoding="utf-8")
            rows = catalog.load_file(path)
            ids = {r.id for r in rows}
            missing = sorted(set(updates) - ids)
            if missing:
                raise ConfigError(f"{path}: row {missing[0]}: no longer in this file")
            new_rows: list[Row] = []
            for row in rows:
                if row.id in updates:
                    row = replace(row, baseline=updates[row.id])
                    validate.validate_row(row, f"{path}: row {row.id}")
                new_rows.append(row)
            new_text = catalog.dump_rows(new_rows)
            if new_text == old_text:
                return ""
            write_atomic(path, new_text)
    except Timeout:
        raise PerfgateError(
            f"{path}: could not lock {path}.lock within {LOCK_TIMEOUT_S:.0f} s"
        ) from None
    diff = difflib.unified_diff(
        old_text.splitlines(keepends=True),
        new_text.splitlines(keepends=True),
        fromfile=f"a/{path}",
        tofile=f"b/{path}",
    )
    return "".join(diff)


def update_baselines(directory: Path, updates: Mapping[str, Baseline]) -> str:
    """Store new baselines for row ids, each file under its lock; return the unified diff."""
    if not updates:
        return ""
    for rid, baseline in updates.items():
        if not isinstance(baseline, Baseline):
            raise ConfigError(
                f"row {rid}: update must be a Baseline, not {type(baseline).__name__}"
            )
    found = catalog.load_catalog(directory)
    by_file: dict[Path, dict[str, Baseline]] = {}
    for rid, baseline in updates.items():
        by_file.setdefault(found.file_of(rid), {})[rid] = baseline
    return "".join(_apply(path, group) for path, group in sorted(by_file.items()))
