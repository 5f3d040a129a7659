"""The results.json record of one row: its keys and their types, shared by report/, suite/
and history/.

A record is plain JSON (`perfgate report results.json` renders from it alone), so these are
TypedDicts: the same dicts at run time, one place that says what each key holds. Made by
perfgate.report.results.record(); the suite adds duration_s, error and trend. Read back, a
record is checked against these very types (perfgate.report.readback, perfgate.typedjson):
a part a reader computes with is declared to the value, with Annotated rules where a number
must be above 0 or a fraction.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypedDict

from perfgate.typedjson import fraction, non_negative, positive

Seconds = Annotated[float, positive]  # a step, phase or run time: above 0
Count = Annotated[int, non_negative]
Fraction = Annotated[float, fraction]  # a tolerance, alpha, confidence level: in (0, 1)
Outcome = Literal["passed", "failed", "skipped", "error", "xfailed", "xpassed", "rerun", "retried"]


class BaselineRecord(TypedDict):
    """The stored baseline the row was judged against (catalog.Baseline, flattened)."""

    step_time_s: Seconds
    step_time_spread_s: Annotated[float, non_negative] | None
    n_runs: Annotated[int, positive]
    tokens_per_s_per_gpu: float | None
    tflops_per_gpu: float | None
    flops_convention: str | None
    mfu: float | None
    peak_memory_gib: float | None
    tolerance: Fraction | None
    source: str
    container: str | None
    framework_version: str | None
    date: str | None
    notes: str | None
    phases_s: dict[str, Seconds]  # seconds per iteration per timed phase (Megatron timers)


class PlanRecord(TypedDict):
    """What was (or would be) submitted for the row: the dry-run plan."""

    nodes: Annotated[int, positive]
    tasks_per_node: Annotated[int, positive]
    time_limit_min: Annotated[int, positive]
    gpu_hours: Annotated[float, non_negative]
    sbatch_script: str
    srun_command: str
    workload_spec: dict[str, Any]
    job_dir: str
    launches: list[LaunchRecord]  # in launch order
    max_pairs: Count


class MeasuredRecord(TypedDict):
    """The steady-state numbers of the row's run(s) (verdicts.Measured)."""

    step_time_s: Seconds
    se_s: Annotated[float, non_negative] | None  # a NaN is written as null
    cv: Annotated[float, non_negative] | None
    n_steps: Count
    n_steady: Count
    window: tuple[int, int]
    window_method: str
    spike_fraction: Annotated[float, non_negative]
    tokens_per_s_per_gpu: Annotated[float, non_negative]
    tflops_per_gpu: dict[str, float | None]  # FLOPs convention -> TFLOP/s per GPU
    mfu: dict[str, float | None]  # FLOPs convention -> fraction
    peak_tflops: Annotated[float, positive]
    peak_memory_gib: float | None


class ComparisonRecord(TypedDict):
    """The statistics behind the verdict (stats.Comparison; non-finite numbers are None)."""

    verdict: str
    delta: float | None
    ci_low: float | None
    ci_high: float | None
    se: float | None
    resolution: float | None
    tolerance: Fraction
    mode: str
    reason: str
    baseline_step_time_s: Seconds | None
    candidate_step_time_s: Seconds | None
    pair_deltas: list[float]
    detectable: float | None
    alpha: Fraction
    ci_level: Fraction
    df: float | None
    sigma: float | None
    n_baseline: Count
    n_candidate: Count
    n_unsteady: Count


class _RunEntryKeys(TypedDict):
    label: str  # "baseline", "candidate" (A/B) or "confirmation N" (its own job)
    image: str | None
    image_digest: str | None
    versions: dict[str, str]
    mock_data: bool
    log_path: str | None
    format: str | None
    log_interval: Annotated[int, positive]
    steps: list[tuple[int, float | None]]  # [step, step_time_s]; a NaN or inf step: null
    slowest: SlowestRecord | None  # the slowest rank its straggler reports name, its node
    phases: PhaseSeriesRecord | None  # logs.phases.PhaseSeries.to_dict(): timer columns


class RunEntry(_RunEntryKeys, total=False):
    """One launch: its image, versions and per-step times; a confirmation run (another job,
    on other nodes) also says which job and nodes, a replayed launch of its own job which."""

    job_id: str | None
    nodes: list[str]
    # A run of more than report.results.MAX_STORED_STEPS steps: steps holds the fastest and
    # slowest step of each bucket (report.decimate), n_steps how many there were, summary the
    # stats.RunSummary of all of them (None when they could not be summarized).
    n_steps: Count
    summary: SummaryRecord | None
    min_rel_se: Annotated[float, non_negative]  # the times' SE floor (whole-second stamps)


