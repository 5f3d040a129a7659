"""results.json read back at the door: the one typed reader of `perfgate report`, `perfgate
list`, `perfgate bisect --gate` and every other reader of a session's results.

A results.json is outside input once written: it is mailed, edited, merged by hand. It is
read as perfgate wrote it or not at all, in this order:

- the file: a regular file of at most limits.MAX_RESULTS_BYTES, UTF-8, strict JSON (NaN,
  Infinity, out-of-range numbers and duplicate keys refused), nested at most
  typedjson.MAX_DEPTH deep; schema perfgate.results/1, a session and an environment of the
  declared types: else one line naming the file and the field;
- each row: a record of perfgate.rowrecord's types to the value (typedjson), keyed by its own
  row id (a catalog name), its `row` a row by the catalog's own schema. A row that is not is
  left out with one warning naming the file, the row and the field; the others are shown;
- its text: every string masked by the one masking rule (perfgate.secrets.mask_tree), so a
  results.json written before a secret's shape was known shows it masked too.

An unfinished session's rows come from its rows log (rows.jsonl), each line read the same way
(a torn last line, of a session killed mid-write, is left out silently).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from perfgate import charset, inputs, limits, notices, typedjson
from perfgate.catalog import row_from_dict
from perfgate.errors import ConfigError, PerfgateError
from perfgate.rowrecord import RowRecord, SessionRecord
from perfgate.secrets import mask_tree

SCHEMA = "perfgate.results/1"
MAX_ROWS_LOG_LINE = 64 << 20  # one row's record: a decimated long run is about 1 MB


class BadRecord(ValueError):
    """A row record that is not what perfgate writes (one line, without the file)."""


def check_record(rec: Any, key: str | None = None) -> RowRecord:
    """The record when it is one of perfgate's (types to the value, its id a row name that
    matches key, its row readable by the catalog's schema); BadRecord says why otherwise."""
    try:
        typedjson.check(rec, RowRecord)
    except typedjson.Mismatch as e:
        raise BadRecord(str(e)) from None
    row_id = rec["row_id"]
    if not charset.NAME.fullmatch(row_id) or len(row_id) > limits.MAX_NAME_CHARS:
        raise BadRecord(f"field 'row_id': not a row id ({charset.shown(row_id, 60)})")
    if key is not None and key != row_id:
        raise BadRecord(f"field 'row_id' is {charset.shown(row_id, 60)}, but the row's key")
    try:
        row_from_dict(rec["row"], "field 'row'", rules=False)
    except PerfgateError as e:
        raise BadRecord(str(e)) from None
    return rec


def _rows(data: dict[str, Any], path: Path) -> dict[str, RowRecord]:
    """The readable rows (each other one left out with one warning)."""
    out: dict[str, RowRecord] = {}
    for key, rec in data["rows"].items():
        try:
            out[key] = check_record(rec, key)
        except BadRecord as e:
            notices.warn(f"{path}: row {charset.shown(key, 80)} left out: {e}")
    return out


def _header(data: Any, path: Path) -> dict[str, Any]:
    """The file's own fields, checked: schema, session, environment, rows (an object)."""
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        found = data.get("schema") if isinstance(data, dict) else type(data).__name__
        raise ConfigError(
            f"{path}: field 'schema' is {charset.shown(found, 60)}, expected {SCHEMA!r}"
        )
    try:
        typedjson.check_depth(data)
        typedjson.check(data.get("session", {}), SessionRecord, "session")
        typedjson.check(data.get("environment", {}), dict[str, Any], "environment")
        if not isinstance(data.get("rows"), dict):
            raise typedjson.Mismatch("rows", "an object keyed by row id", data.get("rows"))
    except typedjson.Mismatch as e:
        raise ConfigError(f"{path}: {e}") from None
    for key in ("rows_log", "session_dir"):
        if key in data and not isinstance(data[key], str):
            raise ConfigError(f"{path}: field {key!r}: expected a string")
    return data


def _merge_rows_log(path: Path, data: dict[str, Any]) -> None:
    """An unfinished session's rows, from the rows log its results.json names."""
    log = data.get("rows_log")
    if not isinstance(log, str) or (data.get("session") or {}).get("finished"):
        return
    where = path.parent / log
    try:
        text = inputs.read_text(where, ConfigError, errors="replace",
                                max_bytes=limits.MAX_RESULTS_BYTES, what="rows log")  # fmt: skip
    except OSError:
        return  # the session has no finished row yet, or its folder is gone
    lines = text.splitlines()
    for n, line in enumerate(lines, 1):
        try:
            if len(line) > MAX_ROWS_LOG_LINE:
                raise ConfigError(f"line of {len(line):,} characters")
            rec = inputs.strict_json(line, f"{where}:{n}", ConfigError)
            typedjson.check_depth(rec)
            if not isinstance(rec, dict):
                raise BadRecord("not a JSON object")
            data["rows"][rec.get("row_id")] = check_record(rec)
        except (ConfigError, BadRecord, typedjson.Mismatch) as e:
            if n == len(lines) and not text.endswith("\n"):
                continue  # the last line of a session killed mid-write
            notices.warn(f"{where}: line {n} left out: {e}")


def read(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a results.json (with the rows its session's log holds, while unfinished): the
    file's own fields checked (one line naming the file and field), each row typed or left
    out with a warning, every string masked."""
    path = Path(path)
    try:
        text = inputs.read_text(path, ConfigError, max_bytes=limits.MAX_RESULTS_BYTES,
                                what="results.json")  # fmt: skip
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such results file") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"{path}: not a readable results.json ({e})") from None
    data = _header(inputs.strict_json(text, str(path), ConfigError), path)
    data["rows"] = _rows(data, path)
    _merge_rows_log(path, data)
    return mask_tree(data)
