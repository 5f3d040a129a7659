"""Confirmation runs through the plugin without Slurm (--executor local): a one-run
REGRESSION is rerun; one that the rerun does not reproduce passes as UNCONFIRMED, one that it
does stays a REGRESSION. The local executor has no other nodes, and the verdict says so."""

from __future__ import annotations

import shutil
from dataclasses import replace

from rowfactory import command_row

from perfgate.catalog import Baseline, BaselineRun, Provenance

pytest_plugins = ["pytester"]

LOCAL = ("--all-rows", "--executor", "local", "--poll-interval", "0.2", "--history", "off")
# modeled step times (0.4% noise): the verdicts do not depend on the machine's load
STEP = ("--step-s", "0.05", "--first-step-s", "0.2", "--modeled-cv", "0.004")


def measured(row, step_s: float):
    """The row with a baseline perfgate measured (3 runs): the production noise prior."""
    runs = tuple(BaselineRun(step_s * f, 0.002, job_id=str(i)) for i, f in
                 enumerate((0.995, 1.0, 1.005)))  # fmt: skip
    base = Baseline(step_s, Provenance("perfgate run"), n_runs=3, runs=runs, tolerance=0.05)
    return replace(row, baseline=base)


def test_a_slow_first_launch_is_unconfirmed_a_slower_row_stays_a_regression(suite):
    # "flaky": the first launch (label baseline) is 25% slower, its rerun (label confirm) not;
    # "slower": every launch is 25% slower than its baseline (0.04 s for 0.05 s steps).
    flaky = command_row("flaky", *STEP, "--slow-label", "baseline", "--slowdown", "0.25")
    slower = command_row("slower", *STEP)
    suite.write_rows([measured(flaky, 0.05), measured(slower, 0.04)])
    result = suite.run(*LOCAL, "-rA")
    out = "\n".join(result.outlines)
    rows = suite.results()["rows"]
    a, b = rows[flaky.id], rows[slower.id]
    assert a["verdict"] == "UNCONFIRMED", out
    assert f"{flaky.id}: UNCONFIRMED: the first run was +" in out
    assert "a confirmation on the same node" in a["message"]
    assert "local executor: the confirmation ran on the same node" in " ".join(a["notes"])
    assert [r["label"] for r in a["runs"]] == ["baseline", "confirmation 1"]
    assert a["confirmation"]["runs"][1]["verdict"] == "PASS"
    assert b["verdict"] == "REGRESSION", out
    assert "; reproduced on the same node: +" in b["message"]
    assert result.ret == 1  # the confirmed REGRESSION fails the session
    assert "confirmation 1 on other nodes" in out  # the terminal says it started


def test_confirm_zero_judges_the_one_run(suite):
    flaky = command_row("flaky", *STEP, "--slow-label", "baseline", "--slowdown", "0.25")
    suite.write_rows([measured(flaky, 0.05)])
    result = suite.run(*LOCAL, "--confirm", "0")
    rec = suite.results()["rows"][flaky.id]
    assert rec["verdict"] == "REGRESSION" and rec["confirmation"] is None
    assert result.ret == 1


def test_a_replay_of_the_results_folder_reads_the_rerun_as_the_confirmation(suite):
    flaky = command_row("flaky", *STEP, "--slow-label", "baseline", "--slowdown", "0.25")
    suite.write_rows([measured(flaky, 0.05)])
    suite.run(*LOCAL)
    live = suite.results()["rows"][flaky.id]
    assert live["verdict"] == "UNCONFIRMED"
    jobs = suite.path / "perfgate-results" / "jobs"
    (first,) = (jobs / flaky.id).iterdir()  # the rerun's job lives inside the first's folder
    assert (first / "confirm-1" / "attempt-0" / "run-01-confirm" / "steps.json").is_file()
    result = suite.run(f"--replay={jobs}", "--all-rows", "--history", "off")
    rec = suite.results()["rows"][flaky.id]
    assert rec["verdict"] == "UNCONFIRMED", "\n".join(result.outlines)
    assert rec["confirmation"]["runs"][1]["delta"] == live["confirmation"]["runs"][1]["delta"]
    # without the rerun's folder the replay is the first run alone
    shutil.rmtree(first / "confirm-1")
    suite.run(f"--replay={jobs}", "--all-rows", "--history", "off")
    assert suite.results()["rows"][flaky.id]["verdict"] == "REGRESSION"


def test_a_failed_rerun_and_a_passing_one_settle_alike_live_and_in_replay(suite, tmp_path):
    """--confirm 2, the first rerun fails and the second passes: UNCONFIRMED, live and in a
    replay of the results folder (one loop, perfgate.verdicts.confirm.confirm, for both)."""
    marker = tmp_path / "crashed-once"
    flaky = command_row(
        "flaky", *STEP, "--slow-label", "baseline", "--slowdown", "0.25",
        "--crash-label", "confirm", "--crash-at", "3", "--crash-once", str(marker),
    )  # fmt: skip
    suite.write_rows([measured(flaky, 0.05)])
    result = suite.run(*LOCAL, "--confirm", "2")
    live = suite.results()["rows"][flaky.id]
    assert live["verdict"] == "UNCONFIRMED", "\n".join(result.outlines)
    assert [r["verdict"] for r in live["confirmation"]["runs"]] == ["REGRESSION", "INFRA", "PASS"]
    assert any("failed" in n for n in live["notes"])
    jobs = suite.path / "perfgate-results" / "jobs"
    result = suite.run(f"--replay={jobs}", "--all-rows", "--history", "off", "--confirm", "2")
    rec = suite.results()["rows"][flaky.id]
    assert rec["verdict"] == "UNCONFIRMED", "\n".join(result.outlines)
    runs = rec["confirmation"]["runs"]
    assert [r["verdict"] for r in runs] == ["REGRESSION", "INFRA", "PASS"]
    assert runs[2]["delta"] == live["confirmation"]["runs"][2]["delta"]


def test_auto_reruns_a_reproduced_regression_once_more_within_one_rerun_per_row(suite):
    """--confirm auto: a second rerun only when the first reproduced, and only while the
    session's reruns stay within one per row (the plan's "up to")."""
    fine = command_row("fine", *STEP)
    slower = command_row("slower", *STEP)
    suite.write_rows([measured(fine, 0.05), measured(slower, 0.04)])  # fine's test runs first
    result = suite.run(*LOCAL)
    out = "\n".join(result.outlines)
    rows = suite.results()["rows"]
    assert rows[fine.id]["verdict"] == "PASS" and rows[fine.id]["confirmation"] is None
    rec = rows[slower.id]
    assert rec["verdict"] == "REGRESSION", out
    # fine passed, so its share of the budget pays for slower's second rerun
    assert [r["verdict"] for r in rec["confirmation"]["runs"]] == ["REGRESSION"] * 3
    assert "up to 0.3 for confirmation reruns (--confirm auto" in out
    # alone, the row's one share is spent on its first rerun: its verdict rests on that one
    suite.write_rows([measured(slower, 0.04)])
    suite.run(*LOCAL)
    alone = suite.results()["rows"][slower.id]
    assert [r["verdict"] for r in alone["confirmation"]["runs"]] == ["REGRESSION"] * 2
    assert alone["verdict"] == "REGRESSION"
    assert any("rerun 2 does not fit" in n for n in alone["notes"]), alone["notes"]
