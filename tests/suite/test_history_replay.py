"""The plugin with a history: replayed sessions stored on request (examples never), a row's
noise learned from its history, a persistent step shown as SHIFT with its first session,
and `perfgate history` / `perfgate calibrate` on what the sessions stored."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace

import pytest

from perfgate import catalog, cli
from perfgate.catalog import Baseline, BaselineRun, Provenance
from perfgate.history.sqlite import SqliteStore
from perfgate.history.store import Run, Session

from .pytester_suite import EXAMPLES

pytest_plugins = ["pytester"]

ROW = "pretrain-nemotron4_15b-h100-bf16-64gpu-tp2"  # its example log measures 2.63 s
SEL = ("-m", "h100", "-k", "nemotron4_15b and 64gpu and bf16")


def _measured_baseline(suite, step: float, tolerance: float) -> None:
    """Give ROW a baseline perfgate stored from 3 runs on 2026-01-01."""
    old = suite.shipped_rows()
    runs = tuple(
        BaselineRun(step * f, 0.002, "900", "2026-01-01T00:00:00+00:00", "nemo:25.11")
        for f in (0.996, 1.0, 1.004)
    )
    base = Baseline(
        step,
        Provenance("perfgate run", date="2026-01-01"),
        n_runs=3,
        tolerance=tolerance,
        runs=runs,
    )
    path = old.file_of(ROW)
    rows = [replace(r, baseline=base) if r.id == ROW else r for r in catalog.load_file(path)]
    path.write_text(catalog.dump_rows(rows))


def _logs(suite):
    logs = suite.path / "logs"  # the example's log, copied: not examples/replay any more
    if not logs.exists():
        shutil.copytree(EXAMPLES / "pretrain_nemotron4_15b_bf16_64", logs / "n15b")
    return logs


def test_examples_are_never_stored_and_replays_only_on_request(suite):
    suite.shipped_rows()
    hist = suite.path / "h.sqlite"
    suite.run(f"--replay={EXAMPLES}", *SEL, f"--history={hist}", "--store-replay")
    assert SqliteStore(hist).sessions() == []  # example logs are not measurements
    logs = _logs(suite)
    suite.run(f"--replay={logs}", *SEL, f"--history={hist}")
    assert SqliteStore(hist).sessions() == []  # a replay without --store-replay
    result = suite.run(f"--replay={logs}", *SEL, f"--history={hist}", "--store-replay")
    sessions = SqliteStore(hist).sessions()
    assert [s["mode"] for s in sessions] == ["replay"] and sessions[0]["finished_at"]
    assert f"history: session {sessions[0]['id']} in {hist}" in result.stdout.str()
    (run,) = SqliteStore(hist).runs(ROW)
    assert run["step_time_s"] == 2.63 and run["verdict"] == "INCONCLUSIVE"
    assert "--store-replay" in sessions[0]["command"]


def test_a_step_in_the_history_is_a_shift_naming_its_first_session(suite, capsys):
    _measured_baseline(suite, 2.50, 0.10)
    hist = suite.path / "h.sqlite"
    store = SqliteStore(hist)
    levels = [2.50, 2.49, 2.51, 2.505, 2.495, 2.50, 2.51, 2.49, 2.58, 2.59, 2.60]
    for day, level in enumerate(levels, start=2):
        sid = store.start_session(Session("live", started_at=f"2026-01-{day:02d}T01:00:00+00:00"))
        image = "nemo:26.02" if level > 2.55 else "nemo:25.11"
        store.add_runs(
            sid,
            [
                Run(
                    ROW,
                    "stored",
                    "baseline",
                    1,
                    True,
                    level,
                    0.002,
                    job_id=str(1000 + day),
                    image=image,
                    versions={"nemo": image[5:]},
                )
            ],
        )
        store.finish_session(sid)
    result = suite.run(f"--replay={_logs(suite)}", *SEL, f"--history={hist}", "--store-replay")
    rec = suite.results()["rows"][ROW]
    h = rec["history"]
    # Tonight (+5.2%) alone is within 10% at this row's noise: the step is a SHIFT.
    assert rec["verdict"] == "SHIFT" and rec["mode"] == "history"
    assert h["prior"]["name"] == "production" and h["n_runs"] == 11
    # A replay is one run, so it is judged as a confirming session: against the level of the
    # baseline's 3 runs and the history's runs before the last 5 nights (6 of them), with
    # the history's noise (two segments: 11 - 2 df) pooled with the baseline's (3 - 1 df).
    ref = h["reference"]
    assert ref["n_runs"] == 3 + 6 and ref["step_time_s"] == pytest.approx(2.50, abs=0.002)
    assert (
        ref["what"] == "level of the baseline's 3 and the history's 6 runs before the last 5 nights"
    )
    assert h["noise_df"] == (11 - 2) + (3 - 1)
    assert h["df"] == 11 + 11  # prior 11 + the pooled noise's 11
    step = h["step"]
    assert step["verdict"] == "SHIFT" and step["index"] == 8
    first = step["first_session"]
    assert first["started_at"].startswith("2026-01-10") and first["container"] == "nemo:26.02"
    assert 0.03 < step["delta"] < 0.05 and step["ci_low"] > 0 and step["ci_high"] < 0.08
    out = result.stdout.str()
    assert "SHIFT" in out and "first session after the change: session 9 (2026-01-10)" in out
    assert result.ret == 0  # SHIFT passes with a warning ...
    strict = suite.run(f"--replay={_logs(suite)}", *SEL, f"--history={hist}", "--strict")
    assert strict.ret == 1  # ... and --strict fails it
    # perfgate history: one line per run, the change point above the first run after it
    capsys.readouterr()
    base_dir = suite.baselines_dir
    assert (
        cli.main(
            [
                "history",
                ROW,
                f"--history={hist}",
                f"--baselines-dir={base_dir}",
                "--plot",
                str(suite.path / "t.html"),
            ]
        )
        == 0
    )
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith(f"{ROW}: 12 run(s) in 12 session(s), 1 change point(s)")
    cp = next(i for i, line in enumerate(lines) if line.startswith("---- change point"))
    assert "+4.0% from here" in lines[cp] and lines[cp + 1].startswith("2026-01-10")
    assert "nemo:26.02" in lines[cp + 1] and "+3.2%" in lines[cp + 1]
    html = (suite.path / "t.html").read_text()
    assert 'class="change-point"' in html and "2026-01-10 nemo:26.02" in html
    # perfgate calibrate fits the site prior to the stored history and writes it
    args = ["calibrate", f"--history={hist}", f"--baselines-dir={base_dir}"]
    assert cli.main(args) == 2  # one row is not a site
    assert "1 usable group(s) of runs; need at least 2 rows" in capsys.readouterr().err
    sid = store.start_session(Session("live", started_at="2026-01-20T01:00:00+00:00"))
    store.add_runs(
        sid,
        [
            Run("other", "repeat", "baseline", i, True, t)
            for i, t in enumerate((4.0, 4.02, 3.99, 4.01), start=1)
        ],
    )
    assert cli.main(args) == 0
    prior = json.loads((base_dir / "noise-prior.json").read_text())
    assert prior["schema"] == "perfgate.noise-prior/1" and prior["n_groups"] == 2
    assert 0.002 < prior["sigma"] < 0.01
