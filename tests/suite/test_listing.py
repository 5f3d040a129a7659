"""`perfgate list`: the same selection as pytest's -m/-k/--gpus, baselines and last results."""

from __future__ import annotations

import json
import re

import pytest

from perfgate import cli
from perfgate.errors import ConfigError
from perfgate.report import sessionfiles
from perfgate.suite import expression, listing

from .pytester_suite import EXAMPLES

pytest_plugins = ["pytester"]


def _collected(result) -> list[str]:
    return sorted(ln.split("[", 1)[1].rstrip("]") for ln in result.outlines if "::test_" in ln)


@pytest.mark.parametrize(
    ("markexpr", "keyword", "gpus"),
    [
        ("h100 and fp8", "", None),
        ("(lora or sft) and not b200", "", None),
        ("not nemo2", "", None),
        ("nemotron4 and not bf16", "", "16-256"),
        ("automodel or (gb200 and lora)", "", None),
        ("", "llama3_70b", None),
        ("", "340b and not 2048gpu", None),
        ("h200", "LLAMA", "8,64"),
        ("", "lora or automodel", None),
    ],
)
def test_list_selects_what_pytest_collects(suite, monkeypatch, capsys, markexpr, keyword, gpus):
    cat = suite.shipped_rows()
    args = ["--collect-only", "-q"]
    args += ["-m", markexpr] if markexpr else []
    args += ["-k", keyword] if keyword else []
    args += ["--gpus", gpus] if gpus else []
    expected = _collected(suite.run(*args))
    got = sorted(r.id for r in listing.select(list(cat.rows), markexpr, keyword, gpus))
    assert got == expected
    monkeypatch.chdir(suite.path)
    capsys.readouterr()  # drop the pytester run's output
    cli_args = ["list", "--json", *args[2:]]
    assert cli.main(cli_args) == 0
    assert sorted(e["id"] for e in json.loads(capsys.readouterr().out)["rows"]) == expected


def test_markers_without_rows_are_one_usage_error(suite, monkeypatch, capsys):
    suite.shipped_rows()
    result = suite.run("--collect-only", "-q", "-m", "command or (nvfp4 and h100)")
    assert result.ret == 4
    (line,) = [ln for ln in result.errlines if ln.startswith("ERROR:")]
    assert line.startswith(
        "ERROR: -m 'command or (nvfp4 and h100)': no row of the catalog has command yet "
        "(perfgate knows the value; the rows' markers: automodel, b200, b300, bf16, deepseek, fp8, "
    )
    monkeypatch.chdir(suite.path)
    capsys.readouterr()
    assert cli.main(["list", "-m", "command or (nvfp4 and h100)"]) == 2
    assert capsys.readouterr().err == f"perfgate list: {line.removeprefix('ERROR: ')}\n".replace(
        "perfgate list: ", "perfgate list: error: "
    )
    assert cli.main(["list", "-m", "h1000"]) == 2
    assert "-m 'h1000': unknown marker h1000 (did you mean h100?); the rows' markers: " in (
        capsys.readouterr().err
    )


def test_expression_grammar_and_errors() -> None:
    marks = {"h100", "fp8", "pretrain"}.__contains__
    assert expression.matches("h100 and (fp8 or bf16) and not lora", marks)
    assert expression.matches("not h100 or pretrain and fp8", marks)  # and binds tighter
    assert not expression.matches("not (h100 or b200)", marks)
    assert expression.matches("  ", marks)  # empty: everything, as pytest
    for bad, why in {
        "h100 and": "unexpected end of expression",
        "(h100": "unexpected end of expression",
        "h100 fp8": "unexpected 'fp8'",
        "h100(x=1)": "marker arguments are not supported",
        "h100 & fp8": "unexpected character '&'",
        "or h100": "unexpected 'or'",
    }.items():
        with pytest.raises(ConfigError, match=re.escape(f"-m {bad!r}: {why}")):
            expression.matches(bad, marks)


def test_bad_expression_is_one_line_exit_2(suite, monkeypatch, capsys):
    suite.shipped_rows()
    monkeypatch.chdir(suite.path)
    assert cli.main(["list", "-m", "h100 and"]) == 2
    err = capsys.readouterr().err
    assert err == "perfgate list: error: -m 'h100 and': unexpected end of expression\n"


