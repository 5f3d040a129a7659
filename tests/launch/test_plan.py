"""plan(): the sbatch script and srun line that --dry-run shows and submission uses."""

from __future__ import annotations

import json
import pickle
import shlex
from dataclasses import replace
from pathlib import Path

import pytest

from perfgate.errors import ConfigError
from perfgate.launch import plan
from perfgate.launch.allocation.slurm import srun_argv
from perfgate.launch.envs import load_env_file
from perfgate.launch.jobcontext import container_env_names, row_env_by_environment
from perfgate.launch.planning import context, pair_launches
from perfgate.launch.runtimes import CONTAINER_SRC
from perfgate.launch.types import LaunchOptions
from perfgate.runs import launch_order


def sbatch_flags(script: str) -> dict[str, str]:
    out = {}
    for line in script.splitlines():
        if line.startswith("#SBATCH --"):
            key, _, value = line[len("#SBATCH --") :].partition("=")
            out[key] = value or "true"
    return out


def test_sbatch_allocates_the_rows_nodes_and_runs_the_function_once(row16, tmp_path):
    opts = LaunchOptions(
        partition="p6",
        account="me",
        qos="high",
        results_dir=str(tmp_path),
        slurm_params={"constraint": "h100", "reservation": "perf"},
    )
    p = plan(row16, opts)
    flags = sbatch_flags(p.sbatch_script)
    assert flags["nodes"] == "2"
    assert flags["ntasks-per-node"] == "8"
    assert flags["gpus-per-node"] == "8"
    assert flags["exclusive"] == "true"
    assert flags["partition"] == "p6" and flags["account"] == "me" and flags["qos"] == "high"
    assert flags["constraint"] == "h100" and flags["reservation"] == "perf"
    assert flags["time"] == "30"  # default per-launch limit, one launch
    assert flags["job-name"] == "perfgate-" + row16.id
    # submitit's USR2 warning goes to the batch shell only, which ignores it: neither the
    # ranks nor the shell die of it (they would, USR2's default action is to terminate).
    assert flags["signal"] == "B:USR2@60"
    lines = p.sbatch_script.splitlines()
    trap = lines.index("trap '' USR2")
    assert trap < next(i for i, x in enumerate(lines) if "submitit.core._submit" in x)
    # use_srun=False: the job function runs once in the batch step, not once per task.
    command = [line for line in p.sbatch_script.splitlines() if "submitit.core._submit" in line]
    assert len(command) == 1 and not command[0].startswith("srun")
    assert p.gpu_hours == pytest.approx(2 * 8 * 30 / 60)


def test_srun_line_covers_the_allocation_with_pyxis_flags(row16, tmp_path):
    image = tmp_path / "nemo.sqsh"
    image.write_bytes(b"hsqs")
    opts = LaunchOptions(
        container_image=str(image),
        results_dir=str(tmp_path / "res"),
        container_mounts=("/lustre/data:/data",),
    )
    p = plan(row16, opts)
    argv = shlex.split(p.srun_command)
    assert argv[0] == "srun"
    assert "--nodes=2" in argv and "--ntasks-per-node=8" in argv and "--ntasks=16" in argv
    assert "--kill-on-bad-exit=1" in argv
    assert f"--container-image={image.resolve()}" in argv
    assert "--no-container-mount-home" in argv
    assert "--mpi=pmix" in argv  # auto: used where srun --mpi=list offers it
    mounts = next(a for a in argv if a.startswith("--container-mounts=")).split("=", 1)[1]
    assert f"{p.job_dir}:{p.job_dir}" in mounts.split(",")
    assert any(m.endswith(f":{CONTAINER_SRC}:ro") for m in mounts.split(","))
    assert "/lustre/data:/data" in mounts.split(",")
    envs = next(a for a in argv if a.startswith("--container-env=")).split("=", 1)[1].split(",")
    assert "NVTE_FUSED_ATTN" in envs and "MASTER_ADDR" in envs
    out = next(a for a in argv if a.startswith("--output="))
    assert out.endswith("/attempt-0/run-01-baseline/rank-%t.log")
    # Inside the container: perfgate's source first on PYTHONPATH, the image's kept after it.
    assert argv[-3:-1] == ["-c", argv[-2]] and "perfgate.workload" in argv[-2]
    assert f"PYTHONPATH={CONTAINER_SRC}${{PYTHONPATH:+:$PYTHONPATH}}" in argv[-2]
    assert argv[-1].endswith("run-01-baseline/spec.json")


