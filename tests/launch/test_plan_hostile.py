"""No value reaches the sbatch script, the srun line or the environment unchecked.

Every site a perfgate value reaches, with hostile strings (newlines, quotes, $(), backticks,
';', NUL, backslashes, Unicode separators): either a one-line ConfigError before anything is
written, or a script that bash accepts, whose only shell lines are perfgate's own and whose
`#SBATCH` values sbatch reads back exactly (tests/sbatch_reading.py, checked against
the real sbatch in tests/integration/test_hostile_submission.py).
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from sbatch_reading import Unmatched, sbatch_arguments

from perfgate import charset
from perfgate.catalog import Row, canonical_id, load_file
from perfgate.catalog.provenance import SHIPPED_DIR
from perfgate.errors import ConfigError
from perfgate.launch import checks, plan
from perfgate.launch.types import LaunchOptions

SHELL = "'\"$()`;|&<>\\ #%*?~{}!=,:/.-_aZ09é"  # printable, meaningful to a shell or sbatch
HOSTILE = SHELL + "\n\r\x00\t\x1b\u2028\u202e"
IMAGE = "nvcr.io/nvidia/nemo:25.07"
BASE = "/tmp/perfgate-hostile-plans"  # plan() only computes paths under it; nothing is written
REPO = Path(__file__).resolve().parents[2]
SHELL_LINES = ("trap '' USR2", "export SUBMITIT_EXECUTOR=slurm")


# A stored two-node row (sbatch --nodes=2), without its baseline.
STORED = next(r for r in load_file(SHIPPED_DIR / "h100.json") if r.nodes == 2)


def row(variant: str | None = None) -> Row:
    r = replace(STORED, variant=variant, baseline=None)
    return replace(r, id=canonical_id(r))


# Each site: how a value gets there (row, options, explicit job folder or None).
SITES = {
    "partition": lambda v: (row(), LaunchOptions(partition=v), None),
    "account": lambda v: (row(), LaunchOptions(account=v), None),
    "qos": lambda v: (row(), LaunchOptions(qos=v), None),
    "slurm-param value": lambda v: (row(), LaunchOptions(slurm_params={"comment": v}), None),
    "slurm-param key": lambda v: (row(), LaunchOptions(slurm_params={v: "1"}), None),
    "results-dir": lambda v: (row(), LaunchOptions(results_dir=f"{BASE}/{v}"), None),
    "job folder": lambda v: (row(), LaunchOptions(container_image=IMAGE), f"{BASE}/{v}"),
    "container-image": lambda v: (row(), LaunchOptions(container_image=v), None),
    "container-mounts": lambda v: (
        row(),
        LaunchOptions(container_image=IMAGE, container_mounts=(v,)),
        None,
    ),
    "env": lambda v: (row(), LaunchOptions(env={"NCCL_DEBUG": v}), None),
    "row variant": lambda v: (row(v), LaunchOptions(), None),
}


def shell_lines(script: str) -> list[str]:
    return [ln for ln in script.split("\n") if ln.strip() and not ln.strip().startswith("#")]


def directives(script: str) -> dict[str, str]:
    """{key: value} as sbatch reads every #SBATCH line (exactly one argument per line)."""
    out = {}
    for line in script.split("\n"):
        if line.startswith("#SBATCH"):
            args = sbatch_arguments(line[len("#SBATCH") :])
            assert len(args) == 1 and args[0].startswith("--"), line
            key, _, value = args[0][2:].partition("=")
            out[key] = value
    return out


def bash_accepts(script: str) -> bool:
    return (
        subprocess.run(["bash", "-n"], input=script.encode(), capture_output=True).returncode == 0
    )


def check_site(site: str, value: str) -> str:
    """'refused' or 'accepted', after asserting what each outcome must satisfy."""
    r, opts, job_dir = SITES[site](value)
    try:
        p = plan(r, opts, job_dir=job_dir)
    except ConfigError as e:
        assert "\n" not in str(e) and "\r" not in str(e) and "\x00" not in str(e)
        return "refused"
    assert charset.bad_char(value) is None, f"{site}: {value!r} was accepted"
    script = p.sbatch_script
    assert bash_accepts(script), script
    lines = shell_lines(script)
    assert lines[:2] == list(SHELL_LINES) and len(lines) == 3
    assert "submitit.core._submit" in lines[2]
    read = directives(script)  # raises Unmatched if sbatch would refuse the script
    expected = {
        "partition": ("partition", value),
        "account": ("account", value),
        "qos": ("qos", value),
        "slurm-param value": ("comment", value),
        "slurm-param key": (value.replace("_", "-"), "1"),
    }.get(site)
    if expected and value.strip():
        assert read[expected[0]] == expected[1]
    assert read["output"] == f"{p.job_dir}/submitit/%j_0_log.out"
    assert read["job-name"] == f"perfgate-{r.id}"
    assert read["nodes"] == "2"
    return "accepted"


