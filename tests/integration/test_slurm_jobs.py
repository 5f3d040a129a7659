"""Real jobs on the local Slurm: layout, env, collection, failures, preemption, A/B.

All scenarios of one session are submitted at once (as the plugin does) and each test waits
for its own row, so the module takes about as long as its slowest job (the time limit one).
"""

from __future__ import annotations

import hashlib
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import cloudpickle
import pytest

from perfgate.launch import LaunchOptions, LaunchSession
from perfgate.launch.envs import load_env_file
from perfgate.runs import RunRecord

pytestmark = pytest.mark.slurm
TOKEN = "hf_" + "perfgateTestToken0123456789"
NGC_KEY = "ngc-perfgateTestKey0123"  # no secret by name before #24: stored in clear
# The A/B callback runs inside the job: ship this module's code with it, not a reference.
cloudpickle.register_pickle_by_value(sys.modules[__name__])


def env_file_from_seed(seeds: Path, tmp: Path) -> Path:
    """Seed 000's env_vars.json, written out as a user would save it."""
    text = (seeds / "seed000_env_vars.md").read_text()
    block = text.split("Create an `env_vars.json`", 1)[1].split("```json", 1)[1].split("```")[0]
    path = tmp / "env_vars.json"
    path.write_text(block)
    return path


