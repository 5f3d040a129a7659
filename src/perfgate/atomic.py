"""Atomic file replacement: a reader sees the old file or the new one, never half of one.

Stdlib only: the workload imports it inside the container (steps.json), the launcher, the
report (results.json) and the catalog (baselines) outside.
"""

from __future__ import annotations

import glob
import json
import os
import tempfile
from pathlib import Path
from typing import Any


def write_text(path: str | os.PathLike[str], text: str) -> None:
    """Replace path with text: temp file in the same folder, fsync, rename, fsync the folder."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        if path.exists():  # keep the mode of a file users may have made group-writable
            os.chmod(tmp, path.stat().st_mode & 0o777)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    # The rename is durable only once the folder entry is on disk (a crash keeps one version).
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def leftovers(path: str | os.PathLike[str]) -> list[Path]:
    """Temp files of write_text for path that a killed writer left beside it."""
    path = Path(path)
    return sorted(path.parent.glob(f".{glob.escape(path.name)}.*.tmp"))


def remove_leftovers(path: str | os.PathLike[str]) -> list[Path]:
    """Remove what leftovers() finds; only safe while no other writer of path can be mid-write
    (the caller holds path's lock). Returns what was removed."""
    gone = []
    for tmp in leftovers(path):
        try:
            tmp.unlink()
            gone.append(tmp)
        except FileNotFoundError:
            pass
    return gone


def write_json(path: str | os.PathLike[str], data: Any, **dump_kwargs: Any) -> None:
    """Replace path with data as JSON (indent 1 unless given); see write_text."""
    dump_kwargs.setdefault("indent", 1)
    write_text(path, json.dumps(data, **dump_kwargs) + "\n")
