"""What ran: a job's runs (RunRecord), its result (RunResult), why it failed (Diagnosis).

Plain data passed from the launcher and the replay to the verdicts and the report; the live
job states the terminal shows (JobStatus); the A/B launch order (Launches). Imports only the
log series and the standard library.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from perfgate.logs.phases import PhaseSeries
from perfgate.logs.series import StepSeries

# Causes a failed job is diagnosed as; INFRA verdicts carry one of these.
CAUSES = (
    "OOM",  # CUDA out of memory or Slurm OUT_OF_MEMORY
    "NCCL",  # NCCL error or watchdog timeout
    "TIMEOUT",  # Slurm time limit
    "PREEMPTED",
    "NODE_FAIL",
    "CANCELLED",
    "CONTAINER",  # pyxis/enroot/podman import or start failure, ranks without Slurm's env
    "WORKLOAD_EXCEPTION",  # a Python exception in the workload
    "NAN",  # NaN or inf step time, grad norm or loss; Megatron's NaN iterations
    "BAD_LOG",  # the log contradicts itself (a step logged twice with two step times)
    "TOO_FEW_STEPS",  # ended before the steady window
    "SUBMIT",  # sbatch refused the job
    "QUEUE_TIMEOUT",  # still pending when the session's queue deadline passed
    "IMPOSSIBLE",  # faster than the GPU can be (MFU > 1 under every FLOPs convention)
    "UNKNOWN",
)

Launches = tuple[tuple[str, str | None], ...]  # (label, image) in launch order


def ab_images(launches: Launches) -> tuple[str | None, str | None]:
    """(baseline image, candidate image) of an A/B launch list."""
    images = dict(launches)
    return images.get("baseline"), images.get("candidate")


def launch_order(launches: Launches) -> str:
    """The launch order in letters, a pair per group: "AB BA AB" (A baseline, B candidate)."""
    letters = "".join("B" if label == "candidate" else "A" for label, _ in launches)
    return " ".join(letters[i : i + 2] for i in range(0, len(letters), 2))


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
    # "sha256:<hex>" of the image file the run started (pyxis, command), or podman's image
    # ID; None where no file was used (runtime none, a reference the runtime resolves) or it
    # is not hashed (yet). Not a registry's manifest digest: enroot's import does not report
    # one. See perfgate.launch.images.
    image_digest: str | None = None
    image_stamp: tuple[int, int] | None = None  # (size, mtime_ns) of the user's squashfs file
    # The slowest rank as the run's straggler reports name it (perfgate.logs.stragglers),
    # JSON-ready: rank, node (the report's, else the job's block layout), reports, how.
    slowest: dict[str, Any] | None = None
    job_id: str | None = None  # its own job, where it differs from the result's (replayed launches)
    # Seconds per iteration in each phase, from the Megatron timer blocks of the run's logs.
    phases: PhaseSeries | None = None


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
    requeues: tuple[str, ...] = ()  # why each earlier attempt ended, e.g. "NODE_FAIL on n2"

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
    attempt: int = 1  # 2 after one requeue (node failure, preemption)
    requeues: tuple[str, ...] = ()  # why each earlier attempt ended, e.g. "NODE_FAIL on n2"

    def line(self) -> str:
        """One human line: row, job, state and progress."""
        parts = [self.row_id, f"job {self.job_id}" if self.job_id else "not submitted", self.state]
        if self.reason and self.state == "PENDING":
            parts.append(f"({self.reason})")
        if self.requeues:
            parts.append(f"attempt {self.attempt}, requeued after {', '.join(self.requeues)}")
        if self.run:
            parts.append(f"run {self.run}")
        if self.step is not None and self.total_steps:
            parts.append(f"step {self.step + 1}/{self.total_steps}")
        if self.time_left_s is not None and not self.done:
            parts.append(f"{self.time_left_s / 60:.1f} min left")
        return " ".join(parts)
