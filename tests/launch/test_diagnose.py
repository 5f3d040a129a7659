"""Each failure cause against the real wording of slurmstepd, pyxis/enroot, PyTorch and NCCL."""
# ruff: noqa: E501  (verbatim log lines are kept whole)

from __future__ import annotations

import time

import pytest

from perfgate.diagnose import diagnose, failing_tasks
from perfgate.logs import Step, StepSeries

NEMO2 = (
    "Training epoch 0, iteration {i}/49 | lr: 6.897e-06 | global_batch_size: 128 | "
    "global_step: {i} | reduced_train_loss: 11.96 | train_step_timing in s: 6.08 | "
    "consumed_samples: 5888"
)
TIMEOUT_LINE = (
    "slurmstepd: error: *** JOB 4242 ON n1 CANCELLED AT 2026-01-05T10:11:12 DUE TO TIME LIMIT ***"
)
PREEMPT_LINE = (
    "slurmstepd: error: *** JOB 4242 ON n1 CANCELLED AT 2026-01-05T10:11:12 DUE TO PREEMPTION ***"
)
PYXIS_PULL = """pyxis: importing docker image: nvcr.io#nvidia/nemo:25.13
slurmstepd: error: pyxis: child 30165 failed with error code: 1
slurmstepd: error: pyxis: failed to import docker image
slurmstepd: error: pyxis: printing enroot log file:
slurmstepd: error: pyxis:     [INFO] Querying registry for permission grant
slurmstepd: error: pyxis:     [ERROR] URL https://nvcr.io/v2/nvidia/nemo/manifests/25.13 returned error code: 404 Not Found
slurmstepd: error: pyxis: couldn't start container
slurmstepd: error: spank: required plugin spank_pyxis.so: task_init() failed with rc=-1
srun: error: n1: task 0: Exited with exit code 1"""
CUDA_OOM = """[rank3]: Traceback (most recent call last):
[rank3]:   File "/opt/NeMo/nemo/lightning/pytorch/strategies/megatron_strategy.py", line 641, in training_step
[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.91 GiB. GPU 3 has a total capacity of 79.11 GiB of which 1.08 GiB is free. Including non-PyTorch memory, this process has 78.02 GiB memory in use."""
WATCHDOG = (
    "[rank0]:[E1218 20:27:21.426415540 ProcessGroupNCCL.cpp:629] [Rank 0] Watchdog caught "
    "collective operation timeout: WorkNCCL(SeqNum=1, OpType=BROADCAST, NumelIn=131072000, "
    "NumelOut=131072000, Timeout(ms)=600000) ran for 600081 milliseconds before timing out."
)
NCCL_ERR = (
    "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
    "ProcessGroupNCCL.cpp:1970, unhandled system error (run with NCCL_DEBUG=INFO for details), "
    "NCCL version 2.21.5"
)
EXC = """Traceback (most recent call last):
  File "/opt/perfgate/src/perfgate/workload/nemo2.py", line 88, in build
    recipe = getattr(llm, name).pretrain_recipe(num_nodes=2)
AttributeError: module 'nemo.collections.llm' has no attribute 'llama5_8b'"""


def series(n: int, nan_at: int | None = None) -> StepSeries:
    steps = tuple(Step(i, 6.08, grad_norm=float("nan") if i == nan_at else 1.0) for i in range(n))
    return StepSeries(
        "perfgate", steps, invalid_reason=f"NaN grad norm at step {nan_at}" if nan_at else None
    )


def test_clean_run_has_no_diagnosis():
    log = "\n".join(NEMO2.format(i=i) for i in range(50))
    assert diagnose("COMPLETED", 0, [("rank-0.log", log)], series(50), 50) is None


