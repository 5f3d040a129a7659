"""Confirm: a one-run REGRESSION rerun on other nodes (live), or read from a replay folder's
confirm-<n> runs (settle_replayed).

When a row's first job ends, the session judges it at once (on_done) and, when the verdict
asks for it (perfgate.verdicts.confirm.wants_confirmation), queues the first rerun kept off
the first run's nodes and the nodes the history flags (perfgate.launch.avoid), so reruns run
while other rows' tests still wait. The row's test then settles its reruns with
perfgate.verdicts.confirm.confirm, the loop a replay and the evaluator use too: each later
rerun is queued only when the earlier ones left the verdict open, kept off every node the
row ran on tonight.

The default policy (--confirm auto) allows a second rerun (and a third after a reproduced
REGRESSION whose second rerun neither reproduced nor contradicted it), and the session's
reruns stay within the plan's "up to": one rerun's GPU-hours for each one-run row
(RerunBudget). A first rerun always fits (it is its row's own share); a second or third is
queued only when what is left still covers a first rerun of every row not judged yet. On a
night where many rows reproduce (a slower container), the budget runs out and those rows
keep their one rerun's verdict, saying so. The local executor has no other nodes: its reruns
run on the same host, and the verdict says so.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from perfgate import nodenames, notices
from perfgate.catalog import Row
from perfgate.launch.avoid import exclusions
from perfgate.runs import RunResult
from perfgate.suite.live import LiveRunner
from perfgate.verdicts import Evaluation
from perfgate.verdicts.confirm import Rerun, RerunPolicy, confirm, wants_confirmation

SAME_NODE = "local executor: the confirmation ran on the same node (no other nodes)"

Judge = Callable[[Row, RunResult], Evaluation]


@dataclass
class RerunBudget:
    """The session's reruns in GPU-hours (time-limit bound): one rerun of each one-run row."""

    planned: Mapping[str, float]  # row id -> its first job's GPU-hours
    spent: float = 0.0
    judged: set[str] = field(default_factory=set)  # rows whose first run has been judged

    @property
    def total(self) -> float:
        """What the plan counts as "up to" for reruns."""
        return sum(self.planned.values())

    def take(self, row_id: str, n: int) -> str | None:
        """Spend a rerun of the row (the n-th); why not when it does not fit (None: it does)."""
        cost = self.planned.get(row_id, 0.0)
        if n > 1:
            pending = sum(h for r, h in self.planned.items() if r not in self.judged)
            if self.spent + pending + cost > self.total + 1e-9:
                return (
                    f"the session's reruns are within one rerun per row ({self.total:,.1f} "
                    f"GPU-hours, {self.spent:,.1f} spent): rerun {n} does not fit"
                )
        self.spent += cost
        return None


