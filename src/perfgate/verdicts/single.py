"""From a job's (or a replayed log's) RunResult to a verdict on one row (its pytest outcome:
perfgate.suite.outcome).

One pipeline for live runs and replays: steady-state summary (perfgate.stats), throughput with
the FLOPs convention named (perfgate.flops), comparison with the stored baseline, verdict.
The gate is on step time; TFLOP/s and MFU are reported, never gated on.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from perfgate import flops, stats
from perfgate.catalog import Baseline, Row
from perfgate.charset import for_terminal
from perfgate.history import trend
from perfgate.logs import StepSeries
from perfgate.runs import Diagnosis, RunRecord, RunResult
from perfgate.secrets import redact
from perfgate.stats import RunSummary
from perfgate.verdicts import nightly, physical

# What the plugin can say about a row, beyond the comparison verdicts of perfgate.stats; the
# report, results.json, JUnit and the terminal take their verdict names from here.
PASS, REGRESSION, IMPROVEMENT, INCONCLUSIVE = "PASS", "REGRESSION", "IMPROVEMENT", "INCONCLUSIVE"
NO_BASELINE, INFRA = "NO_BASELINE", "INFRA"
SHIFT = trend.SHIFT  # a persistent step in the row's history, real but within tolerance
# A one-launch REGRESSION that a confirmation on other nodes did not reproduce: the first
# run's nodes are suspect (perfgate.verdicts.confirm).
UNCONFIRMED = "UNCONFIRMED"
VERDICTS = (REGRESSION, INFRA, UNCONFIRMED, SHIFT, INCONCLUSIVE, NO_BASELINE, IMPROVEMENT, PASS)
WARN = (UNCONFIRMED, SHIFT, INCONCLUSIVE, NO_BASELINE)  # pass with a warning; --strict fails
DEFAULT_TOLERANCE = stats.DEFAULT_TOLERANCE  # when neither the row nor --tolerance sets one
CONVENTIONS = ("nemo2", "megatron")


@dataclass(frozen=True)
class Measured:
    """The steady-state numbers of one run of a row, with both FLOPs conventions."""

    step_time_s: float  # steady median
    se_s: float
    cv: float
    n_steps: int
    n_steady: int
    window: tuple[int, int]
    window_method: str
    spike_fraction: float
    tokens_per_s_per_gpu: float
    tflops_per_gpu: dict[str, float]  # convention -> TFLOP/s/GPU
    mfu: dict[str, float]  # convention -> fraction
    peak_tflops: float
    peak_memory_gib: float | None


@dataclass(frozen=True)
class Evaluation:
    """Everything decided about one row: verdict, the numbers behind it, where they came from."""

    row: Row
    verdict: str
    message: str  # one line, as the test reports it
    source: str  # "live" or "replay"
    mode: str = "stored"  # "stored": vs baselines/*.json; "paired": A/B in one allocation
    tolerance: float = DEFAULT_TOLERANCE
    convention: str = "nemo2"  # which FLOPs convention the report shows first
    measured: Measured | None = None
    comparison: stats.Comparison | None = None
    result: RunResult | None = None
    series: StepSeries | None = None
    cause: str | None = None  # INFRA: one of perfgate.runs.CAUSES
    notes: tuple[str, ...] = ()
    # A/B mode: both containers side by side, each pair, the stored-baseline drift
    # (JSON-ready; perfgate.verdicts.paired builds it, results.json keeps it as "ab").
    ab: dict[str, Any] | None = None
    # The row's history behind the verdict: noise learned, change points, a step the baseline
    # missed (JSON-ready; perfgate.verdicts.nightly builds it, results.json keeps it).
    history: dict[str, Any] | None = None
    # One-run modes: the confirmation runs on other nodes and what they showed (JSON-ready;
    # perfgate.verdicts.confirm builds it, results.json keeps it), and their evaluations.
    confirmation: dict[str, Any] | None = None
    confirmed_by: tuple[Evaluation, ...] = ()
    # The row's trend as the verdict searched it, tonight included: points and change points
    # (JSON-ready: verdicts.nightly.trend_record; results.json keeps it as "trend").
    trend: dict[str, Any] | None = None

    @property
    def delta(self) -> float | None:
        """Relative change of steady step time vs the baseline (+0.03 = 3% slower)."""
        return self.comparison.delta if self.comparison is not None else None

    @property
    def run(self) -> RunRecord | None:
        """The measured run (single mode: the last one of the job)."""
        runs = self.result.runs if self.result is not None else ()
        return runs[-1] if runs else None


def tolerance_of(row: Row, override: float | None) -> float:
    """--tolerance wins over the row's baseline tolerance, which wins over the 5% default."""
    if override is not None:
        return override
    if row.baseline is not None and row.baseline.tolerance is not None:
        return row.baseline.tolerance
    return DEFAULT_TOLERANCE


