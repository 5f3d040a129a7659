"""The session state file read back on --resume (#29): a saved job that is not one this
session can take over (a job id that is not Slurm's, a folder outside the results folder,
a field of another type) is left out with one warning and its row submitted again."""

from __future__ import annotations

import json

from perfgate import notices
from perfgate.launch import statefile

GOOD = {"job_id": "123", "job_dir": None, "cancelled": False, "done": False}


def test_saved_jobs_that_cannot_be_ours_are_left_out(tmp_path):
    jobs = {
        "row-a": {**GOOD, "job_dir": str(tmp_path / "jobs" / "row-a" / "x")},
        "row-a~confirm-1": GOOD,
        "row-b": {**GOOD, "job_id": "--help"},
        "row-c": {**GOOD, "job_dir": "/etc"},
        "row-d": {**GOOD, "done": "yes"},
        "../x": GOOD,
        "row-e": [],
    }
    path = tmp_path / statefile.STATE_FILE
    path.write_text(json.dumps({"version": 1, "jobs": jobs}))
    said: list[str] = []
    with notices.routed(said.append):
        assert sorted(statefile.load(path)) == ["row-a", "row-a~confirm-1"]
    assert len(said) == 5 and all("submitted again" in s and "\n" not in s for s in said)
    assert any("field 'job_id': not a Slurm job id: '--help'" in s for s in said)
    assert any("field 'job_dir': '/etc' is not inside" in s for s in said)
