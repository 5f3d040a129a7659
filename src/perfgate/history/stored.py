"""The history's rows read at the door: a stored row -> a typed record, in one function each.

A history file is shared between sessions, users and clusters, and anything can have written
it: every row any backend returns (sqlite's `HistoryStore`; a PostgreSQL store reads through
the same functions) becomes a StoredRun or StoredSession here, or is left out with one
warning naming the file and the run (or session) id and the field. JSON columns may come as
text (sqlite) or already decoded (a JSON column type). Node names go through the one grammar
(perfgate.nodenames): a name outside it is dropped, the run kept.

What the suite and the commands take from the runs (a row's trend points, the node test's
runs) is selected here too, so every backend selects the same runs.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

from perfgate import charset, limits, nodenames, notices
from perfgate.history.nodes import NodeRun
from perfgate.history.trend import Point

MODES = ("stored", "repeat", "paired")
_WORD = re.compile(r"[A-Z][A-Z_]{0,31}")  # a verdict or an INFRA cause
_JOB_ID = re.compile(r"[A-Za-z0-9._+-]{1,64}")
Warn = Callable[[str], None]


class BadRow(ValueError):
    """A stored row that is not what perfgate writes: which field, and why (one line)."""


@dataclass(frozen=True)
class StoredRun:
    """One run as the store keeps it, with its session's fields (typed, checked)."""

    id: int
    session_id: int
    row_id: str
    mode: str
    label: str
    launch: int
    recorded_at: str
    steady: bool
    started_at: str
    session_mode: str
    step_time_s: float | None = None
    rel_se: float | None = None
    n_steady: int | None = None
    job_id: str | None = None
    attempt: int | None = None
    tokens_per_s_per_gpu: float | None = None
    mfu: float | None = None
    nodes: tuple[str, ...] = ()
    image: str | None = None
    image_digest: str | None = None
    versions: dict[str, str] = field(default_factory=dict)
    verdict: str | None = None
    cause: str | None = None
    delta: float | None = None
    cluster: str | None = None
    host: str | None = None
    excluded: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The run as plain data (the keys `HistoryStore.runs` has always returned)."""
        d = asdict(self)
        d["nodes"] = list(self.nodes)
        return d


@dataclass(frozen=True)
class StoredSession:
    """One session as the store keeps it (typed, checked)."""

    id: int
    started_at: str
    mode: str
    host: str | None = None
    cluster: str | None = None
    images: tuple[str, ...] = ()
    perfgate_version: str | None = None
    git_describe: str | None = None
    command: str | None = None
    finished_at: str | None = None
    excluded: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The session as plain data (the keys `HistoryStore.sessions` has always returned)."""
        d = asdict(self)
        d["images"] = list(self.images)
        return d


# --- one field at a time ----------------------------------------------------------------------


def _get(row: Mapping[str, Any], key: str, required: bool = False) -> Any:
    try:
        value = row[key]
    except (KeyError, IndexError):
        if required:
            raise BadRow(f"field {key!r} is missing") from None
        return None
    if value is None and required:
        raise BadRow(f"field {key!r} is empty")
    return value


def _bad(key: str, expected: str, value: Any) -> BadRow:
    return BadRow(f"field {key!r}: expected {expected}, not {charset.shown(value, 60)}")


def _int(row: Mapping[str, Any], key: str, low: int, required: bool = False) -> int | None:
    v = _get(row, key, required)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int) or v < low:
        raise _bad(key, f"an integer of at least {low}", v)
    return v


def _float(
    row: Mapping[str, Any],
    key: str,
    low: float | None = None,
    high: float | None = None,
    above: bool = False,
) -> float | None:
    """A finite number of at least low (above low: above), at most high, or None."""
    v = _get(row, key)
    if v is None:
        return None
    ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
    if ok and low is not None:
        ok = v > low if above else v >= low
    if ok and high is not None:
        ok = v <= high
    if not ok:
        what = "a finite number"
        if low is not None:
            what += f" {'above' if above else 'of at least'} {low:g}"
        raise _bad(key, what + (f", at most {high:g}" if high is not None else ""), v)
    return float(v)


def _text(
    row: Mapping[str, Any], key: str, required: bool = False, cap: int = limits.MAX_TEXT_CHARS
) -> str | None:
    v = _get(row, key, required)
    if v is None:
        return None
    if not isinstance(v, str):
        raise _bad(key, "text", v)
    if len(v) > cap:
        raise _bad(key, f"text of at most {cap:,} characters", v)
    ch = charset.bad_char(v)
    if ch is not None:
        raise _bad(key, f"text without control characters ({ch!r})", v)
    return v


