"""Move a history between stores (`perfgate history export/import`): sqlite <-> PostgreSQL.

One session at a time, oldest first: its session row, ends, runs and exclusions are read
from the source, written to the target in one transaction (what the target already has is
skipped, so a copy that was interrupted is simply run again), then read back from the target
and compared field by field with what was read, every table; ids are each store's own and
are the only fields not compared. A row the source's door refuses (perfgate.history.decode)
is not copied, and is named.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from perfgate.errors import PerfgateError
from perfgate.history.store import Dump, HistoryStore

_OWN_KEYS = ("id", "session_id")  # each store numbers its rows itself


@dataclass
class Copied:
    """What a copy did, per table: rows read from the source, rows new in the target."""

    read: dict[str, int] = field(default_factory=dict)
    added: dict[str, int] = field(default_factory=dict)
    left_out: list[str] = field(default_factory=list)  # rows the source's door refused

    def add(self, counts: dict[str, int], into: dict[str, int]) -> None:
        """Sum counts per table into one of the tallies."""
        for k, v in counts.items():
            into[k] = into.get(k, 0) + v


def _canonical(rows: list[dict[str, Any]]) -> list[str]:
    return sorted(
        json.dumps({k: v for k, v in r.items() if k not in _OWN_KEYS}, sort_keys=True) for r in rows
    )


def _compare(uid: str, wrote: Dump, back: Dump, target: str) -> None:
    for table, mine, theirs in (
        ("sessions", wrote.sessions, back.sessions),
        ("session_ends", wrote.ends, back.ends),
        ("runs", wrote.runs, back.runs),
        ("exclusions", wrote.exclusions, back.exclusions),
    ):
        there = set(_canonical(theirs))
        missing = [x for x in _canonical(mine) if x not in there]
        if missing:
            raise PerfgateError(
                f"{target}: session {uid}: {len(missing)} {table} row(s) read back differ "
                f"from the source, e.g. {missing[0][:200]}"
            )


def copy(
    source: HistoryStore,
    target: HistoryStore,
    progress: Callable[[int, int], None] = lambda done, total: None,
) -> Copied:
    """Copy every session of source into target, checked (PerfgateError on a difference)."""
    out = Copied()
    uids = source.session_uids()
    seen = len(source.notes)
    for n, uid in enumerate(uids, start=1):
        dump = source.dump(uid)
        if not dump.sessions:  # its session row was refused by the door: nothing hangs on it
            continue
        out.add(dump.counts(), out.read)
        out.add(target.load(dump), out.added)
        _compare(uid, dump, target.dump(uid), target.location)
        progress(n, len(uids))
    out.left_out = list(source.notes[seen:])
    return out
