"""Hostile options and rows stop the session before anything is planned or submitted."""

from __future__ import annotations

import json

import pytest

pytest_plugins = ["pytester"]

SEL = ("-m", "h100 and nemotron4", "--gpus", "64")


def _one_error_line(result) -> str:
    (line,) = [ln for ln in result.errlines if ln.startswith("ERROR:")]
    return line


def test_a_slurm_param_key_with_a_newline_is_a_usage_error(suite):
    suite.shipped_rows()
    key = "requeue\ntouch owned\n#SBATCH --comment"
    result = suite.run(*SEL, "--slurm-param", f"{key}=1")
    assert result.ret == 4
    assert "--slurm-param 'requeue\\ntouch owned\\n#SBATCH --commen…: an sbatch option" in (
        _one_error_line(result)
    )
    assert not (suite.path / "perfgate-results" / "jobs").exists()


def test_a_partition_with_a_newline_is_a_usage_error_even_in_a_dry_run(suite):
    suite.shipped_rows()
    result = suite.run(*SEL, "--dry-run", "--partition", "p6\ntouch owned")
    assert result.ret == 4
    assert "--partition 'p6\\ntouch owned': control character '\\n'" in _one_error_line(result)


def test_a_baselines_row_with_a_hostile_variant_stops_the_session(suite):
    suite.shipped_rows()
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


# --- #21 item 13: sbatch options perfgate and submitit own --------------------------------


@pytest.mark.parametrize(
    ("param", "message"),
    [
        (
            "wrap=touch /tmp/owned",
            "--slurm-param 'wrap=touch /tmp/owned': perfgate owns sbatch's --wrap: it would "
            "replace the batch script perfgate renders; leave it out",
        ),
        (
            "output=/some/path",
            "--slurm-param 'output=/some/path': perfgate owns sbatch's --output: submitit "
            "writes the job's log there and reads it back; leave it out",
        ),
        ("error=/x", "perfgate owns sbatch's --error"),
        ("array=0-9", "perfgate owns sbatch's --array: perfgate submits one job per row"),
        ("parsable", "perfgate owns sbatch's --parsable"),
        ("out=/x", "perfgate owns sbatch's --output (--out abbreviates --output)"),
        ("job_name=x", "perfgate owns sbatch's --job-name"),
        ("time=10", "perfgate owns sbatch's --time: give --time-limit MIN"),
        ("export=NONE", "perfgate owns sbatch's --export"),
        ("partition=p6", "perfgate owns sbatch's --partition: give --partition NAME"),
        ("account=me", "perfgate owns sbatch's --account: give --account NAME"),
        ("qos=high", "perfgate owns sbatch's --qos: give --qos NAME"),
    ],
)
def test_sbatch_options_perfgate_owns_are_refused(suite, param, message):
    suite.shipped_rows()
    result = suite.run(*SEL, "--dry-run", "--slurm-param", param)
    assert result.ret == 4
    assert message in _one_error_line(result)


def test_other_sbatch_options_still_pass(suite):
    suite.shipped_rows()
    params = ("reservation=r1", "mail-type=END", "no-requeue", "constraint=h100", "wckey=perf")
    args = [a for p in params for a in ("--slurm-param", p)]
    assert suite.run(*SEL, "--dry-run", *args).ret == 0


# --- #21 item 14: override values take the rows' character rule ----------------------------


@pytest.mark.parametrize(
    ("override", "message"),
    [
        (
            "model.config.x=a\nb",
            "--override: field 'model.config.x' = 'a\\nb': control character '\\n' is not allowed",
        ),
        ("model.config.x=abc\u202e", "control character '\\u202e' is not allowed"),
        ('model.config.x=["ok", "a\\u2028b"]', "field 'model.config.x[1]'"),
        ("model.config\u202e.x=1", "--override: field 'path' = 'model.config\\u202e.x'"),
    ],
)
def test_override_values_with_control_or_bidi_characters_are_refused(suite, override, message):
    suite.shipped_rows()
    result = suite.run(*SEL, "--dry-run", "--override", override)
    assert result.ret == 4
    assert message in _one_error_line(result)


# --- #21 item 15: numbers bounded by what a real cluster can mean --------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ("--time-limit", "99999999999999"),
            "--time-limit 99999999999999: at most 43,200 (30 days; Slurm sites cap jobs at days)",
        ),
        (
            ("--gpus", "1-99999999999"),
            "--gpus '1-99999999999': GPU count 99999999999: at most 1,000,000 (no cluster has",
        ),
        (("--steps", "1000000000000"), "--steps 1000000000000: at most 1,000,000"),
        (("--repeat", "100000"), "--repeat 100000: at most 1,000 (launches of one row)"),
        (("--max-gpu-hours", "inf"), "--max-gpu-hours inf: at most 1,000,000,000"),
        (("--poll-interval", "1e9"), "--poll-interval 1000000000.0: at most 3,600"),
    ],
)
def test_options_above_a_real_clusters_bounds_are_one_line(suite, args, message):
    suite.shipped_rows()
    sel = SEL if args[0] != "--gpus" else SEL[:2]
    result = suite.run(*sel, "--dry-run", *args)
    assert result.ret == 4
    assert message in _one_error_line(result)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("gbs", 10**29, "field 'gbs': must be at most 16,777,216 (no training run has a larger"),
        ("steps", 10**12, "field 'steps': must be at most 1,000,000"),
        ("time_limit_min", 10**12, "field 'time_limit_min': must be at most 43,200 (30 days"),
    ],
)
def test_row_numbers_above_the_bounds_stop_the_session(suite, field, value, message):
    suite.shipped_rows()
    path = suite.baselines_dir / "h100.json"
    rows = json.loads(path.read_text())
    rows[3][field] = value
    path.write_text(json.dumps(rows, indent=2))
    result = suite.run("-k", "nemotron4", "--gpus", "64", "--dry-run")
    assert result.ret == 2  # a malformed catalog: pytest.exit's one line, on stderr
    lines = result.outlines + result.errlines
    assert any(message in ln for ln in lines), lines
    assert "GPU-hours" not in "\n".join(result.outlines)


# --- #21 item 16: sizes of files, names and echoed values are capped -----------------------


def test_a_huge_baselines_file_is_refused_before_it_is_read(suite):
    suite.shipped_rows()
    path = suite.baselines_dir / "h100.json"
    rows = json.loads(path.read_text())
    rows[0]["notes"] = ["x" * (20 << 20)]
    path.write_text(json.dumps(rows))
    result = suite.run("-k", "nemotron4", "--dry-run")
    assert result.ret in (2, 4)
    text = "\n".join(result.outlines + result.errlines)
    assert f"{path}: 20.1 MiB, above the 16 MiB a baselines file may have" in text


def test_a_long_env_name_and_override_path_are_refused_with_their_start_only(suite):
    suite.shipped_rows()
    name = "A" * 100_000
    result = suite.run(*SEL, "--dry-run", "--env", f"{name}=1")
    assert result.ret == 4
    line = _one_error_line(result)
    assert "an environment name has at most 256 characters, not 100,000" in line
    assert len(line) < 300
    result = suite.run(*SEL, "--dry-run", "--override", f"model.{'a' * 100_000}=1")
    line = _one_error_line(result)
    assert "a path has at most 256 characters, not 100,006" in line and len(line) < 300
