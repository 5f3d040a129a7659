"""A launch's folder read back (perfgate.launch.collect.collect_run): its phases from the last
rank's log (where Megatron prints its timers), and the versions its logs state, under what the
workload measured itself."""

from __future__ import annotations

from logs.timerdata import iteration_line, minmax_block

from perfgate.launch.collect import collect_run
from perfgate.logs import stepfile


def test_phases_from_the_last_rank_and_log_versions_under_measured_ones(tmp_path):
    rdir = tmp_path / "run-01-candidate"
    rdir.mkdir()
    rec = stepfile.StepRecord(row_id="r", backend="command", versions={"torch": "2.9.0"})
    rec.steps = [{"step": i, "step_time_s": 0.1} for i in range(3)]
    stepfile.write(rdir / "steps.json", rec)
    (rdir / "rank-0.log").write_text(
        "NCCL version 2.27.7+cuda13.0\nPyTorch Version 2.8.0a0+5228986\n"  # torch: measured wins
    )
    text = "".join(
        iteration_line(i, 3, 100.0) + minmax_block({"optimizer": (10.0, 12.5 + i)})
        for i in (1, 2, 3)
    )
    (rdir / "rank-1.log").write_text(text)
    run, _ = collect_run({"run_dir": str(rdir), "label": "candidate", "exit_code": 0})
    assert run.versions == {"nccl": "2.27.7", "torch": "2.9.0"}
    assert run.phases is not None and run.phases.source == str(rdir / "rank-1.log")
    assert run.phases.steps == (0, 1, 2) and run.phases.phases["optimizer"] == (
        0.0135,
        0.0145,
        0.0155,
    )


def test_a_launch_without_timers_or_version_lines(tmp_path):
    (tmp_path / "rank-0.log").write_text("Training epoch 0, iteration 0/0 | global_step: 0\n")
    run, _ = collect_run({"run_dir": str(tmp_path), "label": "baseline"})
    assert run.phases is None and run.versions == {}
