"""`perfgate bisect` through the real job path on this machine (--executor local): the CPU
stand-in trainer (tests/integration/fake_train.py) is 15% slower in all-grads-sync under the
image labels img2 and img3 (--container-runtime none: an image is a label the job passes as
$PERFGATE_IMAGE), and prints a newer NCCL there. Ctrl-C during the probe's job cancels it and
keeps the state; --resume runs the probe again and names img2. The real-Slurm, real-image
version is tests/integration/test_bisect_containers.py.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

from resultsdata import ab_record
from rowfactory import command_row

from perfgate.catalog import dump_rows
from perfgate.report.sessionfiles import SCHEMA

TRAIN = ("--modeled-cv", "0.003", "--slow-images", "img2,img3", "--slowdown", "0.15")
TRAIN += ("--timers", "--slow-phase", "all-grads-sync", "--nccl", "2.27.3,2.27.7")
ROW = command_row("bisect", *TRAIN, steps=20, time_limit_min=2)


def write_gate(folder: Path) -> Path:
    """The gate's results.json on the ends: img1 vs img3, REGRESSION."""
    rec = ab_record(ROW, "img1", "img3", "REGRESSION", slowdown=0.15)
    path = folder / "results.json"
    path.write_text(json.dumps({"schema": SCHEMA, "session": {}, "rows": {ROW.id: rec}}))
    return path


def test_ctrl_c_then_resume_names_the_first_slower_image(tmp_path):
    (tmp_path / "baselines").mkdir()
    (tmp_path / "baselines" / "h100.json").write_text(dump_rows([ROW]))
    gate = write_gate(tmp_path)
    argv = [sys.executable, "-m", "perfgate", "bisect", "-k", "bisect", "img1", "img2", "img3"]
    argv += ["--gate", str(gate), "--executor", "local", "--container-runtime", "none"]
    argv += ["--results-dir", "out", "--tolerance", "0.05", "--poll-interval", "0.2"]
    proc = subprocess.Popen(
        argv, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    manifest = tmp_path / "out" / "probe-1-image-2" / "job"
    deadline = time.monotonic() + 120
    while not list(manifest.glob("jobs/*/*/attempt-0/runs.json")) and time.monotonic() < deadline:
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)  # Ctrl-C while the probe's job runs
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 130, out
    assert (
        "perfgate bisect: interrupted (Ctrl-C): the probe is recorded as cancelled, jobs "
        f"cancelled: {ROW.id} (job " in out
    )
    state = json.loads((tmp_path / "out" / "bisect.json").read_text())
    assert [(p["index"], p["status"]) for p in state["probes"]] == [(1, "cancelled")]
    saved = json.loads((manifest / "launch-session.json").read_text())["jobs"][ROW.id]
    assert saved["cancelled"] is True  # a resumed session submits it again, never re-attaches

    done = subprocess.run(
        [*argv, "--resume", "--json"], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout + done.stderr
    answer = json.loads(done.stdout[done.stdout.index("{\n") :])
    assert answer["status"] == "found" and answer["first_bad_image"] == "img2"
    assert answer["probes"] == 1 and answer["changed"] == ["NCCL 2.27.3 -> 2.27.7"]
    assert answer["moved"][0].startswith("all-grads-sync +")
    page = (tmp_path / "out" / "bisect.html").read_text()
    assert "first slower image: image 2 (img2), after image 1 (img1), in 1 probe(s)" in page
