"""A real Slurm cluster on this machine for the integration tests (scripts/local-slurm).

Skipped when the Debian packages are absent (or not root); under CI (CI set) that is a
failure, so CI can never silently skip the real-Slurm tests. When `scripts/containers build`
has run, the cluster loads the real pyxis and enroot (and `container_images` hands out the
two test images); without them the container tests skip, and fail under CI.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from rowfactory import command_row

from perfgate.catalog import Row

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "local-slurm"
FAKE_TRAIN = Path(__file__).resolve().parent / "fake_train.py"
CONTAINERS = REPO / ".containers"
DRIVER = Path(__file__).resolve().parent / "session_driver.py"
NEEDED = ("slurmctld", "slurmd", "sbatch", "munged", "slurmdbd", "mariadbd")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "slurm: needs a real local Slurm (scripts/local-slurm)")


def _missing() -> list[str]:
    path = os.environ.get("PATH", "") + ":/usr/sbin:/sbin"
    return [b for b in NEEDED if shutil.which(b, path=path) is None]


@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A fresh 4-node cluster (8 fake GPUs per node, sacct via slurmdbd) for the session."""
    missing = _missing()
    why = f"missing {', '.join(missing)}" if missing else "not root"
    if missing or os.geteuid() != 0:
        msg = f"a local Slurm ({why}; run `scripts/local-slurm install` as root)"
        if os.environ.get("CI"):
            pytest.fail(f"{msg} is required under CI (CI is set)")
        pytest.skip(f"{msg} is not available here")
    d = tmp_path_factory.mktemp("slurm")
    subprocess.run(
        [sys.executable, str(SCRIPT), "--dir", str(d), "start"],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    old = os.environ.get("SLURM_CONF")
    old_path = os.environ["PATH"]
    os.environ["SLURM_CONF"] = str(d / "etc" / "slurm.conf")
    state = json.loads((d / "state.json").read_text())
    if state.get("containers"):  # enroot for the jobs that import images, as on a login node
        os.environ["PATH"] = f"{state['containers']['path']}:{old_path}"
    try:
        yield state
    finally:
        os.environ["PATH"] = old_path
        subprocess.run(
            [sys.executable, str(SCRIPT), "--dir", str(d), "stop"],
            check=False,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        if old is None:
            os.environ.pop("SLURM_CONF", None)
        else:
            os.environ["SLURM_CONF"] = old


def _unavailable(what: str) -> None:
    msg = f"{what} (run `bash scripts/containers all` as root)"
    if os.environ.get("CI"):
        pytest.fail(f"{msg} is required under CI (CI is set)")
    pytest.skip(f"{msg} is not available here")


@pytest.fixture(scope="session")
def container_images(slurm_cluster: dict[str, Any]) -> dict[str, Path]:
    """The real test images (.containers/images/{baseline,candidate}.sqsh), pyxis loaded."""
    images = {side: CONTAINERS / "images" / f"{side}.sqsh" for side in ("baseline", "candidate")}
    if not slurm_cluster.get("containers") or not all(p.is_file() for p in images.values()):
        _unavailable("pyxis, enroot and the test images in .containers/")
    return images


@pytest.fixture(scope="session")
def podman_images(container_images: dict[str, Path]) -> Iterator[dict[str, str]]:
    """The same images in the checkout's podman storage (its settings exported meanwhile)."""
    conf = CONTAINERS / "podman"
    if shutil.which("podman") is None or not (conf / "storage.conf").is_file():
        _unavailable("podman and the podman test images")
    old = {k: os.environ.get(k) for k in ("CONTAINERS_STORAGE_CONF", "CONTAINERS_CONF")}
    os.environ["CONTAINERS_STORAGE_CONF"] = str(conf / "storage.conf")
    os.environ["CONTAINERS_CONF"] = str(conf / "containers.conf")
    try:
        yield {side: f"localhost/perfgate-test:{side}" for side in ("baseline", "candidate")}
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@pytest.fixture(scope="session")
def fake_row() -> Callable[..., Row]:
    """Rows of backend "command" running fake_train.py (args) on CPU, or `program`."""

    def make(
        name: str,
        *args: str,
        num_gpus: int = 4,
        gpus_per_node: int = 4,
        steps: int = 20,
        time_limit_min: int = 2,
        env: dict[str, str] | None = None,
        program: tuple[str, ...] = (sys.executable, str(FAKE_TRAIN)),
    ) -> Row:
        return command_row(
            name,
            *args,
            program=program,
            model="fake",
            num_gpus=num_gpus,
            gpus_per_node=gpus_per_node,
            steps=steps,
            time_limit_min=time_limit_min,
            env=env or {},
        )

    return make


def _squeue_ids(ids: list[str]) -> list[str]:
    out = subprocess.run(["squeue", "-h", "-o", "%i"], capture_output=True, text=True).stdout
    return [j for j in out.split() if j in ids]


def _sacct_once(name: str) -> list[dict[str, str]]:
    out = subprocess.run(
        ["sacct", "-X", "-P", "-n", "-o", "JobID,JobName,State,Start,End", "--name", name],
        capture_output=True,
        text=True,
    ).stdout
    keys = ("job_id", "name", "state", "start", "end")
    return [dict(zip(keys, line.split("|"), strict=True)) for line in out.splitlines() if line]


def _sacct_jobs(name: str, expect: int | None = None) -> list[dict[str, str]]:
    # slurmdbd lags slurmctld by a moment: wait (bounded) for the records a test expects.
    deadline = time.monotonic() + 15
    jobs = _sacct_once(name)
    while (
        expect is not None
        and (len(jobs) != expect or any(j["end"] in ("", "Unknown") for j in jobs))
        and time.monotonic() < deadline
    ):
        time.sleep(0.5)
        jobs = _sacct_once(name)
    return jobs


@pytest.fixture(scope="session")
def squeue_ids(slurm_cluster: dict[str, Any]) -> Callable[[list[str]], list[str]]:
    """Which of the given job ids squeue still lists (any state)."""
    return _squeue_ids


@pytest.fixture(scope="session")
def sacct_jobs(slurm_cluster: dict[str, Any]) -> Callable[..., list[dict[str, str]]]:
    """Every job of a name that accounting recorded (job_id, state, start, end)."""
    return _sacct_jobs
