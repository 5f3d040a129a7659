"""One number format for people: 4 significant digits, percentages to 1 decimal, integers for
tokens/s; no CLI output prints a float's full repr (issue #15: 5.675800000000001)."""

from __future__ import annotations

import re

import pytest
from suite.pytester_suite import EXAMPLES

from perfgate.cli import main
from perfgate.report import format as fmt

pytest_plugins = ["pytester"]
LOG = "tests/data/logs/bridge_llama31_8b_b200.log"
MFU_ARGS = ("--num-gpus", "64", "--gbs", "256", "--seq-len", "4096", "--step-time", "2.67")
MAX_DIGITS = 5  # significant digits of any decimal number a person reads


def test_significant_digits():
    assert fmt.sig(5.675800000000001) == "5.676"
    assert fmt.sig(10.30) == "10.3"  # no trailing zeros: 2.67 s stays as published
    assert fmt.sig(43.8246) == "43.82"
    assert fmt.sig(116.7123) == "116.7"
    assert fmt.sig(0.016677314150001635, 2) == "0.017"
    assert fmt.sig(1234567.0) == "1235000" and fmt.sig(0.0) == "0"
    assert fmt.seconds(2.67) == "2.67 s" and fmt.seconds(None) == ""
    assert fmt.pct(0.2732, signed=True) == "+27.3%" and fmt.pct(0.6581442938440599) == "65.8%"
    assert fmt.integer(6136.329588014982) == "6,136"
    assert fmt.flops(421645529382912.0) == "4.216e+14"
    assert fmt.plain("median_step_time_s", 5.675800000000001) == "5.676"
    assert fmt.plain("mfu", 0.6581442938440599) == "65.8%"
    assert fmt.plain("tokens_per_s", 392725.09363295883) == "392,725"
    assert fmt.plain("source_files", ["a.log", "b.log"]) == "a.log, b.log"


def _too_long(text: str) -> list[str]:
    """Decimal numbers in text with more than MAX_DIGITS significant digits."""
    out = []
    for num in re.findall(r"(?<![\w.])\d+\.\d+(?![\w.])", text):
        digits = num.replace(".", "").lstrip("0")
        if len(digits) > MAX_DIGITS:
            out.append(num)
    return out


@pytest.mark.parametrize(
    "argv",
    [
        ["flops", "--model", "llama3_8b", "--seq-len", "8192"],
        ["mfu", "--model", "nemotron4_15b", "--gpu", "h100", "--precision", "bf16", *MFU_ARGS],
        ["parse", LOG],
        ["compare", "--baseline", LOG, "--candidate", LOG],
        ["compare", "--baseline-step-time", "5.61", "--candidate", LOG],
        ["list", "-m", "h100"],
    ],
    ids=lambda a: a[0] if isinstance(a, list) else a,
)
def test_no_cli_output_prints_more_digits_than_it_knows(argv, capsys):
    main(argv)
    out = capsys.readouterr().out
    assert out.strip()
    assert _too_long(out) == [], argv


def test_report_terminal_text_is_rounded(suite, capsys):
    """`perfgate report` on the replay examples' results: every number readable."""
    suite.shipped_rows()
    assert suite.run(f"--replay={EXAMPLES}", "-m", "h100").ret == 1
    capsys.readouterr()
    assert main(["report", str(suite.path / "perfgate-results" / "results.json")]) == 0
    out = capsys.readouterr().out
    assert "REGRESSION" in out and _too_long(out) == []