def test_time_limit_from_the_slurm_state_with_the_kill_line():
    d = diagnose(
        "TIMEOUT",
        None,
        [("rank-0.log", NEMO2.format(i=3)), ("b.err", TIMEOUT_LINE)],
        series(4),
        50,
        job_id="4242",
    )
    assert d.cause == "TIMEOUT"
    assert d.evidence == TIMEOUT_LINE.strip()
    assert d.message.startswith("job 4242: the job hit its time limit")


def test_time_limit_after_an_nccl_hang_names_nccl():
    d = diagnose("TIMEOUT", None, [("rank-5.log", WATCHDOG), ("b.err", TIMEOUT_LINE)])
    assert d.cause == "NCCL" and "Watchdog caught collective operation timeout" in d.evidence


@pytest.mark.parametrize(
    ("state", "cause"),
    [
        ("PREEMPTED", "PREEMPTED"),
        ("NODE_FAIL", "NODE_FAIL"),
        ("CANCELLED", "CANCELLED"),
        ("BOOT_FAIL", "NODE_FAIL"),
    ],
)
def test_slurm_ended_jobs_are_named_by_state(state, cause):
    d = diagnose(state, None, [("rank-0.log", NEMO2.format(i=1) + "\n" + WATCHDOG)])
    assert d.cause == cause  # an NCCL error after a kill is the kill's consequence


def test_cancelled_state_with_a_preemption_line():
    d = diagnose("CANCELLED", None, [("b.err", PREEMPT_LINE)])
    assert d.cause == "CANCELLED" and "DUE TO PREEMPTION" in d.evidence


def test_pyxis_pull_failure_names_the_registry_error():
    d = diagnose("FAILED", 1, [("launcher.log", PYXIS_PULL)])
    assert d.cause == "CONTAINER"
    assert "404 Not Found" in d.evidence and "nvidia/nemo/manifests/25.13" in d.evidence


def test_missing_pyxis_and_enroot_import_failures():
    d = diagnose(
        "FAILED",
        1,
        [
            (
                "job.log",
                "perfgate: pyxis is not available: srun has no "
                "--container-image on this cluster (images: x)",
            )
        ],
    )
    assert d.cause == "CONTAINER"
    d = diagnose(
        "FAILED",
        1,
        [
            (
                "job.log",
                "perfgate: enroot import of nvcr.io/nvidia/nemo:99 "
                "failed (exit 1): [ERROR] URL ... 401 Unauthorized",
            )
        ],
    )
    assert d.cause == "CONTAINER" and "401 Unauthorized" in d.evidence


def test_cuda_oom_wins_over_the_nccl_errors_it_causes():
    d = diagnose("FAILED", 1, [("rank-0.log", NCCL_ERR), ("rank-3.log", CUDA_OOM)])
    assert d.cause == "OOM" and "Tried to allocate 3.91 GiB" in d.evidence
    assert d.message.endswith("(rank-3.log)")


def test_host_oom_from_slurm():
    line = (
        "slurmstepd: error: Detected 1 oom_kill event in StepId=4242.0. Some of the step "
        "tasks have been OOM Killed."
    )
    d = diagnose("OUT_OF_MEMORY", None, [("b.err", line)])
    assert d.cause == "OOM" and "oom_kill" in d.evidence


def test_nccl_error_and_watchdog():
    assert diagnose("FAILED", 1, [("r", NCCL_ERR)]).cause == "NCCL"
    assert diagnose("FAILED", 1, [("r", WATCHDOG)]).cause == "NCCL"


def test_python_exception_line_is_the_evidence():
    d = diagnose("FAILED", 1, [("rank-0.log", EXC)])
    assert d.cause == "WORKLOAD_EXCEPTION"
    assert d.evidence == (
        "AttributeError: module 'nemo.collections.llm' has no attribute 'llama5_8b'"
    )


