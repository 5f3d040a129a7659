"""The executor seam: the registry, what each executor answers, and the entry's one clock."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfgate.errors import ConfigError
from perfgate.launch import LaunchOptions
from perfgate.launch.allocation import ALLOCATIONS, allocation_for
from perfgate.launch.entry import Entry
from perfgate.launch.executors import EXECUTORS, executor_for
from perfgate.launch.executors import slurm as slurm_mod
from perfgate.launch.executors.local import LocalExecutor
from perfgate.launch.planning import context, plan
from perfgate.launch.slurmstate import JobInfo
from perfgate.suite.preflight import container_warning


def test_every_executor_has_its_in_allocation_side_and_unknown_names_are_refused():
    # perfgate's own two, and every registered one (a site's too) has both halves
    assert {"slurm", "local"} <= set(EXECUTORS) and set(ALLOCATIONS) == set(EXECUTORS)
    with pytest.raises(ConfigError) as err:
        executor_for("k8s")
    assert str(err.value) == f"--executor 'k8s': expected one of {', '.join(EXECUTORS)}"


def test_the_job_asks_its_allocation_for_the_state_words(command_row, tmp_path):
    words = {}
    for name in ("slurm", "local"):
        ctx = context(command_row, LaunchOptions(executor=name), tmp_path)
        alloc = allocation_for(ctx)
        words[name] = (alloc.state(ok=True), alloc.state(ok=False), alloc.world_size())
    assert words == {"slurm": ("COMPLETED", "FAILED", 1), "local": ("LOCAL", "LOCAL", None)}


def test_only_an_executor_that_starts_containers_warns_of_running_without_one():
    assert container_warning("slurm", "pyxis", None)
    assert container_warning("local", "pyxis", None) is None
    assert container_warning("slurm", "pyxis", "nemo.sqsh") is None


def test_local_states_in_the_sessions_words():
    class Job:
        def __init__(self, state: str) -> None:
            self.state = state

    ex = LocalExecutor()
    ex.jobs = {"1": Job("RUNNING"), "2": Job("FINISHED"), "3": Job("INTERRUPTED")}
    states = {j: i.state for j, i in ex.states(["1", "2", "3", "4"]).items()}
    assert states == {"1": "RUNNING", "2": "COMPLETED", "3": "FAILED", "4": "FAILED"}
    assert ex.final_state("2") == ("LOCAL", None) and ex.attempts("2") == []


def test_slurm_final_state_waits_for_a_terminal_state_then_says_completed(monkeypatch):
    monkeypatch.setattr(slurm_mod.time, "sleep", lambda _s: None)
    ex = slurm_mod.SlurmExecutor()
    answers = iter(["COMPLETING", "TIMEOUT"])
    monkeypatch.setattr(ex, "states", lambda ids: {"7": JobInfo("7", next(answers))})
    assert ex.final_state("7") == ("TIMEOUT", JobInfo("7", "TIMEOUT"))
    monkeypatch.setattr(slurm_mod, "FINAL_STATE_WAIT_S", 0)
    monkeypatch.setattr(ex, "states", lambda ids: {"7": JobInfo("7", "COMPLETING")})
    assert ex.final_state("7") == ("COMPLETED", JobInfo("7", "COMPLETING"))


def test_the_entry_clock_restarts_on_running_and_on_queueing_again(command_row, tmp_path):
    opts = LaunchOptions()
    e = Entry(command_row, plan(command_row, opts), context(command_row, opts, Path(tmp_path)))
    e = e.submitted("41").seen(JobInfo("41", "PENDING"), 10.0)
    assert (e.phase, e.since) == ("PENDING", 10.0)
    e = e.seen(JobInfo("41", "RUNNING"), 20.0).seen(JobInfo("41", "COMPLETING"), 30.0)
    assert (e.phase, e.since, e.requeues) == ("RUNNING", 20.0, ())  # the limit still counts
    e = e.seen(JobInfo("41", "RUNNING"), 35.0).seen(JobInfo("41", "REQUEUED"), 40.0)
    assert (e.phase, e.since, e.requeues) == ("PENDING", 40.0, (None,))  # requeued: queue again
    e = e.seen(JobInfo("41", "PENDING"), 50.0)
    assert (e.phase, e.since) == ("PENDING", 40.0)  # still the same stay in the queue
