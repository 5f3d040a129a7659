"""Slurm's real client commands installed but not configured (no slurm.conf, no configless
source): perfgate says so in one line before any row (#21 item 6), as the real scontrol has it.

Runs the Debian slurm-client binaries themselves, without the local cluster's SLURM_CONF.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from perfgate.errors import PerfgateError
from perfgate.launch.executors.slurm import SlurmExecutor

pytestmark = pytest.mark.slurm
DEFAULT_CONF = Path("/etc/slurm/slurm.conf")  # Debian's sysconfdir


@pytest.fixture
def slurm_client() -> None:
    if shutil.which("sbatch") is None or shutil.which("scontrol") is None:
        msg = "Slurm's client commands (scripts/local-slurm install)"
        if os.environ.get("CI"):
            pytest.fail(f"{msg} are required under CI (CI is set)")
        pytest.skip(f"{msg} are not installed")


@pytest.mark.parametrize("conf", ["unset", "missing"])
def test_the_real_clients_without_a_configuration(slurm_client, monkeypatch, tmp_path, conf):
    if conf == "unset":
        if DEFAULT_CONF.exists():
            pytest.skip(f"{DEFAULT_CONF} exists: this machine's Slurm is configured")
        monkeypatch.delenv("SLURM_CONF", raising=False)
        expected = "Could not establish a configuration source (scontrol ping)"
    else:
        monkeypatch.setenv("SLURM_CONF", str(tmp_path / "slurm.conf"))
        expected = f"SLURM_CONF={tmp_path / 'slurm.conf'} names no file"
    with pytest.raises(PerfgateError) as e:
        SlurmExecutor().require()
    assert str(e.value) == (
        f"Slurm here is not configured: {expected}; run from a login node, or use --dry-run, "
        "--replay DIR or --executor local"
    )