def test_nan_grad_norm_from_the_series_and_from_the_log():
    d = diagnose("COMPLETED", 0, [("rank-0.log", "")], series(50, nan_at=17), 50)
    assert d.cause == "NAN" and d.evidence == "NaN grad norm at step 17"
    megatron = (
        " [2026-03-27 23:09:06] iteration       18/      50 | elapsed time per iteration "
        "(ms): 5665.3 | lm loss: nan | grad norm: nan | number of skipped iterations:   0 |"
    )
    assert diagnose("COMPLETED", 0, [("rank-0.log", megatron)], series(50), 50).cause == "NAN"


def test_run_that_ended_before_the_steady_window():
    d = diagnose("COMPLETED", 0, [("rank-0.log", "")], series(12), 50)
    assert d.cause == "TOO_FEW_STEPS" and "12 of 50" in d.message
    assert diagnose("COMPLETED", 0, [("rank-0.log", "")], None, 50).cause == "TOO_FEW_STEPS"


def test_exit_without_evidence_is_unknown_with_the_srun_line():
    d = diagnose(
        "FAILED", 3, [("launcher.log", "srun: error: n2: task 9: Exited with exit code 3")]
    )
    assert d.cause == "UNKNOWN" and "status 3" in d.message
    assert d.evidence.startswith("srun: error: n2: task 9")


def test_secrets_are_masked_in_evidence_and_tail():
    token = "hf_" + "Q" * 30
    log = f"Traceback (most recent call last):\nValueError: bad token {token}"
    d = diagnose("FAILED", 1, [("rank-0.log", log)], environ={"HF_TOKEN": token})
    assert token not in d.evidence and token not in d.log_tail and "***" in d.evidence
    # The tail stays raw otherwise: escaping is the report's job.
    assert "<" not in d.log_tail


def test_failing_tasks_from_srun_errors():
    text = (
        "srun: error: n3: task 17: Exited with exit code 1\nsrun: error: n1: tasks 0-2,5: Killed\n"
    )
    assert failing_tasks(text) == [17, 0, 1, 2, 5]


def test_clean_run_with_nccl_debug_info_chatter_is_clean():
    chatter = "\n".join(
        [
            "n1:2817:2817 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to eth0",
            "n1:2817:3011 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read",
            "n1:2817:3011 [0] NCCL INFO comm 0x5581 rank 0 nranks 8 cudaDev 0 busId 18000 - Init COMPLETE",
            *[NEMO2.format(i=i) for i in range(50)],
        ]
    )
    assert diagnose("COMPLETED", 0, [("rank-0.log", chatter)], series(50), 50) is None


# Captured from the real pyxis 0.24.0 + enroot 4.1.2 on the local Slurm (scripts/containers).
PYXIS_TRUNCATED = """slurmstepd-n1: error: pyxis: child 31310 failed with error code: 1
srun: error: n1: task 0: Exited with exit code 1
slurmstepd-n1: error: pyxis: failed to create container filesystem for image: /data/nemo.sqsh
slurmstepd-n1: error: pyxis: printing enroot log file:
slurmstepd-n1: error: pyxis:     [INFO] Extracting squashfs filesystem...
slurmstepd-n1: error: pyxis:     Read on filesystem failed because EOF
slurmstepd-n1: error: pyxis:     read_id_table: failed to read id index table
slurmstepd-n1: error: pyxis:     FATAL ERROR: File system corruption detected
slurmstepd-n1: error: spank: required plugin spank_pyxis.so: task_init() failed with rc=-1
slurmstepd-n1: error: Failed to invoke spank plugin stack"""
# podman 4.3.1 (Debian 12), enroot start 4.1.2, and Apptainer's wording from
# https://github.com/apptainer/singularity/issues/5183
RUNTIME_ERRORS = [
    (
        'Error: initializing source docker://localhost/perfgate-test:absent: pinging container registry localhost: Get "https://localhost/v2/": dial tcp 127.0.0.1:443: connect: connection refused',
        "podman could not run the container",
    ),
    ("Error: localhost/perfgate-test:absent: image not known", "podman could not run"),
    ("[ERROR] Invalid argument: /tmp/nope.sqsh", "the container runtime could not use the image"),
    (
        "enroot-mount: failed to mount: /nonexistent at /run/enroot/overlay/x: No such file or directory",
        "a container mount failed",
    ),
    (
        "FATAL:   could not open image /x/nemo.sif: failed to retrieve path for /x/nemo.sif: lstat /x/nemo.sif: no such file or directory",
        "the container runtime failed",
    ),
]


