"""The dispatcher and the command backend, run for real on CPU with a fake NeMo 2 trainer."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from perfgate.catalog import BACKENDS
from perfgate.logs import stepfile
from perfgate.workload import dispatch
from perfgate.workload.runtime import RANK0_LOG, STEPS_FILE, RankInfo
from perfgate.workload.spec import WorkloadSpec

RANK0 = RankInfo(0, 8, 0, "slurm")
RANK3 = RankInfo(3, 8, 3, "slurm")


@pytest.fixture(autouse=True)
def _fake_env(monkeypatch: pytest.MonkeyPatch, series_csv: Path) -> None:
    monkeypatch.setenv("FAKE_SERIES", str(series_csv))
    monkeypatch.setenv("PERFGATE_REFRESH_S", "0.05")
    monkeypatch.setenv("SLURM_JOB_NODELIST", "gpu[07-08]")


def _record(spec: WorkloadSpec) -> stepfile.StepRecord:
    return stepfile.read(Path(spec.output_dir) / STEPS_FILE)


def test_rank0_records_every_step_of_a_real_series(command_spec, real_times, capfd) -> None:
    spec = command_spec(steps=50)
    assert dispatch.run_spec(spec, RANK0) == 0
    rec = _record(spec)
    assert rec.status == "completed" and rec.error is None
    assert rec.backend == "command" and rec.row_id == spec.row.id
    assert rec.world_size == 8 and rec.nodes == ["gpu07", "gpu08"]
    assert [s["step"] for s in rec.steps] == list(range(50))
    assert [s["step_time_s"] for s in rec.steps] == real_times
    assert rec.steps[0]["step_time_s"] == 43.82 and rec.steps[2]["step_time_s"] == 5.665
    assert rec.log_path == str(Path(spec.output_dir) / RANK0_LOG)
    out, err = capfd.readouterr()
    # Passed through to the rank's own streams, and teed (both streams) to the log.
    assert "iteration 49/49" in out and "step 49 done" in err and "step 0 done" not in out
    log = Path(rec.log_path).read_bytes()
    assert b"\xff\xfe NCCL INFO" in log and b"step 49 done\n" in log
    assert log.count(b"train_step_timing in s:") == 50


def test_other_ranks_pass_output_through_and_write_nothing(command_spec, capfd) -> None:
    spec = command_spec()
    assert dispatch.run_spec(spec, RANK3) == 0
    assert not Path(spec.output_dir, STEPS_FILE).exists()
    out, _ = capfd.readouterr()
    assert "rank 3 of 8" in out


def test_a_failing_command_keeps_its_steps_and_its_exit_status(
    command_spec, real_times, monkeypatch, capfd
) -> None:
    monkeypatch.setenv("FAKE_FAIL_AT", "10")
    spec = command_spec()
    assert dispatch.run_spec(spec, RANK0) == 3
    rec = _record(spec)
    assert rec.status == "failed"
    assert rec.error == f"command {spec.command[0]!r} exited with status 3"
    assert [s["step_time_s"] for s in rec.steps] == real_times[:10]
    err = capfd.readouterr().err
    assert "CUDA out of memory" in err
    assert f"perfgate.workload (rank 0): error: {rec.error}" in err


def test_steps_json_grows_while_the_command_runs(command_spec, monkeypatch) -> None:
    monkeypatch.setenv("FAKE_SLEEP_S", "0.03")
    spec = command_spec(steps=20)
    worker = threading.Thread(target=dispatch.run_spec, args=(spec, RANK0))
    worker.start()
    seen: list[tuple[str, int]] = []
    path = Path(spec.output_dir) / STEPS_FILE
    while worker.is_alive():
        if path.exists():
            rec = stepfile.read(path)
            seen.append((rec.status, len(rec.steps)))
        time.sleep(0.02)
    worker.join()
    running = [n for status, n in seen if status == "running"]
    assert any(0 < n < 20 for n in running), seen  # partial results while running
    assert running == sorted(running)
    assert _record(spec).status == "completed" and len(_record(spec).steps) == 20


def scancel_after(path: Path, steps: int, signals: int) -> None:
    """Once steps.json holds `steps` steps, SIGTERM this process `signals` times (2 ms apart)."""
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if path.exists() and len(stepfile.read(path).steps) >= steps:
            break
        time.sleep(0.02)
    for _ in range(signals):
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.002)


def test_sigterm_is_forwarded_and_the_steps_so_far_are_kept(command_spec, monkeypatch) -> None:
    monkeypatch.setenv("FAKE_SLEEP_S", "0.05")
    spec = command_spec(steps=50)
    path = Path(spec.output_dir) / STEPS_FILE

    threading.Thread(target=scancel_after, args=(path, 3, 1), daemon=True).start()
    spec.write(Path(spec.output_dir) / "spec.json")
    monkeypatch.setenv("SLURM_PROCID", "0")
    monkeypatch.setenv("SLURM_NTASKS", "1")
    code = dispatch.main([str(Path(spec.output_dir) / "spec.json")])
    assert code == 128 + signal.SIGTERM
    rec = _record(spec)
    assert rec.status == "failed" and rec.error == "terminated by SIGTERM"
    assert 3 <= len(rec.steps) < 50
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # restored after the run


def test_a_burst_of_sigterms_ends_the_rank_once_without_a_traceback(
    command_spec, monkeypatch, capfd
) -> None:
    # scancel signals every process of the step and srun forwards signals too: the second
    # SIGTERM lands while the first is handled (steps.json written, fsync). It is ignored.
    handler = dispatch.terminate_once()
    with pytest.raises(dispatch.Terminated):
        handler(signal.SIGTERM, None)
    assert handler(signal.SIGTERM, None) is None and handler(signal.SIGINT, None) is None
    monkeypatch.setenv("FAKE_SLEEP_S", "0.05")
    spec = command_spec(steps=50)
    path = Path(spec.output_dir) / STEPS_FILE

    # 200 SIGTERMs 2 ms apart: the burst covers the whole cleanup.
    thread = threading.Thread(target=scancel_after, args=(path, 3, 200), daemon=True)
    thread.start()
    spec.write(Path(spec.output_dir) / "spec.json")
    monkeypatch.setenv("SLURM_PROCID", "0")
    monkeypatch.setenv("SLURM_NTASKS", "1")
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # what the burst meets after main returns
    try:
        code = dispatch.main([str(Path(spec.output_dir) / "spec.json")])
    finally:
        thread.join()  # the whole burst is over before SIGTERM's default action is back
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
    assert code == 128 + signal.SIGTERM
    assert _record(spec).error == "terminated by SIGTERM"
    assert "Traceback" not in capfd.readouterr().err


def test_a_command_without_step_lines_fails_clearly(command_spec) -> None:
    spec = command_spec()
    spec = WorkloadSpec(**{**spec.__dict__, "command": [sys.executable, "-c", "print('hi')"]})
    assert dispatch.run_spec(spec, RANK0) == dispatch.EXIT_FAILED
    rec = _record(spec)
    assert rec.status == "failed"
    assert rec.error.startswith("command succeeded but its log has no step times:")
    assert RANK0_LOG in rec.error


@pytest.mark.parametrize(
    ("command", "message"),
    [
        (None, "spec field 'command' is None; backend 'command' needs a non-empty list"),
        (["/nonexistent/train.sh"], "spec field 'command': program '/nonexistent/train.sh' not"),
    ],
)
def test_a_bad_command_is_a_config_error(command_spec, command, message) -> None:
    spec = WorkloadSpec(**{**command_spec().__dict__, "command": command})
    assert dispatch.run_spec(spec, RANK0) == dispatch.EXIT_CONFIG
    rec = _record(spec)
    assert rec.status == "failed" and rec.error.startswith(message)


def test_unknown_backend_is_recorded_as_a_config_error(command_spec) -> None:
    spec = command_spec(backend="megatron_lm")
    assert dispatch.run_spec(spec, RANK0, origin="job/spec.json") == dispatch.EXIT_CONFIG
    rec = _record(spec)
    assert rec.status == "failed" and rec.backend == "megatron_lm"
    assert rec.error == (
        f"job/spec.json: field 'row.backend' is 'megatron_lm'; known: {', '.join(BACKENDS)}"
    )
    assert {"nemo2", "megatron_bridge", "automodel", "megatron_core", "command"} <= set(BACKENDS)


def test_rank_and_perfgate_variables_reach_the_command(command_spec, tmp_path) -> None:
    dump = tmp_path / "env.json"
    code = (
        "import json, os, sys; json.dump({k: os.environ.get(k) for k in "
        "('RANK','WORLD_SIZE','LOCAL_RANK','PERFGATE_STEPS','ROW_VAR','USER_VAR','BOTH')}, "
        f"open({str(dump)!r}, 'w'))"
    )
    base = command_spec(steps=7, env={"ROW_VAR": "r", "BOTH": "row"})
    spec = WorkloadSpec(
        **{
            **base.__dict__,
            "command": [sys.executable, "-c", code],
            "env": {"USER_VAR": 1, "BOTH": "user"},
        }
    )
    dispatch.run_spec(spec, RANK3)
    assert json.loads(dump.read_text()) == {
        "RANK": "3",
        "WORLD_SIZE": "8",
        "LOCAL_RANK": "3",
        "PERFGATE_STEPS": "7",
        "ROW_VAR": "r",
        "USER_VAR": "1",
        "BOTH": "user",
    }


def test_a_secret_in_the_spec_env_is_refused(command_spec) -> None:
    spec = WorkloadSpec(**{**command_spec().__dict__, "env": {"HF_TOKEN": "hf_" + "a" * 30}})
    assert dispatch.run_spec(spec, RANK0) == dispatch.EXIT_CONFIG
    rec = _record(spec)
    assert rec.error == (
        "spec.env.HF_TOKEN: secrets travel by the job's environment only, not in specs"
    )
    assert "hf_" not in Path(spec.output_dir, STEPS_FILE).read_text()


def test_module_entry_point_rejects_a_missing_spec_in_one_line(tmp_path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "perfgate.workload", str(tmp_path / "nope.json")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2
    assert proc.stderr == (
        f"perfgate.workload (rank 0): error: {tmp_path / 'nope.json'}: cannot read workload "
        "spec (No such file or directory)\n"
    )


def test_importing_the_command_backend_imports_no_nemo_or_torch() -> None:
    code = (
        "import sys, perfgate.workload.dispatch, perfgate.workload.command.job; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('nemo','torch','megatron','transformer_engine','nemo_automodel')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
