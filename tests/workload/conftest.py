"""Fixtures of the workload tests: a real step-time series and a spec factory."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from rowfactory import as_row

from perfgate.workload.spec import WorkloadSpec

HERE = Path(__file__).resolve().parent
TOGETHER_8B = "third_party_logs/together_b200_llama3.1_8b_bf16_gbs128_nemo2602.csv"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "nemo: needs the NeMo 2.x stack (.venv-nemo)")
    config.addinivalue_line("markers", "automodel: needs NeMo Automodel (.venv-automodel)")
    config.addinivalue_line("markers", "bridge: needs Megatron-Bridge (.venv-bridge)")


@pytest.fixture
def series_csv(reference: Path) -> Path:
    """The real 50-step Llama3.1-8B BF16 8xB200 series (seconds per step)."""
    return reference / TOGETHER_8B


@pytest.fixture
def real_times(series_csv: Path) -> list[float]:
    """Its step times as NeMo 2 would print them (4 significant digits)."""
    return [
        float(f"{float(line.split(',')[1]):.4}")
        for line in series_csv.read_text().splitlines()
        if line and line[0].isdigit()
    ]


@pytest.fixture
def command_spec(tmp_path: Path):
    """Make a command-backend spec running the fake NeMo 2 trainer."""

    def make(steps: int = 50, **row_extra) -> WorkloadSpec:
        row = {"id": "pretrain-llama3_8b-b200-bf16-8gpu-tp1-command", "backend": "command"}
        row.update(row_extra)
        return WorkloadSpec(
            row=as_row(row),
            steps=steps,
            output_dir=str(tmp_path / "out"),
            command=[sys.executable, str(HERE / "fake_nemo2_trainer.py")],
        )

    return make


# The contract tests import NeMo / Automodel / Megatron-Bridge: the main venv runs them through
# .venv-nemo, .venv-automodel and .venv-bridge instead (test_contract_suites.py), so each is
# collected only by an interpreter that has its stack.
collect_ignore_glob: list[str] = []
try:
    import nemo.collections.llm  # noqa: F401
except ImportError:
    collect_ignore_glob.append("nemo_contract/*")
try:
    import nemo_automodel  # noqa: F401
except ImportError:
    collect_ignore_glob.append("automodel_contract/*")
# Megatron-Bridge imports only behind bridge_contract's own conftest (its Transformer Engine
# stub, its Hugging Face cache), which test_contract_suites.py loads alone (--confcutdir).
collect_ignore_glob.append("bridge_contract/*")
