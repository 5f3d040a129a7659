"""`perfgate bisect` on the real local Slurm with real images through pyxis and enroot (#23).

The series is `scripts/containers`' nightly-1..8: the baseline test image plus /series/knobs.json
each; PyTorch's version line changes at 3 (no slowdown), NCCL's at 5, and from 5 on the
all-grads-sync phase is 15% of the step slower. The image trainer logs modeled step and phase
times (--modeled-cv: the verdicts test perfgate, not this machine's load) and, as Megatron's
last rank does, its iteration line and level-1 timer block. As a release engineer works:

1. the A/B gate (pytest) on nightly-1 vs nightly-8: REGRESSION, with all-grads-sync the phase
   that moved and NCCL the version that changed, in results.json and the HTML report;
2. `perfgate bisect ... --gate results.json`: probes 4, then 6 (Ctrl-C while its job runs:
   the job is cancelled, the state kept), `--resume`, then 5: image 5 named in 3 probes;
3. bad input is one line, status 2, and no job.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from rowfactory import command_row
from slurm_suite import SuiteDir, sacct_fields

pytestmark = pytest.mark.slurm
SERIES = Path(__file__).resolve().parents[2] / ".containers" / "images" / "series"
TRAIN = ["python", "/opt/train/train.py", "--step-s", "0.05", "--first-step-s", "0.2"]
TRAIN += ["--timing-log-level", "1", "--modeled-cv", "0.005"]
ROW = command_row(
    "bisect", num_gpus=2, gpus_per_node=2, time_limit_min=2, steps=20, overrides={"command": TRAIN}
)
RULE = ("--tolerance", "0.05", "--poll-interval", "0.5")


@pytest.fixture(scope="module")
def series(container_images) -> list[Path]:
    """nightly-1..8.sqsh (scripts/containers build), with pyxis loaded on the cluster."""
    images = [SERIES / f"nightly-{i}.sqsh" for i in range(1, 9)]
    if not all(p.is_file() for p in images):
        msg = "the bisect series in .containers/images/series (bash scripts/containers build)"
        if os.environ.get("CI"):
            pytest.fail(f"{msg} is required under CI (CI is set)")
        pytest.skip(f"{msg} is not available here")
    return images


def perfgate(cwd: Path, *args: str, timeout: float = 900) -> tuple[int, str, float]:
    t0 = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "perfgate", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return proc.returncode, proc.stdout + proc.stderr, time.monotonic() - t0


@pytest.fixture(scope="module")
def suite(series, tmp_path_factory) -> SuiteDir:
    s = SuiteDir(tmp_path_factory.mktemp("bisect"))
    s.write_rows([ROW])
    return s


@pytest.fixture(scope="module")
def gate(suite, series) -> dict[str, Any]:
    images = (f"--container-image={series[0]}", f"--candidate-image={series[-1]}")
    code, out, wall = suite.run(*images, "--all-rows", *RULE, "-v", "--html", "report.html")
    assert (suite.results_dir / "results.json").exists(), out
    rec = suite.results()["rows"][ROW.id]
    return {"code": code, "out": out, "wall": wall, "rec": rec, "suite": suite}


def test_the_gate_says_regression_and_where_the_time_went(gate):
    rec = gate["rec"]
    assert gate["code"] == 1 and rec["verdict"] == "REGRESSION", gate["out"]
    assert 0.10 < rec["comparison"]["delta"] < 0.20
    phases = {p["name"]: p for p in rec["ab"]["phases"]["phases"]}
    assert rec["ab"]["phases"]["moved"] == ["all-grads-sync"]
    assert phases["all-grads-sync"]["delta"] == pytest.approx(0.75, abs=0.1)  # 15% of 20%
    assert phases["forward-backward"]["moved"] == phases["optimizer"]["moved"] == "flat"
    assert set(rec["ab"]["changed"]) >= {"nccl", "torch"}  # read from the jobs' logs
    assert rec["ab"]["changed"]["nccl"] == {"baseline": "2.27.3", "candidate": "2.27.7"}
    # each row's block is escaped HTML kept in a JSON string that the page reads when shown
    html = (gate["suite"].path / "report.html").read_text()
    assert "Where the time went: all-grads-sync +" in html
    assert (
        "what changed: PyTorch 2.10.0a0+3f1b2c4 -&gt; 2.10.0a0+8e7d6a5, NCCL 2.27.3 -&gt;" in html
    )


def _probe_job(folder: Path, timeout: float = 300) -> str:
    """The job id of a probe's first job once squeue shows it running."""
    state = folder / "job" / "launch-session.json"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            job = json.loads(state.read_text())["jobs"][ROW.id]
        except (OSError, ValueError, KeyError):
            job = {}
        if job.get("job_id"):
            squeue = ["squeue", "-h", "-t", "R", "-o", "%i"]
            if job["job_id"] in subprocess.run(squeue, capture_output=True, text=True).stdout:
                return str(job["job_id"])
        time.sleep(0.3)
    raise AssertionError(f"no running job in {state} after {timeout} s")


