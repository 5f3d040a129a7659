"""Session deadlines, the state file and folder collection, with Slurm's answers stubbed."""

from __future__ import annotations

import math
import pickle
import time
from dataclasses import replace
from pathlib import Path

import pytest

from perfgate import verdicts
from perfgate.errors import ConfigError, PerfgateError
from perfgate.launch import LaunchOptions, LaunchSession
from perfgate.launch import session as session_mod
from perfgate.launch.collect import collect_job, write_json
from perfgate.launch.slurmstate import JobInfo
from perfgate.logs import stepfile


def stub(monkeypatch, s: LaunchSession, answer) -> list[str]:
    """The executor: submission gives job 41; states come from answer(); cancels are recorded."""
    cancelled: list[str] = []
    monkeypatch.setattr(s.executor, "require", lambda: None)
    monkeypatch.setattr(s.executor, "submit", lambda fn, ctx, options: "41")
    monkeypatch.setattr(s.executor, "states", lambda ids: answer())
    monkeypatch.setattr(s.executor, "cancel", cancelled.extend)
    return cancelled


def test_a_job_pending_past_the_queue_deadline_is_cancelled(command_row, tmp_path, monkeypatch):
    s = LaunchSession(LaunchOptions(queue_timeout_min=0.002, poll_interval_s=0.01), tmp_path)
    cancelled = stub(monkeypatch, s, lambda: {"41": JobInfo("41", "PENDING", reason="Resources")})
    s.submit_all([command_row])
    r = s.result(command_row.id, timeout_s=10)
    assert r.diagnosis.cause == "QUEUE_TIMEOUT"
    assert "job 41 still pending" in r.diagnosis.message and "Resources" in r.diagnosis.message
    assert cancelled == ["41"]


def test_a_running_job_past_its_limit_plus_grace_is_given_up(command_row, tmp_path, monkeypatch):
    s = LaunchSession(LaunchOptions(poll_interval_s=0.01), tmp_path)
    cancelled = stub(monkeypatch, s, lambda: {"41": JobInfo("41", "RUNNING")})
    s.submit_all([command_row])
    entry = s.entries[command_row.id]
    # seen RUNNING for an hour (limit: 2 min); with info set, a first refresh that comes only
    # now is no transition to RUNNING, so it does not restart the clock
    s.entries[command_row.id] = replace(
        entry, info=JobInfo("41", "RUNNING"), phase="RUNNING", since=time.monotonic() - 3600
    )
    r = s.result(command_row.id, timeout_s=10)
    assert r.diagnosis.cause == "UNKNOWN" and "no final state" in r.diagnosis.message
    assert cancelled == ["41"]


def test_a_job_slurm_forgot_is_given_up(command_row, tmp_path, monkeypatch):
    monkeypatch.setattr(session_mod, "LOST_AFTER_S", 0.05)
    s = LaunchSession(LaunchOptions(poll_interval_s=0.01), tmp_path)
    stub(monkeypatch, s, dict)
    s.submit_all([command_row])
    r = s.result(command_row.id, timeout_s=10)
    assert r.diagnosis.cause == "UNKNOWN" and "no record of job 41" in r.diagnosis.message


def test_explicit_result_timeout_is_a_one_line_error(command_row, tmp_path, monkeypatch):
    s = LaunchSession(LaunchOptions(poll_interval_s=0.01), tmp_path)
    stub(monkeypatch, s, lambda: {"41": JobInfo("41", "PENDING", reason="Priority")})
    s.submit_all([command_row])
    with pytest.raises(PerfgateError, match=r"no result after 0\.2 s"):
        s.result(command_row.id, timeout_s=0.2)
    assert [st.line() for st in s.poll()] == [f"{command_row.id} job 41 PENDING (Priority)"]


def test_state_file_maps_rows_and_tests_to_jobs(command_row, tmp_path, monkeypatch):
    s = LaunchSession(LaunchOptions(poll_interval_s=0.01), tmp_path)
    stub(monkeypatch, s, lambda: {"41": JobInfo("41", "RUNNING")})
    s.submit_all([command_row], test_ids={command_row.id: "test_pretrain[fake-1gpu]"})
    saved = s._load_state()[command_row.id]
    assert saved["job_id"] == "41" and saved["test_id"] == "test_pretrain[fake-1gpu]"
    assert saved["job_name"] == f"perfgate-{command_row.id}"
    assert Path(saved["job_dir"]).parent.name == command_row.id


