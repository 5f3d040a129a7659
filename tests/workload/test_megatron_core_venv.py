"""The megatron_core backend and scripts/gpu-check with torch and Megatron-Core: .venv-bridge
(and, for the check's NeMo 2 stage, .venv-nemo).

The main venv has neither. scripts/bridge-venv builds .venv-bridge (torch CPU, Megatron-Core
0.19.2, Python 3.12), scripts/nemo-venv .venv-nemo (NeMo 2.7.3); scripts/gpu-wheels fetches
.gpu-wheels/. Locally a test skips when one is absent; under CI (CI set) it fails instead.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from testutil import REPO, require

pytestmark = pytest.mark.bridge
CONTRACT = "tests/workload/megatron_core_contract"
WHEELS = REPO / ".gpu-wheels"
QUIET = ("-q", "-p", "no:cacheprovider", "-W", "ignore")


def bridge_python() -> Path:
    python = Path(
        os.environ.get("PERFGATE_BRIDGE_PYTHON", REPO / ".venv-bridge" / "bin" / "python")
    )
    require(python.exists(), f"the interpreter {python} (build it with scripts/bridge-venv)")
    return python


def checkout_env() -> dict[str, str]:
    """This checkout's perfgate and gpucheck first (the venv may hold another checkout's)."""
    return {**os.environ, "PYTHONPATH": f"{REPO / 'src'}:{REPO / 'tools'}:{REPO / 'scripts'}"}


def gpu_check(*args: str, timeout: int = 900) -> subprocess.CompletedProcess:
    cmd = ["bash", str(REPO / "scripts" / "gpu-check"), "--python", str(bridge_python()), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)


def test_megatron_core_contract_passes_in_the_bridge_venv() -> None:
    proc = subprocess.run(
        [str(bridge_python()), "-m", "pytest", CONTRACT, "--confcutdir", CONTRACT, *QUIET],
        cwd=REPO,
        env=checkout_env(),
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    tail = (proc.stdout + proc.stderr)[-6000:]
    assert proc.returncode == 0, f"megatron_core contract failed (exit {proc.returncode}):\n{tail}"
    assert " passed" in proc.stdout and " failed" not in proc.stdout


def test_gpu_check_names_missing_wheels_in_one_line(tmp_path: Path) -> None:
    empty = tmp_path / "wheels"
    empty.mkdir()
    proc = gpu_check("--cpu", "--out", str(tmp_path / "out"), "--wheels", str(empty), timeout=120)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1
    assert proc.stderr.startswith(f"gpu-check: missing wheels in {empty}: pytest==9.2.0, ")
    assert "megatron-core==0.19.2 (run scripts/gpu-wheels" in proc.stderr


def test_gpu_check_without_a_gpu_asks_for_cpu_mode(tmp_path: Path) -> None:
    require(WHEELS.is_dir(), f"{WHEELS} (fetch it with scripts/gpu-wheels)")
    proc = gpu_check("--out", str(tmp_path), timeout=300)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1
    assert "no GPU visible to torch" in proc.stderr and "--cpu runs the CPU check" in proc.stderr


def nemo_python() -> Path:
    python = Path(os.environ.get("PERFGATE_NEMO_PYTHON", REPO / ".venv-nemo" / "bin" / "python"))
    require(python.exists(), f"the interpreter {python} (build it with scripts/nemo-venv)")
    return python


def test_gpu_check_cpu_mode_runs_the_whole_chain(tmp_path: Path) -> None:
    require(WHEELS.is_dir(), f"{WHEELS} (fetch it with scripts/gpu-wheels)")
    out = tmp_path / "out"
    nemo = ("--nemo2", "--nemo-python", str(nemo_python()))
    proc = gpu_check("--cpu", *nemo, "--out", str(out))  # its work folder: /dev/shm
    summary = (out / "gpu-check.txt").read_text() if (out / "gpu-check.txt").exists() else ""
    assert proc.returncode == 0, f"{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
    assert summary.endswith("overall: PASS\n")
    assert {p.name for p in out.iterdir()} == {
        "gpu-check.json",
        "gpu-check.txt",
        "gpu-check.log",
        "report.html",
        "report-nemo2.html",  # the NeMo 2 row's product run, to its CPU boundary
    }
    result = json.loads((out / "gpu-check.json").read_text())
    checks = result["checks"]
    assert result["cpu"] and result["product"]["ok"]
    assert (
        checks["timers"]["status"] == "pass"
        and checks["timers"]["second_clock"] == "clock_realtime"
    )
    assert checks["log"]["status"] == "pass" and checks["tp2"]["status"] == "pass"
    # Product, TP=2, one A/A and one A/B pair: 6 launches, every one read back on both clocks
    # and on the parent's; NeMo's callbacks run on a stand-in is the seventh run folder.
    assert checks["timers"]["runs"] == checks["log"]["runs"] == checks["timers.wall"]["runs"] == 6
    assert len(result["runs"]) == 7
    # Every negative control made its check fail, on CPU too.
    assert {k: c["caught"] for k, c in result["controls"].items()} == dict.fromkeys(
        ("log", "flops", "timers", "nemo2.log"), True
    )
    # NeMo 2: the pinned CUDA boundary, NeMo's printed lines, NeMo 2.7.3's FLOPs exactly
    assert checks["nemo2.boundary"]["status"] == "pass"
    assert checks["nemo2.boundary"]["verdict"] == "INFRA"  # the suite recorded it
    assert checks["nemo2.log"]["status"] == "pass" and checks["nemo2.log"]["format"] == "nemo2"
    assert checks["nemo2.flops"]["convention"] == "nemo2_2509"
    assert checks["nemo2.flops"]["max_rel_diff"] < 1e-9
    # results.json's figures exist after a steady state, which a loaded CPU can deny
    steady = result["product"]["verdict"] != "INFRA"
    assert checks["results"]["status"] == ("pass" if steady else "fail"), checks["results"]
    assert max(checks["flops"]["rel_diffs"].values()) < 1e-9  # the counter's matmuls, exactly
    assert checks["flops"]["b_extra_flops_fraction"] > 0.05  # 1 of 2 layers re-run forward
    assert result["pairs"]["aa"]["pairs"] == result["pairs"]["ab"]["pairs"] == 1
    assert result["environment"]["megatron_core"] == "0.19.2"
    # After the product run the other runs shared one process per rank (gpucheck.runner).
    assert set(result["cpu_s"]) == {"before", "product", "runner", "nemo2", "check", "total"}
    assert "plumbing only: " in summary and "timers.wall" in checks
    assert "<html" in (out / "report.html").read_text()[:500].lower()
