"""--dry-run: nothing submitted, per row the plan (sbatch script, srun line, spec, recipe,
GPU-hours) in the terminal (compact; -v full) and in results.json, and the total."""

from __future__ import annotations

import re
import shutil

from .pytester_suite import REPO

pytest_plugins = ["pytester"]

SEL = ("-m", "h100 and nemotron4", "--gpus", "64,256")
# 64 GPUs: 8 nodes; 256 GPUs: 32 nodes; 8 GPUs/node; launch's default limit is 30 min/run.
EXPECTED_H = {
    "pretrain-nemotron4_15b-h100-bf16-64gpu-tp2": 8 * 8 * 30 / 60,
    "pretrain-nemotron4_15b-h100-fp8ds-64gpu-tp2": 8 * 8 * 30 / 60,
    "pretrain-nemotron4_15b-h100-bf16-256gpu-tp2": 32 * 8 * 30 / 60,
    "pretrain-nemotron4_15b-h100-fp8ds-256gpu-tp2": 32 * 8 * 30 / 60,
    "pretrain-nemotron4_340b-h100-bf16-256gpu-tp8pp8": 32 * 8 * 30 / 60,
    "pretrain-nemotron4_340b-h100-fp8ds-256gpu-tp8pp8": 32 * 8 * 30 / 60,
}


def test_dry_run_plans_every_row_and_submits_nothing(suite, monkeypatch):
    suite.shipped_rows()
    monkeypatch.setenv("SBATCH_ACCOUNT", "perf-acct")
    monkeypatch.setenv("SBATCH_PARTITION", "batch-p6")
    monkeypatch.setenv("PATH", "/nonexistent")  # no sbatch, no srun: nothing could run
    result = suite.run("--dry-run", *SEL)
    assert result.ret == 0
    assert result.parseoutcomes()["passed"] == len(EXPECTED_H)
    out = result.outlines
    for rid, hours in EXPECTED_H.items():
        nodes = int(hours * 60 / 30 / 8)
        assert f"{rid}: {nodes} node(s) x 8 GPUs, 30 min, {hours:.1f} GPU-h" in out
    total = sum(EXPECTED_H.values())
    assert (
        f"dry run: {len(EXPECTED_H)} row(s), {8 + 8 + 32 * 4} node allocation(s), "
        f"{total:,.1f} GPU-hours at most (time-limit bound) + up to {total:,.1f} for "
        "confirmation reruns; above --max-gpu-hours 512: a live session asks before "
        "submitting (--yes where nobody can answer); -v shows scripts and recipes"
    ) in out
    assert "#SBATCH" not in "\n".join(out)  # compact by default
    rows = suite.results()["rows"]
    assert set(rows) == set(EXPECTED_H)
    for rid, rec in rows.items():
        plan = rec["plan"]
        assert rec["verdict"] == "DRY_RUN" and plan["gpu_hours"] == EXPECTED_H[rid]
        assert "#SBATCH --account=perf-acct" in plan["sbatch_script"]
        assert "#SBATCH --partition=batch-p6" in plan["sbatch_script"]
        assert plan["srun_command"].startswith("srun --nodes=")
        assert plan["workload_spec"]["row"]["id"] == rid
        assert "overrides: checked against the snapshot of NeMo" in rec["description"]
    assert not (suite.path / "perfgate-results" / "jobs").exists()
    assert shutil.which("sbatch", path="/nonexistent") is None


def test_dry_run_verbose_shows_scripts_recipe_and_options(suite):
    suite.shipped_rows()
    image = suite.path / "nemo-25.07.sqsh"
    image.write_bytes(b"hsqs")
    result = suite.run(
        "--dry-run",
        "-v",
        "-m",
        "h100 and bf16",
        "-k",
        "nemotron4_340b",
        "--gpus",
        "256",
        "--time-limit",
        "45",
        "--container-image",
        str(image),
        "--override",
        "model.config.recompute_granularity=selective",
        "--slurm-param",
        "reservation=perf",
        "--slurm-param",
        "no-requeue=",
    )
    assert result.ret == 0
    text = "\n".join(result.outlines)
    rid = "pretrain-nemotron4_340b-h100-bf16-256gpu-tp8pp8"
    assert f"{rid}: 32 node(s) x 8 GPUs, 45 min, 192.0 GPU-h" in text
    assert "#SBATCH --nodes=32" in text and "#SBATCH --time=45" in text
    assert "#SBATCH --reservation=perf" in text
    assert "#SBATCH --no-requeue\n" in text + "\n" and "--no-requeue=" not in text
    assert f"--container-image={image}" in text
    assert "model.config.recompute_granularity = 'selective'" in text
    assert "trainer.strategy.pipeline_model_parallel_size = 8" in text


def test_missing_container_image_is_one_usage_error_before_any_row(suite):
    """#21 item 10: the README's A/B example with files that do not exist gave one ERROR
    per row (8 ERRORs, 0 rows planned); docs/suite.md promised one usage error."""
    suite.shipped_rows()
    for flag in ("--container-image", "--candidate-image"):
        images = {"--container-image": "./nemo-25.07.sqsh", "--candidate-image": "/x.sqsh"}
        if flag == "--candidate-image":
            (suite.path / "nemo-25.07.sqsh").write_bytes(b"hsqs")
        args = [a for f, i in images.items() for a in (f, i)]
        result = suite.run("--dry-run", "-m", "b200", "--gpus", "64", *args)
        assert result.ret == 4
        (line,) = [ln for ln in result.errlines if ln.startswith("ERROR:")]
        path = suite.path / "nemo-25.07.sqsh" if flag == "--container-image" else "/x.sqsh"
        assert line == f"ERROR: {flag} '{images[flag]}': no such squashfs file ({path})"
        assert not any("::test_" in ln for ln in result.outlines)


