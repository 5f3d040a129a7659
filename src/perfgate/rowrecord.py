"""The results.json record of one row: its keys and their types, shared by report/, suite/
and history/.

A record is plain JSON (`perfgate report results.json` renders from it alone), so these are
TypedDicts: the same dicts at run time, one place that says what each key holds. Made by
perfgate.report.results.record(); the suite adds duration_s, error and trend.
"""

from __future__ import annotations

from typing import Any, TypedDict


class BaselineRecord(TypedDict):
    """The stored baseline the row was judged against (catalog.Baseline, flattened)."""

    step_time_s: float
    step_time_spread_s: float | None
    n_runs: int
    tokens_per_s_per_gpu: float | None
    tflops_per_gpu: float | None
    flops_convention: str | None
    mfu: float | None
    peak_memory_gib: float | None
    tolerance: float | None
    source: str
    container: str | None
    framework_version: str | None
    date: str | None
    notes: str | None
    phases_s: dict[str, float]  # seconds per iteration per timed phase (Megatron timers)


class PlanRecord(TypedDict):
    """What was (or would be) submitted for the row: the dry-run plan."""

    nodes: int
    tasks_per_node: int
    time_limit_min: int
    gpu_hours: float
    sbatch_script: str
    srun_command: str
    workload_spec: dict[str, Any]
    job_dir: str
    launches: list[dict[str, str | None]]  # {"label", "image"} in launch order
    max_pairs: int


class MeasuredRecord(TypedDict):
    """The steady-state numbers of the row's run(s) (verdicts.Measured)."""

    step_time_s: float
    se_s: float
    cv: float
    n_steps: int
    n_steady: int
    window: list[int]
    window_method: str
    spike_fraction: float
    tokens_per_s_per_gpu: float
    tflops_per_gpu: dict[str, float]  # FLOPs convention -> TFLOP/s per GPU
    mfu: dict[str, float]  # FLOPs convention -> fraction
    peak_tflops: float
    peak_memory_gib: float | None


class ComparisonRecord(TypedDict):
    """The statistics behind the verdict (stats.Comparison; non-finite numbers are None)."""

    verdict: str
    delta: float
    ci_low: float | None
    ci_high: float | None
    se: float | None
    resolution: float | None
    tolerance: float
    mode: str
    reason: str
    baseline_step_time_s: float
    candidate_step_time_s: float
    pair_deltas: list[float]
    detectable: float | None
    alpha: float
    ci_level: float
    df: float | None
    sigma: float | None
    n_baseline: int
    n_candidate: int
    n_unsteady: int


class _RunEntryKeys(TypedDict):
    label: str  # "baseline", "candidate" (A/B) or "confirmation N" (its own job)
    image: str | None
    image_digest: str | None
    versions: dict[str, str]
    mock_data: bool
    log_path: str | None
    format: str | None
    log_interval: int
    steps: list[list[float]]  # [step, step_time_s]
    slowest: dict[str, Any] | None  # the slowest rank its straggler reports name, its node
    phases: dict[str, Any] | None  # logs.phases.PhaseSeries.to_dict(): timer columns, or None


class RunEntry(_RunEntryKeys, total=False):
    """One launch: its image, versions and per-step times; a confirmation run (another job,
    on other nodes) also says which job and nodes, a replayed launch of its own job which."""

    job_id: str | None
    nodes: list[str]
    # A run of more than report.results.MAX_STORED_STEPS steps: steps holds the fastest and
    # slowest step of each bucket (report.decimate), n_steps how many there were, summary the
    # stats.RunSummary of all of them (None when they could not be summarized).
    n_steps: int
    summary: dict[str, Any] | None
    min_rel_se: float  # the times' SE floor (whole-second stamps: StepSeries.min_rel_se)


class JobRecord(TypedDict):
    """The Slurm (or local) job that ran the row."""

    job_id: str | None
    state: str
    nodes: list[str]
    attempts: int
    wall_s: float | None
    log_paths: list[str]
    sbatch_script: str | None


class DiagnosisRecord(TypedDict):
    """Why a job failed: the cause word, one line, the evidence and the redacted log tail."""

    cause: str
    message: str
    evidence: str | None
    log_tail: str


class _RowRecordKeys(TypedDict):
    row_id: str
    nodeid: str
    row: dict[str, Any]  # catalog.row_to_dict(row)
    source: str  # "live", "replay" or "dry-run"
    outcome: str  # pytest's: passed, failed, skipped, error
    verdict: str  # verdicts.VERDICTS, or DRY_RUN / SKIPPED
    message: str
    mode: str | None  # stored, runs, paired, history
    tolerance: float | None
    convention: str | None  # the FLOPs convention of TFLOP/s and MFU
    repro: str  # the command that reruns this row
    baseline: BaselineRecord | None
    measured: MeasuredRecord | None
    comparison: ComparisonRecord | None
    runs: list[RunEntry]
    job: JobRecord | None
    diagnosis: DiagnosisRecord | None
    plan: PlanRecord | None
    description: str | None  # the dry run's workload text
    notes: list[str]
    ab: dict[str, Any] | None  # A/B: both sides, the versions that changed, every pair
    history: dict[str, Any] | None  # the row's history as the verdict used it
    confirmation: dict[str, Any] | None  # one-run modes: the confirmation runs on other nodes


class RowRecord(_RowRecordKeys, total=False):
    """One row's record in results.json: the keys above always, these once the suite adds them."""

    duration_s: float  # the test's setup (waiting) and call time
    error: str  # a failure that is not the verdict's own message
    # the row's history trend, tonight included: points and change points as the session
    # searched them once (verdicts.nightly.trend_record); a list of stored runs before that
    trend: dict[str, Any] | list[dict[str, Any]] | None
    phases: dict[str, Any] | None  # one-run modes: each phase vs the baseline's phases_s
