"""Plain data passed between the plugin, the launcher and the report."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from perfgate.logs import StepSeries

# Causes a failed job is diagnosed as; INFRA verdicts carry one of these.
CAUSES = (
    "OOM",  # CUDA out of memory or Slurm OUT_OF_MEMORY
    "NCCL",  # NCCL error or watchdog timeout
    "TIMEOUT",  # Slurm time limit
    "PREEMPTED",
    "NODE_FAIL",
    "CANCELLED",
    "CONTAINER",  # pyxis/enroot import or start failure
    "WORKLOAD_EXCEPTION",  # a Python exception in the workload
    "NAN",  # NaN grad norm / loss
    "TOO_FEW_STEPS",  # ended before the steady window
    "SUBMIT",  # sbatch refused the job
    "QUEUE_TIMEOUT",  # still pending when the session's queue deadline passed
    "UNKNOWN",
)

# Slurm job states after which nothing more happens to a job (sacct/scontrol spelling).
TERMINAL_STATES = frozenset(
    {
        "COMPLETED",
        "FAILED",
        "TIMEOUT",
        "CANCELLED",
        "NODE_FAIL",
        "OUT_OF_MEMORY",
        "BOOT_FAIL",
        "DEADLINE",
        "PREEMPTED",
        "SPECIAL_EXIT",
        "REVOKED",
    }
)


@dataclass(frozen=True)
class LaunchOptions:
    """Everything the user chose about how and where rows run (from pytest options)."""

    executor: str = "slurm"  # slurm or local
    partition: str | None = None
    account: str | None = None
    qos: str | None = None
    time_limit_min: int | None = None
    container_image: str | None = None
    candidate_image: str | None = None
    container_mounts: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)  # --env-file merged with --env
    slurm_params: dict[str, str] = field(default_factory=dict)
    steps: int = 50
    overrides: dict[str, Any] = field(default_factory=dict)  # --override path=value
    results_dir: str = "perfgate-results"
    max_concurrent_jobs: int | None = None
    pairs: int = 3  # A/B: counterbalanced baseline/candidate pairs to start with
    # A/B: pairs an INCONCLUSIVE comparison may grow to, one at a time. 8: on production-scale
    # noise (scripts/evaluate_detector.py --scenario production) 3..8 pairs at tolerance 2%
    # catch a 3% slowdown 98% of the time with 0.0% false alarms (~6 pairs on average);
    # 3..5 catch it 62% of the time.
    max_pairs: int = 8
    finetune_data: str | None = None
    mock_finetune_data: bool = False
    # How launches get their image: "pyxis" (srun --container-image), or "none" where the image
    # only labels the run (bare metal; tests standing in two "images" without pyxis).
    container_runtime: str = "pyxis"
    mpi: str = "auto"  # auto: --mpi=pmix where `srun --mpi=list` offers it; or a plugin name
    gpus_per_node: int | None = None  # --gpus-per-node; None: the row's gpus_per_node
    exclusive: bool = True
    poll_interval_s: float = 5.0  # how often job states are read (sacct, else scontrol)
    queue_timeout_min: float = 24 * 60.0  # a job still pending after this is cancelled
    grace_min: float = 5.0  # added to the time limit before a running job's wait gives up
    job_name_prefix: str = "perfgate"


@dataclass(frozen=True)
class JobPlan:
    """What would run for one row: the one code path behind --dry-run and submission."""

    row_id: str
    nodes: int
    tasks_per_node: int
    time_limit_min: int
    gpu_hours: float  # nodes x gpus_per_node x time limit, the allocation's cost bound
    sbatch_script: str
    srun_command: str
    workload_spec: dict[str, Any]
    job_dir: str
    executor: str = "slurm"
    launches: tuple[tuple[str, str | None], ...] = (("baseline", None),)  # (label, image) in order
    max_pairs: int = 0  # A/B: the most pairs the job may grow to (0: single mode)
    env: dict[str, str] = field(default_factory=dict)  # plain values the ranks get
    secret_env: tuple[str, ...] = ()  # names only: values travel in the environment


@dataclass(frozen=True)
class Diagnosis:
    """Why a job failed, with the evidence line and the (untrusted, unescaped) log tail."""

    cause: str
    message: str
    evidence: str | None = None
    log_tail: str = ""


@dataclass(frozen=True)
class RunRecord:
    """One workload launch inside a job (A/B jobs hold several, alternating images)."""

    image: str | None
    label: str  # "baseline" or "candidate" (single mode: "baseline")
    series: StepSeries | None
    versions: dict[str, str] = field(default_factory=dict)
    exit_code: int | None = None
    log_path: str | None = None
    mock_data: bool = True
    # "sha256:<hex>" of the squashfs file the run started, None where no file was used
    # (container runtime "none") or it is not hashed (yet). Not a registry digest: enroot's
    # import does not report one. See perfgate.launch.images.
    image_digest: str | None = None
    image_stamp: tuple[int, int] | None = None  # (size, mtime_ns) of the user's squashfs file


@dataclass(frozen=True)
class RunResult:
    """What a job returns for its row: the runs, where it ran, and whether it failed."""

    row_id: str
    job_id: str | None
    state: str  # final Slurm state (COMPLETED, FAILED, TIMEOUT, ...) or LOCAL
    runs: tuple[RunRecord, ...] = ()
    nodes: tuple[str, ...] = ()
    log_paths: tuple[str, ...] = ()
    diagnosis: Diagnosis | None = None
    attempts: int = 1  # >1 after a requeue: only the last attempt is measured
    wall_s: float | None = None
    sbatch_script: str | None = None
    job_dir: str | None = None
    notes: tuple[str, ...] = ()  # e.g. "requeued once: only attempt 2 was measured"

    @property
    def ok(self) -> bool:
        """True when the job ran cleanly and its runs can be judged."""
        return self.diagnosis is None


@dataclass(frozen=True)
class JobStatus:
    """One row's job as the terminal shows it while the session runs."""

    row_id: str
    job_id: str | None
    state: str  # WAITING (not submitted: no slot yet), PENDING, RUNNING, ... or a final state
    reason: str | None = None  # Slurm's reason while pending (Resources, Priority, ...)
    step: int | None = None  # last finished step of the current run (0-based)
    total_steps: int | None = None
    run: str | None = None  # e.g. "2/6 candidate" in A/B jobs
    time_left_s: float | None = None
    done: bool = False

    def line(self) -> str:
        """One human line: row, job, state and progress."""
        parts = [self.row_id, f"job {self.job_id}" if self.job_id else "not submitted", self.state]
        if self.reason and self.state == "PENDING":
            parts.append(f"({self.reason})")
        if self.run:
            parts.append(f"run {self.run}")
        if self.step is not None and self.total_steps:
            parts.append(f"step {self.step + 1}/{self.total_steps}")
        if self.time_left_s is not None and not self.done:
            parts.append(f"{self.time_left_s / 60:.1f} min left")
        return " ".join(parts)
