"""The plugin on the real local Slurm: `pytest` submits real jobs, as users run it.

One sweep of four rows (a row exceeding its 1-minute time limit, a passing 2-node row, a
passing 1-node row and a crashing row: five nodes wanted, four exist) is submitted at
session start, so the module takes about as long as its slowest job. Then Ctrl-C of a pytest
process, and --resume after one is killed.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from rowfactory import command_row, with_baseline
from slurm_suite import SuiteDir, running, sacct_fields

pytestmark = pytest.mark.slurm
POLL = ("--all-rows", "--poll-interval", "0.5")


def one_node(name: str, *args: str, **kw: Any):
    return command_row(name, *args, num_gpus=4, gpus_per_node=4, time_limit_min=2, **kw)


# The passing rows log their modeled step times (fake_train --modeled): on a loaded machine a
# 30 ms sleep drifted 5.1% between the halves of the window and the row became INFRA.
OK = with_baseline(
    command_row("ok", "--modeled", num_gpus=8, gpus_per_node=4, time_limit_min=2),
    0.0305,
    tolerance=0.5,
)
OK1 = with_baseline(one_node("ok1", "--modeled"), 0.0305, tolerance=0.5)
# Rank 0 re-reads its log every 0.2 s, so steps before the crash are kept when srun kills it.
CRASH = one_node("crash", "--crash-at", "8", "--fail-rank", "1", env={"PERFGATE_REFRESH_S": "0.2"})
TIMEOUT = command_row("timeout", "--hang-at", "3", num_gpus=4, gpus_per_node=4, time_limit_min=1)


@pytest.fixture(scope="module")
def sweep(slurm_cluster, tmp_path_factory) -> dict[str, Any]:
    suite = SuiteDir(tmp_path_factory.mktemp("sweep"))
    suite.write_rows([TIMEOUT, OK, OK1, CRASH])  # the slowest first: it gets a node at once
    code, out, wall = suite.run(*POLL, "-v", "--junitxml", "junit.xml")
    rows = suite.results()["rows"]
    return {"code": code, "out": out, "wall": wall, "rows": rows, "suite": suite}


def test_sweep_outcomes(sweep):
    assert sweep["code"] == 1, sweep["out"]  # rows errored: exit status 1
    summary = sweep["out"].strip().splitlines()[-1]
    assert "2 passed" in summary and "2 errors" in summary, sweep["out"]


def test_passing_row_ran_on_two_nodes(sweep):
    rec = sweep["rows"][OK.id]
    assert rec["verdict"] == "PASS" and rec["outcome"] == "passed"
    assert rec["job"]["state"] == "COMPLETED" and len(rec["job"]["nodes"]) == 2
    assert [s for s, _ in rec["runs"][0]["steps"]] == list(range(20))
    assert 0.028 < rec["measured"]["step_time_s"] < 0.04
    assert f"perfgate: {OK.id} done: PASS" in sweep["out"]


def test_crashing_row_is_an_error_with_cause_and_log_tail(sweep):
    rec = sweep["rows"][CRASH.id]
    job = rec["job"]["job_id"]
    out = sweep["out"]
    assert rec["verdict"] == "INFRA" and rec["outcome"] == "error"
    assert f"{CRASH.id}: INFRA WORKLOAD_EXCEPTION (job {job}): " in out
    assert "evidence: RuntimeError: fake_train: simulated failure at step 8" in out
    assert "--- log tail ---" in out and "rank-1.log" in rec["diagnosis"]["message"]
    assert "simulated failure at step 8" in rec["diagnosis"]["log_tail"]
    # what ran before the crash is kept: rank 0 logged steps 0-8, then was ended by srun
    assert [s for s, _ in rec["runs"][0]["steps"]] == list(range(9))


def test_row_past_its_time_limit_is_a_timeout_error(sweep):
    rec = sweep["rows"][TIMEOUT.id]
    assert rec["verdict"] == "INFRA" and rec["job"]["state"] == "TIMEOUT"
    assert rec["diagnosis"]["cause"] == "TIMEOUT"
    assert "DUE TO TIME LIMIT" in rec["diagnosis"]["evidence"]
    assert f"{TIMEOUT.id}: INFRA TIMEOUT (job {rec['job']['job_id']})" in sweep["out"]
    assert [s for s, _ in rec["runs"][0]["steps"]] == [0, 1, 2]  # hung at step 3


def test_all_rows_submitted_at_session_start_and_states_shown(sweep):
    out, rows = sweep["out"], sweep["rows"]
    lines = out.splitlines()
    first_done = min(i for i, ln in enumerate(lines) if re.match(r"perfgate: \S+ done: ", ln))
    for rid, rec in rows.items():
        job = rec["job"]["job_id"]
        shown = [i for i, ln in enumerate(lines) if ln.startswith(f"perfgate: {rid} job {job} ")]
        # every row had a job and a state on the terminal before any row was done
        assert shown and shown[0] < first_done, rid
        done = lines.index(f"perfgate: {rid} done: {rec['verdict']}")
        assert shown[-1] < done
    # Not a terminal: a row's line is printed when its state changes, not on every poll: no
    # line twice (how many states a loaded machine lets the poll see is Slurm's timing)
    for rid in rows:
        own = [ln for ln in lines if ln.startswith(f"perfgate: {rid} job ")]
        assert len(own) == len(set(own)), own
    assert re.search(r"perfgate: \S+ job \d+ PENDING", out)  # queued (five nodes wanted)
    assert re.search(r"perfgate: \S+ job \d+ RUNNING( run 1/1 baseline)? step \d+/20", out)
    acct = {rid: sacct_fields(rec["job"]["job_id"]) for rid, rec in rows.items()}
    # all four were submitted before the first of them ended: one sweep, not a sequence (how
    # long the sweep took is a benchmark's figure: scripts/bench-launch-sweep)
    assert max(a["Submit"] for a in acct.values()) < min(a["End"] for a in acct.values())


def test_junit_carries_the_verdicts(sweep):
    text = (sweep["suite"].path / "junit.xml").read_text()
    assert '<property name="perfgate.verdict" value="PASS" />' in text
    assert '<property name="perfgate.cause" value="TIMEOUT" />' in text


def test_ctrl_c_cancels_every_job_of_the_session(slurm_cluster, tmp_path, squeue_ids):
    suite = SuiteDir(tmp_path)
    rows = [one_node(f"ctrlc{i}", "--step-s", "0.5", steps=200) for i in range(2)]
    suite.write_rows(rows)
    proc = suite.start(*POLL)
    jobs = suite.session_jobs(n=2)
    running(jobs.values())
    time.sleep(1.5)  # the session polls every 0.5 s: let it see them running
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 2, out  # pytest's "interrupted"
    assert "KeyboardInterrupt" in out
    # scancel'ed, not left running: gone from the queue once Slurm has finished them (a job
    # spends a moment COMPLETING, longer while spank plugins such as pyxis run their exit hooks)
    deadline = time.monotonic() + 15
    while squeue_ids(list(jobs.values())) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert squeue_ids(list(jobs.values())) == []
    state = json.loads((suite.results_dir / "launch-session.json").read_text())["jobs"]
    assert all(state[rid]["cancelled"] for rid in jobs)
    for job in jobs.values():
        assert sacct_fields(job)["State"].startswith("CANCELLED")
    # One scancel per job: slurmctld logs every kill request it receives.
    log = (Path(slurm_cluster["dir"]) / "log" / "slurmctld.log").read_text()
    for job in jobs.values():
        assert len(re.findall(rf"REQUEST_KILL_JOB JobId={job} ", log)) == 1, job
    # The rows were running, and the message says so (not "rows that never ran").
    said = [line for line in out.splitlines() if line.startswith("perfgate: interrupted;")]
    assert said == [
        "perfgate: interrupted; cancelled "
        + ", ".join(f"{rid} (job {job}, RUNNING)" for rid, job in jobs.items())
    ], out
    assert "never ran" not in out and "no test waited for" not in out


def test_resume_reattaches_after_pytest_is_killed(slurm_cluster, tmp_path, sacct_jobs):
    suite = SuiteDir(tmp_path)
    row = with_baseline(one_node("resume", "--step-s", "0.2", steps=40), 0.2, tolerance=0.5)
    suite.write_rows([row])
    proc = suite.start(*POLL)
    (job,) = suite.session_jobs().values()
    running([job])
    proc.kill()  # no handler runs: the job keeps going, as after a lost login shell
    proc.wait()
    assert subprocess.run(["squeue", "-h", "-j", job], capture_output=True, text=True).stdout
    code, out, _ = suite.run(*POLL, "--resume")
    assert code == 0, out
    assert f"perfgate: {row.id}: re-attached to job {job} (--resume)" in out
    rec = suite.results()["rows"][row.id]
    assert rec["verdict"] == "PASS" and rec["job"]["job_id"] == job
    assert len(rec["runs"][0]["steps"]) == 40
    # one job for the row in accounting: nothing was submitted twice
    assert [j["job_id"] for j in sacct_jobs(f"perfgate-{row.id}", expect=1)] == [job]


def test_a_terminal_gets_one_block_redrawn_in_place(slurm_cluster, tmp_path):
    suite = SuiteDir(tmp_path)
    rows = [
        with_baseline(one_node(f"tty{i}", "--step-s", "0.2", steps=30), 0.2, 0.5) for i in (0, 1)
    ]
    suite.write_rows(rows)
    code, raw = suite.run_tty(*POLL)
    assert code == 0, raw
    # The block (a count by state, then a line per waiting row) is redrawn over itself:
    # cursor up to its first line and clear below, once per poll; no line per row per poll.
    assert re.search(r"perfgate: 2 row\(s\): .*RUNNING", raw), raw
    redraws = len(re.findall(r"\x1b\[\d+F\x1b\[J", raw))
    assert redraws >= 5, raw
    for row in rows:
        assert f"  {row.id} job " in raw  # inside the block, indented
        assert f"perfgate: {row.id} job " not in raw  # never as a line of its own
        assert f"perfgate: {row.id} done: PASS" in raw
