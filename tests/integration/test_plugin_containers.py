"""The container-upgrade A/B gate through the plugin, with real images through pyxis + enroot.

`pytest --container-image baseline.sqsh --candidate-image candidate.sqsh`, as a release
engineer runs it: the two `scripts/containers` images differ only in a version file and a
10% slowdown knob. The row whose model feels the knob is a REGRESSION of about 10%, the row
whose model does not (--ignore-slowdown) PASSes; both sides are identified by the sha256 of
their squashfs files in results.json and the HTML report.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any

import pytest
from rowfactory import command_row, with_baseline
from slurm_suite import SuiteDir

pytestmark = pytest.mark.slurm
# Modeled step times with a little noise: the verdicts test perfgate, not this machine's load.
TRAIN = ["python", "/opt/train/train.py", "--step-s", "0.05", "--first-step-s", "0.2",
         "--modeled-cv", "0.004"]  # fmt: skip


def image_row(name: str, *args: str):
    return command_row(
        name, num_gpus=2, gpus_per_node=2, time_limit_min=2, overrides={"command": [*TRAIN, *args]}
    )


AFFECTED = image_row("affected")
UNAFFECTED = with_baseline(image_row("unaffected", "--ignore-slowdown"), 0.05, 0.05)


def sha256(path: Path) -> str:
    return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def gate(container_images, tmp_path_factory) -> dict[str, Any]:
    suite = SuiteDir(tmp_path_factory.mktemp("image-gate"))
    suite.write_rows([AFFECTED, UNAFFECTED])
    # one word each: pytest would take a path given as its own word for its rootdir
    images = (f"--container-image={container_images['baseline']}",)
    images += (f"--candidate-image={container_images['candidate']}",)
    args = (*images, "--all-rows", "--tolerance", "0.03", "--poll-interval", "0.5", "-v")
    code, out, _ = suite.run(*args, "--html", "report.html", timeout=420)
    assert (suite.results_dir / "results.json").exists(), out
    return {"code": code, "out": out, "rows": suite.results()["rows"], "suite": suite}


def test_the_slower_image_is_a_regression_and_the_unaffected_row_passes(gate):
    rows, out = gate["rows"], gate["out"]
    assert gate["code"] == 1, out
    slow, same = rows[AFFECTED.id], rows[UNAFFECTED.id]
    assert slow["verdict"] == "REGRESSION" and slow["mode"] == "paired", out
    assert 0.07 < slow["comparison"]["delta"] < 0.13 and slow["comparison"]["ci_low"] > 0.03
    assert same["verdict"] == "PASS" and abs(same["comparison"]["delta"]) < 0.03, out
    assert re.search(rf"{AFFECTED.id}: REGRESSION: candidate \S+ s vs baseline image", out)


def test_both_sides_are_identified_by_their_squashfs_digests(gate, container_images):
    want = {side: sha256(container_images[side]) for side in ("baseline", "candidate")}
    assert want["baseline"] != want["candidate"]  # two real, different files
    for rec in gate["rows"].values():
        sides = rec["ab"]["sides"]
        for side in ("baseline", "candidate"):
            assert sides[side]["image"] == str(container_images[side])
            assert sides[side]["digest"] == want[side], sides[side]
        for run in rec["runs"]:
            assert run["image_digest"] == want[run["label"]]
    html = (gate["suite"].path / "report.html").read_text()
    assert want["baseline"] in html and want["candidate"] in html


def test_a_missing_image_file_is_one_usage_line_before_anything_runs(slurm_cluster, tmp_path):
    suite = SuiteDir(tmp_path / "suite")
    suite.write_rows([AFFECTED])
    code, out, _ = suite.run("--container-image", "./missing.sqsh", timeout=120)
    missing = suite.path / "missing.sqsh"
    assert code == 4, out  # pytest's usage error
    assert f"--container-image './missing.sqsh': no such squashfs file ({missing})" in out
    assert "Traceback" not in out and not (suite.results_dir / "jobs").exists()