def test_a_corrupt_squashfs_names_the_image_pyxis_could_not_unpack():
    d = diagnose("FAILED", 1, [("launcher.log", PYXIS_TRUNCATED)])
    assert d.cause == "CONTAINER" and d.message.startswith("container image could not be unpacked")
    assert d.evidence.endswith("failed to create container filesystem for image: /data/nemo.sqsh")
    assert "File system corruption detected" in d.log_tail


@pytest.mark.parametrize(("line", "message"), RUNTIME_ERRORS)
def test_podman_enroot_and_apptainer_failures_are_container_errors(line, message):
    d = diagnose("FAILED", 1, [("rank-0.log", line + "\n")])
    assert d.cause == "CONTAINER" and d.message.startswith(message) and d.evidence == line


def test_a_100kb_line_without_newline_is_searched_in_linear_time():
    import time

    long = "x" * 100_000
    text = f"{long}\nRuntimeError: CUDA out of memory. Tried to allocate 2 GiB\n{long}\n"
    text += "Traceback (most recent call last):\n" + "Error" * 20_000 + "\n"
    start = time.process_time()
    d = diagnose("FAILED", 1, [("rank-0.log", text)])
    assert d.cause == "OOM" and d.evidence.startswith("RuntimeError: CUDA out of memory")
    assert time.process_time() - start < 2.0  # was ~4 minutes (quadratic `.*X.*` searches)


def test_a_workload_that_exits_1_is_its_own_cause_not_the_kill_it_caused():
    # `sh -c 'echo about to fail; exit 1'`: srun --kill-on-bad-exit cancels the step, and
    # slurmstepd's CANCELLED line read as "Slurm killed the job".
    tail = (
        "about to fail\n"
        "perfgate.workload (rank 0): error: command '/bin/sh' exited with status 1\n"
        "srun: error: n1: task 0: Exited with exit code 1\n"
        "slurmstepd: error: *** STEP 4242.0 ON n1 CANCELLED AT 2026-01-05T10:11:12 ***\n"
        "srun: error: n1: task 1: Terminated\n"
    )
    d = diagnose("FAILED", 1, [("rank-0.log", tail)], job_id="4242")
    assert d.cause == "WORKLOAD_EXCEPTION"
    assert d.message == (
        "job 4242: the workload failed: perfgate.workload (rank 0): error: command "
        "'/bin/sh' exited with status 1 (rank-0.log)"
    )
    # Without the workload's line, srun's report of the task's own exit still wins.
    d = diagnose("FAILED", 1, [("launcher.log", tail.split("\n", 2)[2])], job_id="4242")
    assert d.cause == "UNKNOWN" and "Exited with exit code 1" in d.evidence
    assert d.message.startswith("job 4242: the workload exited with status 1: ")
    # A kill alone is still a kill.
    d = diagnose("FAILED", None, [("b.err", tail.splitlines()[3])], job_id="4242")
    assert d.cause == "CANCELLED"


def test_task_ids_of_a_corrupt_srun_line_are_bounded():
    text = (
        "srun: error: n1: tasks 0-99999999999999: Exited with exit code 1\n"
        f"srun: error: n1: task {'9' * 5000}: Exited with exit code 1\n"
        "srun: error: n1: tasks 3-5,7: Exited with exit code 1\n"
    )
    start = time.process_time()
    assert failing_tasks(text) == [3, 4, 5, 7]
    assert time.process_time() - start < 5  # CPU time: a range of 1e14 tasks never ended
