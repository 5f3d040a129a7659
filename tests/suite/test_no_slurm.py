"""A live run where Slurm's commands do not exist: one usage error saying what to do instead."""

from __future__ import annotations

import sys
from pathlib import Path

pytest_plugins = ["pytester"]


def test_a_live_run_without_slurm_is_one_usage_error(suite, monkeypatch):
    suite.real_baselines()
    monkeypatch.setenv("PATH", str(Path(sys.executable).parent))  # python, but no sbatch
    result = suite.run("-m", "h100 and nemo2", "--gpus", "8", "--partition", "p")
    assert result.ret == 4
    err = "\n".join(result.errlines)
    assert "no Slurm here (sbatch, srun, squeue, scancel not on PATH)" in err
    assert "--dry-run, --replay DIR or --executor local" in err
    assert not (suite.path / "perfgate-results" / "jobs").exists()  # nothing was planned