@pytest.fixture(scope="module")
def bisected(gate, series) -> dict[str, Any]:
    suite = gate["suite"]
    args = ["bisect", "-k", "bisect", *map(str, series), "--gate", "perfgate-results/results.json"]
    args += ["--results-dir", "bisect", *RULE, "--json"]
    t0 = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "perfgate", *args],
        cwd=suite.path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    job = _probe_job(suite.path / "bisect" / "probe-2-image-6")
    proc.send_signal(signal.SIGINT)  # Ctrl-C while probe 2's job runs
    first, _ = proc.communicate(timeout=120)
    stopped = json.loads((suite.path / "bisect" / "bisect.json").read_text())
    code, out, _ = perfgate(suite.path, *args, "--resume")
    return {
        "interrupted": (proc.returncode, first, job, stopped),
        "code": code,
        "out": out,
        "wall": time.monotonic() - t0,
        "state": json.loads((suite.path / "bisect" / "bisect.json").read_text()),
        "html": (suite.path / "bisect" / "bisect.html").read_text(),
    }


def test_ctrl_c_cancels_the_probes_job_and_keeps_the_state(bisected):
    code, out, job, stopped = bisected["interrupted"]
    assert code == 130, out
    # the state word is the session's last look at the job (SUBMITTED or RUNNING)
    assert f"the probe is recorded as cancelled, jobs cancelled: {ROW.id} (job {job}, " in out
    assert "); --resume runs this probe again" in out
    assert sacct_fields(job)["State"].startswith("CANCELLED")
    assert [(p["index"], p["status"]) for p in stopped["probes"]] == [(3, "done"), (5, "cancelled")]


def test_bisect_names_image_5_in_three_probes_with_the_phase_and_the_version(bisected):
    state, out = bisected["state"], bisected["out"]
    assert bisected["code"] == 0, out
    result = state["result"]
    assert result["status"] == "found" and result["first_bad"] == 4 and result["probes"] == 3
    assert [(p["index"] + 1, p["outcome"]) for p in state["probes"]] == [
        (4, "good"),
        (6, "bad"),
        (5, "bad"),
    ]
    assert result["changed"] == ["NCCL 2.27.3 -> 2.27.7"]  # between image 4 and image 5
    assert result["moved"] and result["moved"][0].startswith("all-grads-sync +")
    four, six, five = (p["rows"][ROW.id] for p in state["probes"])
    assert four["verdict"] == "PASS" and four["ab"]["phases"]["moved"] == []
    assert set(four["ab"]["changed"]) == {"torch"}  # a change that did not slow anything
    for ev in (six, five):
        assert ev["verdict"] == "REGRESSION" and ev["ab"]["phases"]["moved"] == ["all-grads-sync"]
        assert ev["ab"]["changed"]["nccl"]["candidate"] == "2.27.7"
    assert "first slower image: image 5 (" in bisected["html"]
    assert bisected["html"].count("Where the time went: all-grads-sync +") == 2


def test_bad_input_is_one_line_and_submits_nothing(suite, series, tmp_path):
    shutil.copy(series[0], tmp_path / "same-as-1.sqsh")
    cases = {
        "at least two images": [str(series[0])],
        "listed twice": [str(series[0]), str(series[3]), str(series[0])],
        "no such squashfs file": [str(series[0]), str(tmp_path / "gone.sqsh")],
        "the ends do not differ": [
            str(series[0]),
            str(series[3]),
            str(tmp_path / "same-as-1.sqsh"),
        ],
    }
    before = subprocess.run(["sacct", "-X", "-n", "-o", "JobID"], capture_output=True, text=True)
    for words, images in cases.items():
        code, out, _ = perfgate(
            suite.path, "bisect", "-k", "bisect", *images, "--results-dir", f"bad-{len(images)}"
        )
        assert code == 2 and words in out and out.count("\n") == 1, out
        assert not (suite.path / f"bad-{len(images)}").exists()
    after = subprocess.run(["sacct", "-X", "-n", "-o", "JobID"], capture_output=True, text=True)
    assert after.stdout == before.stdout  # no job was submitted
