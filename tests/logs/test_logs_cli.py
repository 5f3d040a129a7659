"""`perfgate parse`: JSON and human output, exit status 2 with one line for bad input."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from logdata import AUTOMODEL_H200, LOGS

from perfgate.cli import main


def test_parse_json(capsys):
    assert main(["parse", str(LOGS / "nemo2_b200_llama3_8b.log"), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["format"] == "nemo2"
    assert [s["step"] for s in data["steps"]] == [45, 46, 47, 48, 49]
    assert data["steps"][0]["step_time_s"] == 6.08
    assert data["steps"][0]["tflops_per_gpu"] == 1249.0
    summary = data["summary"]
    assert summary["n_steps"] == 5 and (summary["first_step"], summary["last_step"]) == (45, 49)
    assert summary["median_step_time_s"] == 6.071
    assert summary["mean_step_time_s"] == pytest.approx((6.08 + 6.061 + 6.082 + 6.071 + 6.06) / 5)
    assert summary["log_interval"] == 1 and summary["restarts"] == 0
    assert summary["invalid_reason"] is None
    assert summary["source_files"] == [str(LOGS / "nemo2_b200_llama3_8b.log")]


def test_parse_several_files_and_throughput_options(capsys):
    log = str(LOGS / "torchtitan_gc_profiler.log")
    args = ["parse", log, log, "--json", "--tokens-per-step", "65536", "--num-gpus", "8"]
    assert main(args) == 0
    summary = json.loads(capsys.readouterr().out)["summary"]
    assert summary["n_steps"] == 12 and summary["restarts"] == 1
    assert summary["log_interval"] == 10


def test_parse_for_people(capsys):
    assert main(["parse", str(LOGS / "bridge_steptime_only_gb200.log")]) == 0
    out = capsys.readouterr().out
    assert "megatron_bridge" in out and "note: " in out
    rows = [line.split() for line in out.splitlines() if line.strip().startswith("34 ")]
    assert rows == [["34", "21.65", "673.4", "-", "-", "-"]]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["parse", "/nonexistent/slurm-1.out"], "/nonexistent/slurm-1.out: no such log file"),
        (["parse", str(LOGS / "README.md")], "no step-time lines found"),
    ],
)
def test_parse_bad_input_is_one_line_and_status_2(capsys, args, message):
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and err.startswith("perfgate parse: error: ")


def test_python_dash_m_perfgate_parse():
    log = str(LOGS / "megatron_no_timestamp.log")
    out = subprocess.run(
        [sys.executable, "-m", "perfgate", "parse", log, "--json"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert json.loads(out)["summary"]["median_step_time_s"] == pytest.approx(
        (126.9953 + 127.8045) / 2
    )


def test_parse_json_carries_the_steady_state_summary(capsys):
    """perfgate parse adds perfgate.stats' steady-state summary (MSER-5 or a fixed window)."""
    from perfgate import cli

    log = str(LOGS / "bridge_llama31_8b_b200.log")
    assert cli.main(["parse", log, "--json"]) == 0
    auto = json.loads(capsys.readouterr().out)["summary"]["steady_state"]
    assert auto["window_method"] == "mser5" and auto["steady"] is True
    assert auto["window_start"] >= 1  # the 43.8 s first step is warm-up, never steady
    assert cli.main(["parse", log, "--window", "2:9", "--json"]) == 0
    fixed = json.loads(capsys.readouterr().out)["summary"]["steady_state"]
    assert (fixed["window_method"], fixed["window_start"], fixed["window_end"]) == ("fixed", 2, 9)
    assert fixed["n_steady"] == 8


def test_parse_automodel_without_a_rate_or_two_timestamps_is_one_line(tmp_path, capsys):
    log = tmp_path / "training.log"
    log.write_text(AUTOMODEL_H200 + "\n")
    assert main(["parse", str(log)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--tokens-per-step" in err and "training.log" in err


def test_parse_shows_torchtitan_loss_and_memory(capsys):
    assert main(["parse", str(LOGS / "torchtitan_gc_profiler.log")]) == 0
    out = capsys.readouterr().out
    assert "peak_memory_gib" in out
    rows = [line.split() for line in out.splitlines() if line.strip().startswith("209 ")]
    assert rows == [["209", "1.465", "323.9", "49.66", "6.039", "-"]]  # 4 significant digits
