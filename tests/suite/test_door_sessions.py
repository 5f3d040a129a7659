"""Whole sessions with what #29 found at the door: secrets in job logs, a corrupt shared
history, a baselines folder that cannot be written, runs that disagree, and --override
holding a token. Each ends as the user needs: masked everywhere, warned once, never an
INTERNALERROR, the summary and a finished results.json."""

from __future__ import annotations

import json
import math
import sqlite3
from pathlib import Path

from rowfactory import make_row

from perfgate.catalog import Baseline, Provenance
from perfgate.history.sqlite import SqliteStore
from perfgate.history.store import Run, Session

pytest_plugins = ["pytester"]

SECRETS = {
    "WANDB_API_KEY": "0123456789abcdef0123456789abcdef01234567",
    "password": "hunter2-Hunter2",
    "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "bearer": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0",
    "NGC_KEY": "bmdjLWtleS1mb3ItYS10ZXN0LW9ubHk6NzE3",
}
LINES = [
    f"WANDB_API_KEY={SECRETS['WANDB_API_KEY']}",
    f"python train.py --password={SECRETS['password']}",
    f"AWS_SECRET_ACCESS_KEY={SECRETS['AWS_SECRET_ACCESS_KEY']}",
    f"curl -H 'Authorization: Bearer {SECRETS['bearer']}' https://example.com",
    f"NGC_KEY={SECRETS['NGC_KEY']}",
]


def _steps(times: list[float], first: int = 0) -> str:
    return "".join(
        f"Training epoch 0, iteration {first + k}/99 | global_step: {first + k} | "
        f"reduced_train_loss: 11.96 | train_step_timing in s: {t:.4f} | consumed_samples: 5\n"
        for k, t in enumerate(times)
    )


def _row(variant: str, step_s: float = 6.0):
    return make_row(
        variant=variant,
        baseline=Baseline(step_time_s=step_s, provenance=Provenance(source="t"), tolerance=0.1),
    )


def _logs(suite, rows_logs: list) -> Path:
    root = suite.path / "logs"
    for row, text in rows_logs:
        log = root / row.id / "log-run.out"
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text(text)
    return root


def _steady(n: int = 60, step: float = 6.0) -> list[float]:
    return [step * (1 + 0.001 * math.sin(i)) for i in range(n)]


def test_secrets_in_a_log_tail_reach_no_file_and_no_terminal(suite):
    oom = _row("oom")
    suite.write_rows([oom])
    text = (
        _steps(_steady(20)) + "\n".join(LINES) + "\ntorch.OutOfMemoryError: CUDA out of memory.\n"
    )
    logs = _logs(suite, [(oom, text)])
    result = suite.run(f"--replay={logs}", "--html=report.html", "--self-contained-html",
                       "--junitxml=junit.xml", "-rA")  # fmt: skip
    terminal = "\n".join(result.outlines + result.errlines)
    assert "INTERNALERROR" not in terminal
    session = Path(suite.results().get("session_dir") or "")
    files = [suite.path / "report.html", suite.path / "junit.xml"]
    files += list((suite.path / "perfgate-results").rglob("*.json*"))
    assert any(p.name == "rows.jsonl" for p in files) and session is not None
    for name, value in SECRETS.items():
        assert value not in terminal, name
        for p in files:
            assert value not in p.read_text(errors="replace"), (name, p)
    rec = suite.results()["rows"][oom.id]
    assert rec["verdict"] == "INFRA" and "WANDB_API_KEY=***" in rec["diagnosis"]["log_tail"]


def test_a_token_in_an_override_is_refused_before_anything_is_stored(suite):
    suite.write_rows([_row("x")])
    token = "ghp_" + "a" * 36
    result = suite.run("--dry-run", f"--override=log.wandb.name={token}")
    assert result.ret == 4
    err = "\n".join(result.errlines)
    assert "looks like a secret; secrets travel by environment only" in err and token not in err
    assert not (suite.path / "perfgate-results").exists() or token not in "".join(
        p.read_text() for p in (suite.path / "perfgate-results").rglob("*.json")
    )