def test_bare_metal_srun_line_has_no_container_flags(command_row, tmp_path):
    p = plan(command_row, LaunchOptions(results_dir=str(tmp_path), mpi="none"))
    argv = shlex.split(p.srun_command)
    assert not [a for a in argv if a.startswith("--container")]
    assert not [a for a in argv if a.startswith("--mpi")]
    assert argv[-3:-1] == ["-m", "perfgate.workload"]
    assert p.workload_spec["command"] == ["python", "fake_train.py", "--step-s", "0.01"]
    # "command" is the argv, the rest stay overrides.
    assert p.workload_spec["overrides"] == {"train.max_steps": 5}
    assert p.workload_spec["steps"] == 5
    assert p.time_limit_min == 2


def test_registry_image_is_imported_once_into_the_job_folder(row16, tmp_path):
    p = plan(
        row16, LaunchOptions(container_image="nvcr.io/nvidia/nemo:25.07", results_dir=str(tmp_path))
    )
    image = next(a for a in shlex.split(p.srun_command) if a.startswith("--container-image="))
    assert image == f"--container-image={p.job_dir}/images/nvidia+nemo+25.07.sqsh"


def test_ab_plan_counterbalances_images_and_scales_the_time_limit(row16, tmp_path):
    a, b = tmp_path / "a.sqsh", tmp_path / "b.sqsh"
    a.touch()
    b.touch()
    opts = LaunchOptions(
        container_image=str(a),
        candidate_image=str(b),
        pairs=3,
        max_pairs=5,
        time_limit_min=20,
        results_dir=str(tmp_path),
    )
    p = plan(row16, opts)
    # AB BA AB: the second launch of a pair runs ~0.4% slower, so the order alternates
    assert [label for label, _ in p.launches] == [
        *("baseline", "candidate"),
        *("candidate", "baseline"),
        *("baseline", "candidate"),
    ]
    assert dict(p.launches) == {"baseline": str(a.resolve()), "candidate": str(b.resolve())}
    assert launch_order(p.launches) == "AB BA AB"
    assert p.time_limit_min == 20 * 2 * 5  # room for max_pairs pairs of launches
    assert p.max_pairs == 5
    # The pairs the job adds continue the alternation.
    assert [pair_launches(i, "a", "b")[0][0] for i in range(3, 6)] == [
        "candidate",
        "baseline",
        "candidate",
    ]


def test_secrets_travel_by_name_only(row16, tmp_path):
    opts = LaunchOptions(
        env={"HF_TOKEN": "hf_abcdefghijklmnopqrstuvwxyz", "NCCL_DEBUG": "WARN"},
        results_dir=str(tmp_path),
    )
    p = plan(row16, opts)
    assert p.secret_env == ("HF_TOKEN",)
    assert p.env == {"NVTE_FUSED_ATTN": "1", "NCCL_DEBUG": "WARN"}
    text = json.dumps(p.workload_spec) + p.sbatch_script + p.srun_command
    assert "hf_abcdefghijklmnopqrstuvwxyz" not in text
    ctx = context(row16, opts, Path(p.job_dir))
    assert "hf_abcdefghijklmnopqrstuvwxyz" not in repr(ctx)