class Confirmer:
    """Decides, queues and settles the confirmation runs of a live session's rows."""

    def __init__(
        self,
        runner: LiveRunner,
        judge: Judge,
        policy: RerunPolicy,
        inconclusive: bool,
        flagged: Sequence[str] = (),
    ) -> None:
        self.runner = runner
        self.judge = judge  # the row's verdict from one RunResult (history and noise bound)
        self.policy = policy
        self.inconclusive = inconclusive
        self.flagged = tuple(flagged)  # nodes `perfgate nodes` flags, most suspect first
        self.started: dict[str, list[str]] = {}  # row id -> the first rerun's exclude list
        self._budget: RerunBudget | None = None

    @property
    def budget(self) -> RerunBudget | None:
        """The session's rerun budget (auto only), from the rows' plans once submitted."""
        if self.policy.budget and self._budget is None:
            planned = self.runner.planned_gpu_hours()
            if planned:
                self._budget = RerunBudget(planned)
        return self._budget

    def exclude(self, row: Row, n: int) -> list[str]:
        """The nodes the row's n-th rerun is kept off: every node it ran on tonight and the
        history's slow ones, capped for the partition ([] on a single host)."""
        if not self.runner.excludes_nodes:
            return []
        keys = [row.id, *(f"{row.id}~confirm-{k}" for k in range(1, n))]
        ran = [node for key in keys for node in self.runner.nodes_of(key)]
        # host names only (perfgate.nodenames): no name can widen, narrow or redirect the list
        where = f"row {row.id}: confirmation nodes"
        avoid = exclusions(
            nodenames.names(list(self.flagged), where, notices.warn),
            must=nodenames.names(ran, where, notices.warn),
            partition=self.runner.partition_nodes(),
            need=row.nodes,
        )
        return list(avoid.nodes)

    def _wants(self, first: Evaluation) -> bool:
        why = wants_confirmation(first, self.inconclusive, self.policy.lean_p)
        return bool(self.policy.most) and why is not None

    def _queue(self, row: Row, n: int) -> list[str] | str:
        """Queue the n-th rerun when the budget allows: its exclude list, or why not."""
        if self.budget is not None:
            why = self.budget.take(row.id, n)
            if why:
                return why
        exclude = self.exclude(row, n)
        self.runner.start_confirmation(row, n, exclude)
        return exclude

    def on_done(self, row: Row, result: RunResult) -> None:
        """A row's first job ended: queue its first rerun now if its verdict wants one."""
        if row.id in self.started:
            return
        first = self.judge(row, result)
        if self.budget is not None:
            self.budget.judged.add(row.id)
        if self._wants(first):
            queued = self._queue(row, 1)
            self.started[row.id] = queued if isinstance(queued, list) else []

    def evaluate(self, row: Row, first: Evaluation) -> Evaluation:
        """The row's verdict with its reruns (first when none is wanted)."""
        if self.budget is not None:
            self.budget.judged.add(row.id)
        if not self._wants(first):
            return first
        if row.id not in self.started:
            queued = self._queue(row, 1)
            self.started[row.id] = queued if isinstance(queued, list) else []
        note = None if self.runner.excludes_nodes else SAME_NODE

        def rerun(n: int) -> Evaluation | str:
            key = f"{row.id}~confirm-{n}"
            if n > 1 and not self.runner.has(key):
                queued = self._queue(row, n)
                if isinstance(queued, str):
                    return queued
            return self.judge(row, self.runner.confirmation(row, n, self.started[row.id]))

        return settle(
            row,
            first,
            rerun,
            self.judge,
            self.policy,
            self.inconclusive,
            self.flagged,
            same_nodes_note=note,
            excluded=self.started[row.id],
        )


def together(launches: Sequence[Evaluation]) -> RunResult:
    """The first launch's result with every launch's runs: the row judged on them together."""
    results = [ev.result for ev in launches if ev.result is not None]
    return replace(results[0], runs=tuple(run for r in results for run in r.runs))


def settle(
    row: Row,
    first: Evaluation,
    rerun: Rerun,
    judge: Judge,
    policy: RerunPolicy,
    inconclusive: bool,
    flagged: Sequence[str],
    *,
    same_nodes_note: str | None = None,
    excluded: Sequence[str] = (),
) -> Evaluation:
    """A row's verdict after its reruns, live or replayed (perfgate.verdicts.confirm.confirm,
    with launches judged together by the session's judge)."""
    return confirm(
        first,
        rerun,
        policy,
        inconclusive=inconclusive,
        pool=lambda launches: judge(row, together(launches)),
        same_nodes_note=same_nodes_note,
        excluded=excluded,
        flagged=flagged,
    )


def settle_replayed(
    row: Row,
    first: Evaluation,
    reruns: Sequence[Sequence[Path]],
    load: Callable[[Row, Sequence[Path]], RunResult],
    judge: Judge,
    policy: RerunPolicy,
    inconclusive: bool,
    flagged: Sequence[str],
) -> Evaluation:
    """A replayed row with its confirm-<n> folders, settled as a live session settles its
    reruns (settle): read in order of n, up to --confirm."""

    def rerun(n: int) -> Evaluation | str:
        if n > len(reruns):
            return f"the replay folder has no confirm-{n}/"
        return judge(row, load(row, reruns[n - 1]))

    return settle(row, first, rerun, judge, policy, inconclusive, flagged)