@pytest.mark.parametrize(
    ("site", "value", "message"),
    [
        # The report: a newline in the variant became a shell line of the script.
        ("row variant", "x\ntouch /tmp/owned #", "row: field 'id' = 'lora-llama3_70b-h100-"),
        # Shown here with the real sbatch: submitit writes keys unquoted, so this key made
        # `touch` a shell line that sbatch accepted and the job ran.
        (
            "slurm-param key",
            "requeue\ntouch /tmp/owned\n#SBATCH --comment",
            "--slurm-param 'requeue\\ntouch /tmp/owned\\n#SBATCH --c…: an sbatch option",
        ),
        ("row variant", "x\ntouch /tmp/owned #", "'.', '_' and '-' are allowed, not '\\n'"),
        ("slurm-param key", "mail type", "an sbatch option name"),
        ("partition", "p6\ntouch /tmp/owned", "--partition 'p6\\ntouch /tmp/owned': control"),
        ("account", "me\\", "--account 'me\\\\': a backslash is not allowed"),
        ("qos", "high\x00", "--qos 'high\\x00': control character '\\x00'"),
        ("slurm-param value", "x\r\ny", "--slurm-param comment= 'x\\r\\ny': control"),
        ("results-dir", "a\nb", "--results-dir '/tmp/perfgate-hostile-plans/a\\nb': control"),
        ("results-dir", "a%jb", "'%' is not allowed"),
        ("job folder", "a,b", "',' and ':' are not allowed with pyxis"),
        ("job folder", "a:b", "',' and ':' are not allowed with pyxis"),
        ("container-image", "nvcr.io/x;id", "not a squashfs path nor a registry image"),
        ("container-image", "nvcr.io/x\n", "--container-image 'nvcr.io/x\\n': control"),
        ("container-mounts", "/a:/b\n", "--container-mounts '/a:/b\\n': control"),
        ("env", "INFO\nx", "--env NCCL_DEBUG= 'INFO\\nx': control character"),
    ],
)
def test_hostile_values_are_one_line_errors(site, value, message):
    r, opts, job_dir = SITES[site](value)
    with pytest.raises(ConfigError) as err:
        plan(r, opts, job_dir=job_dir)
    assert message in str(err.value)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize(
    ("site", "value"),
    [
        ("partition", "p6,p7"),
        ("slurm-param value", 'it\'s $(id) `id`; rm -rf ~ # & | <x> "q"'),
        ("results-dir", "a b/it's $(touch x)/`id`;|&"),
        ("job folder", "a b/$(touch x)/'q'"),
        ("container-image", "nvcr.io#nvidia/nemo:25.07@sha256:abc"),
        ("container-mounts", "/data with space:/data"),
        ("env", 'it\'s $(id) `id`; "q"'),
    ],
)
def test_shell_characters_are_quoted_not_refused(site, value):
    assert check_site(site, value) == "accepted"


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    site=st.sampled_from(sorted(SITES)),
    value=st.text(st.sampled_from(SHELL), min_size=1, max_size=24)
    | st.text(st.sampled_from(HOSTILE) | st.characters(), min_size=1, max_size=24),
)
def test_any_value_at_any_site_is_refused_or_safe(site, value):
    try:
        event(check_site(site, value))
    except Unmatched:
        pytest.fail(f"sbatch would refuse the script ({site} = {value!r})")


def test_secret_values_are_refused_without_being_shown():
    opts = LaunchOptions(env={"HF_TOKEN": "hf_secret\n"})
    with pytest.raises(ConfigError) as err:
        plan(row(), opts)
    assert "hf_secret" not in str(err.value) and "(a secret, not shown)" in str(err.value)


def test_a_shell_line_perfgate_did_not_write_is_refused():
    script = plan(row(), LaunchOptions()).sbatch_script
    checks.script(script, shell_lines(script))
    doctored = script.replace("#SBATCH --nodes=2", "#SBATCH --nodes=2\ntouch /tmp/owned")
    assert doctored != script
    with pytest.raises(ConfigError, match="would run line 9 'touch /tmp/owned'"):
        checks.script(doctored, shell_lines(script))


def test_the_srun_lines_shell_part_takes_the_spec_path_as_one_argument(tmp_path):
    """The one `bash -c` of the srun line, run for real with a hostile job folder."""
    job_dir = tmp_path / "j $(touch owned1) `touch owned2`; touch owned3 'q"
    p = plan(row(), LaunchOptions(container_image=IMAGE), job_dir=job_dir)
    argv = shlex.split(p.srun_command)
    tail = argv[argv.index("bash") :]
    assert tail[1] == "-c" and tail[3] == f"{job_dir}/attempt-0/run-01-baseline/spec.json"
    env = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "HOME": str(tmp_path)}
    done = subprocess.run(tail, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert f"{job_dir}/attempt-0/run-01-baseline/spec.json" in done.stderr
    assert sorted(os.listdir(tmp_path)) == []
