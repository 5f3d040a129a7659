"""Writes the history store could not take, kept in the session folder until it can.

<session folder>/history-spool.jsonl holds one JSON line per write the store refused (the
session, a row's runs, its end), appended and fsynced as it happens: a session whose server
went away loses nothing, even if the session itself is killed next. Replaying the file
(when the store answers again, or `perfgate history sync SESSION_DIR`) writes its lines in
order; the store's keys (the session's uid; each run's session, row, label, launch and job)
make a replay that repeats what already reached the store add nothing. A `synced` line
records that every line before it was written.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from perfgate.errors import ConfigError
from perfgate.history.store import HistoryStore, Run, Session

NAME = "history-spool.jsonl"
VERSION = 1


def _session(d: dict[str, Any]) -> Session:
    return Session(**{**d, "images": tuple(d.get("images") or ())})


def _run(d: dict[str, Any]) -> Run:
    return Run(**{**d, "nodes": tuple(d.get("nodes") or ())})


class Spool:
    """One session folder's spool file."""

    def __init__(self, folder: str | Path, history: str | None = None) -> None:
        self.path = Path(folder) / NAME
        self.history = history  # the store it is kept for (its header says so)

    def _append(self, entry: dict[str, Any]) -> None:
        line = json.dumps(entry, sort_keys=True, allow_nan=False) + "\n"
        with open(self.path, "a", encoding="utf-8") as f:
            if f.tell() == 0:
                head = {"op": "spool", "version": VERSION, "history": self.history}
                f.write(json.dumps(head) + "\n")
            f.write(line)
            f.flush()
            os.fsync(f.fileno())

    def add_session(self, s: Session) -> None:
        """Keep a session's start."""
        self._append({"op": "session", "session": asdict(s)})

    def add_runs(self, session_uid: str, runs: Sequence[Run]) -> None:
        """Keep one row's runs."""
        self._append({"op": "runs", "session": session_uid, "runs": [asdict(r) for r in runs]})

    def add_finish(self, session_uid: str, finished_at: str) -> None:
        """Keep a session's end."""
        self._append({"op": "finish", "session": session_uid, "finished_at": finished_at})

    def mark_synced(self) -> None:
        """Every line so far reached the store."""
        self._append({"op": "synced"})

    def entries(self) -> list[dict[str, Any]]:
        """Every entry, oldest first (a torn last line, from a writer killed mid-line, is
        left out; any other bad line is an error naming it)."""
        try:
            lines = self.path.read_text(encoding="utf-8").split("\n")
        except FileNotFoundError:
            return []
        except (OSError, UnicodeDecodeError) as e:
            raise ConfigError(f"{self.path}: cannot read the spool ({e})") from None
        out = []
        for n, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
                if not isinstance(entry, dict) or not isinstance(entry.get("op"), str):
                    raise ValueError("not a spool entry")
            except ValueError as e:
                if n == len(lines):  # the last line, torn (the file ends without "\n")
                    break
                raise ConfigError(f"{self.path}: line {n}: {e}") from None
            out.append({**entry, "line": n})
        return out

    def kept_for(self) -> str | None:
        """The history the spool was kept for (its header), None if it does not say."""
        for e in self.entries():
            if e["op"] == "spool":
                where = e.get("history")
                return where if isinstance(where, str) else None
        return None

    def pending(self) -> int:
        """How many entries no replay has written yet."""
        count = 0
        for e in self.entries():
            count = 0 if e["op"] == "synced" else count + (e["op"] != "spool")
        return count


def replay(store: HistoryStore, folder: str | Path) -> dict[str, int]:
    """Write a session folder's spool into the store, in order; what was new, what was
    there already. Raises PerfgateError (the spool kept) when the store cannot take it."""
    spool = Spool(folder)
    entries = spool.entries()
    if not entries:
        raise ConfigError(f"{spool.path}: no spool here (nothing was kept for the history)")
    ids: dict[str, int] = {}
    done = {"sessions": 0, "runs": 0, "runs_there": 0, "ends": 0}
    for e in entries:
        where = f"{spool.path}: line {e['line']}"
        try:
            if e["op"] == "session":
                s = _session(e["session"])
                ids[s.uid] = store.start_session(s)
                done["sessions"] += 1
            elif e["op"] in ("runs", "finish"):
                if e["session"] not in ids:
                    raise ConfigError(f"{where}: session {e['session']!r} not started above")
                sid = ids[e["session"]]
                if e["op"] == "runs":
                    runs = [_run(r) for r in e["runs"]]
                    new = store.add_runs(sid, runs)
                    done["runs"] += new
                    done["runs_there"] += len(runs) - new
                else:
                    store.finish_session(sid, e["finished_at"])
                    done["ends"] += 1
            elif e["op"] not in ("spool", "synced"):
                raise ConfigError(f"{where}: unknown entry {e['op']!r}")
        except (TypeError, KeyError, AttributeError) as err:
            raise ConfigError(f"{where}: not a spool entry ({err})") from None
    spool.mark_synced()
    return done