def _match(row: Mapping[str, Any], key: str, rule: re.Pattern[str], what: str,
           required: bool = False) -> str | None:  # fmt: skip
    v = _get(row, key, required)
    if v is None:
        return None
    if not isinstance(v, str) or not rule.fullmatch(v):
        raise _bad(key, what, v)
    return v


def _stamp(row: Mapping[str, Any], key: str, required: bool = False) -> str | None:
    v = _get(row, key, required)
    if v is None:
        return None
    if isinstance(v, datetime):  # a timestamp column type
        return v.isoformat()
    try:
        if not isinstance(v, str) or len(v) > 64:
            raise ValueError
        datetime.fromisoformat(v)
    except ValueError:
        raise _bad(key, "an ISO 8601 time", v) from None
    return v


def _json(row: Mapping[str, Any], key: str, kind: type) -> Any:
    v = _get(row, key)
    if v is None:
        return kind()
    if isinstance(v, (str, bytes)):
        try:
            v = json.loads(v)
        except (ValueError, RecursionError):
            raise _bad(key, f"JSON ({'a list' if kind is list else 'an object'})", v) from None
    if not isinstance(v, kind):
        raise _bad(key, "a JSON list" if kind is list else "a JSON object", v)
    return v


def _steady(row: Mapping[str, Any]) -> bool:
    v = _get(row, "steady", required=True)
    if v not in (0, 1) or isinstance(v, float):
        raise _bad("steady", "0 or 1", v)
    return bool(v)


def _versions(row: Mapping[str, Any]) -> dict[str, str]:
    found = _json(row, "versions", dict)
    for k, v in found.items():
        if not isinstance(v, str) or charset.bad_char(k) or charset.bad_char(v):
            raise _bad(f"versions.{charset.shown(k, 40)}", "one line of text", v)
    return found


# --- rows -> records ------------------------------------------------------------------------


def run_record(row: Mapping[str, Any], source: str, warn: Warn = notices.warn) -> StoredRun:
    """One stored run (a runs row joined with its session's fields) as a typed record;
    BadRow names the field. Bad node names are dropped with a warning naming source."""
    run_id = _int(row, "id", 1, required=True)
    assert run_id is not None
    nodes = nodenames.names(_json(row, "nodes", list), f"{source}: run {run_id}: nodes", warn)
    step = _float(row, "step_time_s", 0.0, limits.STEP_TIME_S.value, above=True)
    return StoredRun(
        id=run_id,
        session_id=_int(row, "session_id", 1, required=True),  # type: ignore[arg-type]
        row_id=_match(row, "row_id", charset.NAME, "a row id", required=True),  # type: ignore[arg-type]
        mode=_choice(row, "mode", MODES),
        label=_text(row, "label", required=True, cap=limits.MAX_NAME_CHARS),  # type: ignore[arg-type]
        launch=_int(row, "launch", 1, required=True),  # type: ignore[arg-type]
        recorded_at=_stamp(row, "recorded_at", required=True),  # type: ignore[arg-type]
        steady=_steady(row),
        started_at=_stamp(row, "started_at", required=True),  # type: ignore[arg-type]
        session_mode=_match(row, "session_mode", charset.NAME, "a mode", required=True),  # type: ignore[arg-type]
        step_time_s=step,
        rel_se=_float(row, "rel_se", 0.0),
        n_steady=_int(row, "n_steady", 0),
        job_id=_match(row, "job_id", _JOB_ID, "a job id"),
        attempt=_int(row, "attempt", 0),
        tokens_per_s_per_gpu=_float(row, "tokens_per_s_per_gpu", 0.0),
        mfu=_float(row, "mfu", 0.0),
        nodes=nodes,
        image=_text(row, "image"),
        image_digest=_text(row, "image_digest", cap=limits.MAX_NAME_CHARS),
        versions=_versions(row),
        verdict=_match(row, "verdict", _WORD, "a verdict word"),
        cause=_match(row, "cause", _WORD, "a cause word"),
        delta=_float(row, "delta"),
        cluster=_text(row, "cluster", cap=limits.MAX_NAME_CHARS),
        host=_text(row, "host", cap=limits.MAX_NAME_CHARS),
        excluded=_text(row, "excluded"),
    )


