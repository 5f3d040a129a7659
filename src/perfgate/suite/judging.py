"""Judge: a row's verdict from its run, in this session's terms.

One run against its stored baseline (perfgate.verdicts.evaluate: tolerance, window, noise and
the row's history), an A/B job's pairs (perfgate.verdicts.paired), the rule by which an A/B
job adds a pair, and with --fdr the whole night judged at once and held to one
Benjamini-Hochberg bar (perfgate.suite.matrix).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from perfgate import verdicts
from perfgate.catalog import Row
from perfgate.runs import RunResult
from perfgate.suite import matrix
from perfgate.suite.planning import effective
from perfgate.suite.settings import Settings
from perfgate.verdicts import Evaluation
from perfgate.verdicts.paired import evaluate_ab
from perfgate.verdicts.pairs_rule import PairsRule

Judged = Evaluation | str  # a str: why the row is skipped


@dataclass(frozen=True)
class Judge:
    """The session's judge: its settings and the history's stored points of a row."""

    settings: Settings
    history: Callable[[str], Sequence[Any]]

    def one_run(self, row: Row, result: RunResult) -> Evaluation:
        """One run's verdict on a row, in this session's terms (tolerance, noise, history)."""
        s = self.settings
        return verdicts.evaluate(
            effective(row, s.steps),
            result,
            source=s.mode,
            window=s.window,
            tolerance=s.tolerance,
            noise=s.noise,
            history=self.history(row.id),
        )

    def ab(self, row: Row, result: RunResult) -> Evaluation:
        """An A/B job's verdict on its pairs."""
        s = self.settings
        return evaluate_ab(
            row,
            result,
            source=s.mode,
            first_pairs=s.launch.pairs,
            max_pairs=s.launch.max_pairs,
            window=s.window,
            tolerance=s.tolerance,
            noise=s.noise,
        )

    def pairs_rule(self, row: Row) -> PairsRule:
        """A/B: the job's rule for adding a pair (this row's tolerance, the session's window)."""
        s = self.settings
        return PairsRule(
            tolerance=verdicts.tolerance_of(row, s.tolerance),
            window=s.window,
            first_pairs=s.launch.pairs,
            max_pairs=s.launch.max_pairs,
            noise=s.noise,
        )


class Night:
    """--fdr: every row of the session judged once, at the first test, then the
    Benjamini-Hochberg bar applied across them (perfgate.suite.matrix)."""

    def __init__(self, fdr: float) -> None:
        self.fdr = fdr
        self.judged: dict[str, Judged] | None = None

    def verdict(
        self,
        row: Row,
        rows: Sequence[Row],
        judge_row: Callable[[Row, str | None], Judged],
        test_ids: dict[str, str],
    ) -> Judged:
        """The row's verdict under the night's bar (a row outside rows is judged alone)."""
        if self.judged is None:
            judged = {r.id: judge_row(r, test_ids.get(r.id)) for r in rows or [row]}
            self.judged = matrix.apply_fdr(judged, self.fdr)
        if row.id not in self.judged:  # a row outside the session's list (pytester)
            self.judged[row.id] = judge_row(row, None)
        return self.judged[row.id]