def test_unreadable_state_file_is_a_one_line_error(tmp_path):
    (tmp_path / "launch-session.json").write_text("{not json")
    with pytest.raises(ConfigError, match=r"launch-session\.json: unreadable session state"):
        LaunchSession(LaunchOptions(), tmp_path, resume=True)


def steps(rdir: Path, n: int, status: str) -> None:
    rec = stepfile.StepRecord(
        row_id="r",
        backend="command",
        status=status,
        steps=[{"step": i, "step_time_s": 1.0 + 0.01 * i} for i in range(n)],
    )
    stepfile.write(rdir / "steps.json", rec)


def test_only_the_last_attempt_of_a_requeued_job_is_measured(tmp_path):
    for attempt, (n, code) in enumerate([(7, None), (20, 0)]):
        rdir = tmp_path / f"attempt-{attempt}" / "run-01-baseline"
        steps(rdir, n, "completed" if code == 0 else "running")
        write_json(
            tmp_path / f"attempt-{attempt}" / "runs.json",
            {
                "planned": 1,
                "nodes": ["n2"],
                "runs": [
                    {
                        "index": 1,
                        "label": "baseline",
                        "image": None,
                        "run_dir": str(rdir),
                        "exit_code": code,
                    }
                ],
            },
        )
    r = collect_job(tmp_path, "r", "41", "COMPLETED", expected_steps=20)
    assert r.ok and r.attempts == 2 and r.nodes == ("n2",)
    assert len(r.runs) == 1 and len(r.runs[0].series.steps) == 20
    assert r.notes == (
        "job requeued 1 time(s) (preempted or requeued): only attempt 2 was measured",
    )


def test_a_killed_ab_job_keeps_the_pairs_it_finished(tmp_path):
    runs = []
    for i, (label, code) in enumerate([("baseline", 0), ("candidate", 0), ("baseline", None)], 1):
        rdir = tmp_path / "attempt-0" / f"run-{i:02d}-{label}"
        steps(rdir, 20 if code == 0 else 4, "completed" if code == 0 else "running")
        runs.append(
            {"index": i, "label": label, "image": label, "run_dir": str(rdir), "exit_code": code}
        )
    write_json(tmp_path / "attempt-0" / "runs.json", {"planned": 6, "runs": runs})
    batch = tmp_path / "submitit"
    batch.mkdir()
    (batch / "41_0_log.err").write_text(
        "slurmstepd: error: *** JOB 41 ON n1 CANCELLED AT 2026-01-05T10:11:12 DUE TO TIME "
        "LIMIT ***\n"
    )
    r = collect_job(tmp_path, "r", "41", "TIMEOUT", expected_steps=20)
    assert [x.label for x in r.runs] == ["baseline", "candidate", "baseline"]
    assert r.diagnosis.cause == "TIMEOUT"
    assert r.diagnosis.message.startswith("run 3 (baseline): job 41: the job hit its time limit")


@pytest.mark.parametrize(("image", "cause"), [("/i/nemo.sqsh", "CONTAINER"), (None, "UNKNOWN")])
def test_a_launch_whose_rank_0_saw_another_world_size_is_not_a_clean_run(tmp_path, image, cause):
    rdir = tmp_path / "attempt-0" / "run-01-baseline"
    rec = stepfile.StepRecord(
        row_id="r",
        backend="command",
        status="completed",
        world_size=1,
        steps=[{"step": i, "step_time_s": 1.0} for i in range(20)],
    )
    stepfile.write(rdir / "steps.json", rec)
    entry = {"index": 1, "label": "baseline", "image": image, "run_dir": str(rdir)}
    entry.update(exit_code=0, tasks=16)
    write_json(tmp_path / "attempt-0" / "runs.json", {"planned": 1, "runs": [entry]})
    result = collect_job(tmp_path, "r", "7", "COMPLETED", 20)
    assert len(result.runs[0].series.steps) == 20  # the steps are kept, the run is not trusted
    assert result.diagnosis.cause == cause
    assert result.diagnosis.message.startswith(
        "job 7: rank 0 saw a world of 1 task(s) but srun started 16: "
    )
    rec.world_size = 16
    stepfile.write(rdir / "steps.json", rec)
    assert collect_job(tmp_path, "r", "7", "COMPLETED", 20).diagnosis is None


