"""The session state file: which job runs each row (and test), so --resume can re-attach.

results_dir/launch-session.json, rewritten atomically on every change:
{"version": 1, "executor": ..., "slurm_conf": ..., "updated_at": ..., "jobs": {row_id: {
"test_id", "job_id", "job_dir", "job_name", "submitted_at", "state", "done", "cancelled"}}}.
A job the session cancelled is marked so a resumed session submits the row again.

Read back on --resume it is outside input: each job is checked (typedjson: its declared
types; a Slurm job id of digits, `_` and digits for an array task; its folder inside the
results folder, where a resumed job writes); one that is not is left out with one warning,
and its row is submitted again rather than re-attached to a job that may not be its own.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypedDict

from perfgate import charset, inputs, notices, typedjson
from perfgate.errors import ConfigError
from perfgate.launch.collect import write_json

STATE_FILE = "launch-session.json"
_JOB_ID = re.compile(r"[0-9]{1,20}(?:_[0-9]{1,10})?")
_KEY = re.compile(r"[A-Za-z0-9._-]+(?:~confirm-[0-9]{1,4})?")  # a row id, or its rerun's key


class SavedJob(TypedDict, total=False):
    """One row's job as the state file keeps it."""

    test_id: str | None
    job_id: str | None
    job_dir: str | None
    job_name: str | None
    submitted_at: float | None
    state: str | None
    done: bool
    cancelled: bool


def _why_not(key: object, job: object, root: Path) -> str | None:
    """Why a saved job is not one this session can take over (None: it is)."""
    if not isinstance(key, str) or not _KEY.fullmatch(key):
        return f"not a row id: {charset.shown(key, 60)}"
    try:
        typedjson.check(job, SavedJob)
    except typedjson.Mismatch as e:
        return str(e)
    assert isinstance(job, dict)
    if job.get("job_id") is not None and not _JOB_ID.fullmatch(job["job_id"]):
        return f"field 'job_id': not a Slurm job id: {charset.shown(job['job_id'], 40)}"
    folder = job.get("job_dir")
    if folder is not None and not Path(folder).resolve().is_relative_to(root.resolve()):
        return f"field 'job_dir': {charset.shown(folder, 60)} is not inside {root}"
    return None


def load(path: Path) -> dict[str, dict[str, Any]]:
    """The jobs of a state file ({} when there is none); a one-line error when it is broken."""
    try:
        data = json.loads(
            inputs.read_text(path, ConfigError, max_bytes=64 << 20, what="state file")
        )
    except FileNotFoundError:
        return {}
    except (OSError, ValueError, RecursionError) as e:
        raise ConfigError(f"{path}: unreadable session state ({e})") from None
    if not isinstance(data, dict) or not isinstance(data.get("jobs"), dict):
        raise ConfigError(f"{path}: field 'jobs' missing; not a session state file")
    out = {}
    for key, job in data["jobs"].items():
        why = _why_not(key, job, path.parent)
        if why is None:
            out[key] = job
        else:
            notices.warn(
                f"{path}: job of {charset.shown(key, 60)} left out ({why}): submitted again"
            )
    return out


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
