"""Files a user names are read only when they are regular files: a FIFO never hangs a read.

Every test that opens a FIFO runs under a guard: if the code under test blocked on it, the
guard opens the FIFO for writing after a few seconds and closes it, so the read ends (at
end of file) and the test fails instead of hanging the suite.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from perfgate import inputs
from perfgate.catalog import load_catalog
from perfgate.diagnose import read_log
from perfgate.errors import ConfigError, LogParseError, PerfgateError
from perfgate.launch.envs import load_env_file
from perfgate.logs import parse_files, stepfile
from perfgate.report import sessionfiles
from perfgate.stats.files import read_run
from perfgate.workload.spec import WorkloadSpec

GUARD_S = 5.0


@contextmanager
def unblocking(fifo: Path) -> Iterator[list[bool]]:
    """After GUARD_S, give a blocked reader of fifo its end of file; [True] if that was needed."""
    fired = [False]

    def release() -> None:
        try:
            fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)  # succeeds only if a reader waits
        except OSError:
            return
        fired[0] = True
        os.close(fd)

    timer = threading.Timer(GUARD_S, release)
    timer.start()
    try:
        yield fired
    finally:
        timer.cancel()


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "h100.json"
    os.mkfifo(path)
    return path


def _refused(call: Callable[[], object], fifo: Path, error: type[Exception]) -> str:
    with unblocking(fifo) as fired, pytest.raises(error) as err:
        call()
    assert not fired[0], "the read blocked on the FIFO"
    return str(err.value)


SITES = {
    "perfgate parse": (lambda p: parse_files([p]), LogParseError),
    "perfgate compare": (lambda p: read_run([p]), LogParseError),
    "baselines file": (lambda p: load_catalog(p.parent), ConfigError),
    "--env-file": (lambda p: load_env_file(p), ConfigError),
    "results.json": (lambda p: sessionfiles.read(p), ConfigError),
    "steps.json (replay)": (lambda p: stepfile.read(p), PerfgateError),
    "workload spec": (lambda p: WorkloadSpec.read(p), ConfigError),
}


@pytest.mark.parametrize("site", sorted(SITES))
def test_a_fifo_is_refused_with_one_line(site, fifo):
    call, error = SITES[site]
    assert _refused(lambda: call(fifo), fifo, error) == f"{fifo}: not a regular file (a FIFO)"


def test_the_job_logs_diagnosis_skips_a_fifo(fifo):
    with unblocking(fifo) as fired:
        assert read_log(fifo) == ""
    assert not fired[0]


def test_devices_are_refused_and_regular_files_and_symlinks_read(tmp_path):
    with pytest.raises(LogParseError, match=r"^/dev/zero: not a regular file \(a character"):
        parse_files(["/dev/zero"])
    target = tmp_path / "a.txt"
    target.write_text("héllo")
    (tmp_path / "link").symlink_to(target)
    assert inputs.read_text(tmp_path / "link") == "héllo"
    with pytest.raises(IsADirectoryError):
        inputs.open_regular(tmp_path)


def test_perfgate_parse_on_a_fifo_exits_2_at_once(fifo):
    """The reported case, as a user runs it: a separate process, bounded by a timeout."""
    done = subprocess.run(
        [sys.executable, "-m", "perfgate", "parse", str(fifo)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr == f"perfgate parse: error: {fifo}: not a regular file (a FIFO)\n"


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('{"a": NaN}', "NaN is not a JSON number"),
        ("[Infinity]", "Infinity is not a JSON number"),
        ("[1e400]", "number 1e400 is out of range"),
        ("[" + "9" * 5000 + "]", "integer of 5000 digits"),
        ('{"gbs": 1, "gbs": 2}', "duplicate key 'gbs' in one object"),
        ("\ufeff[]", "line 1 column 1: Unexpected UTF-8 BOM (decode using utf-8-sig)"),
        ("[" * 100000, "nested too deeply"),
        ('[{"a": 1}', "line 1 column 10: Expecting ',' delimiter"),
    ],
)
def test_strict_json_refuses_what_python_would_accept_or_crash_on(text, problem):
    with pytest.raises(ConfigError) as err:
        inputs.strict_json(text, "b.json", ConfigError)
    assert str(err.value) == f"b.json: not valid JSON: {problem}"


def test_strict_json_reads_plain_json():
    assert inputs.strict_json('[1, -2.5e3, "x", {"a": [true, null]}]', "x") == [
        1,
        -2500.0,
        "x",
        {"a": [True, None]},
    ]


def test_knobs_are_recorded_and_every_other_value_is_masked():
    from perfgate import secrets

    for name in ("NCCL_DEBUG", "NVTE_FUSED_ATTN", "CUDA_DEVICE_MAX_CONNECTIONS", "FI_PROVIDER",
                 "PYTORCH_CUDA_ALLOC_CONF", "TORCH_NCCL_AVOID_RECORD_STREAMS", "UB_SKIPMC",
                 "OMP_NUM_THREADS", "TOKENIZERS_PARALLELISM"):  # fmt: skip
        assert secrets.is_knob(name), name
    for name in ("NGC_KEY", "DB_PASS", "SMTP_PW", "NCCL_KEY", "NEMO_API_KEY", "HF_TOKEN",
                 "MY_SETTING", "PATH", "PWD", "nccl_debug"):  # fmt: skip
        assert not secrets.is_knob(name), name
    assert secrets.recorded({"NCCL_DEBUG": "INFO", "NGC_KEY": "x"}) == {
        "NCCL_DEBUG": "INFO",
        "NGC_KEY": "***",
    }
    argv = ["-m", "h100", "--env", "NGC_KEY=abc", "--env=DB_PASS=d=e", "--env", "NCCL_ALGO=Ring"]
    assert secrets.mask_env_args(argv) == [
        "-m", "h100", "--env", "NGC_KEY=***", "--env=DB_PASS=***", "--env", "NCCL_ALGO=Ring",
    ]  # fmt: skip
    # Credential-like names are redacted from log text like secrets, and so are the values
    # of every variable hide() named (the user's --env variables that are not knobs).
    # (hide() lasts as long as the process: a name no other test hides)
    environ = {"NGC_KEY": "ngc-secret-1", "MINE_TI": "mine-value-2", "NCCL_DEBUG": "WARNING"}
    assert secrets.redact("k=ngc-secret-1 m=mine-value-2", environ) == "k=*** m=mine-value-2"
    secrets.hide(["MINE_TI"])
    assert secrets.redact("m=mine-value-2 d=WARNING", environ) == "m=*** d=WARNING"
