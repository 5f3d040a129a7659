"""The container-upgrade A/B gate through the plugin on the real local Slurm.

The two "images" are labels here (--container-runtime none): the job passes each launch its
image as $PERFGATE_IMAGE and the CPU stand-in trainer is slower by a controlled amount (or
crashes) under the candidate, on 2-node rows; test_plugin_containers.py runs the gate with
two real images through pyxis and enroot. Everything else is the product
path: one allocation per row, counterbalanced launches, the job's own pair rule, the
paired verdict, the report and results.json.

Rows: "same" (0%, 2 nodes) -> PASS after an added pair; "slow" (+10%) -> REGRESSION at the
first look; "broken" (the candidate crashes) -> INFRA naming the candidate run.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from report.test_html_report import row_details
from rowfactory import command_row, with_baseline
from slurm_suite import SuiteDir

pytestmark = pytest.mark.slurm
OLD, NEW = "nemo:25.07", "nemo:25.09"
STEP = ("--step-s", "0.05", "--first-step-s", "0.2")
SAME = with_baseline(
    command_row("same", *STEP, num_gpus=8, gpus_per_node=4, time_limit_min=2), 0.05, 0.05
)
SLOW = command_row(
    "slow", *STEP, "--slow-image", NEW, "--slowdown", "0.10", num_gpus=4, gpus_per_node=4
)
BROKEN = command_row(
    "broken", *STEP, "--crash-image", NEW, "--crash-at", "5", num_gpus=4, gpus_per_node=4
)
ARGS = (
    "--all-rows",
    *("--container-runtime", "none", "--container-image", OLD, "--candidate-image", NEW),
    *("--tolerance", "0.03", "--poll-interval", "0.5", "-v"),
)


@pytest.fixture(scope="module")
def gate(slurm_cluster, tmp_path_factory) -> dict[str, Any]:
    suite = SuiteDir(tmp_path_factory.mktemp("abgate"))
    suite.write_rows([SAME, SLOW, BROKEN])
    code, out, wall = suite.run(*ARGS, "--html", "report.html", "--junitxml", "junit.xml")
    return {"code": code, "out": out, "wall": wall, "rows": suite.results()["rows"], "suite": suite}


def labels(rec: dict[str, Any]) -> list[str]:
    return [r["label"] for r in rec["runs"]]


def test_verdicts(gate):
    rows, out = gate["rows"], gate["out"]
    assert gate["code"] == 1, out
    assert rows[SAME.id]["verdict"] == "PASS" and rows[SAME.id]["outcome"] == "passed"
    assert rows[SLOW.id]["verdict"] == "REGRESSION" and rows[SLOW.id]["outcome"] == "failed"
    assert rows[BROKEN.id]["verdict"] == "INFRA" and rows[BROKEN.id]["outcome"] == "error"
    assert all(rec["mode"] == "paired" for rec in rows.values())
    slow = rows[SLOW.id]["comparison"]
    assert 0.07 < slow["delta"] < 0.13 and slow["ci_low"] > 0.03
    # the failure line says how the verdict was reached
    assert re.search(
        rf"{SLOW.id}: REGRESSION: candidate \S+ s vs baseline image \S+ s per step, delta "
        r"\+\d+\.\d+% \[\+\d+\.\d%, \+\d+\.\d%\], tolerance 3\.0% \(A/B pairs in one "
        r"allocation: 3 pairs, resolution \d\.\d%\)",
        out,
    )


def test_launches_are_counterbalanced_and_a_pair_was_added(gate):
    same, slow = gate["rows"][SAME.id], gate["rows"][SLOW.id]
    ab_ba_ab = ["baseline", "candidate", "candidate", "baseline", "baseline", "candidate"]
    assert labels(slow) == ab_ba_ab  # 10% is decided at the first look: 3 pairs
    n = same["ab"]["pairs_run"]
    assert n >= 4 and labels(same)[:8] == [*ab_ba_ab, "candidate", "baseline"]
    assert len(same["runs"]) == 2 * n and same["ab"]["order"].startswith("AB BA AB BA")
    assert "pair 4 added: 3 pair(s) INCONCLUSIVE" in " ".join(same["notes"])
    assert same["ab"]["pairs_added"] == n - 3
    # the terminal showed which run of the job was going on
    assert re.search(
        rf"perfgate: {SAME.id} job \d+ RUNNING run \d+/\d+ (baseline|candidate)", gate["out"]
    )


def test_one_allocation_per_row_every_run_on_its_nodes(gate, sacct_jobs):
    rec = gate["rows"][SAME.id]
    nodes = rec["job"]["nodes"]
    assert len(nodes) == 2
    for i, run in enumerate(rec["runs"], 1):
        rdir = Path(run["log_path"]).parent
        assert rdir.name == f"run-{i:02d}-{run['label']}"
        seen = [json.loads(p.read_text()) for p in sorted((rdir / "ranks").glob("rank-*.json"))]
        assert len(seen) == 8
        assert {s["SLURMD_NODENAME"] for s in seen} == set(nodes)  # same nodes, every run
        assert {s["PERFGATE_IMAGE"] for s in seen} == {run["image"]}
        assert {s["SLURM_JOB_ID"] for s in seen} == {rec["job"]["job_id"]}
    for row in (SAME, SLOW, BROKEN):
        assert len(sacct_jobs(f"perfgate-{row.id}", expect=1)) == 1


def test_candidate_crash_is_infra_naming_the_run(gate):
    rec, out = gate["rows"][BROKEN.id], gate["out"]
    job = rec["job"]["job_id"]
    assert labels(rec) == ["baseline", "candidate"]  # the job stopped at the failed launch
    assert rec["diagnosis"]["cause"] == "WORKLOAD_EXCEPTION"
    assert f"{BROKEN.id}: INFRA WORKLOAD_EXCEPTION (job {job}): run 2 (candidate): " in out
    assert "simulated failure at step 5" in rec["diagnosis"]["log_tail"]
    assert rec["ab"]["sides"]["candidate"]["image"] == NEW


def test_results_json_shows_both_sides_each_pair_and_the_estimate(gate):
    rec = gate["rows"][SAME.id]
    ab, comp = rec["ab"], rec["comparison"]
    sides = ab["sides"]
    assert (sides["baseline"]["image"], sides["candidate"]["image"]) == (OLD, NEW)
    assert sides["baseline"]["digest"] is None  # no squashfs file behind a label
    assert sides["baseline"]["launches"] == [
        i for i, x in enumerate(labels(rec), 1) if x == "baseline"
    ]
    assert ab["changed"] == {}  # the command backend records no versions
    assert [p["order"] for p in ab["pairs"]][:4] == ["AB", "BA", "AB", "BA"]
    used = [p for p in ab["pairs"] if p["used"]]
    for p in used:
        assert p["delta"] == pytest.approx(
            p["candidate_step_time_s"] / p["baseline_step_time_s"] - 1
        )
    assert comp["pair_deltas"] == pytest.approx([p["delta"] for p in used])
    assert comp["mode"] == "paired" and comp["n_candidate"] == ab["pairs_used"]
    assert comp["ci_low"] < comp["delta"] < comp["ci_high"] and comp["resolution"] <= 0.03
    assert comp["alpha"] == pytest.approx(0.0031)  # 3..8 pairs: per-look alpha
    assert abs(comp["delta"]) < 0.03
    assert ab["drift"]["stored_step_time_s"] == 0.05
    assert 0.049 < rec["measured"]["step_time_s"] < 0.056


def test_reports_say_which_rows_were_judged_by_ab(gate, tmp_path):
    suite = gate["suite"]
    html = (suite.path / "report.html").read_text()
    assert "A/B gate: 3 of 3 rows judged by A/B pairs in one allocation per row" in html
    assert "Launch order (A baseline, B candidate): AB BA AB" in html
    junit = (suite.path / "junit.xml").read_text()
    assert f'<property name="perfgate.candidate_image" value="{NEW}" />' in junit
    # perfgate report re-renders the same from results.json alone
    out = tmp_path / "again.html"
    cli = [sys.executable, "-m", "perfgate", "report", str(suite.results_dir / "results.json")]
    done = subprocess.run([*cli, "--html", str(out)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "A/B gate: 3 of 3 rows judged by A/B pairs" in done.stdout
    page = out.read_text()
    details = "".join(row_details(page).values())
    assert "Paired estimate: Δ step time" in details and "Baseline (A)" in details
    assert "Launch order (A baseline, B candidate): AB BA AB" in page