@pytest.fixture(scope="module")
def scenarios(slurm_cluster, fake_row, tmp_path_factory, seeds) -> Iterator[dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("scenarios")
    env = {**load_env_file(env_file_from_seed(seeds, tmp)), "HF_TOKEN": TOKEN, "NGC_KEY": NGC_KEY}
    rows = {
        # First, so it holds a node when the preemption test runs.
        "preempt": fake_row("preempt", "--step-s", "0.3", steps=40),
        "layout": fake_row(
            "layout",
            "--env",
            "FI_PROVIDER",
            "--env",
            "NVTE_FUSED_ATTN",
            "--env",
            "ROW_VAR",
            "--env",
            "HF_TOKEN",
            "--hash-env",
            "NGC_KEY",
            num_gpus=8,
            gpus_per_node=4,
            env={"ROW_VAR": "from-row"},
        ),
        # Rank 0 re-reads its log every 0.2 s, so steps before the crash are on disk when
        # srun kills it (--kill-on-bad-exit gives no time for a last read).
        "crash": fake_row(
            "crash", "--crash-at", "12", "--fail-rank", "2", env={"PERFGATE_REFRESH_S": "0.2"}
        ),
        "oom": fake_row("oom", "--oom-at", "3", "--fail-rank", "1"),
        # Exits 1 without a traceback: srun --kill-on-bad-exit cancels the step.
        "exit1": fake_row("exit1", program=("sh", "-c", "echo about to fail; exit 1")),
        "nan": fake_row("nan", "--nan-at", "7", steps=12),
        "timeout": fake_row("timeout", "--hang-at", "3", time_limit_min=1),
    }
    old_token = os.environ.get("HF_TOKEN")
    old_key = os.environ.get("NGC_KEY")
    session = LaunchSession(
        LaunchOptions(env=env, poll_interval_s=1.0, mpi="auto"), tmp / "results"
    )
    session.submit_all(rows.values())
    yield {"session": session, "rows": rows, "env": env}
    session.cancel_all()
    if old_token is None:
        os.environ.pop("HF_TOKEN", None)
    else:
        os.environ["HF_TOKEN"] = old_token
    if old_key is None:
        os.environ.pop("NGC_KEY", None)
    else:
        os.environ["NGC_KEY"] = old_key


def status(session: LaunchSession, row_id: str):
    return next(s for s in session.poll() if s.row_id == row_id)


def test_preempted_job_is_requeued_and_only_the_last_attempt_is_measured(scenarios):
    session, row = scenarios["session"], scenarios["rows"]["preempt"]
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        st = status(session, row.id)
        if st.state == "RUNNING" and st.step is not None and st.step >= 2:
            break
        time.sleep(0.5)
    else:
        pytest.fail(f"preempt job never got going: {st.line()}")
    job_id = session.entries[row.id].job_id
    node = subprocess.run(
        ["squeue", "-h", "-j", job_id, "-o", "%N"], capture_output=True, text=True, check=True
    ).stdout.strip()
    # A higher-tier partition's job on the same node: Slurm preempts ours (PreemptMode=REQUEUE).
    subprocess.run(
        [
            "sbatch",
            "-p",
            "urgent",
            "-w",
            node,
            "--exclusive",
            "-J",
            "urgent",
            "-o",
            "/dev/null",
            "--wrap",
            "sleep 2",
        ],
        check=True,
        capture_output=True,
    )
    r = session.result(row.id)
    assert r.ok, r.diagnosis
    assert r.job_id == job_id and r.state == "COMPLETED"
    assert r.attempts == 2
    assert any("only attempt 2 was measured" in n for n in r.notes)
    assert len(r.runs) == 1 and len(r.runs[0].series.steps) == 40
    first = json.loads(
        (Path(r.job_dir) / "attempt-0" / "run-01-baseline" / "steps.json").read_text()
    )
    assert 3 <= len(first["steps"]) < 40  # what the preempted attempt did is kept, not used


def test_multinode_layout_env_file_and_secret(scenarios):
    session, row = scenarios["session"], scenarios["rows"]["layout"]
    r = session.result(row.id)
    assert r.ok, r.diagnosis
    assert r.state == "COMPLETED" and len(r.nodes) == 2
    rdir = Path(r.job_dir) / "attempt-0" / "run-01-baseline"
    ranks = {
        int(p.stem.split("-")[1]): json.loads(p.read_text())
        for p in (rdir / "ranks").glob("rank-*.json")
    }
    assert sorted(ranks) == list(range(8))
    want_token = "sha256:" + hashlib.sha256(TOKEN.encode()).hexdigest()[:16]
    for rank, seen in ranks.items():
        assert seen["SLURMD_NODENAME"] == r.nodes[rank // 4]  # 4 tasks per node, block layout
        assert int(seen["LOCAL_RANK"]) == rank % 4 and seen["WORLD_SIZE"] == "8"
        assert seen["SLURM_PROCID"] == str(rank)
        assert seen["MASTER_ADDR"] == "127.0.0.1"  # n1..n4 do not resolve: NodeAddr is used
        assert seen["MASTER_PORT"] == ranks[0]["MASTER_PORT"]
        assert seen["CUDA_VISIBLE_DEVICES"] == "0,1,2,3"  # --gpus-per-node=4 through gres
        assert seen["FI_PROVIDER"] == "efa" and seen["NVTE_FUSED_ATTN"] == "0"  # env file
        assert seen["ROW_VAR"] == "from-row"
        assert seen["HF_TOKEN"] == want_token  # the secret reached every rank intact
        assert seen["NGC_KEY"] == "sha256:" + hashlib.sha256(NGC_KEY.encode()).hexdigest()[:16]
    series = r.runs[0].series
    assert [s.step for s in series.steps] == list(range(20))
    assert 0.2 < series.steps[0].step_time_s < 1.0  # the slow first step
    assert statistics.median(series.step_times[1:]) == pytest.approx(0.05, rel=0.3)
    # ... but their values are in no file perfgate wrote: spec, manifest, pickles, logs.
    for p in Path(r.job_dir).rglob("*"):
        if p.is_file():
            assert TOKEN.encode() not in p.read_bytes(), p
            assert NGC_KEY.encode() not in p.read_bytes(), p
    spec = json.loads((rdir / "spec.json").read_text())
    assert spec["row"]["env"] == {"ROW_VAR": "***"} and "NGC_KEY" not in spec["env"]
    # The submitted script is the plan's script.
    submitted = Path(r.job_dir) / "submitit" / f"{r.job_id}_submission.sh"
    assert submitted.read_text() == r.sbatch_script


def test_workload_crash_names_the_exception_and_the_rank(scenarios):
    r = scenarios["session"].result(scenarios["rows"]["crash"].id)
    assert r.state == "FAILED"
    assert r.diagnosis.cause == "WORKLOAD_EXCEPTION"
    assert r.diagnosis.evidence == "RuntimeError: fake_train: simulated failure at step 12"
    assert "rank-2.log" in r.diagnosis.message and f"job {r.job_id}" in r.diagnosis.message
    assert r.runs[0].series is not None and len(r.runs[0].series.steps) == 13  # steps 0-12


def test_a_workload_exit_wins_over_the_step_cancel_it_caused(scenarios):
    # Was `INFRA CANCELLED: Slurm killed the job`: slurmstepd's CANCELLED line of the step
    # srun cancelled because the task exited 1.
    r = scenarios["session"].result(scenarios["rows"]["exit1"].id)
    assert r.state == "FAILED" and r.diagnosis is not None
    assert r.diagnosis.cause == "WORKLOAD_EXCEPTION", r.diagnosis
    assert "error: command 'sh' exited with status 1" in r.diagnosis.evidence
    assert f"job {r.job_id}" in r.diagnosis.message


def test_cuda_oom(scenarios):
    r = scenarios["session"].result(scenarios["rows"]["oom"].id)
    assert r.diagnosis.cause == "OOM" and "CUDA out of memory" in r.diagnosis.evidence
    assert "rank-1.log" in r.diagnosis.message


def test_nan_grad_norm(scenarios):
    r = scenarios["session"].result(scenarios["rows"]["nan"].id)
    assert r.diagnosis is not None and r.diagnosis.cause == "NAN", r.diagnosis


def test_time_limit_keeps_the_steps_done(scenarios):
    r = scenarios["session"].result(scenarios["rows"]["timeout"].id)
    assert r.state == "TIMEOUT"
    assert r.diagnosis.cause == "TIMEOUT" and "DUE TO TIME LIMIT" in r.diagnosis.evidence
    assert [s.step for s in r.runs[0].series.steps] == [0, 1, 2]  # hung at step 3


def more_pairs_until_three(runs: list[RunRecord]) -> bool:
    """Stand-in for stats.needs_more_pairs: ask for a third pair once."""
    return len(runs) < 6


def test_ab_counterbalances_images_on_one_allocation_and_grows_by_a_pair(
    slurm_cluster, fake_row, tmp_path
):
    row = fake_row(
        "ab", "--slow-image", "nemo:25.09", "--slowdown", "0.2", "--step-s", "0.05", num_gpus=2
    )
    opts = LaunchOptions(
        container_image="nemo:25.07",
        candidate_image="nemo:25.09",
        container_runtime="none",
        pairs=2,
        max_pairs=3,
        poll_interval_s=1.0,
    )
    session = LaunchSession(opts, tmp_path, more_pairs=more_pairs_until_three)
    session.submit_all([row])
    r = session.result(row.id)
    assert r.ok, r.diagnosis
    # counterbalanced: AB BA, and the added third pair continues with AB
    labels = [x.label for x in r.runs]
    assert labels == ["baseline", "candidate", "candidate", "baseline", "baseline", "candidate"]
    image = {"baseline": "nemo:25.07", "candidate": "nemo:25.09"}
    assert [x.image for x in r.runs] == [image[x] for x in labels]
    assert any("pair 3 added" in n for n in r.notes)
    hosts = set()
    for i, run in enumerate(r.runs, 1):
        seen = json.loads(
            (
                Path(r.job_dir) / "attempt-0" / f"run-{i:02d}-{run.label}" / "ranks" / "rank-0.json"
            ).read_text()
        )
        assert seen["PERFGATE_IMAGE"] == run.image and seen["PERFGATE_RUN_LABEL"] == run.label
        hosts.add(seen["SLURMD_NODENAME"])
    assert len(hosts) == 1  # every run on the same allocation
    med = {
        label: statistics.median(
            t for x in r.runs if x.label == label for t in x.series.step_times[2:]
        )
        for label in ("baseline", "candidate")
    }
    assert med["candidate"] / med["baseline"] == pytest.approx(1.2, abs=0.06)
