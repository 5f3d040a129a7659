"""gpu-check --cpu's plumbing without torch: the runner, the install and probe rules, threads,
the TP=2 check in the verdict. (The CPU run end to end: tests/workload/test_megatron_core_venv.py.)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest
from testutil import REPO

sys.path.insert(0, str(REPO / "tools"))  # the GPU check: tools/gpucheck

from gpucheck import report, verdict, wheels
from gpucheck.cpustages import workload_item
from gpucheck.runs import launch, read_run

from perfgate.catalog import row_from_dict
from perfgate.workload.megatron_core.plan import cpu_threads
from perfgate.workload.spec import WorkloadSpec

COMMAND_ROW = {
    "id": "pretrain-llama3_8b-h100-bf16-1gpu-tp1-command",
    "task": "pretrain",
    "model": "llama3_8b",
    "gpu": "h100",
    "precision": "bf16",
    "num_gpus": 1,
    "gbs": 1,
    "mbs": 1,
    "seq_len": 4096,
    "backend": "command",
}
# A Megatron-LM iteration line the command backend parses as the step, and the process id.
ITEM = (
    "import os, sys; print(' iteration        1/       1 | elapsed time per iteration (ms): "
    "12.5 |', flush=True); print('pid', os.getppid(), flush=True); sys.exit({code})"
)


def test_the_runner_runs_each_item_in_one_process_into_its_own_log(tmp_path):
    items = []
    for name, code in (("first", 0), ("failing", 3), ("after", 0)):
        argv = [sys.executable, "-c", ITEM.format(code=code)]
        row = row_from_dict(COMMAND_ROW, "<test row>", rules=False)
        spec = WorkloadSpec(row=row, steps=1, output_dir=str(tmp_path / name), command=argv)
        items.append(workload_item(name, spec))
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"items": items, "report": str(tmp_path / "done")}))
    env = {**os.environ, "PYTHONPATH": f"{REPO / 'src'}:{REPO / 'tools'}:{REPO / 'scripts'}"}
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_PORT"):
        env.pop(name, None)
    proc = subprocess.run(
        [sys.executable, "-m", "gpucheck.runner", str(plan)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    done = json.loads((tmp_path / "done.rank0.json").read_text())
    assert [d["name"] for d in done] == ["first", "failing", "after"]  # a failure stops nothing
    codes = [d["exit_code"] for d in done]
    assert codes[0] == codes[2] == 0 and codes[1] and proc.returncode == codes[1]
    assert proc.stdout == ""  # every item's output went to its own log
    logs = {n: (tmp_path / n / "rank-0.log").read_text() for n in ("first", "failing", "after")}
    runner_pids = {
        next(w for w in log.split("\n") if w.startswith("pid ")) for log in logs.values()
    }
    assert len(runner_pids) == 1  # the commands' parent: the one runner process
    first = read_run("baseline", tmp_path / "first", 1.0, 0)
    assert first.host_s == [0.0125] and first.log_s == [0.0125]  # steps.json and the log
    assert read_run("baseline", tmp_path / "failing", 1.0, codes[1]).problem


def test_ranks_run_one_thread_each_where_omp_num_threads_says(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    assert cpu_threads(2) == 1
    monkeypatch.setenv("OMP_NUM_THREADS", "bogus")
    cores = len(os.sched_getaffinity(0))
    assert cpu_threads(1) == cores and cpu_threads(cores * 2) == 1
    monkeypatch.delenv("OMP_NUM_THREADS")
    assert cpu_threads(1) == cores


@pytest.mark.parametrize(("no_bytecode", "compiled"), [("1", True), ("", False)])
def test_wheels_are_byte_compiled_at_install_only_where_imports_cannot_write_it(
    monkeypatch, tmp_path, no_bytecode, compiled
):
    seen = []

    def fake_run(cmd, **kwargs):
        seen.append(cmd)
        return subprocess.CompletedProcess(cmd, 0, "", "")

    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", no_bytecode)
    monkeypatch.setattr(wheels.subprocess, "run", fake_run)
    wheels.install([tmp_path / "a.whl"], tmp_path / "site")
    assert ("--no-compile" not in seen[0]) == compiled
    assert seen[0][-3:] == ["--target", str(tmp_path / "site"), str(tmp_path / "a.whl")]


def test_the_cpu_probe_reads_torch_without_importing_it():
    from gpucheck import prepare

    facts = prepare.probe(sys.executable, cpu=True)
    assert facts["python"] == sys.version.split()[0] and facts["gpus"] == 0
    if "torch" in facts:  # this interpreter has torch: its version, from the metadata
        assert prepare.check_torch(facts, True) is None
        return
    assert facts["error"] == "ModuleNotFoundError: No module named 'torch'"
    with pytest.raises(wheels.Refused, match=r"^gpu-check: torch is not importable"):
        prepare.check_torch(facts, True)


def test_a_failed_tp2_check_fails_the_cpu_check_and_is_summarized():
    tp2 = {"status": "fail", "first_loss_tp1": 6.9, "first_loss_tp2": 7.2, "tolerance": 1e-3}
    names, controls = verdict.required(cpu=True, nemo2=False)
    result = {
        "cpu": True,
        "product": {"ok": True, "line": "x"},
        "checks": {n: {"status": "pass"} for n in names},
        "controls": {n: {"caught": True} for n in controls},
        "pairs": {"aa": {"verdict": "PASS"}, "ab": {"verdict": "PASS"}, "expected_ab": "either"},
    }
    assert verdict.overall(result) == (True, [])
    result["checks"]["tp2"] = tp2
    text = report.summary(result)
    assert "TP=2 [fail]: first loss 7.2 on 2 ranks vs 6.9 on one (tolerance 0.001)" in text
    assert text.endswith("overall: FAIL (tp2: failed)\n")


# Three Megatron-LM lines, the third only after the parent has seen the first two.
THREE = (
    "import sys, time\n"
    "line = ' iteration {:8d}/       3 | elapsed time per iteration (ms): 20.0 |'\n"
    "for i in (1, 2): print(line.format(i), flush=True)\n"
    "time.sleep(0.3)\n"
    "print(line.format(3), flush=True)\n"
)


def test_a_direct_launch_is_followed_by_the_parents_clock(tmp_path):
    row = row_from_dict(COMMAND_ROW, "<test row>", rules=False)
    argv = [sys.executable, "-c", THREE]
    spec = WorkloadSpec(row=row, steps=3, output_dir=str(tmp_path / "run"), command=argv)
    env = {**os.environ, "PYTHONPATH": f"{REPO / 'src'}:{REPO / 'tools'}"}
    start = time.monotonic()
    run = launch(sys.executable, spec, 1, env, 120.0)
    end = time.monotonic()
    assert run.problem is None or "exit code" not in run.problem
    assert run.host_s == [0.02] * 3 and run.log_s == [0.02] * 3
    # the parent stamped each line on arrival, in order; the third after the program's sleep
    assert len(run.arrivals) == 3 and run.arrivals == sorted(run.arrivals)
    assert start + 0.3 <= run.arrivals[2] <= end