def convention_of(row: Row, convention: str | None = None) -> str:
    """The FLOPs convention the report shows first: asked, else the baseline's, else nemo2."""
    conv = convention or (row.baseline.flops_convention if row.baseline else None) or "nemo2"
    if conv not in CONVENTIONS and not (row.baseline and row.baseline.flops_convention == conv):
        conv = "nemo2"
    return conv


def _peak_memory(series: StepSeries) -> float | None:
    return series.peak_memory_gib  # from the columns: no Step object per step


def throughput(
    row: Row, step_time_s: float
) -> tuple[float, dict[str, float], dict[str, float], float]:
    """(tokens/s/GPU, TFLOP/s/GPU by convention, MFU by convention, peak TFLOP/s) of a step time."""
    tflops: dict[str, float] = {}
    mfu: dict[str, float] = {}
    tokens = peak = 0.0
    wanted = [*CONVENTIONS]
    if row.baseline is not None and row.baseline.flops_convention not in (None, *wanted):
        wanted.append(row.baseline.flops_convention)  # compare like with like in the report
    for conv in wanted:
        t = flops.of_row(row, step_time_s, conv)
        if t is None:  # a published convention may not cover this model family
            continue
        tflops[conv], mfu[conv] = t.tflops_per_gpu, t.mfu
        tokens, peak = t.tokens_per_s_per_gpu, t.peak_tflops
    return tokens, tflops, mfu, peak


def measure(row: Row, series: StepSeries, window: stats.Window) -> tuple[Measured | None, str]:
    """Summarize a series; (None, reason) when it has no steady state."""
    summary = stats.summarize_run(series.step_times, window=window, min_rel_se=series.min_rel_se)
    if not summary.steady:
        return None, summary.reason or "no steady state"
    step_time = summary.median_s
    tokens, tflops, mfu, peak = throughput(row, step_time)
    return (
        Measured(
            step_time_s=step_time,
            se_s=summary.se_s,
            cv=summary.cv,
            n_steps=summary.n_steps,
            n_steady=summary.n_steady,
            window=(summary.window_start, summary.window_end),
            window_method=summary.window_method,
            spike_fraction=summary.spike_fraction,
            tokens_per_s_per_gpu=tokens,
            tflops_per_gpu=tflops,
            mfu=mfu,
            peak_tflops=peak,
            peak_memory_gib=_peak_memory(series),
        ),
        "",
    )


def infra(
    row: Row, source: str, result: RunResult | None, cause: str, message: str, **kw: Any
) -> Evaluation:
    """An INFRA evaluation: the cause and job id in the message, the rest in kw."""
    job = f" (job {result.job_id})" if result is not None and result.job_id else ""
    return Evaluation(
        row=row,
        verdict=INFRA,
        message=f"{row.id}: INFRA {cause}{job}: {message}",
        source=source,
        result=result,
        cause=cause,
        **kw,
    )


def names_requeues(judge: Callable[..., Evaluation]) -> Callable[..., Evaluation]:
    """Make a verdict's message say when its job was requeued, and why (node failure,
    preemption): the measured attempt is not the first one the job started."""

    @functools.wraps(judge)
    def judged(*args: Any, **kwargs: Any) -> Evaluation:
        ev = judge(*args, **kwargs)
        r = ev.result
        if r is None or not r.requeues:
            return ev
        why = ", ".join(r.requeues)
        return replace(ev, message=f"{ev.message} [attempt {r.attempts}, requeued after {why}]")

    return judged