def test_a_result_written_while_slurm_times_the_job_out_keeps_slurms_cause(
    command_row, tmp_path, monkeypatch
):
    # At the time limit srun can die before the job function is stopped: the function then
    # pickles a FAILED result while Slurm, still COMPLETING the job, goes on to TIMEOUT.
    answers = iter(["RUNNING", "COMPLETING", "COMPLETING", "TIMEOUT"])
    last = {"state": "RUNNING"}

    def answer():
        last["state"] = next(answers, last["state"])
        return {"41": JobInfo("41", last["state"])}

    s = LaunchSession(LaunchOptions(poll_interval_s=0.01), tmp_path)
    stub(monkeypatch, s, answer)
    monkeypatch.setattr(session_mod.time, "sleep", lambda _s: None)
    s.submit_all([command_row])
    job_dir = Path(s.entries[command_row.id].plan.job_dir)
    rdir = job_dir / "attempt-0" / "run-01-baseline"
    steps(rdir, 3, "running")
    run = {"index": 1, "label": "baseline", "image": None, "run_dir": str(rdir), "exit_code": 143}
    write_json(job_dir / "attempt-0" / "runs.json", {"planned": 1, "runs": [run]})
    (job_dir / "submitit").mkdir(parents=True, exist_ok=True)
    (job_dir / "submitit" / "41_0_log.err").write_text(
        "slurmstepd: error: *** JOB 41 ON n1 CANCELLED AT 2026-01-05T10:11:12 DUE TO TIME "
        "LIMIT ***\n"
    )
    failed = collect_job(job_dir, command_row.id, "41", "FAILED", expected_steps=20)
    with open(job_dir / "submitit" / "41_0_result.pkl", "wb") as f:
        pickle.dump(("success", failed), f)
    r = s.result(command_row.id, timeout_s=10)
    assert r.state == "TIMEOUT"
    assert r.diagnosis.cause == "TIMEOUT" and "DUE TO TIME LIMIT" in r.diagnosis.evidence
    assert [x.step for x in r.runs[0].series.steps] == [0, 1, 2]


@pytest.mark.parametrize(
    ("bad", "reason", "cause"),
    [
        (math.nan, "NaN step time at step 0", "NAN"),
        (math.inf, "infinite step time at step 0", "NAN"),
        (-1.0, "step time -1.0 s at step 0 is not a duration", "BAD_LOG"),
    ],
)
def test_a_bad_step_time_at_step_0_of_a_live_run_is_infra_with_the_job(
    tmp_path, command_row, bad, reason, cause
):
    # A NaN at step 0 passed as NO_BASELINE (dropped as warm-up); an inf was a one-line error
    # without the job id or a cause word.
    rdir = tmp_path / "attempt-0" / "run-01-baseline"
    rec = stepfile.StepRecord(
        row_id="r",
        backend="command",
        status="completed",
        steps=[{"step": i, "step_time_s": bad if i == 0 else 1.0} for i in range(20)],
    )
    stepfile.write(rdir / "steps.json", rec)
    entry = {"index": 1, "label": "baseline", "image": None, "run_dir": str(rdir), "exit_code": 0}
    write_json(tmp_path / "attempt-0" / "runs.json", {"planned": 1, "runs": [entry]})
    result = collect_job(tmp_path, command_row.id, "41", "COMPLETED", expected_steps=20)
    assert result.diagnosis is not None and result.diagnosis.cause == cause
    assert result.diagnosis.message == f"job 41: the run cannot be judged: {reason}"
    ev = verdicts.evaluate(command_row, result, source="live")
    assert ev.verdict == verdicts.INFRA and ev.cause == cause
    assert ev.message.startswith(f"{command_row.id}: INFRA {cause} (job 41): job 41: ")
