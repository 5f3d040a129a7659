"""How and where rows run (LaunchOptions) and what would run for one row (JobPlan).

What ran (RunResult, RunRecord, Diagnosis, JobStatus) is perfgate.runs: the verdicts and the
replay read it without the launcher.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

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

    executor: str = "slurm"  # a name of perfgate.launch.executors.EXECUTORS
    partition: str | None = None
    account: str | None = None
    qos: str | None = None
    time_limit_min: int | None = None
    container_image: str | None = None
    candidate_image: str | None = None
    container_mounts: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)  # --env-file merged with --env
    slurm_params: dict[str, str | bool] = field(default_factory=dict)  # True: a bare flag
    # Nodes perfgate keeps the jobs off, merged with the user's own --slurm-param exclude:
    # the history's slow nodes for first runs, and a rerun's earlier nodes too (built by
    # perfgate.launch.avoid.exclusions only).
    avoid_nodes: tuple[str, ...] = ()
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
    repeat: int = 1  # --repeat K: K launches of the one image in the allocation (A/A)
    run_label: str = "baseline"  # label of a single-image job's launches ("confirm": a rerun)
    finetune_data: str | None = None
    mock_finetune_data: bool = False
    # How launches get their image (perfgate.launch.runtimes): "pyxis" (srun
    # --container-image), "podman", "command" (container_command, a site's template), or
    # "none" where the image only labels the run (bare metal).
    container_runtime: str = "pyxis"
    container_command: str | None = None  # e.g. "apptainer exec --nv {image} {argv}"
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
