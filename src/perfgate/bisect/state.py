"""bisect.json: the bisection's state and its evidence, rewritten atomically after every change.

    {"schema": "perfgate.bisect/1", "images": [...], "rows": [row ids], "settings": {...},
     "gate": {row id: the gate's verdict line} or null, "probes": [probe, ...], "result": {...}}

A probe is {"kind": "ends"|"midpoint", "index", "image", "dir", "status": "running"|"done"|
"cancelled", "outcome": "bad"|"good"|"undecided", "rows": {row id: evidence}}. `--resume`
reads it back: the finished probes replay the search, a running or cancelled probe runs
again in its own folder (its LaunchSession re-attaches to a job still alive, resubmits a
cancelled one). The same file is the bisection's JSON report.

Read back (--resume), it is outside input like any file: strict JSON of at most
MAX_BYTES, each field of its declared type (BisectState, perfgate.typedjson), every probe's
index inside the image list (the ends' the last image, a midpoint's strictly between the
ends), its image the one at that index, its folder inside --results-dir, a finished probe's
outcome the one its rows' verdicts give, and the probes in an order the search could have
taken. Anything else is one line naming the file, the probe and the field.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal, TypedDict

from perfgate import atomic, inputs, limits, typedjson
from perfgate.bisect.search import outcome, replay
from perfgate.errors import ConfigError
from perfgate.rowrecord import (
    AbPairRecord,
    AbPhaseRecord,
    Count,
    DriftRecord,
    Fraction,
    Seconds,
)
from perfgate.typedjson import non_negative, positive

STATE_FILE = "bisect.json"
SCHEMA = "perfgate.bisect/1"
MAX_BYTES = 64 << 20  # hundreds of probes of a few rows: a few MB


class _Side(TypedDict, total=False):
    image: str | None
    digest: str | None
    digest_note: str | None
    versions: dict[str, str | None]
    launches: list[Annotated[int, positive]]
    step_time_s: Seconds | None
    spread_s: Annotated[float, non_negative] | None
    n_runs: Count


class _Phases(TypedDict, total=False):
    phases: list[AbPhaseRecord]
    moved: list[str]
    option: str
    ci_level: Fraction
    note: str


class _Ab(TypedDict, total=False):
    """A probe row's A/B record (verdicts.paired; the bisection keeps what it shows)."""

    order: str
    first_pairs: Annotated[int, positive]
    max_pairs: Annotated[int, positive]
    sides: dict[str, _Side]
    changed: dict[str, dict[str, str | None]]
    pairs: list[AbPairRecord]
    no_time_for_more: str | None
    pairs_run: Count
    pairs_used: Count
    pairs_added: Count
    alpha_per_look: Fraction
    drift: DriftRecord | None
    phases: _Phases | None


class _Comparison(TypedDict, total=False):
    delta: float | None
    ci_low: float | None
    ci_high: float | None
    ci_level: Fraction | None
    resolution: float | None
    detectable: float | None
    tolerance: Fraction | None
    alpha: Fraction | None
    reason: str | None


class _Job(TypedDict, total=False):
    job_id: str | None
    job_dir: str | None
    nodes: list[str]


class _Diagnosis(TypedDict, total=False):
    cause: str | None
    message: str | None


class _EvidenceKeys(TypedDict):
    verdict: str


class Evidence(_EvidenceKeys, total=False):
    """One row's verdict in a probe (perfgate.bisect.probe.evidence)."""

    message: str
    comparison: _Comparison | None
    ab: _Ab | None
    jobs: list[_Job]
    diagnosis: _Diagnosis | None


class _ProbeKeys(TypedDict):
    kind: Literal["ends", "midpoint"]
    index: int
    image: str
    dir: str
    status: Literal["running", "done", "cancelled"]


class Probe(_ProbeKeys, total=False):
    """One probe: which image, its folder, how far it got, what it found."""

    outcome: Literal["bad", "good", "undecided"]
    rows: dict[str, Evidence]


class BisectState(TypedDict):
    """bisect.json."""

    schema: str
    images: list[str]
    rows: list[str]
    settings: dict[str, Any]
    gate: dict[str, str] | None
    probes: list[Probe]


