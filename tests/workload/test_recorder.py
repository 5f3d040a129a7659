"""Rank 0's recorder keeps its disk work out of the training loop: a step is appended, the
file is written by a thread at a bounded rate, and the final record always has every step."""

from __future__ import annotations

import json
import threading
import time

from perfgate.logs import Step, stepfile
from perfgate.workload.runtime import Recorder


def _recorder(tmp_path, every_s: float) -> Recorder:
    rec = Recorder(tmp_path / "steps.json", stepfile.StepRecord(row_id="r", backend="command"))
    rec.WRITE_EVERY_S = every_s
    return rec


def _steps_on_disk(rec: Recorder) -> int:
    return len(json.loads(rec.path.read_text())["steps"])


def test_a_step_is_appended_and_written_by_the_writer_not_the_caller(tmp_path, monkeypatch):
    rec = _recorder(tmp_path, every_s=3600.0)
    rec.update(status="running")  # status changes are written at once
    callers = []
    real = stepfile.write

    def write(path, record):
        callers.append(threading.current_thread() is threading.main_thread())
        real(path, record)

    monkeypatch.setattr(stepfile, "write", write)
    for i in range(10_000):
        rec.add_step(Step(step=i, step_time_s=0.4))
    deadline = time.monotonic() + 60  # a bounded wait for the writer's first write
    while not (rec.path.exists() and _steps_on_disk(rec) > 0) and time.monotonic() < deadline:
        time.sleep(0.01)
    # 10,000 steps, and the training thread wrote none of them: the writer wrote once (its
    # next write is an hour away), the rest wait for it or for finish()
    assert callers.count(True) == 0 and callers.count(False) == 1, callers
    assert 1 <= _steps_on_disk(rec) <= 10_000
    rec.finish("completed")
    out = stepfile.read(rec.path)
    assert out.status == "completed" and [s["step"] for s in out.steps] == list(range(10_000))
    assert callers[-1] is True  # the final record, written by the caller of finish()


def test_writes_are_bounded_by_the_interval_whatever_the_step_rate(tmp_path):
    rec = _recorder(tmp_path, every_s=0.2)
    started = time.monotonic()
    for i in range(2_000):
        rec.add_step(Step(step=i, step_time_s=0.001))
        time.sleep(0.0005)
    elapsed = time.monotonic() - started
    rec.finish("completed")
    # one write per 0.2 s at most while steps came, plus the final one
    assert rec.writes <= elapsed / 0.2 + 2, (rec.writes, elapsed)
    assert len(stepfile.read(rec.path).steps) == 2_000


def test_flush_and_status_updates_write_every_step_at_once(tmp_path):
    rec = _recorder(tmp_path, every_s=3600.0)
    rec.add_step(Step(step=0, step_time_s=1.0))
    rec.add_step(Step(step=1, step_time_s=1.0))
    rec.flush()
    assert _steps_on_disk(rec) == 2
    rec.add_step(Step(step=2, step_time_s=1.0))
    rec.update(peak_memory_gib_per_rank=[1.5])  # after the last step: carries the steps too
    assert _steps_on_disk(rec) == 3
    rec.finish("failed", "RuntimeError: boom\nat step 3")
    out = stepfile.read(rec.path)
    assert (out.status, out.error, len(out.steps)) == ("failed", "RuntimeError: boom at step 3", 3)


def _slow_writer_thread(monkeypatch):
    """The writer thread's first write blocks until released; returns (started, release)."""
    started, release = threading.Event(), threading.Event()
    real = stepfile.write

    def write(path, record):
        if not started.is_set() and threading.current_thread() is not threading.main_thread():
            started.set()
            assert release.wait(timeout=60)
        real(path, record)

    monkeypatch.setattr(stepfile, "write", write)
    return started, release


def test_flush_waits_for_the_writer_threads_write_in_flight(tmp_path, monkeypatch):
    # The writer took the steps and is still writing them: flush must not return before
    # they are on disk (it once saw nothing pending and returned with no file at all).
    started, release = _slow_writer_thread(monkeypatch)
    rec = _recorder(tmp_path, every_s=3600.0)
    rec.add_step(Step(step=0, step_time_s=1.0))
    assert started.wait(timeout=60)
    flushed = threading.Event()
    t = threading.Thread(target=lambda: (rec.flush(), flushed.set()))
    t.start()
    assert not flushed.wait(timeout=0.2)  # held behind the write in flight
    release.set()
    t.join(timeout=60)
    assert flushed.is_set() and _steps_on_disk(rec) == 1
    rec.finish("completed")


def test_an_older_snapshot_never_lands_after_a_status_update(tmp_path, monkeypatch):
    started, release = _slow_writer_thread(monkeypatch)
    rec = _recorder(tmp_path, every_s=3600.0)
    rec.add_step(Step(step=0, step_time_s=1.0))
    assert started.wait(timeout=60)
    t = threading.Thread(target=rec.update, kwargs={"status": "running"})
    t.start()
    t.join(timeout=0.2)  # an update that does not wait would write now, before the old snapshot
    release.set()
    t.join(timeout=60)
    deadline = time.monotonic() + 60  # both writes done: the writer's and the update's
    while rec.writes < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    out = stepfile.read(rec.path)
    assert (rec.writes, out.status, len(out.steps)) == (2, "running", 1)
    rec.finish("completed")
