"""Image references as pyxis/enroot read them; env files and secrets."""

from __future__ import annotations

import os

import pytest

from perfgate.errors import ConfigError
from perfgate.launch import images
from perfgate.launch.envs import export_env, job_env, load_env_file, parse_assignments


def test_squashfs_or_registry():
    assert images.is_squashfs("./nemo.sqsh") and images.is_squashfs("/x/nemo")
    assert images.is_squashfs("nemo-25.07.sqsh")  # pyxis would pull this: we make it absolute
    assert not images.is_squashfs("nvcr.io/nvidia/nemo:25.07")


def test_enroot_uris():
    assert images.enroot_uri("nvcr.io/nvidia/nemo:25.07") == "docker://nvcr.io#nvidia/nemo:25.07"
    assert images.enroot_uri("nvcr.io#nvidia/nemo:25.07") == "docker://nvcr.io#nvidia/nemo:25.07"
    assert images.enroot_uri("ubuntu:24.04") == "docker://ubuntu:24.04"
    assert images.enroot_uri("nvidia/cuda:12.4") == "docker://nvidia/cuda:12.4"
    assert images.enroot_uri("localhost:5000/nemo:dev") == "docker://localhost:5000#nemo:dev"
    assert images.import_command("nvcr.io/nvidia/nemo:25.07", "/j/x.sqsh") == [
        "enroot",
        "import",
        "--output",
        "/j/x.sqsh",
        "docker://nvcr.io#nvidia/nemo:25.07",
    ]
    assert images.sqsh_name("nvcr.io/nvidia/nemo:25.07") == "nvidia+nemo+25.07.sqsh"


def test_resolve_makes_paths_absolute(tmp_path):
    (tmp_path / "n.sqsh").touch()
    assert images.resolve("n.sqsh", base=tmp_path) == str(tmp_path / "n.sqsh")
    assert images.resolve("nvcr.io/nvidia/nemo:25.07") == "nvcr.io/nvidia/nemo:25.07"
    with pytest.raises(ConfigError, match="no such squashfs file"):
        images.resolve("missing.sqsh", base=tmp_path)


def test_env_file_errors_are_one_line(tmp_path):
    bad = tmp_path / "env.json"
    bad.write_text("[1, 2]")
    with pytest.raises(ConfigError, match="must be a JSON object"):
        load_env_file(bad)
    bad.write_text('{"NCCL_DEBUG": {"x": 1}}')
    with pytest.raises(ConfigError, match="field 'NCCL_DEBUG'"):
        load_env_file(bad)
    bad.write_text('{"1BAD": "x"}')
    with pytest.raises(ConfigError, match="not a valid environment variable name"):
        load_env_file(bad)
    with pytest.raises(ConfigError, match="cannot read env file"):
        load_env_file(tmp_path / "nope.json")


def test_assignments_and_secret_split(monkeypatch):
    monkeypatch.setenv("WANDB_API_KEY", "k" * 20)
    env = parse_assignments(["NCCL_DEBUG=INFO", "WANDB_API_KEY"])
    assert env == {"NCCL_DEBUG": "INFO", "WANDB_API_KEY": "k" * 20}
    plain, by_env = job_env({"A": "1", "NCCL_ALGO": "Ring"}, {**env, "HF_TOKEN": "hf_x"})
    # Only knobs travel by value; the row's A reaches the job from its row.
    assert plain == {"NCCL_ALGO": "Ring", "NCCL_DEBUG": "INFO"}
    assert by_env == ("HF_TOKEN", "WANDB_API_KEY")
    environ: dict[str, str] = {}
    export_env({"HF_TOKEN": "hf_x", "NCCL_DEBUG": "INFO", "NGC_KEY": "k1", "MINE": "m"}, environ)
    assert environ == {"HF_TOKEN": "hf_x", "NGC_KEY": "k1", "MINE": "m"}
    assert "HF_TOKEN" not in os.environ or os.environ["HF_TOKEN"] != "hf_x"
