"""Hostile values through perfgate's sbatch scripts, submitted to the real (local) Slurm.

`bash -n` says a script parses; only running it says it runs nothing else. Each job here is
perfgate's own rendered script with shell payloads (`$(touch M)`, backticks, quotes, `;`,
`#`) in the values that reach it (an sbatch comment and the job folder path). The jobs run
for real: the marker files must not exist afterwards, the script must have run its command
(submitit runs a pickled mkdir, as it runs perfgate's job function), and sbatch must have
read each value back exactly as given, as tests/sbatch_reading.py models it. A control job
rendered the way perfgate did before (submitit's renderer, an unquoted key holding a
newline) shows that a payload that does run leaves its marker.
"""

from __future__ import annotations

import os
import random
import subprocess
import time
from dataclasses import replace
from pathlib import Path

import pytest
from sbatch_reading import sbatch_arguments
from submitit.core.utils import DelayedSubmission
from submitit.slurm.slurm import _make_sbatch_string

from perfgate.catalog import load_file
from perfgate.catalog.provenance import SHIPPED_DIR
from perfgate.launch import plan
from perfgate.launch.types import LaunchOptions

pytestmark = pytest.mark.slurm

REPO = Path(__file__).resolve().parents[2]
PAYLOADS = (
    "$(touch {m}/a)",
    "`touch {m}/b`",
    "; touch {m}/c",
    "' ; touch {m}/d ; '",
    '" ; touch {m}/e ; "',
    "x # ; touch {m}/f",
    "&& touch {m}/g || touch {m}/h",
    "'\"'\"' $(touch {m}/i) > {m}/j",
)
SHELL = "'\"$()`;|&<>* #?~{}!=,:.-_aZ09é"  # no '%': refused in job folder paths


def _values(markers: Path) -> list[str]:
    """The payloads, then seeded random strings of shell characters around one."""
    rng = random.Random(16)
    out = [p.format(m=markers) for p in PAYLOADS]
    for i in range(4):
        noise = "".join(rng.choice(SHELL) for _ in range(12))
        out.append(f"{noise}$(touch {markers}/r{i}){noise[::-1]}")
    return out


def _sbatch(script: str, path: Path) -> str:
    path.write_text(script)
    done = subprocess.run(["sbatch", str(path)], capture_output=True, text=True, cwd=path.parent)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()[-1]


def _field(job_id: str, fmt: str) -> str:
    out = subprocess.run(
        ["squeue", "-t", "all", "-h", "-j", job_id, "-o", fmt], capture_output=True, text=True
    )
    return out.stdout.rstrip("\n")


def _wait(ids: list[str], squeue_ids, timeout_s: float = 240) -> None:
    """Until squeue lists none of the jobs as pending, running or completing."""
    deadline = time.monotonic() + timeout_s
    while squeue_ids(ids):
        if time.monotonic() > deadline:
            raise AssertionError(f"jobs {ids} did not finish in {timeout_s} s")
        time.sleep(0.5)


def test_hostile_values_run_nothing_on_the_real_slurm(slurm_cluster, squeue_ids, tmp_path):
    markers = tmp_path / "markers"
    markers.mkdir()
    stored = next(r for r in load_file(SHIPPED_DIR / "h100.json") if r.num_gpus == 8)
    row = replace(stored, baseline=None)
    values = _values(markers)
    jobs = []
    for i, value in enumerate(values):
        job_dir = tmp_path / f"job{i}" / value.replace("/", "|")
        opts = LaunchOptions(slurm_params={"comment": value})
        p = plan(row, opts, job_dir=job_dir)
        for line in p.sbatch_script.split("\n"):
            if line.startswith("#SBATCH --comment="):
                assert sbatch_arguments(line[len("#SBATCH") :]) == [f"--comment={value}"]
        (job_dir / "submitit").mkdir(parents=True)  # where sbatch writes the job's output
        job_id = _sbatch(p.sbatch_script, tmp_path / f"job{i}.sh")
        # As submitit does after sbatch: the pickled call the job's command runs (a mkdir).
        ran = DelayedSubmission(os.mkdir, str(job_dir / "ran"))
        ran.dump(job_dir / "submitit" / f"{job_id}_submitted.pkl")
        jobs.append((job_id, value, job_dir))
        # What sbatch read from the #SBATCH lines, while Slurm still holds the job:
        assert _field(jobs[-1][0], "%k") == value
        assert _field(jobs[-1][0], "%j") == f"perfgate-{row.id}"
    _wait([j for j, _, _ in jobs], squeue_ids)
    assert sorted(p.name for p in markers.iterdir()) == []
    for job_id, _value, job_dir in jobs:
        # The script ran its one command to the end: submitit ran the pickled mkdir.
        assert (job_dir / "ran").is_dir(), job_id
        assert (job_dir / "submitit" / f"{job_id}_0_result.pkl").is_file(), job_id


def test_control_an_injected_line_does_run_and_leaves_its_marker(
    slurm_cluster, squeue_ids, tmp_path
):
    """Without perfgate's checks (submitit's renderer, a key with a newline) it runs."""
    # Relative: submitit turns every '_' of a key into '-', tmp_path's included. The batch
    # script runs in the folder sbatch was called from.
    script = _make_sbatch_string(
        command="true",
        folder=tmp_path,
        nodes=1,
        additional_parameters={"requeue\ntouch owned\n#SBATCH --comment": "x"},
    )
    job_id = _sbatch(script, tmp_path / "control.sh")
    _wait([job_id], squeue_ids)
    assert (tmp_path / "owned").is_file()
