"""A stored row -> the plain dict readers use: one door for both stores (decode_row, and
decode_rows for a query's rows at once: the same checks, a column at a time).

sqlite hands JSON columns over as text and flags as 0/1, PostgreSQL as decoded JSON and
integers; both come through decode_row, which also checks what a reader relies on (a hostile
or corrupt history must not reach a verdict, a terminal or an sbatch line): JSON lists of
names, a mapping of versions, finite numbers, positive step times of at most a day, row ids
that are row ids (charset.NAME), job ids and verdict words of their shapes, text without a
control character (no ESC, newline or bidi override reaches a terminal). A row that fails is
left out with one note naming the store, the table, the row's id and the field. Node names go
through the one grammar (perfgate.nodenames): a name outside it is dropped with a note and the
run kept (its step time is good), so no stored name reaches a confirmation's --exclude.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from functools import lru_cache
from typing import Any

from perfgate import charset, limits, nodenames

_LISTS = ("images",)
_FLOATS = (
    "step_time_s",
    "rel_se",
    "tokens_per_s_per_gpu",
    "mfu",
    "delta",
    "baseline_s",
    "tolerance",
)
_POSITIVE = ("step_time_s", "rel_se", "tokens_per_s_per_gpu", "mfu", "baseline_s", "tolerance")
_INTS = ("id", "session_id", "launch", "attempt", "n_steady")
_TEXTS = ("mode", "label", "session_mode", "uid")
# What a terminal acts on, or what splits a line (charset.bad_char's set, as one regex)
_CONTROL = re.compile(
    "[\x00-\x1f\x7f-\x9f\u2028\u2029\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)
ROW_ID = re.compile(rf"[A-Za-z0-9._-]{{1,{limits.MAX_NAME_CHARS}}}")  # charset.NAME, bounded
_SHAPES = {  # columns whose values have a shape of their own
    "row_id": (ROW_ID, "a row id"),
    "job_id": (re.compile(r"[A-Za-z0-9._+-]{1,64}"), "a job id"),
    "verdict": (re.compile(r"[A-Z][A-Z_]{0,31}"), "a verdict word"),
    "cause": (re.compile(r"[A-Z][A-Z_]{0,31}"), "a cause word"),
}
_STAMPS = ("started_at", "recorded_at", "finished_at", "created_at")
# ISO 8601 as perfgate writes it (both stores sort these as text; PostgreSQL's views cast them)
_STAMP = re.compile(r"\d{4}-\d\d-\d\d(T\d\d:\d\d(:\d\d(\.\d{1,6})?)?)?(Z|[+-]\d\d:\d\d)?")


class _Bad(ValueError):
    pass


def _json(value: Any, key: str) -> Any:
    if isinstance(value, str | bytes):
        try:
            return json.loads(value)
        except ValueError:
            raise _Bad(f"{key} is not JSON") from None
    return value


def _names(key: str, value: Any) -> list[str]:
    value = _json(value, key)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _Bad(f"{key} is not a list of names")
    if any(_CONTROL.search(v) for v in value):
        raise _Bad(f"{key} holds a control character")
    return value


def _node_names(key: str, value: Any) -> list[str]:
    """A JSON list; names outside the one grammar are dropped (by decode_row, with a note)."""
    value = _json(value, key)
    if not isinstance(value, list):
        raise _Bad(f"{key} is not a list of names")
    return value


def _versions(key: str, value: Any) -> dict[str, str]:
    value = _json(value, key)
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise _Bad("versions is not a mapping of names to versions")
    return value


def _steady(key: str, value: Any) -> bool:
    if value not in (0, 1):  # True and False are 1 and 0
        raise _Bad(f"steady is {value!r}, not 0 or 1")
    return bool(value)


def _number(key: str, value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _Bad(f"{key} is not a number")
    value = float(value)
    if not math.isfinite(value) or (key in _POSITIVE and value < 0):
        raise _Bad(f"{key} is {value!r}")
    if key == "step_time_s" and not 0 < value <= limits.STEP_TIME_S.value:
        raise _Bad(f"step_time_s is {value!r}, not in (0, {limits.STEP_TIME_S.value:g}] s")
    return value


def _integer(key: str, value: Any) -> int | None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
        raise _Bad(f"{key} is not an integer")
    return value


def _text(key: str, value: Any) -> str | None:
    if value is not None and not isinstance(value, str):
        raise _Bad(f"{key} is not text")
    if value is not None and (m := _CONTROL.search(value)):
        what = "a NUL character" if m.group() == "\x00" else f"control character {m.group()!r}"
        raise _Bad(f"{key} holds {what}")
    if value is not None and key in _SHAPES and not _SHAPES[key][0].fullmatch(value):
        raise _Bad(f"{key} {charset.shown(value, 40)} is not {_SHAPES[key][1]}")
    return value


def _stamp(key: str, value: Any) -> str | None:
    if value is not None and not _is_stamp(value):
        raise _Bad(f"{key} is not an ISO 8601 time")
    return value


@lru_cache(maxsize=1 << 16)  # a session's start is read once per row of it
def _is_stamp(value: Any) -> bool:
    if not isinstance(value, str) or not _STAMP.fullmatch(value):
        return False
    try:
        datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return False
    return True


_CHECKS: dict[str, Callable[[str, Any], Any]] = {
    **dict.fromkeys(_LISTS, _names),
    "nodes": _node_names,
    **dict.fromkeys(_SHAPES, _text),
    "versions": _versions,
    "steady": _steady,
    **dict.fromkeys(_FLOATS, _number),
    **dict.fromkeys(_INTS, _integer),
    **dict.fromkeys(_TEXTS, _text),
    **dict.fromkeys(_STAMPS, _stamp),
}


def _other(key: str, value: Any) -> Any:
    if isinstance(value, str):
        return _text(key, value)
    return value


def decode_row(
    raw: Mapping[str, Any], where: str, table: str, notes: list[str]
) -> dict[str, Any] | None:
    """One stored row as a plain dict (JSON decoded, steady a bool), or None with a note in
    notes when a field is not what perfgate writes."""
    try:
        row = {k: _CHECKS.get(k, _other)(k, v) for k, v in raw.items()}
    except _Bad as e:
        _note(notes, f"{where}: {table} row {raw.get('id')!r} left out: {e}")
        return None
    if "nodes" in row:
        where_nodes = f"{where}: {table} row {raw.get('id')!r}: nodes"
        kept = nodenames.names(row["nodes"], where_nodes, lambda line: _note(notes, line))
        row["nodes"] = list(kept)
    return row


def _note(notes: list[str], note: str) -> None:
    if note not in notes:
        notes.append(note)


def _json_column(col: list[Any]) -> list[Any] | None:
    try:
        return [json.loads(v) if isinstance(v, str) else v for v in col]
    except ValueError:
        return None


def _names_column(key: str, col: list[Any]) -> list[Any] | None:
    vals = _json_column(col)
    ok = vals is not None and all(
        type(x) is list and all(type(n) is str and not _CONTROL.search(n) for n in x) for x in vals
    )
    return vals if ok else None


def _node_names_column(key: str, col: list[Any]) -> list[Any] | None:
    vals = _json_column(col)
    ok = vals is not None and all(
        type(x) is list and all(nodenames.is_name(n) for n in x) for x in vals
    )
    return vals if ok else None


def _versions_column(key: str, col: list[Any]) -> list[Any] | None:
    vals = _json_column(col)
    ok = vals is not None and all(
        type(x) is dict and all(type(k) is str and type(v) is str for k, v in x.items())
        for x in vals
    )
    return vals if ok else None


def _steady_column(key: str, col: list[Any]) -> list[Any] | None:
    return [v == 1 for v in col] if all(v == 0 or v == 1 for v in col) else None


def _number_column(key: str, col: list[Any]) -> list[Any] | None:
    # v - v == 0 only for finite floats; the rest (ints, NaN, inf, text) take the slow path
    ok = all(v is None or (type(v) is float and v - v == 0) for v in col)
    if ok and key in _POSITIVE:
        ok = all(v is None or v >= 0 for v in col)
    if ok and key == "step_time_s":
        ok = all(v is None or 0 < v <= limits.STEP_TIME_S.value for v in col)
    return col if ok else None


def _integer_column(key: str, col: list[Any]) -> list[Any] | None:
    return col if all(v is None or type(v) is int for v in col) else None


def _text_column(key: str, col: list[Any]) -> list[Any] | None:
    ok = all(v is None or (type(v) is str and not _CONTROL.search(v)) for v in col)
    if ok and key in _STAMPS:
        ok = all(v is None or _is_stamp(v) for v in col)
    if ok and key in _SHAPES:
        rule = _SHAPES[key][0]
        ok = all(v is None or rule.fullmatch(v) for v in col)
    return col if ok else None


def _other_column(key: str, col: list[Any]) -> list[Any] | None:
    return col if all(type(v) is not str or not _CONTROL.search(v) for v in col) else None


_COLUMNS: dict[str, Callable[[str, list[Any]], list[Any] | None]] = {
    **dict.fromkeys(_LISTS, _names_column),
    "nodes": _node_names_column,
    **dict.fromkeys(_SHAPES, _text_column),
    "versions": _versions_column,
    "steady": _steady_column,
    **dict.fromkeys(_FLOATS, _number_column),
    **dict.fromkeys(_INTS, _integer_column),
    **dict.fromkeys((*_TEXTS, *_STAMPS), _text_column),
}


def decode_rows(
    raws: Sequence[Mapping[str, Any]], where: str, table: str, notes: list[str]
) -> list[dict[str, Any]]:
    """Many stored rows (one query's) through the door: each column checked at once, and
    the rows one by one (decode_row, with its notes) only when a column has a bad value."""
    rows = [dict(r) for r in raws]
    if not rows:
        return []
    keys = list(rows[0])
    columns = []
    for key in keys:
        col = _COLUMNS.get(key, _other_column)(key, [r[key] for r in rows])
        if col is None:
            return [d for r in rows if (d := decode_row(r, where, table, notes)) is not None]
        columns.append(col)
    return [dict(zip(keys, values, strict=True)) for values in zip(*columns, strict=True)]
