"""One probe of a bisection: the A/B gate of one image against the good end, for every row.

A probe is the gate's own job, without pytest: for each row one allocation running the good
end (A) and the probed image (B) in counterbalanced pairs, adding pairs while the verdict
could still change (verdicts.pairs_rule.PairsRule), judged by verdicts.paired.evaluate_ab.
A row still INCONCLUSIVE when its job could add no more pairs gets an extension job (more
pairs of the same two images, on whatever nodes it gets) until the probe's pair cap; the
pairs of all its jobs are judged together, with the per-look alpha of the whole 3..cap loop.
Each job's folder, LaunchSession state file and all, lives in the probe's folder, so a
resumed bisection re-attaches to a job still running instead of submitting it again.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from perfgate import stats, verdicts
from perfgate.catalog import Row
from perfgate.launch import LaunchSession, planning
from perfgate.launch.digests import ImageDigests
from perfgate.launch.types import LaunchOptions
from perfgate.runs import RunResult
from perfgate.suite.display import SparseLines
from perfgate.verdicts.paired import evaluate_ab
from perfgate.verdicts.pairs_rule import PairsRule, split_pairs

Say = Callable[[str], None]
WAIT_TICK_S = 0.2  # how often a waiting probe looks at its jobs (a stat, no Slurm call)


@dataclass(frozen=True)
class ProbeConfig:
    """What every probe of a bisection shares: rows, launch options and the gate's rule."""

    rows: tuple[Row, ...]
    options: LaunchOptions
    pairs: int = 3  # pairs a probe's job starts with
    max_pairs: int = 8  # pairs one job may grow to
    cap: int = 16  # pairs a probe may grow to over its extension jobs
    tolerance: float | None = None
    window: stats.Window = "auto"
    noise: stats.Noise = stats.DEFAULT_NOISE

    def job_options(
        self, good: str, image: str, folder: Path, pairs: int, top: int
    ) -> LaunchOptions:
        """The LaunchOptions of one probe job: A = the good end, B = the probed image."""
        return replace(
            self.options,
            container_image=good,
            candidate_image=image,
            pairs=pairs,
            max_pairs=top,
            repeat=1,
            results_dir=str(folder),
        )

    def rule(self, row: Row) -> PairsRule:
        """The job's rule for adding a pair: the row's tolerance, alpha over 3..cap looks."""
        tol = verdicts.tolerance_of(row, self.tolerance)
        return PairsRule(tol, self.window, self.pairs, self.cap, self.noise)

    def gpu_hours(self, good: str, image: str, folder: Path) -> float:
        """The most one probe can cost (time-limit bound): its jobs, extensions included."""
        opts = self.job_options(good, image, folder, self.pairs, self.max_pairs)
        first = sum(planning.plan(r, opts, job_dir=folder / "plan").gpu_hours for r in self.rows)
        return first * self.cap / self.max_pairs


class Interrupted(Exception):
    """Ctrl-C or SIGTERM stopped a probe; its jobs were cancelled ("row (job J, STATE)" each).
    code: the exit status the command ends with (130 for Ctrl-C, 143 for SIGTERM)."""

    def __init__(self, cancelled: list[str], code: int = 130, how: str = "Ctrl-C") -> None:
        super().__init__("interrupted")
        self.cancelled, self.code, self.how = cancelled, code, how


def _wait(session: LaunchSession, say: Say) -> None:
    """Block until every job of the session is over, with a line when a job's state changes."""
    lines = SparseLines()
    while not all(session.entries[k].done for k in session.order):
        for line in lines.lines(session.poll()):
            say(line)
        time.sleep(WAIT_TICK_S)
    for line in lines.lines(session.poll()):
        say(line)


def run_jobs(
    cfg: ProbeConfig, opts: LaunchOptions, rows: Sequence[Row], adaptive: bool, say: Say
) -> dict[str, RunResult]:
    """Submit one job per row (re-attaching to a saved one), wait, return each row's result.

    Ctrl-C or SIGTERM cancels these jobs (the session's handler) and raises Interrupted
    naming them (the bisection records the probe as cancelled, then exits 130 or 143).
    """
    session = LaunchSession(
        opts,
        opts.results_dir,
        resume=True,  # a fresh folder has no state file: resuming is then submitting
        more_pairs_for=cfg.rule if adaptive else None,
    )
    session.install_signal_handlers()
    try:
        session.submit_all(rows)
        _wait(session, say)
        return {r.id: session.result(r.id) for r in rows}
    except (KeyboardInterrupt, SystemExit) as stop:
        session.cancel_all()  # the signal handler did; a job is never cancelled twice
        gone = [f"{r} (job {j}, {st})" for r, j, st in session.cancelled]
        if isinstance(stop, KeyboardInterrupt):
            raise Interrupted(gone) from None
        code = stop.code if isinstance(stop.code, int) else 1
        raise Interrupted(gone, code, "SIGTERM" if code == 128 + 15 else "exit") from None
    finally:
        session.close()


