"""The live path end to end without Slurm: --executor local runs each row's job function on
this node (launch), the command backend runs a CPU stand-in trainer printing NeMo 2 lines
(workload), and the plugin submits at session start, shows job states, judges, reports."""

from __future__ import annotations

from rowfactory import command_row, with_baseline

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


def test_repeat_runs_a_row_k_times_and_stores_each_run(suite):
    """--update-baselines --repeat 3: three launches in one job (an A/A gate), the verdict
    pools them, the baseline keeps each run, the history has the session's three runs."""
    ok = with_baseline(command_row("ok"), 0.0305, tolerance=0.5)
    suite.write_rows([ok])
    hist = suite.path / "h.sqlite"
    result = suite.run(
        "--all-rows",
        "--executor",
        "local",
        "--poll-interval",
        "0.2",
        "--repeat",
        "3",
        "--update-baselines",
        f"--history={hist}",
    )
    assert result.ret == 0, result.stderr.str() + "\n".join(result.outlines[-5:])
    rec = suite.results()["rows"][ok.id]
    assert [r["label"] for r in rec["runs"]] == ["baseline"] * 3
    comp = rec["comparison"]  # the verdict pooled the steady ones of the three runs
    steady = comp["n_candidate"]
    assert steady + comp["n_unsteady"] == 3 and steady >= 2
    from perfgate import catalog
    from perfgate.history.sqlite import SqliteStore

    new = catalog.load_catalog(suite.baselines_dir).by_id[ok.id].baseline
    assert new.n_runs == steady == len(new.runs)
    assert new.provenance.source == "perfgate run" and new.measured_here
    assert all(0.029 < r.step_time_s < 0.04 and r.job_id for r in new.runs)
    out = "\n".join(result.outlines)
    assert f"{ok.id}: 0.0305 s -> {new.step_time_s:.4g} s" in out
    assert f"    {steady} runs, spread" in out
    store = SqliteStore(hist)
    (session,) = store.sessions()
    assert session["mode"] == "repeat"
    runs = store.runs(ok.id)
    assert [r["launch"] for r in runs] == [1, 2, 3] and all(r["mode"] == "repeat" for r in runs)
    stored = [round(r["step_time_s"], 6) for r in runs if r["steady"]]
    assert stored == [r.step_time_s for r in new.runs]