class JobRecord(TypedDict):
    """The Slurm (or local) job that ran the row."""

    job_id: str | None
    state: str
    nodes: list[str]
    attempts: Count
    wall_s: Annotated[float, non_negative] | None
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
    row: dict[str, Any]  # catalog.row_to_dict(row) (read back by the catalog's own schema)
    source: str  # "live", "replay" or "dry-run"
    outcome: Outcome  # pytest's
    verdict: str  # verdicts.VERDICTS, or DRY_RUN / SKIPPED
    message: str
    mode: str | None  # stored, runs, paired, history
    tolerance: Fraction | None
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
    ab: AbRecord | None  # A/B: both sides, the versions that changed, every pair
    history: HistoryRecord | None  # the row's history as the verdict used it
    confirmation: ConfirmationRecord | None  # one-run modes: the reruns on other nodes


class RowRecord(_RowRecordKeys, total=False):
    """One row's record in results.json: the keys above always, these once the suite adds them."""

    duration_s: Annotated[float, non_negative]  # the test's setup (waiting) and call time
    error: str  # a failure that is not the verdict's own message
    # the row's history trend, tonight included: points and change points as the session
    # searched them once (verdicts.nightly.trend_record); a list of stored runs before that
    trend: TrendRecord | list[TrendRun] | None
    phases: RowPhasesRecord | None  # one-run modes: each phase vs the baseline's phases_s


# --- the parts above, to the value ------------------------------------------------------------


class LaunchRecord(TypedDict):
    """One launch of a plan: its label (baseline / candidate) and image."""

    label: str
    image: str | None


class SlowestRecord(TypedDict):
    """The slowest rank a run's straggler reports name (logs.stragglers.Slowest)."""

    rank: Count
    node: str | None
    reports: Count
    of: Count
    how: str


class PhaseSeriesRecord(TypedDict):
    """A run's Megatron timer columns (logs.phases.PhaseSeries.to_dict; NaN as null)."""

    steps: list[int]
    phases: dict[str, list[float | None]]
    option: str | None
    log_interval: Annotated[int, positive]
    source: str | None
    notes: list[str]


class SummaryRecord(TypedDict):
    """stats.RunSummary of a decimated run's every step (NaN as null)."""

    n_steps: Count
    steady: bool
    window_method: str
    window_start: int
    window_end: int
    n_steady: Count
    median_s: Seconds | None
    mean_s: float | None
    se_s: Annotated[float, non_negative] | None
    cv: float | None
    spike_fraction: float | None
    reason: str | None
    n_missing: Count
    drift: float | None


class PriorRecord(TypedDict):
    """The named noise prior a verdict used."""

    name: str
    sigma: Annotated[float, non_negative]
    df: Annotated[float, non_negative]


class ReferenceRecord(TypedDict):
    """What the history pooled as the row's reference."""

    step_time_s: Seconds
    n_runs: Count
    what: str | None


class ChangePointRecord(TypedDict):
    """A change point of the row's trend."""

    index: Count
    p_value: float
    session_id: int | None


class FirstSessionRecord(TypedDict):
    """The first session after a step in the history."""

    session_id: int
    started_at: str
    job_id: str | None
    container: str | None
    versions: dict[str, str]


class HistoryStepRecord(TypedDict):
    """A persistent step the history found (history.trend.Step.to_dict)."""

    verdict: str
    index: Count
    delta: float
    ci_low: float | None
    ci_high: float | None
    step: float | None
    p_value: float | None
    n_after: Count
    reason: str
    first_session: FirstSessionRecord | None


class HistoryRecord(TypedDict):
    """The row's history as the verdict used it (verdicts.nightly)."""

    reference: ReferenceRecord | None
    n_runs: Count
    prior: PriorRecord
    noise_df: Annotated[float, non_negative]
    sigma: float | None
    df: float | None
    change_points: list[ChangePointRecord]
    step: HistoryStepRecord | None


class ConfirmationRunRecord(TypedDict):
    """One run of a confirmation (the first, or a rerun on other nodes)."""

    role: str
    verdict: str
    delta: float | None
    step_time_s: Seconds | None
    job_id: str | None
    nodes: list[str]
    cause: str | None


class ConfirmationRecord(TypedDict):
    """A one-run verdict's reruns on other nodes (verdicts.confirm.combine)."""

    runs: list[ConfirmationRunRecord]
    excluded: list[str]
    suspect_nodes: list[str]
    note: str | None


