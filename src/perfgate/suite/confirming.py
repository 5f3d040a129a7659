"""Confirmation runs in a live session: a one-run REGRESSION rerun on other nodes.

When a row's first job ends, the session judges it at once (on_done) and, when the verdict
asks for it (perfgate.verdicts.confirm.wants_confirmation), queues the first confirmation
run kept off the first run's nodes and the nodes the history flags (perfgate.history.nodes),
so confirmations run while other rows' tests still wait. The row's test then waits for its
confirmations and gets the combined verdict. The local executor has no other nodes: its
confirmation reruns on the same host, and the verdict says so.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from perfgate import nodenames, notices, verdicts
from perfgate.catalog import Row
from perfgate.runs import RunResult
from perfgate.suite.live import LiveRunner
from perfgate.verdicts import Evaluation
from perfgate.verdicts.confirm import combine, settled, wants_confirmation

SAME_NODE = "local executor: the confirmation ran on the same node (no other nodes)"

Judge = Callable[[Row, RunResult], Evaluation]


class Confirmer:
    """Decides, queues and combines the confirmation runs of a live session's rows."""

    def __init__(
        self,
        runner: LiveRunner,
        judge: Judge,
        confirm: int,
        inconclusive: bool,
        flagged: Sequence[str] = (),
    ) -> None:
        self.runner = runner
        self.judge = judge  # the row's verdict from one RunResult (history and noise bound)
        self.confirm = confirm
        self.inconclusive = inconclusive
        self.flagged = tuple(flagged)  # nodes `perfgate nodes` finds slow in the history
        self.started: dict[str, list[str]] = {}  # row id -> the nodes its reruns are kept off

    def exclude(self, row: Row) -> list[str]:
        """The first run's nodes and the history's slow nodes ([] on a single host): host
        names only (perfgate.nodenames), so no name can widen, narrow or redirect the list."""
        if not self.runner.excludes_nodes:
            return []
        found = [*self.runner.nodes_of(row.id), *self.flagged]
        return sorted(nodenames.names(found, f"row {row.id}: confirmation nodes", notices.warn))

    def on_done(self, row: Row, result: RunResult) -> None:
        """A row's first job ended: queue its first confirmation now if its verdict wants one."""
        if not self.confirm or row.id in self.started:
            return
        if wants_confirmation(self.judge(row, result), self.inconclusive):
            self.started[row.id] = self.exclude(row)
            self.runner.start_confirmation(row, 1, self.started[row.id])

    def evaluate(self, row: Row, first: Evaluation) -> Evaluation:
        """The row's verdict with its confirmations (first when none is wanted)."""
        why = wants_confirmation(first, self.inconclusive) if self.confirm else None
        if why is None:
            return first
        exclude = self.started.setdefault(row.id, self.exclude(row))
        note = None if self.runner.excludes_nodes else SAME_NODE
        if first.verdict != verdicts.REGRESSION:  # INCONCLUSIVE leaning slow: both runs judged
            rerun = self.runner.confirmation(row, 1, exclude)
            both = _both(first.result, rerun)
            pooled = self.judge(row, both)
            return combine(first, [self.judge(row, rerun)], same_nodes_note=note,
                           excluded=exclude, pooled=pooled)  # fmt: skip
        confirmations: list[Evaluation] = []
        for n in range(1, self.confirm + 1):
            ev = self.judge(row, self.runner.confirmation(row, n, exclude))
            confirmations.append(ev)
            if settled(first, confirmations):
                break  # no further rerun can change the verdict
        return combine(first, confirmations, same_nodes_note=note, excluded=exclude)


def _both(first: RunResult | None, rerun: RunResult) -> RunResult:
    """The first job's result with the rerun's runs added: judged as two runs of the row."""
    assert first is not None
    return replace(first, runs=first.runs + rerun.runs)
