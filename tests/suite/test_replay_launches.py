"""--replay of several launches of a row (issue #25 item 1): launch-<n>/ folders and perfgate's
own job folders are K runs, judged and stored as a live --repeat K; confirm-<n>/ folders are
confirmation runs, never launches; --repeat K with --replay asks for exactly K launches."""

from __future__ import annotations

import shutil

import pytest
from rowfactory import command_row, make_row, with_baseline

from perfgate import catalog
from perfgate.logs import stepfile
from perfgate.suite import replay
from perfgate.suite.replay import ReplayIndex

from .pytester_suite import load_examples_module

pytest_plugins = ["pytester"]

ROW = make_row()  # Nemotron4 15B BF16 on 64 H100, gbs 256
LLAMA_SERIES = "together_b200_llama3.1_8b_bf16_gbs128_nemo2602.csv"
LEVELS = (2.60, 2.64, 2.70)  # three launches of one configuration, 1-2% apart


def _touch(root, rel, text="x\n"):
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
    return p


def _steps(root, rel):
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    stepfile.write(p, stepfile.StepRecord(row_id=ROW.id, backend="nemo2"))
    return p


def test_launch_folders_are_launches_in_order_of_n(tmp_path):
    logs = [_touch(tmp_path, f"{ROW.id}/{name}/log-a.out") for name in ("launch-1", "run-2")]
    logs.append(_touch(tmp_path, f"{ROW.id}/launch-10/x/log-b.out"))  # 10 after 2, not before
    _touch(tmp_path, f"{ROW.id}/sbatch_123.out")  # beside the launches: not read
    m = ReplayIndex(tmp_path, [ROW]).match(ROW)
    assert m.skip_reason is None
    assert m.launches == tuple((f,) for f in logs)
    assert m.files == tuple(logs) and m.confirmations == ()


def test_confirm_folders_are_not_launches(tmp_path):
    log = _touch(tmp_path, f"{ROW.id}/log-a.out")
    c2 = _touch(tmp_path, f"{ROW.id}/confirm-2/log-c.out")
    c1 = _touch(tmp_path, f"{ROW.id}/confirm-1/log-c.out")
    m = ReplayIndex(tmp_path, [ROW]).match(ROW)
    assert m.launches == ((log,),) and m.confirmations == ((c1,), (c2,))
    # beside launch folders too, and a confirmation may be perfgate's own job folder
    shutil.rmtree(tmp_path / ROW.id)
    a = _touch(tmp_path, f"{ROW.id}/launch-1/log-a.out")
    b = _touch(tmp_path, f"{ROW.id}/launch-2/log-a.out")
    c = _steps(tmp_path, f"{ROW.id}/confirm-1/j/attempt-0/run-01-baseline/steps.json")
    _touch(tmp_path, f"{ROW.id}/confirm-1/j/attempt-0/job.log")
    m = ReplayIndex(tmp_path, [ROW]).match(ROW)
    assert m.launches == ((a,), (b,)) and m.confirmations == ((c,),)
    only = tmp_path / "only"
    _touch(only, f"{ROW.id}/confirm-1/log-a.out")
    assert "only confirmation runs" in ReplayIndex(only, [ROW]).match(ROW).skip_reason


def test_perfgate_job_folders_read_their_last_attempts_runs(tmp_path):
    job = f"jobs/{ROW.id}/20260101-000000-abcdef"
    for k in (1, 2, 3):
        _steps(tmp_path, f"{job}/attempt-0/run-0{k}-baseline/steps.json")
    _touch(tmp_path, f"{job}/attempt-0/job.log")
    _touch(tmp_path, f"{job}/submitit/99_0_log.out")
    m = ReplayIndex(tmp_path, [ROW]).match(ROW)
    assert [f[0].parent.name for f in m.launches] == [f"run-0{k}-baseline" for k in (1, 2, 3)]
    # requeued: only the last attempt was measured, as live
    for k in (1, 2):
        _steps(tmp_path, f"{job}/attempt-1/run-0{k}-baseline/steps.json")
    m = ReplayIndex(tmp_path, [ROW]).match(ROW)
    assert [f[0].parent.parent.name for f in m.launches] == ["attempt-1"] * 2


def test_ab_job_folders_and_duplicate_numbers_are_skipped_with_the_reason(tmp_path):
    job = f"jobs/{ROW.id}/s"
    _steps(tmp_path, f"{job}/attempt-0/run-01-baseline/steps.json")
    _steps(tmp_path, f"{job}/attempt-0/run-02-candidate/steps.json")
    assert "an A/B job's folder" in ReplayIndex(tmp_path, [ROW]).match(ROW).skip_reason
    dup = tmp_path / "dup"
    _touch(dup, f"{ROW.id}/launch-1/log-a.out")
    _touch(dup, f"{ROW.id}/run-1/log-a.out")
    assert "two launch folders numbered 1" in ReplayIndex(dup, [ROW]).match(ROW).skip_reason