def _corrupt_history(path: Path, row_id: str) -> None:
    """Eight nights of the row, then: a run whose nodes are not JSON, one with a negative
    step time, one with a hostile node name."""
    store = SqliteStore(path)
    for night in range(8):
        sid = store.start_session(
            Session(mode="live", started_at=f"2026-05-{night + 1:02d}T01:00:00+00:00")
        )
        step = 6.0 * (1 + 0.001 * night)
        run = Run(row_id, "stored", "baseline", 1, True, step_time_s=step, rel_se=0.001,
                  n_steady=50, job_id=str(100 + night), nodes=(f"n{night}",))  # fmt: skip
        store.add_runs(sid, [run])
    con = sqlite3.connect(path)
    con.execute("UPDATE runs SET nodes = 'not json' WHERE id = 2")
    con.execute("UPDATE runs SET step_time_s = -6.0 WHERE id = 3")
    con.execute(
        """UPDATE runs SET nodes = '["n7\\n#SBATCH --x", "../../etc/passwd"]' WHERE id = 4"""
    )
    con.commit()
    con.close()


def test_a_corrupt_shared_history_is_warned_about_and_judges_with_the_rest(suite):
    row = _row("hist")
    suite.write_rows([row])
    history = suite.path / "history.sqlite"
    _corrupt_history(history, row.id)
    logs = _logs(suite, [(row, _steps(_steady()))])
    result = suite.run(f"--replay={logs}", f"--history={history}", "-rA")
    out = "\n".join(result.outlines + result.errlines)
    assert "INTERNALERROR" not in out and "Traceback" not in out, out[-3000:]
    rec = suite.results()["rows"][row.id]
    assert rec["verdict"] in ("PASS", "INCONCLUSIVE") and rec["history"]["n_runs"] == 6, rec
    # the first of the door's notes, and how many more, in the session's summary
    assert f"history: {history}: runs row 2 left out: nodes is not JSON (and 2 more)" in out


def _repeat_logs(suite, row, steps: list[float]) -> Path:
    """--repeat K with --replay: launch-1/ .. launch-K/ of the row's folder."""
    root = suite.path / "logs"
    for k, step in enumerate(steps, 1):
        log = root / row.id / f"launch-{k}" / "log-run.out"
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text(_steps(_steady(step=step)))
    return root


def test_runs_that_disagree_are_not_stored_as_a_baseline(suite):
    row = _row("spread", step_s=2.0)
    suite.write_rows([row])
    logs = _repeat_logs(suite, row, [2.0, 2.0, 4.0])
    before = (suite.baselines_dir / "h100.json").read_text()
    result = suite.run(f"--replay={logs}", "--repeat", "3", "--store-replay", "--update-baselines")
    out = "\n".join(result.outlines)
    assert result.ret == 1, out[-2000:]  # the update was incomplete: the session fails
    assert f"baseline NOT stored: {row.id}: its runs disagree (2, 2, 4 s: spread 40.0% of" in out
    assert "rerun it, or store it anyway with --accept-regressions" in out
    assert (suite.baselines_dir / "h100.json").read_text() == before
    again = suite.run(f"--replay={logs}", "--repeat", "3", "--update-baselines",
                      "--accept-regressions")  # fmt: skip
    assert "baselines updated in" in "\n".join(again.outlines)


def test_an_unwritable_baselines_folder_is_one_line_and_the_session_still_finishes(suite):
    row = _row("ro", step_s=6.0)
    suite.write_rows([row])
    logs = _logs(suite, [(row, _steps(_steady()))])
    # root ignores file modes: a directory where the lock file must go fails the same way
    (suite.baselines_dir / "h100.json.lock").mkdir()
    result = suite.run(f"--replay={logs}", "--update-baselines", "--accept-regressions")
    out = "\n".join(result.outlines + result.errlines)
    assert "INTERNALERROR" not in out and "Traceback" not in out, out[-3000:]
    line = next(x for x in result.outlines if x.startswith("baselines NOT updated: "))
    assert "h100.json: cannot write the new baselines" in line
    assert result.ret == 1 and "perfgate (replay)" in out  # the summary was written
    assert json.loads((suite.path / "perfgate-results" / "results.json").read_text())["session"][
        "finished"
    ]
