"""bisect.json: the bisection's state and its evidence, rewritten atomically after every change.

    {"schema": "perfgate.bisect/1", "images": [...], "rows": [row ids], "settings": {...},
     "gate": {row id: the gate's verdict line} or null, "probes": [probe, ...], "result": {...}}

A probe is {"kind": "ends"|"midpoint", "index", "image", "dir", "status": "running"|"done"|
"cancelled", "outcome": "bad"|"good"|"undecided", "rows": {row id: evidence}}. `--resume`
reads it back: the finished probes replay the search, a running or cancelled probe runs
again in its own folder (its LaunchSession re-attaches to a job still alive, resubmits a
cancelled one). The same file is the bisection's JSON report.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from perfgate import atomic, inputs
from perfgate.errors import ConfigError

STATE_FILE = "bisect.json"
SCHEMA = "perfgate.bisect/1"


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
    """The saved state (None when there is none); a broken file is one line."""
    try:
        data = json.loads(inputs.read_text(path, ConfigError))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as e:
        raise ConfigError(f"{path}: unreadable bisect state ({e})") from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise ConfigError(f"{path}: not a perfgate bisect state (schema {SCHEMA})")
    return data


def save(path: Path, state: dict[str, Any]) -> None:
    """Replace the file atomically (an interrupted bisection keeps what it had)."""
    atomic.write_json(path, state)


def resumable(saved: dict[str, Any], fresh: dict[str, Any], path: Path) -> dict[str, Any]:
    """The saved state when it is the same bisection (images, rows, settings), else an error."""
    for key, what in (("images", "images"), ("rows", "rows"), ("settings", "settings")):
        if saved.get(key) != fresh.get(key):
            raise ConfigError(
                f"--resume: {path} is a bisection of other {what} ({saved.get(key)!r}); give "
                "the same arguments, or another --results-dir for a new bisection"
            )
    return saved


def finished(state: dict[str, Any]) -> list[dict[str, Any]]:
    """The probes that ended (in order): what the search replays."""
    return [p for p in state["probes"] if p.get("status") == "done"]


def pending(state: dict[str, Any]) -> dict[str, Any] | None:
    """The probe that was running or cancelled when the last session stopped, if any."""
    return next((p for p in state["probes"] if p.get("status") in ("running", "cancelled")), None)
