"""Hostile options and rows stop the session before anything is planned or submitted."""

from __future__ import annotations

import json

pytest_plugins = ["pytester"]

SEL = ("-m", "h100 and nemotron4", "--gpus", "64")


def _one_error_line(result) -> str:
    (line,) = [ln for ln in result.errlines if ln.startswith("ERROR:")]
    return line


def test_a_slurm_param_key_with_a_newline_is_a_usage_error(suite):
    suite.real_baselines()
    key = "requeue\ntouch owned\n#SBATCH --comment"
    result = suite.run(*SEL, "--slurm-param", f"{key}=1")
    assert result.ret == 4
    assert "--slurm-param 'requeue\\ntouch owned\\n#SBATCH --commen…: an sbatch option" in (
        _one_error_line(result)
    )
    assert not (suite.path / "perfgate-results" / "jobs").exists()


def test_a_partition_with_a_newline_is_a_usage_error_even_in_a_dry_run(suite):
    suite.real_baselines()
    result = suite.run(*SEL, "--dry-run", "--partition", "p6\ntouch owned")
    assert result.ret == 4
    assert "--partition 'p6\\ntouch owned': control character '\\n'" in _one_error_line(result)


def test_a_baselines_row_with_a_hostile_variant_stops_the_session(suite):
    suite.real_baselines()
    path = suite.baselines_dir / "h100.json"
    rows = json.loads(path.read_text())
    rows[3]["variant"] = "x\ntouch owned #"
    rows[3]["id"] += "-" + rows[3]["variant"]
    path.write_text(json.dumps(rows, indent=2))
    result = suite.run("-m", "h100", "--dry-run")
    assert result.ret == 2  # before collection: nothing planned
    message = f"{path}: row #3: field 'variant' = 'x\\ntouch owned #': only letters"
    assert [ln for ln in result.errlines if message in ln], result.errlines
    assert not [ln for ln in result.outlines if ln.strip()]
    assert not (suite.path / "owned").exists()
