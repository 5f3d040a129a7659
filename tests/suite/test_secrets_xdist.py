"""Secrets never reach options, logs or reports; under pytest-xdist results.json still gets
every row (records travel on the reports to the controller)."""

from __future__ import annotations

import hashlib
import json

from rowfactory import command_row, make_row, with_baseline

from .pytester_suite import EXAMPLES

pytest_plugins = ["pytester"]

TOKEN = "hf_" + "Q" * 30


def test_secret_values_are_refused_on_the_command_line(suite, tmp_path):
    suite.shipped_rows()
    result = suite.run("--dry-run", "--env", f"HF_TOKEN={TOKEN}")
    assert result.ret == 4
    (line,) = [ln for ln in result.errlines if ln.startswith("ERROR:")]
    assert "HF_TOKEN looks like a secret; export it in the shell instead" in line
    assert TOKEN not in "\n".join(result.outlines + result.errlines)
    env_file = tmp_path / "env.json"
    env_file.write_text(json.dumps({"NCCL_DEBUG": "INFO", "WANDB_API_KEY": "abc123456"}))
    # a path value outside the suite folder must be given as --opt=PATH (see the README)
    result = suite.run("--dry-run", f"--env-file={env_file}")
    assert result.ret == 4 and "WANDB_API_KEY looks like a secret" in "\n".join(result.errlines)


def test_secret_in_a_failed_log_is_masked_in_terminal_results_and_report(suite, monkeypatch):
    row = make_row()
    suite.write_rows([with_baseline(row, 2.67)])
    log = suite.path / "logs" / row.id / "log-run.out"
    log.parent.mkdir(parents=True)
    log.write_text(
        f"login with token {TOKEN}\nTraceback (most recent call last):\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB.\n"
    )
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    result = suite.run("--replay", "logs", "--html", "r.html", "--self-contained-html")
    assert result.ret == 1
    text = "\n".join(result.outlines)
    assert "login with token ***" in text and TOKEN not in text
    saved = (suite.path / "perfgate-results" / "results.json").read_text()
    assert TOKEN not in saved and "login with token ***" in saved
    assert TOKEN not in (suite.path / "r.html").read_text()


def test_xdist_workers_feed_one_results_file(suite):
    suite.shipped_rows()
    result = suite.run(f"--replay={EXAMPLES}", "-m", "h100", "--tolerance", "0.12", "-n", "2")
    assert result.ret == 1
    rows = suite.results()["rows"]
    verdicts = sorted(r["verdict"] for r in rows.values() if r["verdict"] != "SKIPPED")
    assert verdicts == ["INCONCLUSIVE", "INFRA", "NO_BASELINE", "PASS", "REGRESSION"]
    assert "perfgate (replay)" in "\n".join(result.outlines)


HIDDEN = {"NGC_KEY": "ngc-Zq8xV31kLm", "DB_PASS": "pass-Wm41Tzq9", "MY_SETTING": "mine-Hc7Pq2Lx"}
ROW_VALUE = "row-Ub5Kx02Wq"


def test_env_values_that_are_not_knobs_are_in_no_artifact_and_reach_the_job(suite):
    # --env NGC_KEY=... and DB_PASS=... were in results.json, report.html, junit.xml,
    # history.sqlite, spec.json, the submitit pickles and on the terminal.
    names = [*HIDDEN, "ROW_VAR", "NCCL_ALGO", "NCCL_DEBUG"]
    hashed = [a for n in names for a in ("--hash-env", n)]
    row = with_baseline(
        command_row("env", *hashed, env={"ROW_VAR": ROW_VALUE, "NCCL_ALGO": "Ring"}),
        0.0305,
        tolerance=0.5,
    )
    suite.write_rows([row])
    env_args = [f"--env={k}={v}" for k, v in HIDDEN.items()] + ["--env", "NCCL_DEBUG=WARN"]
    common = ["--all-rows", "--executor", "local", *env_args]
    result = suite.run(
        *common,
        "--poll-interval",
        "0.2",
        "--html",
        "report.html",
        "--self-contained-html",
        "--junitxml",
        "junit.xml",
    )
    assert result.ret == 0, "\n".join(result.outlines[-30:])
    dry = suite.run(*common, "--dry-run", "-v")
    terminal = "\n".join(result.outlines + result.errlines + dry.outlines + dry.errlines)
    files = [p for p in suite.path.rglob("*") if p.is_file()]
    names_seen = {p.name for p in files}
    for expected in ("results.json", "report.html", "junit.xml", "history.sqlite", "spec.json"):
        assert expected in names_seen, expected
    assert any(p.name.endswith(".pkl") for p in files)
    for value in HIDDEN.values():
        assert value not in terminal
        for p in files:
            assert value.encode() not in p.read_bytes(), p
    # The row's own variable is in its row (baselines/h100.json, and the row pickled for the
    # job); no file perfgate writes for people shows it.
    for p in files:
        if p.suffix != ".pkl" and p.parent.name != "baselines":
            assert ROW_VALUE.encode() not in p.read_bytes(), p
    assert ROW_VALUE not in terminal
    # Every variable reached the ranks intact (fake_train hashes what it saw).
    seen = json.loads(next(suite.path.rglob("rank-0.json")).read_text())
    for name, value in {**HIDDEN, "ROW_VAR": ROW_VALUE}.items():
        assert seen[name] == "sha256:" + hashlib.sha256(value.encode()).hexdigest()[:16], name
    # Knobs are recorded by value, the rest by name.
    results = suite.results()
    assert results["session"]["options"]["env"] == {
        **dict.fromkeys(HIDDEN, "***"),
        "NCCL_DEBUG": "WARN",
    }
    assert results["rows"][row.id]["row"]["env"] == {"ROW_VAR": "***", "NCCL_ALGO": "Ring"}
    assert '--env "NGC_KEY=$NGC_KEY"' in results["rows"][row.id]["repro"]  # the shell has it
