"""A live run where Slurm's commands do not exist: one usage error saying what to do instead."""

from __future__ import annotations

import sys
from pathlib import Path

from perfgate.history.sqlite import SqliteStore

pytest_plugins = ["pytester"]


def test_a_live_run_without_slurm_is_one_usage_error(suite, monkeypatch):
    suite.shipped_rows()
    monkeypatch.setenv("PATH", str(Path(sys.executable).parent))  # python, but no sbatch
    result = suite.run("-m", "h100 and nemo2", "--gpus", "8", "--partition", "p")
    assert result.ret == 4
    err = "\n".join(result.errlines)
    assert "no Slurm here (sbatch, srun, squeue, scancel not on PATH)" in err
    assert "--dry-run, --replay DIR or --executor local" in err
    assert not (suite.path / "perfgate-results" / "jobs").exists()  # nothing was planned


SBATCH_ERROR = """sbatch: error: resolve_ctls_from_dns_srv: res_nsearch error: Unknown host
sbatch: error: fetch_config: DNS SRV lookup failed
sbatch: error: _establish_config_source: failed to fetch config
sbatch: fatal: Could not establish a configuration source
"""


def _unconfigured_slurm(folder: Path) -> Path:
    """Slurm's client commands as an installed but unconfigured Slurm has them: each says
    what the real ones (slurm-wlm 22.05+, no slurm.conf, no DNS SRV record) say, exit 1."""
    folder.mkdir()
    for cmd in ("sbatch", "srun", "squeue", "scancel", "scontrol", "sinfo", "sacct"):
        lines = SBATCH_ERROR.replace("sbatch:", f"{cmd}:").splitlines()
        echo = "".join(f"echo '{ln}' >&2\n" for ln in lines)  # a builtin: PATH has no cat
        (folder / cmd).write_text(f"#!/bin/sh\n{echo}exit 1\n")
        (folder / cmd).chmod(0o755)
    return folder


def test_an_unconfigured_slurm_is_one_line_before_any_row(suite, monkeypatch, tmp_path):
    """#21 item 6: not 32 rows of the same sbatch error, and no session in the history."""
    suite.shipped_rows()
    fake = _unconfigured_slurm(tmp_path / "bin")
    monkeypatch.setenv("PATH", f"{fake}:{Path(sys.executable).parent}")
    monkeypatch.delenv("SLURM_CONF", raising=False)
    history = tmp_path / "history.sqlite"
    args = ("-m", "h100 and nemo2", "--partition", "p", "--yes", f"--history={history}")
    result = suite.run(*args)
    assert result.ret == 4
    (line,) = [ln for ln in result.errlines if ln.strip()]
    assert line == (
        "ERROR: Slurm here is not configured: Could not establish a configuration source "
        "(scontrol ping); run from a login node, or use --dry-run, --replay DIR or "
        "--executor local"
    )
    # after the plan and the consent, as a Slurm without its commands is; before any row
    assert not any("::test_" in ln or "sbatch:" in ln for ln in result.outlines)
    assert not history.exists() and not (suite.path / "perfgate-results" / "jobs").exists()


def test_slurm_conf_naming_no_file_is_told_at_once(suite, monkeypatch, tmp_path):
    suite.shipped_rows()
    fake = _unconfigured_slurm(tmp_path / "bin")
    monkeypatch.setenv("PATH", f"{fake}:{Path(sys.executable).parent}")
    monkeypatch.setenv("SLURM_CONF", str(tmp_path / "nowhere" / "slurm.conf"))
    result = suite.run("-m", "h100 and nemo2", "--partition", "p", "--yes", "--history=off")
    assert result.ret == 4
    err = "\n".join(result.errlines)
    assert f"Slurm here is not configured: SLURM_CONF={tmp_path}/nowhere/slurm.conf names no" in err


def test_a_session_whose_every_submission_was_refused_leaves_no_history(
    suite, monkeypatch, tmp_path
):
    """sbatch on a configured cluster refuses each row (a bad partition): each row is an
    INFRA error naming sbatch's reason, and the history records no session of nothing."""
    suite.shipped_rows()
    fake = _unconfigured_slurm(tmp_path / "bin")
    (fake / "scontrol").write_text("#!/bin/sh\necho 'Slurmctld(primary) at c1 is UP'\n")
    (fake / "sbatch").write_text(
        "#!/bin/sh\necho 'sbatch: error: invalid partition specified: p' >&2\nexit 1\n"
    )
    monkeypatch.setenv("PATH", f"{fake}:{Path(sys.executable).parent}")
    monkeypatch.delenv("SLURM_CONF", raising=False)
    history = tmp_path / "history.sqlite"
    args = ("-m", "h100 and nemo2", "--gpus", "8", "--partition", "p", f"--history={history}")
    result = suite.run(*args)
    assert result.ret == 1
    assert "invalid partition specified: p" in "\n".join(result.outlines)
    assert not history.exists() or SqliteStore(history).sessions() == []
