"""The session state file: which job runs each row (and test), so --resume can re-attach.

results_dir/launch-session.json, rewritten atomically on every change:
{"version": 1, "executor": ..., "slurm_conf": ..., "updated_at": ..., "jobs": {row_id: {
"test_id", "job_id", "job_dir", "job_name", "submitted_at", "state", "done", "cancelled"}}}.
A job the session cancelled is marked so a resumed session submits the row again.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from perfgate import inputs
from perfgate.errors import ConfigError
from perfgate.launch.collect import write_json

STATE_FILE = "launch-session.json"


def load(path: Path) -> dict[str, dict[str, Any]]:
    """The jobs of a state file ({} when there is none); a one-line error when it is broken."""
    try:
        data = json.loads(inputs.read_text(path, ConfigError))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as e:
        raise ConfigError(f"{path}: unreadable session state ({e})") from None
    if not isinstance(data, dict) or not isinstance(data.get("jobs"), dict):
        raise ConfigError(f"{path}: field 'jobs' missing; not a session state file")
    return data["jobs"]


def record(entry: Any, prefix: str, saved: dict[str, dict[str, Any]], cancelled: set[str]) -> dict:
    """One row's line in the state file, from a session entry."""
    old = saved.get(entry.id, {})
    info_state = entry.info.state if entry.info else None
    return {
        "row_id": entry.id,
        "test_id": entry.test_id,
        "job_id": entry.job_id,
        "job_dir": entry.plan.job_dir,
        "job_name": f"{prefix}-{entry.row.id}",
        "submitted_at": entry.submitted_at,
        "state": entry.result.state if entry.result else info_state,
        "done": entry.done,
        "cancelled": entry.job_id in cancelled
        or bool(old.get("cancelled") and old.get("job_id") == entry.job_id),
    }


def save(path: Path, records: Sequence[dict[str, Any]], executor: str) -> dict[str, dict]:
    """Write the state file atomically; returns the jobs as saved."""
    jobs = {r.pop("row_id"): r for r in (dict(x) for x in records)}
    write_json(
        path,
        {
            "version": 1,
            "executor": executor,
            "slurm_conf": os.environ.get("SLURM_CONF"),
            "updated_at": time.time(),
            "jobs": jobs,
        },
    )
    return jobs
