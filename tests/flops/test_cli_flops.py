"""`perfgate flops` and `perfgate mfu`: exact JSON keys, values, and errors with exit 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from perfgate import cli, hardware


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_flops_json(capsys):
    code, out, _ = _run(
        capsys,
        "flops",
        "--model",
        "llama3_8b",
        "--seq-len",
        "8192",
        "--convention",
        "nemo2",
        "--json",
    )
    assert code == 0
    data = json.loads(out)
    assert list(data) == [
        "model",
        "task",
        "seq_len",
        "convention",
        "flops_per_sample",
        "flops_per_token",
    ]
    assert data["model"] == "llama3_8b" and data["task"] == "pretrain"
    assert data["seq_len"] == 8192 and data["convention"] == "nemo2"
    assert data["flops_per_sample"] == 474_422_087_516_160
    assert data["flops_per_token"] == pytest.approx(474_422_087_516_160 / 8192)


def test_flops_lora_seed_004(capsys):
    code, out, _ = _run(
        capsys,
        "flops",
        "--model",
        "llama3_70b",
        "--seq-len",
        "2048",
        "--task",
        "lora",
        "--convention",
        "llmb",
        "--json",
    )
    assert code == 0
    assert json.loads(out)["flops_per_sample"] == pytest.approx(5.8067e14, rel=7e-4)


def test_mfu_json_seed_001(capsys):
    argv = [
        "mfu",
        "--model",
        "nemotron4_15b",
        "--gpu",
        "h100",
        "--precision",
        "bf16",
        "--num-gpus",
        "64",
        "--gbs",
        "256",
        "--seq-len",
        "4096",
        "--step-time",
        "2.67",
    ]
    # The example command, with no --convention: the seed's (llmb) formula by default.
    code, out, _ = _run(capsys, *argv, "--json")
    assert code == 0
    data = json.loads(out)
    assert list(data) == [
        "tokens_per_s",
        "tokens_per_s_per_gpu",
        "tflops_per_gpu",
        "mfu",
        "convention",
        "peak_tflops",
    ]
    assert round(data["tokens_per_s"]) == 392725  # the table's figure
    assert data["tokens_per_s_per_gpu"] == pytest.approx(392725.09 / 64)
    assert round(data["mfu"], 4) == 0.6581  # the table prints 65.82% (0.01 pp away)
    assert abs(data["mfu"] - 0.6582) <= 1e-4
    assert data["mfu"] < 1  # a fraction, not a percent
    assert data["tflops_per_gpu"] == pytest.approx(data["mfu"] * 989.0)
    assert (data["convention"], data["peak_tflops"]) == ("llmb", 989.0)
    # NeMo 2's own count (GQA-aware) gives a lower MFU for the same step time.
    code, out, _ = _run(capsys, *argv, "--convention", "nemo2", "--json")
    assert json.loads(out)["mfu"] == pytest.approx(0.6582 * 385.0 / 434.48, rel=1e-3)


def test_human_output(capsys):
    code, out, _ = _run(
        capsys,
        "mfu",
        "--model",
        "llama3_8b",
        "--gpu",
        "b200",
        "--precision",
        "bf16",
        "--num-gpus",
        "8",
        "--gbs",
        "128",
        "--seq-len",
        "8192",
        "--step-time",
        "5.6653",
        "--convention",
        "megatron",
    )
    assert code == 0
    lines = dict(line.split(None, 1) for line in out.strip().splitlines())
    assert lines["tflops_per_gpu"] == "1191"  # the log's 1190.8 to 4 significant digits
    assert lines["convention"] == "megatron"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["flops", "--model", "llama9", "--seq-len", "8192"],
            "perfgate flops: error: unknown model 'llama9'; known: deepseek_v3, gpt_oss_120b",
        ),
        (
            [
                "mfu",
                "--model",
                "llama3_8b",
                "--gpu",
                "nogpu",
                "--precision",
                "bf16",
                "--num-gpus",
                "8",
                "--gbs",
                "128",
                "--seq-len",
                "8192",
                "--step-time",
                "5",
            ],
            f"perfgate mfu: error: unknown gpu 'nogpu'; known: {', '.join(hardware.GPUS)}",
        ),
        (
            [
                "mfu",
                "--model",
                "llama3_8b",
                "--gpu",
                "h100",
                "--precision",
                "fp16",
                "--num-gpus",
                "8",
                "--gbs",
                "128",
                "--seq-len",
                "8192",
                "--step-time",
                "5",
            ],
            "perfgate mfu: error: unknown precision 'fp16'; known: bf16, fp8, mxfp8, nvfp4",
        ),
        (
            [
                "mfu",
                "--model",
                "llama3_8b",
                "--gpu",
                "h100",
                "--precision",
                "bf16",
                "--num-gpus",
                "8",
                "--gbs",
                "128",
                "--seq-len",
                "8192",
                "--step-time",
                "-1",
            ],
            "perfgate mfu: error: step_time_s must be positive and finite, not -1.0",
        ),
    ],
)
def test_errors_exit_2_with_one_line(capsys, argv, message):
    code, out, err = _run(capsys, *argv)
    assert code == 2
    assert out == ""
    assert err.strip() == err.strip().splitlines()[0]
    assert err.startswith(message)


def test_argparse_rejects_unknown_convention(capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["flops", "--model", "llama3_8b", "--seq-len", "8", "--convention", "hf"])
    assert e.value.code == 2
    assert "invalid choice: 'hf'" in capsys.readouterr().err


def test_real_subprocess():
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "perfgate",
            "mfu",
            "--model",
            "llama3_70b",
            "--gpu",
            "gb200",
            "--precision",
            "bf16",
            "--num-gpus",
            "8",
            "--gbs",
            "64",
            "--seq-len",
            "2048",
            "--step-time",
            "4.229",
            "--task",
            "lora",
            "--convention",
            "llmb",
            "--json",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["mfu"] == pytest.approx(0.4481, abs=1e-4)  # seed 004: 44.84%
    bad = subprocess.run(
        [sys.executable, "-m", "perfgate", "flops", "--model", "nope", "--seq-len", "8"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert bad.returncode == 2
    assert bad.stderr.count("\n") == 1 and "unknown model 'nope'" in bad.stderr
    assert "Traceback" not in bad.stderr


def test_default_convention_is_named_and_per_family(capsys):
    """No --convention: llmb for the families llmb publishes a formula for, else nemo2."""
    for model, expected in (
        ("nemotron4_15b", "llmb"),
        ("llama3_70b", "llmb"),
        ("mixtral_8x7b", "nemo2"),
    ):
        code, out, _ = _run(capsys, "flops", "--model", model, "--seq-len", "4096", "--json")
        assert code == 0 and json.loads(out)["convention"] == expected
    code, out, _ = _run(capsys, "flops", "--model", "nemotron4_15b", "--seq-len", "4096", "--json")
    assert json.loads(out)["flops_per_sample"] == 434_478_891_663_360


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["flops", "--model", "llama3_8b", "--seq-len", "99999999999999"],
            "--seq-len 99999999999999: at most 16,777,216 (no training run has longer sequences)",
        ),
        (
            ["mfu", "--model", "nemotron4_15b", "--gpu", "h100", "--precision", "bf16",
             "--num-gpus", "99999999999", "--gbs", "256", "--seq-len", "4096",
             "--step-time", "2.67"],
            "--num-gpus 99999999999: at most 1,000,000 (no cluster has more GPUs)",
        ),
    ],
)  # fmt: skip
def test_numbers_beyond_a_real_cluster_are_one_line(argv, message, capsys):
    """#21 item 15: every number is bounded, here those of the FLOPs commands."""
    assert cli.main(argv) == 2
    assert capsys.readouterr().err == f"perfgate {argv[0]}: error: {message}\n"
