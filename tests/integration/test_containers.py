"""Real containers on the local Slurm: pyxis + enroot built from source, podman, a template.

The images are the two `scripts/containers` builds (Debian 12 + python3 + a tiny training
loop; baseline 1.0, candidate 1.1 and 10% slower). perfgate's source reaches them by the
mount every runtime gets, so the workload is the real `command` backend. Failures are real
too: a truncated and a non-squashfs image file, a registry this machine cannot reach, a
podman image that is not there, a template that drops Slurm's variables, a cluster without
pyxis. Every scenario is submitted at once and each test waits for its own row.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from perfgate.catalog import Row
from perfgate.launch import LaunchOptions, LaunchSession
from perfgate.launch.digests import ImageDigests
from perfgate.launch.images import file_stamp
from perfgate.launch.job import Job
from perfgate.launch.planning import context
from perfgate.runs import RunResult

pytestmark = pytest.mark.slurm
TOKEN = "hf_" + "perfgateContainerToken42"
# Modeled step times (CV 0: the nominal time exactly): what these tests check is the container,
# not how a loaded machine stretches a sleep.
TRAIN = ("python", "/opt/train/train.py", "--step-s", "0.05", "--first-step-s", "0.2",
         "--modeled-cv", "0")  # fmt: skip
# enroot's --mount is fstab with colons; x-create makes the mount point in the image
SRC_RO = "--mount {src}:/opt/perfgate/src:none:x-create=dir,bind,ro"
ENROOT = f"enroot start --env={{env}} --mount {{job_dir}}:{{job_dir}} {SRC_RO} {{image}} {{argv}}"


@pytest.fixture(scope="module")
def image_row(fake_row) -> Callable[..., Row]:
    """Rows of backend "command" running the images' training loop (in the container)."""

    def make(name: str, *args: str, num_gpus: int = 2, gpus_per_node: int = 2) -> Row:
        return fake_row(
            name, *args, num_gpus=num_gpus, gpus_per_node=gpus_per_node, steps=12, program=TRAIN
        )

    return make


def sha256(path: Path) -> str:
    return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()


def ranks(result: RunResult, i: int = 0) -> list[dict[str, Any]]:
    """What each rank of run i recorded inside its container, in rank order."""
    rdir = Path(result.runs[i].log_path).parent
    seen = [json.loads(p.read_text()) for p in (rdir / "ranks").glob("rank-*.json")]
    return sorted(seen, key=lambda s: s["rank"])


def manifest_runs(result: RunResult) -> list[dict[str, Any]]:
    return json.loads((Path(result.job_dir) / "attempt-0" / "runs.json").read_text())["runs"]


