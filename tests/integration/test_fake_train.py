"""The CPU stand-in trainer's log does not depend on the machine's load when asked (#21 item 12).

The sweep of test_plugin_slurm.py once failed on a loaded machine: a 30 ms step drifted 5.1%
between the halves of its steady window (the sleeps stretched), so a row meant to PASS was
INFRA. Its passing rows now log modeled step times (fake_train --modeled); emulated load
(--load-drift) shows the measured log drifting and the modeled one steady. No Slurm needed.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from perfgate import logs, stats

FAKE_TRAIN = Path(__file__).resolve().parent / "fake_train.py"


def _times(tmp_path: Path, *args: str) -> list[float]:
    env = {**os.environ, "PERFGATE_STEPS": "20", "PERFGATE_OUTPUT_DIR": str(tmp_path)}
    cmd = [sys.executable, str(FAKE_TRAIN), "--step-s", "0.01", "--first-step-s", "0.01"]
    out = subprocess.run([*cmd, *args], env=env, capture_output=True, text=True, check=True)
    log = tmp_path / "log.out"
    log.write_text(out.stdout)
    return [s.step_time_s for s in logs.parse_files([log]).steps]


@pytest.mark.parametrize("modeled", [False, True])
def test_load_stretches_measured_times_not_modeled_ones(tmp_path, modeled):
    flags = ["--load-drift", "0.05"] + (["--modeled"] if modeled else [])
    times = _times(tmp_path, *flags)
    if modeled:
        s = stats.summarize_run(times)
        assert s.steady and abs(s.drift) < 0.01 and abs(s.median_s - 0.01) < 0.0001
    else:
        # What a loaded machine did to the sweep's passing row (5.1% made it INFRA): a sleep
        # never ends early, so step i logs at least its stretched 10 ms x (1 + 0.05 i), 4
        # significant digits, whatever else the machine is doing.
        assert all(t >= round(0.01 * (1 + 0.05 * i), 6) * 0.9995 for i, t in enumerate(times))