def test_env_file_from_seed_000_reaches_the_ranks(row16, tmp_path, seeds):
    text = (seeds / "seed000_env_vars.md").read_text()
    block = text.split("Create an `env_vars.json`", 1)[1].split("```json", 1)[1].split("```")[0]
    env_file = tmp_path / "env_vars.json"
    env_file.write_text(block)
    env = load_env_file(env_file)
    assert env["FI_PROVIDER"] == "efa" and env["NVTE_FUSED_ATTN"] == "0"
    p = plan(row16, LaunchOptions(env=env, results_dir=str(tmp_path)))
    assert p.env["NVTE_FUSED_ATTN"] == "0"  # the user's env file wins over the row's env
    assert p.env["TORCH_NCCL_AVOID_RECORD_STREAMS"] == "1"


def test_missing_squashfs_is_a_one_line_error_naming_it(row16, tmp_path):
    with pytest.raises(ConfigError, match=r"container image './nemo-missing.sqsh': no such"):
        plan(row16, LaunchOptions(container_image="./nemo-missing.sqsh", results_dir=str(tmp_path)))


def test_bad_options_are_one_line_errors(row16, command_row, tmp_path):
    with pytest.raises(ConfigError, match="--candidate-image needs --container-image"):
        plan(row16, LaunchOptions(candidate_image="x.sqsh", container_runtime="none"))
    with pytest.raises(ConfigError, match="--executor 'k8s'"):
        plan(row16, LaunchOptions(executor="k8s"))
    with pytest.raises(ConfigError, match="2 nodes cannot run on the local executor"):
        plan(row16, LaunchOptions(executor="local"))
    bad = type(command_row)(**{**command_row.__dict__, "overrides": {}})
    with pytest.raises(ConfigError, match=r"needs overrides\.command"):
        plan(bad, LaunchOptions(results_dir=str(tmp_path)))


def test_local_plan_shows_the_rank_launch(command_row, tmp_path):
    p = plan(command_row, LaunchOptions(executor="local", results_dir=str(tmp_path)))
    assert p.sbatch_script == ""
    assert p.srun_command.startswith("RANK=0..0 WORLD_SIZE=1 ")


def test_job_function_uses_the_same_srun_line(row16, tmp_path):
    opts = LaunchOptions(results_dir=str(tmp_path), mpi="pmix")
    p = plan(row16, opts)
    ctx = context(row16, opts, Path(p.job_dir))
    rdir = Path(p.job_dir) / "attempt-0" / "run-01-baseline"
    assert shlex.join(srun_argv(ctx, rdir, None, "pmix")) == p.srun_command


def test_only_knob_values_enter_the_plan_the_spec_and_the_pickle(row16, tmp_path):
    # --env NGC_KEY=..., --env DB_PASS=... were stored in clear (spec.json, the pickles, ...):
    # the secret-name test knew TOKEN/SECRET/PASSWORD/API_KEY, not *_KEY, *_PASS, *_PW.
    hidden = {"NGC_KEY": "ngc-0123456789", "DB_PASS": "pass-0123456789", "MINE": "mine-0123456"}
    row = replace(row16, env={**row16.env, "ROW_VAR": "row-0123456789"})
    opts = LaunchOptions(env={**hidden, "NCCL_DEBUG": "WARN"}, results_dir=str(tmp_path))
    p = plan(row, opts)
    assert p.env == {"NVTE_FUSED_ATTN": "1", "NCCL_DEBUG": "WARN"}
    assert p.secret_env == ("DB_PASS", "MINE", "NGC_KEY")
    assert p.workload_spec["row"]["env"]["ROW_VAR"] == "***"
    assert p.workload_spec["env"] == {"NVTE_FUSED_ATTN": "1", "NCCL_DEBUG": "WARN"}
    ctx = context(row, opts, Path(p.job_dir))
    pickled = pickle.dumps(ctx)
    for value in hidden.values():
        text = json.dumps(p.workload_spec) + p.sbatch_script + p.srun_command + repr(ctx)
        assert value not in text and value.encode() not in pickled
    # The row's own variable travels in its row (it is in baselines/*.json already) and is set
    # by the job function; pyxis passes every one of them into the container.
    assert row_env_by_environment(ctx) == {"ROW_VAR": "row-0123456789"}
    assert {"DB_PASS", "MINE", "NGC_KEY", "ROW_VAR"} <= set(container_env_names(ctx))