def test_the_readme_ab_example_dry_runs_and_says_it_is_above_max_gpu_hours(suite):
    suite.shipped_rows()
    result = suite.run(
        *("--dry-run", "-m", "b200", "--gpus", "64", "--partition", "p6", "--account", "me"),
        *("--tolerance", "0.02", "--time-limit", "20"),
        *("--container-image", "nvcr.io#nvidia/nemo:25.07"),
        *("--candidate-image", "nvcr.io#nvidia/nemo:25.09"),
    )
    assert result.ret == 0 and result.parseoutcomes()["passed"] == 8
    assert (
        "dry run: 8 row(s), 64 node allocation(s), 2,730.7 GPU-hours at most (time-limit "
        "bound); above --max-gpu-hours 512: a live session asks before submitting (--yes "
        "where nobody can answer); -v shows scripts and recipes"
    ) in result.outlines


def test_unknown_override_is_one_usage_error_before_anything_runs(suite):
    suite.shipped_rows()
    bad = ("--override", "model.config.recompute_granularty=selective")
    select = ("-m", "h100", "-k", "nemotron4_340b", "--gpus", "256")
    for mode in (("--dry-run",), ()):
        result = suite.run(*mode, *select, *bad)
        assert result.ret == 4, mode  # a usage error, not one error per row
        (line,) = [ln for ln in result.errlines if ln.startswith("ERROR:")]
        assert line == (
            "ERROR: --override 'model.config.recompute_granularty': rejected by 2 of 2 "
            "selected row(s): nemo2 (2 row(s): pretrain-nemotron4_340b-h100-bf16-256gpu-tp8pp8, "
            "pretrain-nemotron4_340b-h100-fp8ds-256gpu-tp8pp8): model.config has no field "
            "'recompute_granularty' (did you mean 'recompute_granularity'?)"
        )
        out = "\n".join(result.outlines)
        assert "PASSED" not in out and "ERROR " not in out and "perfgate: plan" not in out
    assert not (suite.path / "perfgate-results" / "jobs").exists()


def test_container_command_template_is_the_runtime_of_the_srun_line(suite):
    suite.shipped_rows()
    (suite.path / "nemo.sif").write_bytes(b"SIF")
    template = "apptainer exec --nv --bind {mounts} --pwd {workdir} {image} {argv}"
    sel = ("-m", "h100 and bf16", "-k", "nemotron4_340b", "--gpus", "256")
    result = suite.run(
        "--dry-run", *sel, "--container-image=nemo.sif", "--container-command", template
    )
    assert result.ret == 0
    (rec,) = suite.results()["rows"].values()
    srun = rec["plan"]["srun_command"]
    assert f"--mpi=pmix apptainer exec --nv --bind {rec['plan']['job_dir']}:" in srun
    assert f" {suite.path / 'nemo.sif'} bash -c " in srun  # the image file, made absolute
    assert suite.results()["session"]["options"]["container_runtime"] == "command"
    both = suite.run(
        "--dry-run", *sel, "--container-runtime", "podman", "--container-command", template
    )
    assert both.ret == 1
    assert "--container-command is the runtime 'command', not 'podman'" in "\n".join(both.outlines)


def test_the_plan_figures_in_the_docs_are_a_dry_runs(suite):
    """#21 item 11: docs/suite.md showed `-m b200 --gpus 64` as 5 rows and 160 GPU-hours long
    after the catalog grew; the README's and the guide's figures are checked here."""
    suite.shipped_rows()
    docs = (REPO / "docs" / "suite.md").read_text()
    readme = " ".join((REPO / "README.md").read_text().split())
    result = suite.run("--dry-run", "-m", "b200", "--gpus", "64")
    total = r"dry run: (\d+) row\(s\), (\d+) node allocation\(s\), ([\d,.]+) GPU"
    m = re.search(total, "\n".join(result.outlines))
    rows, nodes, hours = m.groups()
    assert f"`perfgate: plan: {rows} row(s), {nodes} node allocation(s), {hours} GPU-hours" in docs
    gpu_h = hours.removesuffix(".0")
    assert f"For the command above: {rows} rows" in readme
    assert f"{nodes} nodes, at most {gpu_h} GPU-hours" in readme
    reruns = re.search(r"\+ up to ([\d,.]+) for confirmation reruns", "\n".join(result.outlines))
    assert f"plus up to {reruns.group(1).removesuffix('.0')} for reruns" in readme
    result = suite.run("--dry-run", "--all-rows")
    total = r"dry run: (\d+) row\(s\), \d+ node allocation\(s\), ([\d,]+)\.\d GPU"
    m = re.search(total, "\n".join(result.outlines))
    whole = f"the whole catalog ({m.group(1)} rows, {m.group(2)} GPU-hours"
    assert whole in " ".join(docs.split())
