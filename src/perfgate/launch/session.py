"""A pytest session's jobs: submit every row at once, wait per row, cancel all, resume.

Rows are submitted when the session starts, at most max_concurrent_jobs at a time (the rest
go as slots free); result(row_id) waits for that row's job only. Waits have deadlines: a job
still pending after queue_timeout_min is cancelled (QUEUE_TIMEOUT), and a running job with
no final state grace_min after its time limit is given up (UNKNOWN). A state file in the
results folder maps rows (and test ids) to job ids, so a new session with resume=True
re-attaches to jobs still queued or running (or finished with a result) instead of
submitting them again. SIGINT/SIGTERM cancel every job the session submitted.
One row's job and how its result is made: perfgate.launch.entry; sbatch: perfgate.launch.submit.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from perfgate.catalog import Row
from perfgate.errors import ConfigError, PerfgateError
from perfgate.launch import entry, planning, requeues, statefile
from perfgate.launch.collect import progress
from perfgate.launch.entry import Entry
from perfgate.launch.envs import export_secrets
from perfgate.launch.slurmstate import JobInfo, SlurmStates
from perfgate.launch.submit import require_slurm, submit
from perfgate.launch.types import JobPlan, LaunchOptions
from perfgate.runs import JobStatus, RunResult

STATE_FILE = statefile.STATE_FILE
LOST_AFTER_S = 120  # a submitted job Slurm has no record of for this long is given up
RESULT_GRACE_S = 10  # COMPLETED but no result pickle yet: shared filesystems lag
FINAL_STATE_WAIT_S = 30  # result pickle written, job still COMPLETING (KillWait, epilog)
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
        self.states = SlurmStates()
        self.entries: dict[str, Entry] = {}
        self.order: list[str] = []
        self._last_poll = 0.0
        self._old_handlers: dict[int, Any] = {}
        self._cancelling = False
        self._scancelled: set[str] = set()  # job ids scancel was run for: never twice
        # (row id, job id, its state then) of every job cancel_all cancelled, in order
        self.cancelled: list[tuple[str, str, str]] = []
        self.state_path = self.results_dir / STATE_FILE
        self._saved = self._load_state() if resume else {}

    # --- planning and submission -----------------------------------------------------------

    def plan(self, row: Row) -> JobPlan:
        """The plan a row would be submitted with (a fresh job folder)."""
        return planning.plan(row, self.options, more_pairs=self._more_pairs(row))

    def _more_pairs(self, row: Row) -> MorePairs | None:
        return self.more_pairs_for(row) if self.more_pairs_for else self.more_pairs

    def submit_all(self, rows: Iterable[Row], test_ids: Mapping[str, str] | None = None) -> None:
        """Plan every row (errors surface now, before anything runs), then submit what fits."""
        if self.options.executor == "slurm":
            require_slurm()
        export_secrets(self.options.env)
        for row in rows:
            if row.id in self.entries:
                raise ConfigError(f"row {row.id} is selected twice")
            saved = self._saved.get(row.id, {})
            job_dir = saved.get("job_dir") if saved.get("job_id") else None
            jdir = Path(job_dir) if job_dir else planning.new_job_dir(self.results_dir, row.id)
            more = self._more_pairs(row)
            p = planning.plan(row, self.options, job_dir=jdir, more_pairs=more)
            ctx = planning.context(row, self.options, jdir, more)
            e = Entry(row, p, ctx, test_id=(test_ids or {}).get(row.id))
            self.entries[row.id] = e
            self.order.append(row.id)
            if saved.get("job_id"):
                self._reattach(e, saved)
        self._save_state()
        self.pump(force=True)

    def _reattach(self, e: Entry, saved: dict[str, Any]) -> None:
        """Take over a job an earlier session submitted when it is still ours and alive."""
        if self.options.executor != "slurm" or saved.get("cancelled"):
            return
        job_id = str(saved["job_id"])
        info = self.states.query([job_id]).get(job_id)
        name = f"{self.options.job_name_prefix}-{e.row.id}"
        if info is None or (info.name and info.name != name):
            return  # job ids restart on a new cluster: a different job now has this id
        if info.active or (info.state == "COMPLETED" and entry.pickle_path(e, job_id).exists()):
            e.job_id = job_id
            e.submitted_at = saved.get("submitted_at", time.time())
            e.resumed = True
            e.info = info
            now = time.monotonic()
            if info.state == "RUNNING":
                e.running_since = now - (info.elapsed_s or 0.0)
            else:
                e.pending_since = now

    def _slots(self) -> int:
        cap = self.options.max_concurrent_jobs
        live = sum(1 for e in self.entries.values() if e.job_id and not e.done)
        return (cap - live) if cap else len(self.entries)

    def _submit_many(self, entries: list[Entry]) -> None:
        """Submit several rows at once: sbatch takes ~0.1 s a call, one after the other 12
        rows cost more than a second of the sweep (bench-launch-sweep)."""
        if len(entries) == 1 or self.options.executor != "slurm":
            for e in entries:
                self._submit(e)
            return
        with ThreadPoolExecutor(max_workers=min(SUBMIT_THREADS, len(entries))) as pool:
            list(pool.map(self._submit, entries))

    def _submit(self, e: Entry) -> None:
        submit(e, self.options)

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
                    self._track_requeues(e)
                if self._check(e):
                    self._track_requeues(e)
                    assert e.result is not None
                    e.result = requeues.name_in_result(e.result, e.requeues)
                    changed = True
        if changed:
            self._save_state()

    def _refresh(self) -> None:
        live = [e for e in self.entries.values() if e.job_id and not e.done]
        if self.options.executor == "slurm":
            infos = self.states.query(e.job_id for e in live)
        else:
            infos = {}
            for e in live:
                st = e.local_job.state if e.local_job is not None else "UNKNOWN"
                state = {"RUNNING": "RUNNING", "FINISHED": "COMPLETED"}.get(st, "FAILED")
                infos[e.job_id] = JobInfo(e.job_id, state, source="local")
        now = time.monotonic()
        for e in live:
            info = infos.get(e.job_id)
            if info is None:
                e.unknown_since = e.unknown_since or now
                continue
            e.unknown_since = None
            was = e.info.state if e.info else None
            if requeues.requeued(was, info.state):
                e.requeues.append(None)  # the attempt that ran has ended: Slurm requeued it
            if info.state == "RUNNING" and (e.info is None or e.info.state != "RUNNING"):
                e.running_since = now
            if info.state in ("PENDING", "REQUEUED") and (
                e.info is None or e.info.state not in ("PENDING", "REQUEUED")
            ):
                e.pending_since = now  # a requeued job queues again: its clock restarts
                e.running_since = None
            e.info = info

    def _track_requeues(self, e: Entry) -> None:
        slurm = self.states if self.options.executor == "slurm" else None
        requeues.track(e.requeues, e.plan.job_dir, e.job_id, slurm)

    def _check(self, e: Entry) -> bool:
        """Finish e when its job is over or past a deadline; True when it finished."""
        pickle = entry.pickle_path(e)
        info = e.info
        if pickle.exists():
            self._finish_from_pickle(e, pickle)
            return True
        if info is not None and info.terminal:
            if info.state == "COMPLETED":
                deadline = time.monotonic() + RESULT_GRACE_S
                while not pickle.exists() and time.monotonic() < deadline:
                    time.sleep(0.5)
                if pickle.exists():
                    self._finish_from_pickle(e, pickle)
                    return True
            self._finish_from_folder(e, info.state)
            return True
        now = time.monotonic()
        opts = self.options
        if e.unknown_since and now - e.unknown_since > max(LOST_AFTER_S, 3 * opts.poll_interval_s):
            self._give_up(e, "UNKNOWN", f"Slurm has no record of job {e.job_id}")
            return True
        pending_s = now - e.pending_since if e.pending_since is not None else 0.0
        if info and info.state == "PENDING" and pending_s > opts.queue_timeout_min * 60:
            self._cancel_ids([e.job_id])
            self._give_up(
                e,
                "QUEUE_TIMEOUT",
                f"job {e.job_id} still pending after {opts.queue_timeout_min:g} min "
                f"(reason: {info.reason or 'none given'}); cancelled",
            )
            return True
        if e.running_since is not None:
            limit_s = (e.ctx.time_limit_min + opts.grace_min) * 60
            if now - e.running_since > limit_s:
                self._cancel_ids([e.job_id])
                self._give_up(
                    e,
                    "UNKNOWN",
                    f"job {e.job_id} shows no final state {opts.grace_min:g} min after its "
                    f"{e.ctx.time_limit_min} min time limit; cancelled",
                )
                return True
        return False

    def _final_state(self, e: Entry) -> str:
        if self.options.executor != "slurm":
            return "LOCAL"
        # The job writes its result before it ends; at a time limit the srun it waits on can
        # die first, so the result says FAILED while Slurm is still recording TIMEOUT.
        deadline = time.monotonic() + FINAL_STATE_WAIT_S
        while True:
            info = self.states.query([e.job_id]).get(e.job_id)
            if info is not None:
                e.info = info
                if info.terminal:
                    return info.state
            if time.monotonic() >= deadline:
                return "COMPLETED"
            time.sleep(0.5)

    def _finish_from_pickle(self, e: Entry, pickle: Path) -> None:
        e.result = entry.from_pickle(e, pickle, self._final_state(e))

    def _finish_from_folder(self, e: Entry, state: str) -> None:
        e.result = entry.collect(e, state)

    def _give_up(self, e: Entry, cause: str, message: str) -> None:
        e.result = entry.given_up(e, cause, message)

    # --- the API the plugin drives ------------------------------------------------------------

    def result(self, row_id: str, timeout_s: float | None = None) -> RunResult:
        """Block until this row's job is over and return its result (other jobs keep going)."""
        if row_id not in self.entries:
            raise ConfigError(f"row {row_id} was not submitted in this session")
        e = self.entries[row_id]
        start = time.monotonic()
        while not e.done:
            self.pump()
            if e.done:
                break
            if timeout_s is not None and time.monotonic() - start > timeout_s:
                raise PerfgateError(
                    f"row {row_id}: no result after {timeout_s:g} s (job {e.job_id})"
                )
            time.sleep(min(RESULT_CHECK_S, self.options.poll_interval_s))
        self._save_state()
        assert e.result is not None
        return e.result

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
        """scancel every job this session submitted, not finished and not cancelled yet; rows
        not yet submitted are not submitted. Returns the job ids cancelled by this call."""
        self._cancelling = True
        live = [
            e
            for e in (self.entries[rid] for rid in self.order)
            if e.job_id and not e.done and e.job_id not in self._scancelled
        ]
        ids = [e.job_id for e in live if e.job_id]
        if self.options.executor == "slurm":
            self._cancel_ids(ids)
        else:
            for e in live:
                if e.local_job is not None:
                    e.local_job.cancel(check=False)
            self._scancelled.update(ids)
        for e in live:
            self.cancelled.append(
                (e.row.id, e.job_id or "", e.info.state if e.info else "SUBMITTED")
            )
        for e in self.entries.values():
            if e.job_id is None and e.result is None:
                e.result = entry.never_submitted(e)
        self._save_state(cancelled=self._scancelled)
        return ids

    def _cancel_ids(self, ids: Sequence[str | None]) -> None:
        """One scancel for the ids not cancelled before (a job is scancel'ed at most once)."""
        ids = [i for i in ids if i and i not in self._scancelled]
        if ids:
            self._scancelled.update(ids)
            subprocess.run(["scancel", *ids], capture_output=True, timeout=60)

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