def _choice(row: Mapping[str, Any], key: str, allowed: tuple[str, ...]) -> str:
    v = _get(row, key, required=True)
    if v not in allowed:
        raise _bad(key, "one of " + ", ".join(allowed), v)
    return v


def session_record(row: Mapping[str, Any]) -> StoredSession:
    """One stored session (with finished_at and excluded) as a typed record; BadRow if not."""
    images = _json(row, "images", list)
    for i, image in enumerate(images):
        if not isinstance(image, str) or charset.bad_char(image):
            raise _bad(f"images[{i}]", "one line of text", image)
    return StoredSession(
        id=_int(row, "id", 1, required=True),  # type: ignore[arg-type]
        started_at=_stamp(row, "started_at", required=True),  # type: ignore[arg-type]
        mode=_match(row, "mode", charset.NAME, "a mode", required=True),  # type: ignore[arg-type]
        host=_text(row, "host", cap=limits.MAX_NAME_CHARS),
        cluster=_text(row, "cluster", cap=limits.MAX_NAME_CHARS),
        images=tuple(images),
        perfgate_version=_text(row, "perfgate_version", cap=limits.MAX_NAME_CHARS),
        git_describe=_text(row, "git_describe", cap=limits.MAX_NAME_CHARS),
        command=_text(row, "command"),
        finished_at=_stamp(row, "finished_at"),
        excluded=_text(row, "excluded"),
    )


def read_runs(
    rows: Iterable[Mapping[str, Any]], source: str, warn: Warn = notices.warn
) -> list[StoredRun]:
    """The runs of these rows that read as typed records; each other one is left out with
    one warning naming source (the file), its run id and the field."""
    out = []
    for row in rows:
        try:
            out.append(run_record(row, source, warn))
        except BadRow as e:
            warn(f"{source}: run {_id_of(row)} left out: {e}")
    return out


def read_sessions(
    rows: Iterable[Mapping[str, Any]], source: str, warn: Warn = notices.warn
) -> list[StoredSession]:
    """The sessions of these rows that read as typed records (others left out, one warning
    each naming source and the session id)."""
    out = []
    for row in rows:
        try:
            out.append(session_record(row))
        except BadRow as e:
            warn(f"{source}: session {_id_of(row)} left out: {e}")
    return out


def _id_of(row: Mapping[str, Any]) -> str:
    try:
        v = row["id"]
    except (KeyError, IndexError):
        return "?"
    return str(v) if isinstance(v, int) else charset.shown(v, 30)


# --- what the suite takes from the runs --------------------------------------------------------


def _cluster_ok(run: StoredRun, cluster: str | None) -> bool:
    return cluster is None or run.cluster in (None, cluster)


def trend_points(runs: Iterable[StoredRun], cluster: str | None = None) -> list[Point]:
    """A row's trend: its steady, undiagnosed runs of single-image sessions not forgotten.

    A/B sessions are kept but not part of the trend (two images in one job), nor is a run
    judged UNCONFIRMED (a confirmation on other nodes did not reproduce its slowdown: its
    nodes, not the row, were slow; the confirmation run stands for the night). cluster, when
    given, keeps runs of that Slurm cluster (and those with none recorded).
    """
    return [
        Point(
            session_id=r.session_id,
            started_at=r.started_at,
            step_time_s=r.step_time_s,
            rel_se=r.rel_se,
            job_id=r.job_id,
            container=r.image,
            versions=dict(r.versions),
            verdict=r.verdict,
            label=r.label,
            nodes=r.nodes,
        )
        for r in runs
        if r.steady
        and r.step_time_s
        and r.cause is None
        and r.excluded is None
        and r.verdict != "UNCONFIRMED"
        and r.mode in ("stored", "repeat")
        and _cluster_ok(r, cluster)
    ]


def node_runs(runs: Iterable[StoredRun], cluster: str | None = None) -> list[NodeRun]:
    """Every steady, undiagnosed run with its nodes, in sessions not forgotten (A/B and repeat
    runs too: a slow node slows any launch), for perfgate.history.nodes."""
    return [
        NodeRun(r.row_id, r.step_time_s, r.nodes, r.job_id)
        for r in runs
        if r.steady
        and r.cause is None
        and r.step_time_s is not None
        and r.nodes
        and r.excluded is None
        and _cluster_ok(r, cluster)
    ]
