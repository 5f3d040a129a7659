"""Run the contract suites against the real NeMo 2.x, NeMo Automodel and Megatron-Bridge, each
in its own venv.

The main venv has none of them: scripts/nemo-venv builds .venv-nemo (CPU NeMo 2.x stack),
scripts/automodel-venv builds .venv-automodel and scripts/bridge-venv builds .venv-bridge
(Megatron-Bridge 0.6 on Python 3.12). Locally a suite skips when its venv is absent; under CI
(CI set) it fails instead.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from testutil import require

REPO = Path(__file__).resolve().parents[2]
SUITES = {
    # suite folder: (interpreter env override, default venv, build script)
    "nemo_contract": ("PERFGATE_NEMO_PYTHON", ".venv-nemo", "scripts/nemo-venv"),
    "automodel_contract": (
        "PERFGATE_AUTOMODEL_PYTHON",
        ".venv-automodel",
        "scripts/automodel-venv",
    ),
    "bridge_contract": ("PERFGATE_BRIDGE_PYTHON", ".venv-bridge", "scripts/bridge-venv"),
}


QUIET = ("-p", "no:cacheprovider", "-W", "ignore")


@pytest.mark.parametrize(
    "suite",
    [
        pytest.param("nemo_contract", marks=pytest.mark.nemo),
        pytest.param("automodel_contract", marks=pytest.mark.automodel),
        pytest.param("bridge_contract", marks=pytest.mark.bridge),
    ],
)
def test_contract_suite_passes_in_its_venv(suite: str) -> None:
    env_var, venv, script = SUITES[suite]
    python = Path(os.environ.get(env_var, REPO / venv / "bin" / "python"))
    require(python.exists(), f"the interpreter {python} (build it with {script})")
    folder = f"tests/workload/{suite}"
    proc = subprocess.run(
        # --confcutdir: only the suite's own conftest; the root one loads the pytest plugin,
        # whose launcher needs submitit, which these venvs do not have.
        [str(python), "-m", "pytest", folder, "--confcutdir", folder, "-q", *QUIET],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    tail = (proc.stdout + proc.stderr)[-6000:]
    assert proc.returncode == 0, f"{suite} failed (exit {proc.returncode}):\n{tail}"
    assert " passed" in proc.stdout and " failed" not in proc.stdout