class TrendPoint(TypedDict, total=False):
    """One point of a row's trend (verdicts.nightly.TREND_FIELDS; tonight's runs have no
    session yet)."""

    session_id: int | None
    started_at: str | None
    job_id: str | None
    image: str | None
    step_time_s: Seconds | None
    verdict: str | None
    label: str | None
    tonight: bool


class TrendChangePoint(TypedDict):
    """A change point the session's search found: the index of the first point after it."""

    index: Count
    p_value: float


class TrendRecord(TypedDict):
    """A row's trend as the session searched it (verdicts.nightly.trend_record)."""

    points: list[TrendPoint]
    change_points: list[TrendChangePoint]


class TrendRun(TypedDict):
    """One stored run of a row's trend, as results.json kept it before the change points
    were (report.trend's old TREND_FIELDS)."""

    session_id: int
    started_at: str
    job_id: str | None
    image: str | None
    step_time_s: Seconds | None
    steady: bool
    cause: str | None
    excluded: str | None
    mode: str
    verdict: str | None
    label: str


class RowPhaseRecord(TypedDict):
    """One phase of a one-run row against the baseline's stored phases."""

    name: str
    run_s: Annotated[float, non_negative] | None
    baseline_s: Annotated[float, non_negative] | None
    delta: float | None
    share: float | None


class RowPhasesRecord(TypedDict):
    """A one-run row's phases against its baseline's (report.phases.versus_baseline)."""

    phases: list[RowPhaseRecord]
    stored: bool


class _AbSideKeys(TypedDict):
    image: str | None
    digest: str | None
    digest_note: str | None
    versions: dict[str, str | None]
    launches: list[Annotated[int, positive]]


class AbSideRecord(_AbSideKeys, total=False):
    """One side of an A/B: image, digest, versions, launches; once judged, its pooled step
    time."""

    step_time_s: Seconds | None
    spread_s: Annotated[float, non_negative] | None
    n_runs: Count


class AbPairRecord(TypedDict):
    """One A/B pair: its order, launches, step times and delta."""

    pair: Annotated[int, positive]
    order: Literal["AB", "BA"]
    baseline_launch: Annotated[int, positive]
    candidate_launch: Annotated[int, positive]
    baseline_step_time_s: Seconds | None
    candidate_step_time_s: Seconds | None
    delta: float | None
    used: bool
    left_out: str | None


class DriftSideRecord(TypedDict):
    """One image against the stored baseline (informational)."""

    delta: float
    ci_low: float | None
    ci_high: float | None
    verdict: str
    n_runs: Count


class DriftRecord(TypedDict):
    """Both images against the stored baseline (verdicts.paired.drift)."""

    stored_step_time_s: Seconds
    baseline: DriftSideRecord
    candidate: DriftSideRecord


class _AbPhaseKeys(TypedDict):
    name: str
    pairs: Count


class AbPhaseRecord(_AbPhaseKeys, total=False):
    """One phase compared pair by pair (verdicts.phases); a phase not timed in both runs of
    a pair has a note instead of numbers."""

    baseline_s: Annotated[float, non_negative] | None
    candidate_s: Annotated[float, non_negative] | None
    delta: float | None
    ci_low: float | None
    ci_high: float | None
    moved: str | None
    share: float | None
    pair_deltas: list[float]
    note: str


class AbPhasesRecord(TypedDict):
    """The A/B's phases (verdicts.phases)."""

    phases: list[AbPhaseRecord]
    moved: list[str]
    option: str
    ci_level: Fraction
    note: str


class _AbKeys(TypedDict):
    order: str
    first_pairs: Annotated[int, positive]
    max_pairs: Annotated[int, positive]
    sides: dict[str, AbSideRecord]
    changed: dict[str, dict[str, str | None]]
    pairs: list[AbPairRecord]
    no_time_for_more: str | None


class AbRecord(_AbKeys, total=False):
    """An A/B row's two sides, pairs, drift and phases (verdicts.paired); pairs_run and the
    rest once its pairs were judged (an INFRA A/B has none)."""

    pairs_run: Count
    pairs_used: Count
    pairs_added: Count
    alpha_per_look: Fraction
    drift: DriftRecord | None
    phases: AbPhasesRecord | None


class SessionRecord(TypedDict, total=False):
    """results.json's session: when, where, how it ran."""

    started: str
    finished: str | None
    mode: str
    user: str | None
    host: str | None
    deselected: list[str]
    options: dict[str, Any]
    metadata: dict[str, Any]