def test_runs_in_several_folders_say_how_to_make_them_launches(tmp_path):
    _touch(tmp_path, f"a/{ROW.id}/log-a.out")
    _touch(tmp_path, f"b/{ROW.id}/log-a.out")
    why = ReplayIndex(tmp_path, [ROW]).match(ROW).skip_reason
    assert why.startswith("ambiguous: 2 runs") and "launch-1/, launch-2/" in why


def _write_launches(root, levels=LEVELS, row=ROW):
    ex = load_examples_module()
    times = ex.series(LLAMA_SERIES)
    first = ex.steady_median(times, 20)
    for i, level in enumerate(levels, start=1):
        log = root / row.id / f"launch-{i}" / f"log-acct.{row.id}_{2000 + i}_0.out"
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text("\n".join(ex.nemo2_lines([t * level / first for t in times], row.gbs)))


def test_load_launches_is_k_runs_and_names_the_failed_launch(tmp_path):
    _write_launches(tmp_path)
    m = ReplayIndex(tmp_path, [ROW]).match(ROW)
    res = replay.load_launches(ROW, m.launches)
    assert res.ok and len(res.runs) == 3 and res.job_id is None
    assert [r.job_id for r in res.runs] == ["2001", "2002", "2003"]
    (log,) = (tmp_path / ROW.id / "launch-2").glob("log-*")
    log.unlink()
    _touch(tmp_path, f"{ROW.id}/launch-2/log-b.out", "torch.OutOfMemoryError: CUDA out of memory\n")
    res = replay.load_launches(ROW, ReplayIndex(tmp_path, [ROW]).match(ROW).launches)
    assert not res.ok and res.diagnosis.cause == "OOM"
    assert res.diagnosis.message.startswith("launch 2 of 3 (")


def test_update_baselines_from_three_launches_stores_a_three_run_baseline(suite):
    suite.write_rows([with_baseline(ROW, 2.67, 0.15)])
    _write_launches(suite.path / "logs")
    result = suite.run("--replay", "logs", "--update-baselines", "--repeat", "3")
    assert result.ret == 0, "\n".join(result.outlines[-15:])
    rec = suite.results()["rows"][ROW.id]
    assert len(rec["runs"]) == 3 and rec["comparison"]["n_candidate"] == 3
    new = catalog.load_catalog(suite.baselines_dir).by_id[ROW.id].baseline
    assert new.n_runs == 3 and len(new.runs) == 3
    medians = [r.step_time_s for r in new.runs]
    assert medians == sorted(medians) and medians[0] == pytest.approx(LEVELS[0], rel=2e-3)
    assert all(r.rel_se and r.rel_se > 0 for r in new.runs)
    assert [r.job_id for r in new.runs] == ["2001", "2002", "2003"]
    assert new.provenance.job_ids == ("2001", "2002", "2003")
    # the provenance names every launch's log, not only the last one's (#33)
    notes = new.provenance.notes
    assert notes.startswith("replayed from 3 launches: ")
    assert [f"launch-{i}" in notes for i in (1, 2, 3)] == [True] * 3, notes
    assert new.step_time_spread_s is not None
    assert f"{ROW.id}: 2.67 s -> " in "\n".join(result.outlines)
    assert "    3 runs, spread" in "\n".join(result.outlines)


def test_repeat_with_replay_asks_for_exactly_k_launches(suite):
    suite.write_rows([with_baseline(ROW, 2.67, 0.15)])
    _write_launches(suite.path / "logs", LEVELS[:1])
    before = (suite.baselines_dir / "h100.json").read_text()
    result = suite.run("--replay", "logs", "--update-baselines", "--repeat", "3")
    assert result.ret == 4
    (line,) = [ln for ln in result.errlines if ln.strip()]
    assert line.startswith("ERROR: --repeat 3 with --replay: row ") and "has 1 launch " in line
    assert (suite.baselines_dir / "h100.json").read_text() == before
    # without --repeat the launches there are are judged
    assert suite.run("--replay", "logs").ret == 0
    # under xdist each worker fails its own rows with the same line (no usage error there)
    par = suite.run("--replay", "logs", "--repeat", "3", "-n", "2", "-p", "xdist")
    assert par.ret == 1 and par.parseoutcomes()["errors"] == 1
    assert any("--repeat 3 with --replay: row " in ln for ln in par.outlines)


def test_a_live_repeat_jobs_folder_replays_as_its_three_runs(suite):
    ok = with_baseline(command_row("ok"), 0.0305, tolerance=0.5)
    suite.write_rows([ok])
    live = suite.run(
        "--all-rows", "--executor", "local", "--poll-interval", "0.2", "--repeat", "3",
        "--history=off",
    )  # fmt: skip
    assert live.ret == 0
    measured = suite.results()["rows"][ok.id]["measured"]["step_time_s"]
    shutil.move(suite.path / "perfgate-results", suite.path / "night")
    result = suite.run("--replay", "night", "--repeat", "3", "--history=off")
    assert result.ret == 0, "\n".join(result.outlines[-15:])
    rec = suite.results()["rows"][ok.id]
    assert len(rec["runs"]) == 3 and rec["measured"]["step_time_s"] == pytest.approx(measured)