def test_lines_name_baseline_provenance_and_last_result(suite, monkeypatch, capsys):
    suite.shipped_rows()
    result = suite.run(f"--replay={EXAMPLES}", "-m", "h100", "--tolerance", "0.12")
    assert result.ret == 1  # the examples hold one REGRESSION
    monkeypatch.chdir(suite.path)
    capsys.readouterr()
    assert cli.main(["list", "-m", "h100 and nemotron4", "-k", "340b-h100-bf16-256gpu or 15b"]) == 0
    out = capsys.readouterr().out.splitlines()
    by_id = {ln.split()[0]: ln for ln in out[:-1]}
    saved = suite.results()["rows"]
    rid = "pretrain-nemotron4_340b-h100-bf16-256gpu-tp8pp8"
    measured = saved[rid]["measured"]["step_time_s"]
    assert measured / 4.36 > 1.25  # the example's +27%
    # 64 x 4096 tokens per step / (4.36 s x 256 GPUs) = 234.9 tokens/s/GPU
    assert by_id[rid] == (
        f"{rid}  256 GPUs/32 node(s)  nemo2  baseline 4.360 s, 235 tok/s/GPU (seed 001: llmb "
        "Nemotron4 pretraining recipe README (H100), 340B BF16 table)  "
        f"last: REGRESSION {measured:.3f} s"
    )
    passed = "pretrain-nemotron4_15b-h100-bf16-64gpu-tp2"
    assert by_id[passed].endswith(f"last: PASS {saved[passed]['measured']['step_time_s']:.3f} s")
    assert by_id["pretrain-nemotron4_15b-h100-bf16-16gpu-tp2"].endswith("last: INFRA")
    assert "last: SKIPPED" in by_id["pretrain-nemotron4_15b-h100-bf16-32gpu-tp2"]  # no log
    assert out[-1].startswith(f"{len(by_id)} of 147 rows; last results: ")
    # A row without a stored baseline, and no results file at all.
    (suite.path / "perfgate-results" / "results.json").unlink()
    assert cli.main(["list", "-k", "lora-llama3_70b-h100-bf16-8gpu-tp2pp4vp20"]) == 0
    (row, total) = capsys.readouterr().out.splitlines()
    assert row == "lora-llama3_70b-h100-bf16-8gpu-tp2pp4vp20  8 GPUs/1 node(s)  nemo2  NO_BASELINE"
    assert total == "1 of 147 rows"


def test_a_dry_run_never_hides_a_replays_results(suite, monkeypatch, capsys):
    """#21 item 5: every session keeps its own results; the latest live/replay one stays
    what `perfgate list` and `perfgate report` read after any number of dry runs."""
    suite.shipped_rows()
    rid = "pretrain-nemotron4_340b-h100-bf16-256gpu-tp8pp8"
    assert suite.run(f"--replay={EXAMPLES}", "-m", "h100").ret == 1
    assert suite.run("--dry-run", "-m", "h100").ret == 0
    assert suite.results()["rows"][rid]["verdict"] == "DRY_RUN"  # the dry run's own file
    assert suite.latest()["rows"][rid]["verdict"] == "REGRESSION"
    monkeypatch.chdir(suite.path)
    capsys.readouterr()
    assert cli.main(["list", "-k", "340b-h100-bf16-256gpu"]) == 0
    assert "last: REGRESSION" in capsys.readouterr().out


def test_two_sessions_with_one_results_dir_keep_their_verdicts(suite):
    """#24 item 13: the first session's verdicts do not vanish when a second one runs."""
    suite.shipped_rows()
    assert suite.run(f"--replay={EXAMPLES}", "-m", "h100", "-k", "340b").ret == 1
    assert suite.run(f"--replay={EXAMPLES}", "-m", "h100", "-k", "15b").ret in (0, 1)
    first, second = sessionfiles.session_files(suite.path / "perfgate-results")
    judged = [
        {r for r, rec in json.loads(f.read_text())["rows"].items() if rec["verdict"] != "SKIPPED"}
        for f in (first, second)
    ]
    assert all(judged) and not judged[0] & judged[1]
    assert suite.latest()["session_dir"] == f"sessions/{second.parent.name}"
