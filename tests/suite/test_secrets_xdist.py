"""Secrets never reach options, logs or reports; under pytest-xdist results.json still gets
every row (records travel on the reports to the controller)."""

from __future__ import annotations

import json

from .pytester_suite import EXAMPLES
from .rows import make_row, with_baseline

pytest_plugins = ["pytester"]

TOKEN = "hf_" + "Q" * 30


def test_secret_values_are_refused_on_the_command_line(suite, tmp_path):
    suite.real_baselines()
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
    suite.real_baselines()
    result = suite.run(f"--replay={EXAMPLES}", "-m", "h100", "--tolerance", "0.12", "-n", "2")
    assert result.ret == 1
    rows = suite.results()["rows"]
    verdicts = sorted(r["verdict"] for r in rows.values() if r["verdict"] != "SKIPPED")
    assert verdicts == ["INCONCLUSIVE", "INFRA", "NO_BASELINE", "PASS", "REGRESSION"]
    assert "perfgate (replay)" in "\n".join(result.outlines)
