"""The session's life on real Slurm: concurrency cap, cancellation on signals, resume."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from perfgate import catalog
from perfgate.launch import LaunchOptions, LaunchSession
from perfgate.launch.session import STATE_FILE

pytestmark = pytest.mark.slurm
DRIVER = Path(__file__).resolve().parent / "session_driver.py"


def start_driver(tmp_path: Path, rows, options: dict, resume: bool = False) -> subprocess.Popen:
    cfg = tmp_path / "driver.json"
    cfg.write_text(
        json.dumps(
            {
                "rows": [catalog.row_to_dict(r) for r in rows],
                "options": options,
                "results_dir": str(tmp_path / "results"),
                "resume": resume,
            }
        )
    )
    return subprocess.Popen(
        [sys.executable, str(DRIVER), str(cfg)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def submitted(proc: subprocess.Popen, n: int) -> dict[str, str]:
    """row id -> job id from the driver's first n SUBMITTED lines."""
    out: dict[str, str] = {}
    while len(out) < n:
        line = proc.stdout.readline()
        if not line:
            pytest.fail(f"driver ended early: {proc.stderr.read()}")
        if line.startswith("SUBMITTED "):
            _, rid, jid = line.split()
            out[rid] = jid
    return out


def wait_running(job_ids: list[str], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        out = subprocess.run(
            ["squeue", "-h", "-t", "R", "-o", "%i"], capture_output=True, text=True
        ).stdout.split()
        if all(j in out for j in job_ids):
            return
        time.sleep(0.3)
    pytest.fail(f"jobs {job_ids} not running after {timeout} s")


def wait_gone(squeue_ids, job_ids: list[str], timeout: float = 20) -> list[str]:
    deadline = time.monotonic() + timeout
    left = squeue_ids(job_ids)
    while left and time.monotonic() < deadline:
        time.sleep(0.3)
        left = squeue_ids(job_ids)
    return left


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signal_cancels_every_job_of_the_session(
    slurm_cluster, fake_row, tmp_path, sig, squeue_ids, sacct_jobs
):
    rows = [
        fake_row(f"cancel{sig.value}-{i}", "--step-s", "0.5", steps=200, num_gpus=1)
        for i in range(3)
    ]
    proc = start_driver(tmp_path, rows, {"max_concurrent_jobs": 2, "poll_interval_s": 1.0})
    jobs = submitted(proc, 2)
    wait_running(list(jobs.values()))
    proc.send_signal(sig)
    assert proc.wait(timeout=30) != 0
    assert wait_gone(squeue_ids, list(jobs.values())) == []
    # The third row was waiting for a slot: it was never submitted.
    assert sacct_jobs(f"perfgate-{rows[2].id}") == []
    state = json.loads((tmp_path / "results" / STATE_FILE).read_text())
    assert {state["jobs"][rid]["job_id"] for rid in jobs} == set(jobs.values())
    assert all(state["jobs"][rid]["cancelled"] for rid in jobs)


def test_resume_reattaches_after_the_session_is_killed(
    slurm_cluster, fake_row, tmp_path, sacct_jobs
):
    row = fake_row("resume", "--step-s", "0.2", steps=40, num_gpus=1)
    proc = start_driver(tmp_path, [row], {"poll_interval_s": 1.0})
    jobs = submitted(proc, 1)
    wait_running(list(jobs.values()))
    proc.kill()  # no handler runs: the job keeps going, as after a lost login shell
    proc.wait()
    session = LaunchSession(LaunchOptions(poll_interval_s=1.0), tmp_path / "results", resume=True)
    session.submit_all([row])
    assert session.entries[row.id].job_id == jobs[row.id]
    assert session.entries[row.id].resumed
    r = session.result(row.id)
    assert r.ok, r.diagnosis
    assert r.job_id == jobs[row.id] and len(r.runs[0].series.steps) == 40
    assert [j["job_id"] for j in sacct_jobs(f"perfgate-{row.id}", expect=1)] == [jobs[row.id]]


def test_resume_resubmits_a_cancelled_job(slurm_cluster, fake_row, tmp_path, sacct_jobs):
    row = fake_row("resubmit", "--step-s", "0.05", steps=10, num_gpus=1)
    first = LaunchSession(LaunchOptions(poll_interval_s=1.0), tmp_path)
    first.submit_all([row])
    old = first.entries[row.id].job_id
    first.cancel_all()
    second = LaunchSession(LaunchOptions(poll_interval_s=1.0), tmp_path, resume=True)
    second.submit_all([row])
    r = second.result(row.id)
    assert r.ok, r.diagnosis
    assert r.job_id != old
    got = [j["job_id"] for j in sacct_jobs(f"perfgate-{row.id}", expect=2)]
    assert sorted(got, key=int) == sorted([old, r.job_id], key=int)


def test_concurrency_cap_and_poll(slurm_cluster, fake_row, tmp_path, sacct_jobs):
    rows = [fake_row(f"cap-{i}", "--step-s", "0.1", steps=15, num_gpus=1) for i in range(4)]
    session = LaunchSession(LaunchOptions(max_concurrent_jobs=2, poll_interval_s=0.5), tmp_path)
    session.submit_all(rows)
    first = session.poll()
    assert [s.state for s in first].count("WAITING") == 2
    assert all(s.job_id for s in first[:2])
    results = session.wait_all()
    assert all(r.ok for r in results.values()), [r.diagnosis for r in results.values()]
    spans = []
    for row in rows:
        (job,) = sacct_jobs(f"perfgate-{row.id}", expect=1)
        spans.append((job["start"], job["end"]))
    for t in sorted({s for s, _ in spans}):
        assert sum(1 for s, e in spans if s <= t < e) <= 2  # never more than 2 at once
    assert all(s.done for s in session.poll())


def test_slurm_param_flags_without_a_value_and_sbatch_refusals(slurm_cluster, fake_row, tmp_path):
    from perfgate.suite.settings import parse_slurm_params

    row = fake_row("flag", "--step-s", "0.05", steps=10, num_gpus=1)
    params = parse_slurm_params(["no-requeue=", "comment=perfgate test"])
    assert params == {"no-requeue": True, "comment": "perfgate test"}
    session = LaunchSession(LaunchOptions(poll_interval_s=0.5, slurm_params=params), tmp_path)
    session.submit_all([row])
    e = session.entries[row.id]
    assert "#SBATCH --no-requeue\n" in e.plan.sbatch_script
    job = subprocess.run(
        ["scontrol", "show", "job", "-o", e.job_id], capture_output=True, text=True
    ).stdout
    assert "Requeue=0" in job.split() and "Comment=perfgate" in job
    assert session.result(row.id).ok
    # Refused by sbatch: the result names sbatch's own complaint, not "Try sbatch --help".
    for options, said in [
        (
            LaunchOptions(slurm_params={"bogus-flag": "x"}),
            "sbatch: unrecognized option '--bogus-flag=x'",
        ),
        (
            LaunchOptions(partition="nope"),
            "sbatch: error: invalid partition specified: nope; sbatch: error: Batch job "
            "submission failed: Invalid partition name specified",
        ),
    ]:
        bad = LaunchSession(options, tmp_path / "bad")
        bad.submit_all([row])
        r = bad.result(row.id)
        assert (r.state, r.diagnosis.cause) == ("NOT_SUBMITTED", "SUBMIT")
        assert r.diagnosis.message == f"sbatch refused the job: {said}"
        assert "--help" not in r.diagnosis.message