@names_requeues
def evaluate(
    row: Row,
    result: RunResult,
    *,
    source: str,
    window: stats.Window = "auto",
    tolerance: float | None = None,
    convention: str | None = None,
    noise: stats.Noise = stats.DEFAULT_NOISE,
    history: Sequence[trend.Point] = (),
) -> Evaluation:
    """Judge one row from its RunResult: INFRA, NO_BASELINE or the comparison's verdict.

    A run faster than the GPU can be (MFU > 1 under every convention) is INFRA IMPOSSIBLE.

    Every run of the job counts (--repeat K: K runs); history holds the row's earlier runs
    (perfgate.history): its noise and a persistent step the baseline missed (verdicts.nightly).
    """
    notes = tuple(result.notes)  # e.g. after a requeue: only the last attempt was measured
    tol = tolerance_of(row, tolerance)
    common = {"tolerance": tol, "convention": convention_of(row, convention), "notes": notes}
    if not result.ok:
        d: Diagnosis = result.diagnosis  # type: ignore[assignment]
        return infra(row, source, result, d.cause, d.message, **common)
    run = result.runs[-1] if result.runs else None
    series = run.series if run is not None else None
    if series is None or not series.steps:
        return infra(row, source, result, "TOO_FEW_STEPS", "no step times were recorded", **common)
    if not series.valid:
        return infra(
            row, source, result, series.cause, str(series.invalid_reason), series=series, **common
        )
    measured, why = measure(row, series, window)
    if measured is None:
        return infra(
            row,
            source,
            result,
            "TOO_FEW_STEPS",
            f"no steady state ({why})",
            series=series,
            **common,
        )
    every = [r.series for r in result.runs if r.series is not None and r.series.valid]
    every = [x for x in every if x.steps]
    fastest = measured.step_time_s
    if len(every) > 1:  # --repeat K: the row's numbers pool its steady runs
        summaries = [
            stats.summarize_run(x.step_times, window, min_rel_se=x.min_rel_se) for x in every
        ]
        steady = [x for x in summaries if x.steady]
        measured = pooled_measured(row, steady, result.runs)
        fastest = min(x.median_s for x in steady)
    why_not = physical.impossible(row, fastest)
    if why_not is not None:  # not a measurement of this row: judging it would mislead
        return infra(
            row, source, result, physical.CAUSE, why_not, measured=measured, series=series, **common
        )
    base = row.baseline
    if base is None:
        return Evaluation(
            row=row,
            verdict=NO_BASELINE,
            message=(
                f"{row.id}: NO_BASELINE: measured step time {measured.step_time_s:.4g} s"
                " (no stored baseline to compare with)"
            ),
            source=source,
            measured=measured,
            result=result,
            series=series,
            **common,
        )
    # A run whose times carry an SE floor (whole-second stamps) is judged by its summary.
    runs = [
        stats.summarize_run(x.step_times, window, min_rel_se=x.min_rel_se)
        if x.min_rel_se
        else x.step_times
        for x in every
    ]
    judged = nightly.judge(row, base, runs, tol, window, noise, history)
    comp = judged.comparison
    ref = (judged.history or {}).get("reference")
    message = verdict_line(row, comp, measured, base, judged.verdict, judged.mode, ref)
    if judged.note:
        message += f"; {judged.note}"
    return Evaluation(
        row=row,
        verdict=judged.verdict,
        message=message,
        source=source,
        mode=judged.mode,
        measured=measured,
        comparison=comp,
        result=result,
        series=series,
        history=judged.history,
        trend=judged.trend,
        **common,
    )