def _paired_runs(result: RunResult) -> tuple:
    """The result's runs that belong to complete pairs, in launch order."""
    base, cand = split_pairs(result.runs)
    keep = {id(r) for r in (*base, *cand)}
    return tuple(r for r in result.runs if id(r) in keep)


def merged(first: RunResult, more: RunResult) -> RunResult:
    """One result holding the complete pairs of both jobs (pair i stays within one job)."""
    return replace(
        first,
        runs=_paired_runs(first) + _paired_runs(more),
        nodes=tuple(dict.fromkeys((*first.nodes, *more.nodes))),
        notes=(*first.notes, *more.notes, f"pairs of job {more.job_id} added (probe extension)"),
        diagnosis=first.diagnosis or more.diagnosis,
    )


def _judge(cfg: ProbeConfig, row: Row, result: RunResult) -> verdicts.Evaluation:
    return evaluate_ab(
        row,
        result,
        source="bisect",
        first_pairs=cfg.pairs,
        max_pairs=cfg.cap,
        window=cfg.window,
        tolerance=cfg.tolerance,
        noise=cfg.noise,
    )


def evidence(ev: verdicts.Evaluation, jobs: list[dict[str, Any]]) -> dict[str, Any]:
    """What the bisection keeps of one row's verdict (JSON-ready): the A/B record's parts."""
    c = ev.comparison
    comparison = None
    if c is not None:
        comparison = {
            k: getattr(c, k)
            for k in ("delta", "ci_low", "ci_high", "ci_level", "resolution", "detectable")
        }
        comparison.update(tolerance=c.tolerance, alpha=c.alpha, reason=c.reason)
    diag = ev.result.diagnosis if ev.result is not None else None
    return stats.json_ready(
        {
            "verdict": ev.verdict,
            "message": ev.message,
            "comparison": comparison,
            "ab": ev.ab,
            "jobs": jobs,
            "diagnosis": {"cause": diag.cause, "message": diag.message} if diag else None,
        }
    )


def _job_entry(result: RunResult) -> dict[str, Any]:
    return {"job_id": result.job_id, "job_dir": result.job_dir, "nodes": list(result.nodes)}


def run_probe(
    cfg: ProbeConfig, good: str, image: str, folder: Path, say: Say, digests: ImageDigests
) -> dict[str, dict[str, Any]]:
    """Probe `image` against `good` for every row; {row id: evidence}."""
    opts = cfg.job_options(good, image, folder / "job", cfg.pairs, cfg.max_pairs)
    results = {k: digests.fill(r) for k, r in run_jobs(cfg, opts, cfg.rows, True, say).items()}
    jobs = {rid: [_job_entry(r)] for rid, r in results.items()}
    judged = {row.id: _judge(cfg, row, results[row.id]) for row in cfg.rows}
    extension = 0
    while True:
        short = [
            row
            for row in cfg.rows
            if judged[row.id].verdict == "INCONCLUSIVE"
            and results[row.id].ok
            and (judged[row.id].ab or {}).get("pairs_run", cfg.cap) < cfg.cap
        ]
        if not short:
            break
        extension += 1
        done = min((judged[r.id].ab or {}).get("pairs_run", 0) for r in short)
        more = min(cfg.max_pairs, cfg.cap - done)
        say(
            f"perfgate bisect: {', '.join(r.id for r in short)} INCONCLUSIVE after {done} "
            f"pair(s): {more} more pair(s) in extension job {extension} (up to {cfg.cap})"
        )
        ext = cfg.job_options(good, image, folder / f"extension-{extension}", more, more)
        for rid, r in run_jobs(cfg, ext, short, False, say).items():
            r = digests.fill(r)
            jobs[rid].append(_job_entry(r))
            results[rid] = merged(results[rid], r)
            row = next(x for x in cfg.rows if x.id == rid)
            judged[rid] = _judge(cfg, row, results[rid])
    return {rid: evidence(ev, jobs[rid]) for rid, ev in judged.items()}
