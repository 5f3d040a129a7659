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
    "UNKNOWN",
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
    pairs: int = 3
    max_pairs: int = 5
    finetune_data: str | None = None
    mock_finetune_data: bool = False


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

    @property
    def ok(self) -> bool:
        """True when the job ran cleanly and its runs can be judged."""
        return self.diagnosis is None
