"""The A/B loop of the job function: counterbalanced order, pairs added on request, in time.

Real launches on this machine (executor local, container runtime "none": the image names
only label the runs), with the CPU stand-in trainer of the integration tests.
"""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path

from perfgate.launch.job import Job
from perfgate.launch.planning import context
from perfgate.launch.types import LaunchOptions

FAKE_TRAIN = Path(__file__).resolve().parents[1] / "integration" / "fake_train.py"


def ab_job(command_row, tmp_path, more_pairs, pairs=1, max_pairs=3) -> Job:
    row = replace(
        command_row,
        overrides={
            "command": [
                sys.executable,
                str(FAKE_TRAIN),
                "--step-s",
                "0.01",
                "--first-step-s",
                "0.01",
            ]
        },
        steps=4,
    )
    opts = LaunchOptions(
        executor="local",
        container_image="nemo:25.07",
        candidate_image="nemo:25.09",
        container_runtime="none",
        pairs=pairs,
        max_pairs=max_pairs,
        results_dir=str(tmp_path),
    )
    return Job(context(row, opts, tmp_path / "job", more_pairs))


def test_pairs_are_added_in_counterbalanced_order_until_the_callback_is_satisfied(
    command_row, tmp_path, monkeypatch
):
    monkeypatch.delenv("SLURM_RESTART_COUNT", raising=False)
    seen: list[list[str]] = []

    def more(runs):
        seen.append([r.label for r in runs])
        return "3 pairs INCONCLUSIVE" if len(runs) < 6 else False

    result = ab_job(command_row, tmp_path, more, max_pairs=4).run()
    assert result.ok, result.diagnosis
    labels = [r.label for r in result.runs]
    assert labels == ["baseline", "candidate", "candidate", "baseline", "baseline", "candidate"]
    image = {"baseline": "nemo:25.07", "candidate": "nemo:25.09"}
    assert [r.image for r in result.runs] == [image[x] for x in labels]
    # The callback saw every finished launch, each time after a whole pair; it said no at 3.
    assert [len(s) for s in seen] == [2, 4, 6]
    assert "pair 2 added: 3 pairs INCONCLUSIVE" in result.notes
    assert all(r.series is not None and len(r.series.steps) == 4 for r in result.runs)
    manifest = json.loads((tmp_path / "job" / "attempt-0" / "runs.json").read_text())
    assert manifest["planned"] == 6
    assert [e["image_digest"] for e in manifest["runs"]] == [None] * 6  # no file: no digest
    ranks = [
        json.loads((Path(e["run_dir"]) / "ranks" / "rank-0.json").read_text())
        for e in manifest["runs"]
    ]
    assert [r["PERFGATE_IMAGE"] for r in ranks] == [r.image for r in result.runs]


def test_no_pair_beyond_max_pairs_or_the_time_left(command_row, tmp_path, monkeypatch):
    monkeypatch.delenv("SLURM_RESTART_COUNT", raising=False)
    job = ab_job(command_row, tmp_path, lambda runs: True, pairs=1, max_pairs=2)
    with monkeypatch.context() as m:
        m.setattr(Job, "seconds_left", lambda self: 0.5)
        result = job.run()
    assert [r.label for r in result.runs] == ["baseline", "candidate"]
    (note,) = [n for n in result.notes if n.startswith("pair 2 was wanted")]
    assert "the comparison asked for more" in note and "0 s are left" in note

    always = ab_job(command_row, tmp_path / "b", lambda runs: True, pairs=1, max_pairs=2)
    assert len(always.run().runs) == 4  # max_pairs 2 bounds an insatiable callback
