"""A real node failure on the local Slurm: the requeue shows live and in the verdict, and the
failed node (not the healthy batch host) is named."""

from __future__ import annotations

import subprocess
import time

import pytest
from rowfactory import with_baseline

from perfgate.launch import LaunchOptions, LaunchSession
from perfgate.verdicts.single import evaluate

pytestmark = pytest.mark.slurm


def fail_second_node(session: LaunchSession, row_id: str) -> str:
    """Wait until the job has done a few steps, then mark its second node DOWN (the batch
    step runs on the first); returns that node's name."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        st = next(s for s in session.poll() if s.row_id == row_id)
        if st.state == "RUNNING" and st.step is not None and st.step >= 2:
            break
        time.sleep(0.3)
    else:
        pytest.fail(f"job never got going: {st.line()}")
    job = session.entries[row_id].job_id
    nodes = subprocess.run(
        ["scontrol", "show", "hostnames", squeue(job, "%N")], capture_output=True, text=True
    ).stdout.split()
    assert len(nodes) == 2, nodes
    subprocess.run(
        ["scontrol", "update", f"nodename={nodes[1]}", "state=down", "reason=perfgate-test"],
        check=True,
    )
    return nodes[1]


def squeue(job: str, fmt: str) -> str:
    out = subprocess.run(["squeue", "-h", "-j", job, "-o", fmt], capture_output=True, text=True)
    return out.stdout.strip()


def test_node_failure_requeue_is_shown_live_and_named_in_the_verdict(
    slurm_cluster, fake_row, tmp_path
):
    row = fake_row("nodefail", "--step-s", "0.3", steps=40, num_gpus=8, gpus_per_node=4)
    session = LaunchSession(LaunchOptions(poll_interval_s=0.5), tmp_path)
    session.submit_all([row])
    node = fail_second_node(session, row.id)
    lines: list[str] = []
    deadline = time.monotonic() + 120
    while not session.entries[row.id].done and time.monotonic() < deadline:
        st = next(s for s in session.poll() if s.row_id == row.id)
        lines.append(st.line())
        time.sleep(0.5)
    # Live: once requeued, the line names the cause and the node, and no longer shows the
    # dead attempt's step; the new attempt's steps follow once it runs.
    requeued = [ln for ln in lines if f"requeued after NODE_FAIL on {node}" in ln]
    assert requeued, lines
    assert "attempt 2" in requeued[0]
    first = lines.index(requeued[0])
    assert all("step" not in ln for ln in lines[first:] if " PENDING " in ln), lines[first:]
    r = session.result(row.id)
    assert r.ok, r.diagnosis
    assert (r.attempts, r.requeues) == (2, (f"NODE_FAIL on {node}",))
    assert f"job requeued 1 time(s) after NODE_FAIL on {node}: only attempt 2 was measured" in (
        r.notes
    )
    judged = with_baseline(row, 0.3, tolerance=0.5)
    ev = evaluate(judged, r, source="live")
    assert ev.message.endswith(f"[attempt 2, requeued after NODE_FAIL on {node}]"), ev.message


def test_node_failure_without_requeue_names_the_failed_node(slurm_cluster, fake_row, tmp_path):
    row = fake_row("nodefail-norequeue", "--step-s", "0.3", steps=40, num_gpus=8, gpus_per_node=4)
    options = LaunchOptions(poll_interval_s=0.5, slurm_params={"no-requeue": True})
    session = LaunchSession(options, tmp_path)
    session.submit_all([row])
    node = fail_second_node(session, row.id)
    r = session.result(row.id)
    batch_host = r.nodes[0]
    assert r.state == "NODE_FAIL" and r.diagnosis.cause == "NODE_FAIL"
    assert r.diagnosis.evidence == f"srun: error: Node failure on {node}"
    assert f"node {node} of the allocation failed" in r.diagnosis.message
    assert batch_host != node and f"ON {batch_host}" not in r.diagnosis.evidence
