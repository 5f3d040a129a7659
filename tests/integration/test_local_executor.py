"""--executor local: the same job function on this node, N ranks with torch's variables."""

from __future__ import annotations

import json
from pathlib import Path

from perfgate.launch import LaunchOptions, LaunchSession


def test_local_ranks_get_torch_distributed_env(fake_row, tmp_path):
    row = fake_row("local", "--step-s", "0.02", num_gpus=2, gpus_per_node=8, steps=8)
    session = LaunchSession(LaunchOptions(executor="local", poll_interval_s=0.2), tmp_path)
    session.submit_all([row])
    r = session.result(row.id, timeout_s=120)
    assert r.ok, r.diagnosis
    assert r.state == "LOCAL" and len(r.runs[0].series.steps) == 8
    rdir = Path(r.job_dir) / "attempt-0" / "run-01-baseline"
    seen = [json.loads((rdir / "ranks" / f"rank-{i}.json").read_text()) for i in range(2)]
    assert [s["RANK"] for s in seen] == ["0", "1"] and [s["LOCAL_RANK"] for s in seen] == ["0", "1"]
    assert {s["WORLD_SIZE"] for s in seen} == {"2"}
    assert {s["MASTER_ADDR"] for s in seen} == {"127.0.0.1"}
    assert len({s["MASTER_PORT"] for s in seen}) == 1
    assert all(s["SLURM_PROCID"] is None for s in seen)  # no Slurm involved


def test_local_crash_is_diagnosed(fake_row, tmp_path):
    row = fake_row(
        "localcrash", "--crash-at", "2", "--fail-rank", "1", num_gpus=2, gpus_per_node=8, steps=8
    )
    session = LaunchSession(LaunchOptions(executor="local", poll_interval_s=0.2), tmp_path)
    session.submit_all([row])
    r = session.result(row.id, timeout_s=120)
    assert r.diagnosis.cause == "WORKLOAD_EXCEPTION"
    assert "simulated failure at step 2" in r.diagnosis.evidence
    assert "rank-1.log" in r.diagnosis.message