@pytest.fixture(scope="module")
def scenarios(
    slurm_cluster, container_images, podman_images, image_row, tmp_path_factory
) -> Iterator[dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("containers")
    base, cand = container_images["baseline"], container_images["candidate"]
    data = tmp / "data"
    data.mkdir()
    (data / "note.txt").write_text("mounted from the host\n")
    truncated = tmp / "truncated.sqsh"
    truncated.write_bytes(base.read_bytes()[: 1 << 20])
    garbage = tmp / "garbage.sqsh"
    garbage.write_bytes(hashlib.sha256(b"not squashfs").digest() * 1024)
    env_args = ["--env", "PLAIN_VAR", "--env", "HF_TOKEN"]
    plans: dict[str, tuple[LaunchOptions, Row]] = {
        "pyxis": (
            LaunchOptions(
                container_image=str(base),
                env={"PLAIN_VAR": "plain value", "HF_TOKEN": TOKEN},
                container_mounts=(f"{data}:/data:ro",),
            ),
            image_row("pyxis", *env_args, "--file", "/data/note.txt", num_gpus=4),
        ),
        "imported": (
            LaunchOptions(
                container_image=f"podman://{podman_images['baseline']}",
                candidate_image=f"podman://{podman_images['candidate']}",
                pairs=2,
                max_pairs=2,
            ),
            image_row("imported", num_gpus=1, gpus_per_node=1),
        ),
        "truncated": (LaunchOptions(container_image=str(truncated)), image_row("truncated")),
        "garbage": (LaunchOptions(container_image=str(garbage)), image_row("garbage")),
        "registry": (
            LaunchOptions(container_image="nvcr.io/nvidia/nemo:25.07"),
            image_row("registry"),
        ),
        "podman": (
            LaunchOptions(
                container_runtime="podman",
                container_image=podman_images["baseline"],
                env={"PLAIN_VAR": "plain value"},
            ),
            image_row("podman", "--env", "PLAIN_VAR", num_gpus=4),
        ),
        "podman_missing": (
            LaunchOptions(
                container_runtime="podman", container_image="localhost/perfgate-test:absent"
            ),
            image_row("podman-missing"),
        ),
        "template": (
            LaunchOptions(
                container_runtime="command", container_command=ENROOT, container_image=str(cand)
            ),
            image_row("template", num_gpus=4),
        ),
        "template_no_env": (
            LaunchOptions(
                container_runtime="command",
                container_command=ENROOT.replace("--env={env} ", ""),
                container_image=str(cand),
            ),
            image_row("template-no-env", num_gpus=4),
        ),
    }
    old_token = os.environ.get("HF_TOKEN")
    sessions = {}
    for name, (options, row) in plans.items():
        options = dataclasses.replace(options, poll_interval_s=1.0)
        sessions[name] = LaunchSession(options, tmp / name)
        sessions[name].submit_all([row])
    yield {
        "sessions": sessions,
        "rows": {name: row for name, (_, row) in plans.items()},
        "files": {"truncated": truncated, "garbage": garbage, "data": data},
    }
    for s in sessions.values():
        s.cancel_all()
    if old_token is None:
        os.environ.pop("HF_TOKEN", None)
    else:
        os.environ["HF_TOKEN"] = old_token


def result(scenarios: dict[str, Any], name: str) -> RunResult:
    row = scenarios["rows"][name]
    return scenarios["sessions"][name].result(row.id, timeout_s=240)


def test_pyxis_runs_every_rank_in_the_image_with_mounts_and_env(scenarios, container_images):
    res = result(scenarios, "pyxis")
    assert res.state == "COMPLETED" and res.diagnosis is None, res.diagnosis
    run = res.runs[0]
    seen = ranks(res)
    assert [s["rank"] for s in seen] == [0, 1, 2, 3] and {s["world_size"] for s in seen} == {4}
    rdir = str(Path(run.log_path).parent)
    for s in seen:
        assert (s["version"], s["slowdown"]) == ("1.0", "0")  # the baseline image's files
        assert s["os"] == "Debian GNU/Linux 12 (bookworm)" and s["python"] == "/usr/bin/python"
        assert s["perfgate"] == "/opt/perfgate/src/perfgate/__init__.py"  # the mounted checkout
        assert s["perfgate_src_writable"] is False  # mounted read-only
        assert s["cwd"] == rdir  # --container-workdir
        assert s["files"] == {"/data/note.txt": "mounted from the host\n"}  # --container-mounts
        assert s["env"]["PLAIN_VAR"] == "plain value"
        assert s["env"]["HF_TOKEN"] == "sha256:" + hashlib.sha256(TOKEN.encode()).hexdigest()[:16]
    assert TOKEN not in (Path(rdir) / "spec.json").read_text()
    assert len(run.series.steps) == 12
    assert run.series.step_times[5] == 0.05  # the image's own log line, read back
    # the srun line pyxis got, and what identifies the image
    cmd = manifest_runs(res)[0]["command"]
    assert f"--container-image={container_images['baseline']}" in cmd
    assert run.image_stamp == tuple(file_stamp(container_images["baseline"]))
    assert run.image_digest is None  # a 30 GB image is not hashed in the allocation's time
    digests = ImageDigests()
    digests.start([str(container_images["baseline"])])
    assert digests.fill(res).runs[0].image_digest == sha256(container_images["baseline"])


def test_registry_images_are_imported_once_per_allocation_by_real_enroot(
    scenarios, podman_images, monkeypatch
):
    res = result(scenarios, "imported")
    assert res.state == "COMPLETED" and res.diagnosis is None, res.diagnosis
    assert [r.label for r in res.runs] == ["baseline", "candidate", "candidate", "baseline"]
    folder = Path(res.job_dir) / "images"
    made = {s: folder / f"localhost+perfgate-test+{s}.sqsh" for s in ("baseline", "candidate")}
    assert sorted(folder.glob("*.sqsh")) == sorted(made.values())  # no partial file left
    imports = [n for n in res.notes if n.startswith("imported podman://")]
    assert len(imports) == 2, res.notes  # four launches, two images, two imports
    for run in res.runs:
        assert run.image == f"podman://{podman_images[run.label]}"
        assert run.image_digest == sha256(made[run.label])  # the file the job imported
    want = {"baseline": "1.0", "candidate": "1.1"}
    for i, run in enumerate(res.runs):
        assert ranks(res, i)[0]["version"] == want[run.label]
    # A requeued attempt of the job uses what the first attempt imported.
    monkeypatch.setenv("SLURM_RESTART_COUNT", "1")
    opts = scenarios["sessions"]["imported"].options
    again = Job(context(scenarios["rows"]["imported"], opts, Path(res.job_dir)))
    mapping = again.prepare_images()
    assert {mapping[run.image] for run in res.runs} == {str(p) for p in made.values()}
    log = (Path(res.job_dir) / "attempt-1" / "job.log").read_text()
    assert log.count("reusing imported image") == 2 and "importing" not in log


BAD_FILES = {
    "truncated": (
        "pyxis: failed to create container filesystem for image: {path}",
        "FATAL ERROR: File system corruption detected",
    ),
    "garbage": ("pyxis:     [ERROR] Invalid image format: {path}", "task_init() failed"),
}


@pytest.mark.parametrize("name", BAD_FILES)
def test_a_bad_image_file_is_a_container_error_naming_it(scenarios, name):
    evidence, in_tail = BAD_FILES[name]
    res = result(scenarios, name)
    path = scenarios["files"][name]
    assert res.state == "FAILED" and res.diagnosis.cause == "CONTAINER"
    assert res.diagnosis.evidence.endswith(evidence.format(path=path))
    assert in_tail in res.diagnosis.log_tail
    assert res.runs[0].series is None  # nothing ran, nothing measured


def test_an_unreachable_registry_is_a_container_error_from_enroot_itself(scenarios):
    res = result(scenarios, "registry")
    assert res.diagnosis.cause == "CONTAINER" and res.runs == ()
    assert res.diagnosis.evidence == (
        "perfgate: enroot import of nvcr.io/nvidia/nemo:25.07 failed (exit 6): "
        "curl: (6) Could not resolve host: nvcr.io"
    )
    assert not list((Path(res.job_dir) / "images").glob("*.sqsh"))  # the partial file is gone


def test_podman_runs_the_ranks_and_records_its_image_id(scenarios, podman_images):
    res = result(scenarios, "podman")
    assert res.state == "COMPLETED" and res.diagnosis is None, res.diagnosis
    seen = ranks(res)
    assert [s["rank"] for s in seen] == [0, 1, 2, 3]
    assert {(s["version"], s["perfgate_src_writable"]) for s in seen} == {("1.0", False)}
    assert {s["cwd"] for s in seen} == {str(Path(res.runs[0].log_path).parent)}
    assert {s["env"]["PLAIN_VAR"] for s in seen} == {"plain value"}
    image_id = subprocess.run(
        ["podman", "image", "inspect", "--format", "{{.Id}}", podman_images["baseline"]],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert res.runs[0].image_digest == f"sha256:{image_id}"
    assert res.runs[0].series.step_times[5] == 0.05


def test_a_podman_image_that_cannot_be_pulled_is_a_container_error(scenarios):
    res = result(scenarios, "podman_missing")
    assert res.diagnosis.cause == "CONTAINER" and res.runs == ()
    assert res.diagnosis.evidence.startswith(
        "perfgate: podman pull of localhost/perfgate-test:absent failed (exit 125): "
    )


def test_a_template_runtime_runs_the_ranks_through_enroot_start(scenarios, container_images):
    res = result(scenarios, "template")
    assert res.state == "COMPLETED" and res.diagnosis is None, res.diagnosis
    seen = ranks(res)
    assert [s["rank"] for s in seen] == [0, 1, 2, 3] and {s["world_size"] for s in seen} == {4}
    assert {(s["version"], s["slowdown"]) for s in seen} == {("1.1", "0.10")}
    assert {s["perfgate_src_writable"] for s in seen} == {False}
    cmd = manifest_runs(res)[0]["command"]
    assert cmd[cmd.index("enroot") :][:4] == [
        "enroot",
        "start",
        "--env=SLURM_PROCID",
        "--env=SLURM_NTASKS",
    ]
    assert str(container_images["candidate"]) in cmd
    # the candidate image's 10%: 0.055 s a step
    assert list(res.runs[0].series.step_times[1:]) == [0.055] * 11


def test_a_template_that_drops_slurms_variables_is_caught(scenarios):
    res = result(scenarios, "template_no_env")
    # every task believed it was rank 0 of 1 and "succeeded"
    assert res.state == "COMPLETED" and res.runs[0].exit_code == 0
    assert res.diagnosis.cause == "CONTAINER"
    assert "rank 0 saw a world of 1 task(s) but srun started 4" in res.diagnosis.message


def test_a_cluster_without_pyxis_refuses_the_image(
    slurm_cluster, container_images, image_row, tmp_path
):
    """srun of this cluster with an empty plugstack.conf: no --container-image."""
    conf = Path(os.environ["SLURM_CONF"])
    (tmp_path / "plugstack.conf").write_text("")
    text = conf.read_text().replace(
        f"PlugStackConfig={conf.parent / 'plugstack.conf'}",
        f"PlugStackConfig={tmp_path / 'plugstack.conf'}",
    )
    shutil.copy(conf.parent / "gres.conf", tmp_path / "gres.conf")
    (tmp_path / "slurm.conf").write_text(text)
    row = image_row("no-pyxis")
    ctx = context(
        row, LaunchOptions(container_image=str(container_images["baseline"])), tmp_path / "job"
    )
    old = os.environ["SLURM_CONF"]
    os.environ["SLURM_CONF"] = str(tmp_path / "slurm.conf")
    try:
        res = Job(ctx).run()
    finally:
        os.environ["SLURM_CONF"] = old
    assert res.diagnosis.cause == "CONTAINER" and res.runs == ()
    assert res.diagnosis.message.startswith("pyxis is not available")
    assert "pyxis is not available: srun has no --container-image" in res.diagnosis.evidence
