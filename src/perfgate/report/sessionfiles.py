"""Where a session's results go, and how they are read back.

    <results-dir>/sessions/<UTC stamp>-<mode>-<6 hex>/results.json   the session, at its end
    <results-dir>/sessions/<...>/rows.jsonl                          each row as it finishes
    <results-dir>/results.json                                       the latest live or replay
                                                                      session (a copy)

Every session, dry runs included, gets a folder of its own, created exclusively, so two
sessions sharing one --results-dir never write the same file. A finished row is appended to
rows.jsonl as one JSON line (flushed; fsynced in live and replay sessions), so the cost of
a session's writes is linear in its rows: results.json is written whole twice, when the
first row finishes (the session, no rows) and at the end (everything). A reader
(`perfgate report`, `perfgate list`) of an unfinished results.json merges the rows of its
rows log, so a session killed at any point loses no finished row. Rewriting the whole file
after every row, as before, cost 16 of 19 s of a 145-row dry run.

The pointer <results-dir>/results.json is replaced atomically, only by live and replay
sessions, when their first row finishes and at their end; a dry run never hides real results.
Dry-run folders beyond the newest KEEP_DRY_RUNS finished ones are removed (their plans are
made again by rerunning them); live and replay folders are never removed.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from perfgate import atomic
from perfgate.report import readback
from perfgate.rowrecord import RowRecord
from perfgate.secrets import mask_tree
from perfgate.stats import json_ready

SCHEMA = "perfgate.results/1"
SESSIONS = "sessions"
POINTER = "results.json"
ROWS_LOG = "rows.jsonl"
KEEP_DRY_RUNS = 10
POINTING_MODES = ("live", "replay")  # the modes whose results the pointer shows


def now() -> str:
    """UTC timestamp, ISO 8601, seconds."""
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat()


def new_session_dir(results_dir: Path, mode: str) -> Path:
    """A fresh folder for one session, made exclusively: sessions/<stamp>-<mode>-<6 hex>, the
    stamp UTC to the millisecond (20260517T043909.123Z)."""
    root = Path(results_dir) / SESSIONS
    root.mkdir(parents=True, exist_ok=True)
    t = datetime.now(timezone.utc)
    stamp = f"{t:%Y%m%dT%H%M%S}.{t.microsecond // 1000:03d}Z"  # names sort by start time
    while True:
        folder = root / f"{stamp}-{mode}-{secrets.token_hex(3)}"
        try:
            folder.mkdir()
        except FileExistsError:  # another session drew the same name: draw again
            continue
        return folder


def _dumps(data: Any) -> str:
    return json.dumps(_ready(data), allow_nan=False, default=str)


def _ready(data: Any) -> Any:
    """What is written: JSON-ready, every text masked (perfgate.secrets.mask_tree)."""
    return mask_tree(json_ready(data))


class ResultsFile:
    """One session's results: rows appended to rows.jsonl as they finish, results.json
    written when the first row finishes and at the end; `pointer` (the results-dir's
    results.json, live and replay only) follows both writes."""

    def __init__(
        self,
        path: Path,
        session: dict[str, Any],
        pointer: Path | None = None,
        durable: bool = True,
    ) -> None:
        self.path = Path(path)
        self.rows_log = self.path.with_name(ROWS_LOG)
        self.pointer = Path(pointer) if pointer is not None else None
        self.durable = durable  # fsync each appended row (live, replay)
        self.data: dict[str, Any] = {
            "schema": SCHEMA,
            "session": {"started": now(), "finished": None, **session},
            "environment": {},
            "rows": {},
        }
        self._log: Any = None

    def add(self, rec: RowRecord) -> None:
        """Add or replace a row's record: one line appended to the rows log."""
        if self._log is None:
            self._start()
        self.data["rows"][rec["row_id"]] = rec
        self._log.write(_dumps(rec) + "\n")
        self._log.flush()
        if self.durable:
            os.fsync(self._log.fileno())

    def _start(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(self.rows_log, "a", encoding="utf-8")  # noqa: SIM115 (closed in finish)
        header = {**self.data, "rows": {}, "rows_log": ROWS_LOG}
        atomic.write_json(self.path, _ready(header), allow_nan=False, default=str)
        self._point(header)

    def _point(self, data: dict[str, Any]) -> None:
        if self.pointer is None:
            return
        rel = os.path.relpath(self.path.parent, self.pointer.parent)
        shown = {**data, "session_dir": rel}
        if "rows_log" in data:
            shown["rows_log"] = os.path.join(rel, ROWS_LOG)
        atomic.write_json(self.pointer, _ready(shown), allow_nan=False, default=str)

    def finish(self, environment: dict[str, Any], metadata: dict[str, Any] | None = None) -> None:
        """Stamp the end of the session with the environment seen (and pytest-metadata's
        table of the login node, which the report shows), and write results.json whole."""
        self.data["session"]["finished"] = now()
        if metadata is not None:
            self.data["session"]["metadata"] = metadata
        self.data["environment"] = environment
        atomic.write_json(self.path, _ready(self.data), allow_nan=False, default=str)
        self._point(self.data)
        if self._log is not None:
            self._log.close()
            self._log = None


def read(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a results.json (with the rows its session's log holds, while unfinished) through
    the typed door (perfgate.report.readback): a bad file is one line naming it and the
    field, a bad row is left out with a warning."""
    return readback.read(path)


def session_files(results_dir: Path) -> list[Path]:
    """Every session's results.json under results_dir, oldest first (by its last write)."""
    found = list((Path(results_dir) / SESSIONS).glob("*/results.json"))
    return sorted(found, key=lambda p: (p.stat().st_mtime_ns, p.parent.name))


def prune_dry_runs(results_dir: Path, keep: int = KEEP_DRY_RUNS) -> None:
    """Remove finished dry-run folders beyond the newest `keep` (never another mode's)."""
    root = Path(results_dir) / SESSIONS
    try:
        names = sorted((p for p in root.iterdir() if "-dry-run-" in p.name), reverse=True)
    except OSError:
        return
    for folder in names[keep:]:  # names sort by their UTC stamp
        try:
            head = json.loads((folder / "results.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue  # running (no row yet) or not perfgate's: leave it
        if isinstance(head, dict) and (head.get("session") or {}).get("finished"):
            shutil.rmtree(folder, ignore_errors=True)
