"""Run the NeMo contract tests (tests/workload/nemo_contract) in .venv-nemo, from the main suite.

The main venv has no NeMo; scripts/nemo-venv builds .venv-nemo with the pinned CPU stack.
Locally the test skips when .venv-nemo is absent; under CI (CI set) it fails instead.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from testutil import require

REPO = Path(__file__).resolve().parents[2]
NEMO_PYTHON = Path(os.environ.get("PERFGATE_NEMO_PYTHON", REPO / ".venv-nemo" / "bin" / "python"))


@pytest.mark.nemo
def test_nemo_contract_suite_passes_in_the_nemo_venv() -> None:
    require(
        NEMO_PYTHON.exists(),
        f"the NeMo venv interpreter {NEMO_PYTHON} (build it with scripts/nemo-venv)",
    )
    proc = subprocess.run(
        [
            str(NEMO_PYTHON),
            "-m",
            "pytest",
            "tests/workload/nemo_contract",
            # Only the contract's own conftest: the suite's root conftest loads the pytest
            # plugin, whose launcher needs submitit, which the NeMo venv does not have.
            "--confcutdir",
            "tests/workload/nemo_contract",
            "-q",
            "-p",
            "no:cacheprovider",
            "-W",
            "ignore",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    tail = (proc.stdout + proc.stderr)[-6000:]
    assert proc.returncode == 0, f"NeMo contract tests failed (exit {proc.returncode}):\n{tail}"
    assert " passed" in proc.stdout and " failed" not in proc.stdout
