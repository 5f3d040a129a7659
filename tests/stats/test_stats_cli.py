"""`perfgate compare` end to end: files in, JSON and exit status out."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from perfgate.cli import main


def write_run(path: Path, level: float, seed: int, steps: int = 50, csv: bool = False) -> Path:
    """A run with a 10x first step, a CUDA-graph spike at step 3 and 0.3% noise."""
    rng = random.Random(seed)
    values = [level * 10, level * 1.2, level * 1.1, level * 1.4]
    values += [level * (1 + rng.gauss(0, 0.003)) for _ in range(steps - 4)]
    if csv:
        lines = ["# exported", "step,step_time_s,loss"]
        lines += [f"{i},{v:.5f},2.0" for i, v in enumerate(values)]
    else:
        lines = [f"{v:.5f}" for v in values]
    path.write_text("\n".join(lines) + "\n")
    return path


def compare(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict | None, str]:
    code = main(["compare", *argv])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if "--json" in argv and code != 2 else None), err


def test_regression_exits_1_with_json(tmp_path: Path, capsys) -> None:
    base = [str(write_run(tmp_path / f"a{i}.txt", 5.0, i)) for i in range(3)]
    cand = [str(write_run(tmp_path / f"b{i}.txt", 5.5, 10 + i)) for i in range(3)]
    code, data, _ = compare(
        capsys,
        "--baseline",
        *base,
        "--candidate",
        *cand,
        "--paired",
        "--tolerance",
        "0.03",
        "--json",
    )
    assert code == 1
    assert data["verdict"] == "REGRESSION" and data["mode"] == "paired"
    assert data["delta"] == pytest.approx(0.10, abs=0.01)
    assert len(data["pair_deltas"]) == 3
    assert data["candidate_files"] == cand and data["baseline_files"] == base
    assert {"ci_low", "ci_high", "se", "resolution", "reason", "detectable"} <= set(data)
    assert data["baseline"][0]["window_method"] == "mser5"
    assert data["baseline"][0]["window_start"] >= 5


def test_improvement_and_inconclusive_exit_0(tmp_path: Path, capsys) -> None:
    a = str(write_run(tmp_path / "a.txt", 5.0, 1))
    b = str(write_run(tmp_path / "b.txt", 4.0, 2))
    code, data, _ = compare(capsys, "--baseline", a, "--candidate", b, "--json")
    assert code == 0 and data["verdict"] == "IMPROVEMENT" and data["mode"] == "runs"
    # One run against itself: delta 0, but one launch per side resolves only ~11%.
    code, data, _ = compare(capsys, "--baseline", a, "--candidate", a, "--json")
    assert code == 0 and data["delta"] == 0.0
    assert data["verdict"] == "INCONCLUSIVE" and data["resolution"] > 0.05


def test_csv_with_step_column_and_fixed_window(tmp_path: Path, capsys) -> None:
    a = str(write_run(tmp_path / "a.csv", 5.0, 1, csv=True))
    b = str(write_run(tmp_path / "b.csv", 5.02, 2, csv=True))
    code, data, _ = compare(
        capsys, "--baseline", a, "--candidate", b, "--window", "35:44", "--json"
    )
    assert code == 0
    run = data["candidate"][0]
    assert (run["window_method"], run["window_start"], run["window_end"]) == ("fixed", 35, 44)
    assert data["window"] == "35:44"


def test_reference_series_and_stored_baseline(reference: Path, capsys) -> None:
    f = reference / "third_party_logs" / "together_b200_llama3.1_8b_bf16_gbs128_nemo2602.csv"
    code, data, _ = compare(
        capsys,
        "--baseline-step-time",
        "5.40",
        "--baseline-runs",
        "3",
        "--baseline-spread",
        "0.02",
        "--candidate",
        str(f),
        "--json",
    )
    assert data["mode"] == "stored" and data["baseline_step_time_s"] == 5.40
    assert data["delta"] == pytest.approx(5.706 / 5.40 - 1, abs=0.002)  # +5.7%
    assert data["verdict"] in ("REGRESSION", "INCONCLUSIVE")
    assert code == (1 if data["verdict"] == "REGRESSION" else 0)


def test_human_output_names_verdict_and_runs(tmp_path: Path, capsys) -> None:
    a = str(write_run(tmp_path / "a.txt", 5.0, 1))
    short = tmp_path / "short.txt"
    short.write_text("9\n5\n5\n")
    code = main(["compare", "--baseline", a, "--candidate", str(short)])
    out = capsys.readouterr().out
    assert code == 0
    assert out.startswith("INCONCLUSIVE  (runs, tolerance 5.0%)")
    assert "candidate 1: NOT steady: only 3 step times" in out


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--candidate", "{a}", "--baseline", "{missing}"], "no such file"),
        (["--baseline", "{a}", "--candidate", "{a}", "--tolerance", "3"], "tolerance = 3.0"),
        (["--baseline", "{a}", "--candidate", "{a}", "--window", "44"], "--window '44'"),
        (["--baseline", "{a}", "--candidate", "{a}", "{a}", "--paired"], "as many baseline"),
        (["--baseline", "{bad}", "--candidate", "{a}"], "data line 3: step_time_s = 'x'"),
        (["--baseline-step-time", "5", "--candidate", "{a}", "--paired"], "--paired needs"),
        (["--baseline", "{neg}", "--candidate", "{a}"], "step_times[1] = -1.0"),
    ],
)
def test_bad_input_exits_2_with_one_line(tmp_path: Path, capsys, args, fragment) -> None:
    paths = {
        "a": write_run(tmp_path / "a.txt", 5.0, 1),
        "missing": tmp_path / "nope.log",
        "bad": tmp_path / "bad.csv",
        "neg": tmp_path / "neg.txt",
    }
    paths["bad"].write_text("step_time_s\n5.0\nx\n")
    paths["neg"].write_text("5.0\n-1.0\n")
    argv = [a.format(**{k: str(v) for k, v in paths.items()}) for a in args]
    code, _, err = compare(capsys, *argv)
    assert code == 2
    assert fragment in err
    assert err.count("\n") == 1 and err.startswith("perfgate compare: error: ")


def test_text_that_is_no_step_time_file_is_an_error(tmp_path: Path, capsys) -> None:
    junk = tmp_path / "notes.log"
    junk.write_text("hello\nthis is not a training log\n")
    code, _, err = compare(capsys, "--baseline", str(junk), "--candidate", str(junk))
    assert code == 2
    assert str(junk) in err and err.count("\n") == 1


def test_real_megatron_bridge_log_through_the_parser(capsys) -> None:
    # Fixture from the log parser's tests: Llama3.1 8B on 8 B200, Megatron-Bridge (NeMo 26.02).
    log = Path(__file__).resolve().parents[1] / "data" / "logs" / "bridge_llama31_8b_b200.log"
    code, data, _ = compare(capsys, "--baseline", str(log), "--candidate", str(log), "--json")
    assert code == 0
    run = data["baseline"][0]
    assert run["steady"] and run["window_start"] >= 5
    assert run["median_s"] == pytest.approx(5.67, abs=0.02)
    assert data["delta"] == 0.0
