"""What each srun task runs under podman and under a --container-command template."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfgate.errors import ConfigError
from perfgate.launch import images
from perfgate.launch.planning import context, plan
from perfgate.launch.runtimes import CONTAINER_SRC, RANK_ENV, parse_template, task_argv
from perfgate.launch.types import LaunchOptions

APPTAINER = "apptainer exec --nv --bind {mounts} --pwd {workdir} {image} {argv}"
ENROOT = (
    "enroot start --env={env} --mount {job_dir}:{job_dir} --mount {src}:/opt/src {image} {argv}"
)


def ctx_for(row, tmp_path, **kw):
    opts = LaunchOptions(results_dir=str(tmp_path), container_mounts=("/lustre:/data:ro",), **kw)
    return context(row, opts, tmp_path / "job")


def boot(rdir: Path) -> list[str]:
    return [
        "bash",
        "-c",
        f"export PYTHONPATH={CONTAINER_SRC}${{PYTHONPATH:+:$PYTHONPATH}}; "
        'exec python -m perfgate.workload "$0"',
        str(rdir / "spec.json"),
    ]


def test_podman_passes_slurms_variables_mounts_and_workdir(command_row, tmp_path):
    ctx = ctx_for(
        command_row, tmp_path, container_runtime="podman", container_image="nvcr.io/nvidia/nemo:1"
    )
    assert ctx.launches == (("baseline", "nvcr.io/nvidia/nemo:1"),)
    rdir = tmp_path / "job" / "attempt-0" / "run-01-baseline"
    argv = task_argv(ctx, rdir, "nvcr.io/nvidia/nemo:1", ["HF_TOKEN", "MASTER_ADDR"])
    assert argv[:5] == ["podman", "run", "--rm", "--network=host", "--ipc=host"]
    assert "--env=SLURM_*" in argv and "--env=HF_TOKEN" in argv and "--env=MASTER_ADDR" in argv
    assert [a for a in argv if a.startswith("--volume=")] == [
        f"--volume={tmp_path / 'job'}:{tmp_path / 'job'}",
        f"--volume={ctx.perfgate_src}:{CONTAINER_SRC}:ro",
        "--volume=/lustre:/data:ro",
    ]
    assert argv[-6:] == [f"--workdir={rdir}", "nvcr.io/nvidia/nemo:1", *boot(rdir)]


def test_podman_refuses_a_squashfs_file(command_row, tmp_path):
    (tmp_path / "n.sqsh").write_bytes(b"hsqs")
    with pytest.raises(ConfigError, match="podman runs images from its storage or a registry"):
        ctx_for(command_row, tmp_path, container_runtime="podman", container_image="./n.sqsh")


def test_apptainer_template_gets_the_mounts_workdir_and_the_absolute_image(
    command_row, tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "nemo.sif").write_bytes(b"SIF")
    ctx = ctx_for(
        command_row,
        tmp_path,
        container_runtime="command",
        container_command=APPTAINER,
        container_image="nemo.sif",
    )
    image = str(tmp_path / "nemo.sif")
    assert ctx.launches == (("baseline", image),)  # relative to where pytest runs, made absolute
    rdir = tmp_path / "job" / "attempt-0" / "run-01-baseline"
    mounts = f"{tmp_path / 'job'}:{tmp_path / 'job'},{ctx.perfgate_src}:{CONTAINER_SRC}:ro"
    assert task_argv(ctx, rdir, image, []) == [
        *("apptainer", "exec", "--nv", "--bind", f"{mounts},/lustre:/data:ro"),
        *("--pwd", str(rdir), image, *boot(rdir)),
    ]
    # --dry-run shows the same line after srun's own options
    shown = plan(command_row, ctx_opts(tmp_path, image), tmp_path / "job").srun_command
    assert f"apptainer exec --nv --bind {mounts},/lustre:/data:ro --pwd {rdir} {image}" in shown


def ctx_opts(tmp_path, image):
    return LaunchOptions(
        results_dir=str(tmp_path),
        container_mounts=("/lustre:/data:ro",),
        container_runtime="command",
        container_command=APPTAINER,
        container_image=image,
    )


def test_env_placeholder_repeats_for_every_variable_the_workload_needs(command_row, tmp_path):
    ctx = ctx_for(
        command_row,
        tmp_path,
        container_runtime="command",
        container_command=ENROOT,
        container_image="docker://nvcr.io#nvidia/nemo:1",
    )
    rdir = tmp_path / "r"
    argv = task_argv(ctx, rdir, "docker://nvcr.io#nvidia/nemo:1", ["SLURM_PROCID", "HF_TOKEN"])
    envs = [a.removeprefix("--env=") for a in argv if a.startswith("--env=")]
    assert envs == [*RANK_ENV, "HF_TOKEN"]  # each once, Slurm's first
    assert argv[2 + len(envs) :][:4] == [
        "--mount",
        f"{tmp_path / 'job'}:{tmp_path / 'job'}",
        "--mount",
        f"{ctx.perfgate_src}:/opt/src",
    ]


@pytest.mark.parametrize(
    ("template", "error"),
    [
        ("apptainer exec {image} python", "needs {image} and {argv}"),
        ("apptainer exec {argv}", "needs {image} and {argv}"),
        ("apptainer exec {image} sh -c 'exec {argv}'", "{argv} must be a word of its own"),
        ("apptainer exec --bind {mount} {image} {argv}", "unknown placeholder {mount}; known:"),
        ("enroot start --env={env}:{image} {image} {argv}", "{env} cannot share a word"),
        ("apptainer exec '{image} {argv}", "No closing quotation"),
        ("apptainer exec {image {argv}", "expected '}' before end of string"),
    ],
)
def test_bad_templates_are_one_line_errors(template, error):
    with pytest.raises(ConfigError) as e:
        parse_template(template)
    assert str(e.value).startswith(f"--container-command {template!r}: ")
    assert error in str(e.value) and "\n" not in str(e.value)


def test_template_and_runtime_must_agree(command_row, tmp_path):
    with pytest.raises(ConfigError, match="--container-command is the runtime 'command'"):
        ctx_for(command_row, tmp_path, container_runtime="podman", container_command=APPTAINER)
    with pytest.raises(ConfigError, match="needs --container-command TEMPLATE"):
        ctx_for(command_row, tmp_path, container_runtime="command")
    with pytest.raises(ConfigError, match=r"container image 'x\.sif': no such file"):
        ctx_for(
            command_row,
            tmp_path,
            container_runtime="command",
            container_command=APPTAINER,
            container_image="x.sif",
        )


def test_local_engines_keep_their_own_image_names():
    assert images.enroot_uri("podman://localhost/nemo:dev") == "podman://localhost/nemo:dev"
    assert images.enroot_uri("dockerd://nvcr.io/nvidia/nemo:1") == "dockerd://nvcr.io/nvidia/nemo:1"
    assert images.sqsh_name("podman://localhost/nemo:dev") == "localhost+nemo+dev.sqsh"
