"""Fixtures of the workload tests: a real step-time series and a spec factory."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from perfgate import logs
from perfgate.errors import LogParseError
from perfgate.workload.spec import WorkloadSpec

HERE = Path(__file__).resolve().parent
TOGETHER_8B = "third_party_logs/together_b200_llama3.1_8b_bf16_gbs128_nemo2602.csv"

_NEMO2 = re.compile(r"iteration (\d+)/(\d+) \|.*?train_step_timing in s: ([0-9.eE+-]+)")


def _stand_in_parse_files(paths):  # until branch core-logs lands perfgate.logs.parse_files
    steps = []
    for p in paths:
        for m in _NEMO2.finditer(Path(p).read_bytes().decode(errors="replace")):
            steps.append(logs.Step(step=int(m[1]), step_time_s=float(m[3])))
    if not steps:
        raise LogParseError(f"{paths[0]}: no step times found")
    return logs.StepSeries(format="nemo2", steps=tuple(steps), source_files=tuple(map(str, paths)))


@pytest.fixture(autouse=True)
def _parser(monkeypatch: pytest.MonkeyPatch) -> None:
    if not hasattr(logs, "parse_files"):
        monkeypatch.setattr(logs, "parse_files", _stand_in_parse_files, raising=False)


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
            row=row,
            steps=steps,
            output_dir=str(tmp_path / "out"),
            command=[sys.executable, str(HERE / "fake_nemo2_trainer.py")],
        )

    return make