def pooled(summaries: Sequence[RunSummary]) -> dict[str, Any]:
    """A side's steady step time over its runs: geometric mean, spread (SD, s), n_runs."""
    logs = [math.log(s.median_s) for s in summaries]
    gm = math.exp(math.fsum(logs) / len(logs))
    spread = None
    if len(logs) >= 2:
        m = math.fsum(logs) / len(logs)
        spread = gm * math.sqrt(math.fsum((x - m) ** 2 for x in logs) / (len(logs) - 1))
    return {"step_time_s": gm, "spread_s": spread, "n_runs": len(logs)}


def pooled_measured(
    row: Row, summaries: Sequence[RunSummary], runs: Sequence[RunRecord]
) -> Measured:
    """The candidate's numbers for the row: pooled step time, its SE across runs, throughput."""
    p = pooled(summaries)
    k = p["n_runs"]
    # Between runs (launch-to-launch noise included) when there are several, else within one.
    se = p["spread_s"] / math.sqrt(k) if p["spread_s"] is not None else summaries[0].se_s
    tokens, tflops, mfu, peak = throughput(row, p["step_time_s"])
    memory = [m for r in runs if r.series and (m := r.series.peak_memory_gib)]
    return Measured(
        step_time_s=p["step_time_s"],
        se_s=se,
        cv=math.fsum(s.cv for s in summaries) / k,
        n_steps=sum(s.n_steps for s in summaries),
        n_steady=sum(s.n_steady for s in summaries),
        window=(min(s.window_start for s in summaries), max(s.window_end for s in summaries)),
        window_method=f"{summaries[0].window_method} per run",
        spike_fraction=math.fsum(s.spike_fraction for s in summaries) / k,
        tokens_per_s_per_gpu=tokens,
        tflops_per_gpu=tflops,
        mfu=mfu,
        peak_tflops=peak,
        peak_memory_gib=max(memory) if memory else None,
    )


def verdict_line(
    row: Row,
    comp: stats.Comparison,
    measured: Measured,
    base: Baseline,
    verdict: str | None = None,
    mode: str | None = None,
    reference: dict[str, Any] | None = None,
) -> str:
    """One line: row, metric, measured vs baseline, delta (with its interval), tolerance.

    reference: the level judged against when it is not the stored baseline alone (a
    confirming session pools the baseline with the history since it: verdicts.nightly)."""
    verdict = verdict or comp.verdict
    ci = ""
    if math.isfinite(comp.ci_low) and math.isfinite(comp.ci_high):
        ci = f" [{comp.ci_low:+.1%}, {comp.ci_high:+.1%}]"
    refresh = ""
    if verdict == IMPROVEMENT:
        refresh = "; baseline refresh advised (--update-baselines)"
    return (
        f"{row.id}: {verdict}: step time {measured.step_time_s:.4g} s"
        + (
            f" vs baseline {base.step_time_s:.4g} s"
            if reference is None
            else f" vs its level {reference['step_time_s']:.4g} s ({reference['what']}; "
            f"baseline {base.step_time_s:.4g} s)"
        )
        + f", delta {comp.delta:+.2%}{ci},"
        f" tolerance {comp.tolerance:.1%} ({mode_label(mode or comp.mode, comp.n_candidate)})"
        f"{refresh}"
    )


def mode_label(mode: str, runs: int = 1) -> str:
    """How a verdict was reached, in words (runs: the candidate runs it was judged on)."""
    return {
        "stored": f"{'one run' if runs <= 1 else f'{runs} runs'} vs stored baseline",
        "runs": "runs vs runs",
        "paired": "A/B pairs in one allocation",
        "history": "persistent step in the row's history",
    }.get(mode, mode)


def infra_text(ev: Evaluation) -> str:
    """The error of a failed job: the one-line cause, then the redacted log tail, with every
    control character of the log shown as an escape (it is printed on a terminal)."""
    lines = [ev.message]
    res = ev.result
    if res is not None and res.diagnosis is not None:
        d = res.diagnosis
        if d.evidence:
            lines.append(f"evidence: {redact(d.evidence)}")
        if res.log_paths:
            lines.append(f"logs: {', '.join(res.log_paths[-3:])}")
        if d.log_tail:
            lines += ["--- log tail ---", redact(d.log_tail)]
    return for_terminal("\n".join(lines))
