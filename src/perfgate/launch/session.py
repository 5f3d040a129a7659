"""A pytest session's jobs: submit every row at once, wait per row, cancel all, resume.

Rows are submitted when the session starts, at most max_concurrent_jobs at a time (the rest
go as slots free); result(row_id) waits for that row's job only. Waits have deadlines: a job
still pending after queue_timeout_min is cancelled (QUEUE_TIMEOUT), and a running job with
no final state grace_min after its time limit is given up (UNKNOWN). A state file in the
results folder maps rows (and test ids) to job ids, so a new session with resume=True
re-attaches to jobs still queued or running (or finished with a result) instead of
submitting them again. SIGINT/SIGTERM cancel every job the session submitted.
One row's job and how its result is made: perfgate.launch.entry; how a job is submitted,
read and cancelled: its executor (perfgate.launch.executors).
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any

from perfgate.catalog import Row
from perfgate.errors import ConfigError, PerfgateError
from perfgate.launch import entry, planning, requeues, statefile
from perfgate.launch.collect import progress
from perfgate.launch.entry import Entry
from perfgate.launch.envs import export_env
from perfgate.launch.executors import Refused, executor_for
from perfgate.launch.job import run_job
from perfgate.launch.types import JobPlan, LaunchOptions
from perfgate.runs import JobStatus, RunResult

STATE_FILE = statefile.STATE_FILE
LOST_AFTER_S = 120  # a submitted job Slurm has no record of for this long is given up
RESULT_GRACE_S = 10  # COMPLETED but no result pickle yet: shared filesystems lag
SUBMIT_THREADS = 8  # concurrent sbatch calls when many rows are submitted at once
RESULT_CHECK_S = 0.2  # how often a waiting result() looks for the result file (a stat)
MorePairs = Callable[[Sequence[Any]], bool | str]  # A/B: JobContext.more_pairs


class LaunchSession:
    """Submits rows as Slurm (or local) jobs and hands each test its RunResult."""

    def __init__(
        self,
        options: LaunchOptions,
        results_dir: str | os.PathLike[str] | None = None,
        resume: bool = False,
        more_pairs: MorePairs | None = None,
        more_pairs_for: Callable[[Row], MorePairs | None] | None = None,
    ) -> None:
        self.options = options
        self.results_dir = Path(results_dir or options.results_dir).resolve()
        self.resume = resume
        self.more_pairs = more_pairs
        # Per row (A/B: the rule depends on the row's tolerance); wins over more_pairs.
        self.more_pairs_for = more_pairs_for
        self.executor = executor_for(options.executor)
        self.entries: dict[str, Entry] = {}  # replaced, never changed, as each job moves
        self.order: list[str] = []
        self._last_poll = 0.0
        # job id -> the first poll the executor had no record of it (cleared when it has)
        self._silent_since: dict[str, float] = {}
        self._old_handlers: dict[int, Any] = {}
        self._cancelling = False
        self._cancelled_ids: set[str] = set()  # job ids the executor cancelled: never twice
        # (row id, job id, its state then) of every job cancel_all cancelled, in order
        self.cancelled: list[tuple[str, str, str]] = []
        self.state_path = self.results_dir / STATE_FILE
        self._partition: list[str] | None = None  # the partition's usable nodes (sinfo)
        self._partition_asked = False
        self._saved = self._load_state() if resume else {}

    # --- planning and submission -----------------------------------------------------------

    def plan(self, row: Row) -> JobPlan:
        """The plan a row would be submitted with (a fresh job folder)."""
        return planning.plan(row, self.options, more_pairs=self._more_pairs(row))

    def _more_pairs(self, row: Row) -> MorePairs | None:
        return self.more_pairs_for(row) if self.more_pairs_for else self.more_pairs

    def submit_all(self, rows: Iterable[Row], test_ids: Mapping[str, str] | None = None) -> None:
        """Plan every row (errors surface now, before anything runs), then submit what fits."""
        self.executor.require()
        export_env(self.options.env)
        for row in rows:
            if row.id in self.entries:
                raise ConfigError(f"row {row.id} is selected twice")
            saved = self._saved.get(row.id, {})
            job_dir = saved.get("job_dir") if saved.get("job_id") else None
            jdir = Path(job_dir) if job_dir else planning.new_job_dir(self.results_dir, row.id)
            more = self._more_pairs(row)
            p = planning.plan(row, self.options, job_dir=jdir, more_pairs=more)
            ctx = planning.context(row, self.options, jdir, more)
            self.entries[row.id] = Entry(row, p, ctx, test_id=(test_ids or {}).get(row.id))
            self.order.append(row.id)
            if saved.get("job_id"):
                self.entries[row.id] = self._reattach(self.entries[row.id], saved)
        self._save_state()
        self.pump(force=True)

    def _reattach(self, e: Entry, saved: dict[str, Any]) -> Entry:
        """Take over a job an earlier session submitted when it is still ours and alive."""
        if not self.executor.resumable or saved.get("cancelled"):
            return e
        job_id = str(saved["job_id"])
        info = self.executor.states([job_id]).get(job_id)
        name = f"{self.options.job_name_prefix}-{e.row.id}"
        if info is None or (info.name and info.name != name):
            return e  # job ids restart on a new cluster: a different job now has this id
        if info.active or (info.state == "COMPLETED" and entry.pickle_path(e, job_id).exists()):
            return e.reattached(job_id, info, saved.get("submitted_at", time.time()))
        return e

    def submit_confirmation(self, row: Row, n: int, exclude: Sequence[str]) -> str:
        """Plan and queue the n-th confirmation run of a row, kept off `exclude`; returns its
        key (`<row>~confirm-<n>`), which result() waits for. Queued like any job: it is
        submitted as soon as the concurrency cap allows (this call or the next pump)."""
        key = f"{row.id}~confirm-{n}"
        if key in self.entries:
            return key
        opts = planning.confirmation_options(self.options, exclude)
        saved = self._saved.get(key, {})
        job_dir = saved.get("job_dir") if saved.get("job_id") else None
        # inside the first job's folder: a replay of the results folder reads it as that
        # run's confirmation (perfgate.suite.replay_layout: confirm-<n>/)
        first = self.entries.get(row.id)
        home = Path(first.plan.job_dir) if first is not None else None
        tag = f"confirm-{n}"
        if job_dir:
            jdir = Path(job_dir)
        elif home is not None:
            jdir = home / tag
        else:
            jdir = planning.new_job_dir(self.results_dir, row.id, tag)
        e = Entry(
            row,
            planning.plan(row, opts, job_dir=jdir),
            planning.context(row, opts, jdir),
            test_id=self.entries[row.id].test_id if row.id in self.entries else None,
            key=key,
            options=opts,
        )
        self.entries[key] = self._reattach(e, saved) if saved.get("job_id") else e
        self.order.append(key)
        self._save_state()
        self.pump(force=True)
        return key

    def partition_nodes(self) -> list[str] | None:
        """The usable nodes of the session's partition (asked once; None: unknown)."""
        if not self._partition_asked:
            self._partition_asked = True
            self._partition = self.executor.partition_nodes(self.options.partition)
        return self._partition

    def nodes_of(self, key: str) -> list[str]:
        """The nodes a finished job ran on: what the job recorded, else the scheduler's word."""
        e = self.entries[key]
        recorded = list(e.result.nodes) if e.result is not None else []
        if recorded or not e.job_id:
            return recorded
        return self.executor.nodes(e.job_id)

    def _slots(self) -> int:
        cap = self.options.max_concurrent_jobs
        live = sum(1 for e in self.entries.values() if e.job_id and not e.done)
        return (cap - live) if cap else len(self.entries)

    def _submit_many(self, entries: list[Entry]) -> None:
        """Submit several rows at once: sbatch takes ~0.1 s a call, one after the other 12
        rows cost more than a second of the sweep (bench-launch-sweep)."""
        if len(entries) == 1 or not self.executor.parallel_submit:
            for e in entries:
                self._submit(e)
            return
        with ThreadPoolExecutor(max_workers=min(SUBMIT_THREADS, len(entries))) as pool:
            list(pool.map(self._submit, entries))

    def _submit(self, e: Entry) -> None:
        """Submit e's job; its entry gets the job id, or its NOT_SUBMITTED result (one refusal
        never stops the other rows). Recorded at once: a signal's cancel_all must see it."""
        try:
            job_id = self.executor.submit(run_job, e.ctx, e.options or self.options)
        except Refused as err:
            self.entries[e.id] = e.ended(entry.not_submitted(e, err.line))
            return
        self.entries[e.id] = e.submitted(job_id)

    # --- state ---------------------------------------------------------------------------------

    def pump(self, force: bool = False) -> None:
        """Refresh states (at most once per poll interval), finish jobs, fill free slots."""
        now = time.monotonic()
        polled = force or now - self._last_poll >= self.options.poll_interval_s
        if polled:
            self._last_poll = now
            self._refresh()
        changed = False
        waiting = [e for e in (self.entries[rid] for rid in self.order) if e.job_id is None]
        todo = [e for e in waiting if e.result is None][: max(self._slots(), 0)]
        if todo and not self._cancelling:
            self._submit_many(todo)
            changed = True
        for rid in self.order:
            e = self.entries[rid]
            if e.job_id and not e.done:
                if polled:
                    e = self._track_requeues(e)
                e = self._check(e)
                if e.done:
                    e = self._track_requeues(e)
                    assert e.result is not None
                    e = e.ended(requeues.name_in_result(e.result, e.requeues))
                    changed = True
                self.entries[rid] = e
        if changed:
            self._save_state()

    def _refresh(self) -> None:
        live = [e for e in self.entries.values() if e.job_id and not e.done]
        infos = self.executor.states(e.job_id for e in live)
        now = time.monotonic()
        for e in live:
            info = infos.get(e.job_id)
            if info is None:
                self._silent_since.setdefault(e.job_id, now)
                continue
            self._silent_since.pop(e.job_id, None)
            self.entries[e.id] = e.seen(info, now)

    def _track_requeues(self, e: Entry) -> Entry:
        causes = requeues.track(e.requeues, e.plan.job_dir, e.job_id, self.executor.attempts)
        return replace(e, requeues=causes)

    def _check(self, e: Entry) -> Entry:
        """e finished (with its result) when its job is over or past a deadline, else e."""
        pickle = entry.pickle_path(e)
        info = e.info
        if pickle.exists():
            return self._finish_from_pickle(e, pickle)
        if info is not None and info.terminal:
            if info.state == "COMPLETED":
                deadline = time.monotonic() + RESULT_GRACE_S
                while not pickle.exists() and time.monotonic() < deadline:
                    time.sleep(0.5)
                if pickle.exists():
                    return self._finish_from_pickle(e, pickle)
            return e.ended(entry.collect(e, info.state))
        now = time.monotonic()
        opts = self.options
        silent = self._silent_since.get(e.job_id)
        if silent and now - silent > max(LOST_AFTER_S, 3 * opts.poll_interval_s):
            return self._give_up(e, "UNKNOWN", f"Slurm has no record of job {e.job_id}")
        # PENDING is always in the PENDING phase: since is when the job last queued
        if info and info.state == "PENDING" and now - e.since > opts.queue_timeout_min * 60:
            self._cancel([e.job_id])
            return self._give_up(
                e,
                "QUEUE_TIMEOUT",
                f"job {e.job_id} still pending after {opts.queue_timeout_min:g} min "
                f"(reason: {info.reason or 'none given'}); cancelled",
            )
        limit_s = (e.ctx.time_limit_min + opts.grace_min) * 60
        if e.phase == "RUNNING" and now - e.since > limit_s:
            self._cancel([e.job_id])
            return self._give_up(
                e,
                "UNKNOWN",
                f"job {e.job_id} shows no final state {opts.grace_min:g} min after its "
                f"{e.ctx.time_limit_min} min time limit; cancelled",
            )
        return e

    def _finish_from_pickle(self, e: Entry, pickle: Path) -> Entry:
        state, info = self.executor.final_state(e.job_id)
        e = replace(e, info=info if info is not None else e.info)
        return e.ended(entry.from_pickle(e, pickle, state))

    def _give_up(self, e: Entry, cause: str, message: str) -> Entry:
        return e.ended(entry.given_up(e, cause, message))

    # --- the API the plugin drives ------------------------------------------------------------

    def result(self, row_id: str, timeout_s: float | None = None) -> RunResult:
        """Block until this row's job is over and return its result (other jobs keep going)."""
        if row_id not in self.entries:
            raise ConfigError(f"row {row_id} was not submitted in this session")
        start = time.monotonic()
        while not self.entries[row_id].done:
            self.pump()
            if self.entries[row_id].done:
                break
            if timeout_s is not None and time.monotonic() - start > timeout_s:
                raise PerfgateError(
                    f"row {row_id}: no result after {timeout_s:g} s "
                    f"(job {self.entries[row_id].job_id})"
                )
            time.sleep(min(RESULT_CHECK_S, self.options.poll_interval_s))
        self._save_state()
        result = self.entries[row_id].result
        assert result is not None
        return result

    def wait_all(self) -> dict[str, RunResult]:
        """Every row's result, in submission order."""
        return {rid: self.result(rid) for rid in self.order}

    def poll(self) -> list[JobStatus]:
        """Where every row stands, for the terminal: state, pending reason, step, time left."""
        self.pump()
        out = []
        for rid in self.order:
            e = self.entries[rid]
            if e.done:
                r = e.result
                state = r.state if r.diagnosis is None else f"{r.state} ({r.diagnosis.cause})"
                out.append(JobStatus(rid, e.job_id, state, done=True))
                continue
            if e.job_id is None:
                out.append(JobStatus(rid, None, "WAITING", reason="max concurrent jobs"))
                continue
            info = e.info
            step, total, run = self._progress(e)
            out.append(
                JobStatus(
                    rid,
                    e.job_id,
                    info.state if info else "SUBMITTED",
                    reason=info.reason if info else None,
                    step=step,
                    total_steps=total,
                    run=run,
                    time_left_s=info.time_left_s if info else None,
                    attempt=len(e.requeues) + 1,
                    requeues=requeues.named(e.requeues),
                )
            )
        return out

    def _progress(self, e: Entry) -> tuple[int | None, int | None, str | None]:
        return progress(
            e.plan.job_dir, e.ctx.steps, len(e.ctx.launches) > 1, attempt=len(e.requeues)
        )

    def cancel_all(self) -> list[str]:
        """Cancel every job this session submitted, not finished and not cancelled yet; rows
        not yet submitted are not submitted. Returns the job ids cancelled by this call."""
        self._cancelling = True
        live = [
            e
            for e in (self.entries[rid] for rid in self.order)
            if e.job_id and not e.done and e.job_id not in self._cancelled_ids
        ]
        ids = [e.job_id for e in live if e.job_id]
        self._cancel(ids)
        for e in live:
            self.cancelled.append((e.id, e.job_id or "", e.info.state if e.info else "SUBMITTED"))
        for rid, e in list(self.entries.items()):
            if e.job_id is None and e.result is None:
                self.entries[rid] = e.ended(entry.never_submitted(e))
        self._save_state(cancelled=self._cancelled_ids)
        return ids

    def _cancel(self, ids: Sequence[str | None]) -> None:
        """One executor call for the ids not cancelled before (a job is cancelled at most once)."""
        new = [i for i in ids if i and i not in self._cancelled_ids]
        if new:
            self._cancelled_ids.update(new)
            self.executor.cancel(new)

    def install_signal_handlers(self) -> None:
        """Ctrl-C / SIGTERM cancel the session's jobs, then interrupt as usual."""
        for sig in (signal.SIGINT, signal.SIGTERM):
            self._old_handlers[sig] = signal.signal(sig, self._on_signal)

    def _on_signal(self, signum: int, frame: Any) -> None:
        self.restore_signal_handlers()
        self.cancel_all()
        if signum == signal.SIGINT:
            raise KeyboardInterrupt
        raise SystemExit(128 + signum)

    def restore_signal_handlers(self) -> None:
        """Put back the handlers install_signal_handlers replaced."""
        for sig, old in self._old_handlers.items():
            signal.signal(sig, old)
        self._old_handlers.clear()

    # --- the state file ---------------------------------------------------------------------------

    def _load_state(self) -> dict[str, dict[str, Any]]:
        return statefile.load(self.state_path)

    def _save_state(self, cancelled: Iterable[str] = ()) -> None:
        self._saved = statefile.save(
            self.state_path,
            [
                statefile.record(e, self.options.job_name_prefix, self._saved, set(cancelled))
                for e in (self.entries[rid] for rid in self.order)
            ],
            self.options.executor,
        )

    def close(self) -> None:
        """Restore signal handlers and write the final state."""
        self.restore_signal_handlers()
        if self.entries:
            self._save_state()
