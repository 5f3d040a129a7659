"""The live path end to end without Slurm: --executor local runs each row's job function on
this node (launch), the command backend runs a CPU stand-in trainer printing NeMo 2 lines
(workload), and the plugin submits at session start, shows job states, judges, reports."""

from __future__ import annotations

from .rows import command_row, with_baseline

pytest_plugins = ["pytester"]


def test_local_executor_session(suite):
    ok = with_baseline(command_row("ok"), 0.0305, tolerance=0.5)
    crash = command_row("crash", "--crash-at", "3", "--fail-rank", "1")
    suite.write_rows([ok, crash])
    result = suite.run("--all-rows", "--executor", "local", "--poll-interval", "0.2")
    assert result.ret == 1
    outcomes = result.parseoutcomes()
    assert outcomes["passed"] == 1 and outcomes["errors"] == 1
    out = "\n".join(result.outlines)
    # job states were printed while the tests waited, then each row's verdict
    assert f"perfgate: {ok.id} job " in out
    assert f"perfgate: {ok.id} done: PASS" in out
    assert f"perfgate: {crash.id} done: INFRA" in out
    # the failed job is an ERROR naming the cause, the evidence and the rank's log tail
    assert f"{crash.id}: INFRA WORKLOAD_EXCEPTION" in out
    assert "RuntimeError: fake_train: simulated failure at step 3" in out
    assert "--- log tail ---" in out
    rows = suite.results()["rows"]
    rec = rows[ok.id]
    assert rec["verdict"] == "PASS" and rec["job"]["state"] == "LOCAL"
    assert len(rec["runs"][0]["steps"]) == 20
    assert 0.029 < rec["measured"]["step_time_s"] < 0.04
    assert rows[crash.id]["diagnosis"]["cause"] == "WORKLOAD_EXCEPTION"