def new(images: list[str], rows: list[str], settings: dict[str, Any], gate: Any) -> dict:
    """A fresh state: nothing probed yet."""
    return {
        "schema": SCHEMA,
        "images": list(images),
        "rows": list(rows),
        "settings": dict(settings),
        "gate": gate,
        "probes": [],
        "result": None,
    }


def load(path: Path) -> dict[str, Any] | None:
    """The saved state (None when there is none), checked against BisectState; a broken
    file is one line naming it and the field."""
    try:
        text = inputs.read_text(path, ConfigError, max_bytes=MAX_BYTES, what="bisect.json")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"{path}: unreadable bisect state ({e})") from None
    data = inputs.strict_json(text, str(path), ConfigError)
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise ConfigError(f"{path}: not a perfgate bisect state (schema {SCHEMA})")
    try:
        typedjson.check_depth(data)
        typedjson.check(data, BisectState)
    except typedjson.Mismatch as e:
        raise ConfigError(f"{path}: {e}") from None
    return data


def save(path: Path, state: dict[str, Any]) -> None:
    """Replace the file atomically (an interrupted bisection keeps what it had)."""
    atomic.write_json(path, state)


def resumable(
    saved: dict[str, Any], fresh: dict[str, Any], path: Path, results_dir: Path | None = None
) -> dict[str, Any]:
    """The saved state when it is the same bisection (images, rows, settings) and its probes
    hold together (module doc), else a one-line error."""
    for key, what in (("images", "images"), ("rows", "rows"), ("settings", "settings")):
        if saved.get(key) != fresh.get(key):
            raise ConfigError(
                f"--resume: {path} is a bisection of other {what} "
                f"({typedjson.shown(saved.get(key), 200)}); give the same arguments, or "
                "another --results-dir for a new bisection"
            )
    images, rows = saved["images"], set(saved["rows"])
    root = (results_dir or path.parent).resolve()
    for k, p in enumerate(saved["probes"], 1):
        where = f"--resume: {path}: probe {k}"
        i, n = p["index"], len(images)
        if (p["kind"] == "ends" and i != n - 1) or (p["kind"] == "midpoint" and not 0 < i < n - 1):
            raise ConfigError(f"{where}: index {i} is outside the images 0..{n - 1} a "
                              f"{p['kind']} probe may have")  # fmt: skip
        if p["image"] != images[i]:
            raise ConfigError(f"{where}: image {typedjson.shown(p['image'])} is not image "
                              f"{i + 1} of the list ({typedjson.shown(images[i])})")  # fmt: skip
        folder = Path(p["dir"])
        if (
            len(p["dir"]) > limits.MAX_TEXT_CHARS
            or not folder.is_absolute()
            or not (folder.resolve().is_relative_to(root))
        ):
            raise ConfigError(f"{where}: its folder {typedjson.shown(p['dir'])} is not inside "
                              f"--results-dir {root}")  # fmt: skip
        if p["status"] != "done":
            continue
        evidence = p.get("rows")
        if "outcome" not in p or evidence is None or set(evidence) != rows:
            raise ConfigError(f"{where}: a finished probe needs an outcome and the evidence of "
                              "every row")  # fmt: skip
        expected = outcome(ev["verdict"] for ev in evidence.values())
        if p["outcome"] != expected:
            raise ConfigError(f"{where}: outcome {p['outcome']!r} is not what its rows' verdicts "
                              f"say ({expected!r})")  # fmt: skip
    try:
        replay(len(images), [p for p in finished(saved) if p["kind"] != "ends"])
    except ValueError as e:
        raise ConfigError(f"--resume: {path}: the probes do not follow one search ({e})") from None
    return saved


def finished(state: dict[str, Any]) -> list[dict[str, Any]]:
    """The probes that ended (in order): what the search replays."""
    return [p for p in state["probes"] if p.get("status") == "done"]


def pending(state: dict[str, Any]) -> dict[str, Any] | None:
    """The probe that was running or cancelled when the last session stopped, if any."""
    return next((p for p in state["probes"] if p.get("status") in ("running", "cancelled")), None)
