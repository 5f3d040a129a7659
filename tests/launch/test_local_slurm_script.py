"""scripts/local-slurm stops only what it started: a PID file is trusted only with its comm."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "local-slurm"


def test_stop_never_kills_a_process_that_is_not_its_daemon(tmp_path):
    (tmp_path / "run").mkdir()
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        # A stale pid file whose PID now belongs to someone else's process.
        (tmp_path / "run" / "slurmctld.pid").write_text(f"{sleeper.pid}\n")
        (tmp_path / "run" / "munged.pid").write_text(f"{sleeper.pid}\n")
        out = subprocess.run(
            [sys.executable, str(SCRIPT), "--dir", str(tmp_path), "stop"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert out.returncode == 0
        assert "stopped nothing" in out.stderr
        assert sleeper.poll() is None  # still alive
        # --dir works before and after the command.
        for argv in (["--dir", str(tmp_path), "status"], ["status", "--dir", str(tmp_path)]):
            status = subprocess.run(
                [sys.executable, str(SCRIPT), *argv], capture_output=True, text=True, timeout=60
            )
            assert status.returncode == 3, status.stderr
            assert status.stdout.startswith(f"stopped: {tmp_path}")
    finally:
        sleeper.kill()
        sleeper.wait()


def test_containers_folder_without_pyxis_and_enroot_is_a_one_line_error(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    cmd = [sys.executable, str(SCRIPT), "--dir", str(tmp_path / "c"), "start"]
    out = subprocess.run(
        [*cmd, "--containers", str(empty)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 1
    assert out.stderr == (
        f"local-slurm: error: --containers {empty}: no pyxis/spank_pyxis.so and "
        "enroot/bin/enroot there (run scripts/containers build)\n"
    )
    assert not list((tmp_path / "c").glob("run/*.pid"))  # nothing was started
