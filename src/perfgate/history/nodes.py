"""Which nodes make the runs that use them slow, more often than chance: `perfgate nodes`.

Every run in the history records its nodes. Within each row, a run's step time is ranked
among that row's n runs (mid-rank percentile u = (rank - 1/2) / n: near 0 the fastest, near 1
the slowest), so rows of any size and speed compare. If a node has nothing to do with speed,
the percentiles of the runs it took part in are independent draws from the uniform grid of
their rows, each with mean 1/2 and variance (n^2 - 1) / (12 n^2). The test per node is
one-sided (slower): z = sum(u - 1/2) / sqrt(sum of those variances), p from the normal tail
(a sum of three or more such draws is close to normal); the nodes' p-values are then
controlled together with Benjamini-Hochberg at q (default 0.05), so on a cluster without a
slow node a false name comes up on at most q of the days this is asked.

A row that always lands on the same nodes says nothing about them (node and row cannot be
told apart); the evidence comes from rows that move between nodes, and from confirmation
runs, which move by design. A multi-node run's rank counts for each of its nodes; a good
node that often shares jobs with a slow one is lifted a little, never as much as the slow
one. Runs judged UNCONFIRMED (their nodes already suspect) count like any other.
"""

from __future__ import annotations

import bisect
import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from statistics import NormalDist

from perfgate import nodenames
from perfgate.stats.matrix import benjamini_hochberg

MIN_RUNS = 3  # fewer runs on a node: not tested (no verdict from one or two)
SLOW_PERCENTILE = 0.8  # a run counted "slow" in the summary: in its row's slowest fifth


@dataclass(frozen=True)
class NodeRun:
    """One steady run as the node test sees it: its row, step time and nodes."""

    row_id: str
    step_time_s: float
    nodes: tuple[str, ...]
    job_id: str | None = None


@dataclass(frozen=True)
class NodeFinding:
    """What the history says about one node."""

    node: str
    runs: int  # runs that used it (in rows with at least two runs)
    slow_runs: int  # of those, runs in their row's slowest fifth
    mean_percentile: float  # 0.5 expected; 1.0: every run it took part in was its row's slowest
    p_value: float  # one-sided: its runs are slower than chance
    flagged: bool  # rejected by Benjamini-Hochberg at the chosen q


def row_percentiles(rows: Sequence[NodeRun]) -> list[tuple[NodeRun, float, float]]:
    """One row's runs, each with its mid-rank percentile among them and that percentile's
    variance under no node effect ([] for a row with fewer than two runs)."""
    rows = [r for r in rows if math.isfinite(r.step_time_s) and r.step_time_s > 0]
    n = len(rows)
    if n < 2:
        return []
    times = sorted(r.step_time_s for r in rows)
    var = (n * n - 1) / (12 * n * n)
    out = []
    for r in rows:
        below = bisect.bisect_left(times, r.step_time_s)
        equal = bisect.bisect_right(times, r.step_time_s) - below
        out.append((r, (below + equal / 2) / n, var))
    return out


def percentiles(runs: Iterable[NodeRun]) -> list[tuple[NodeRun, float, float]]:
    """Each run with its mid-rank percentile among its row's runs and that percentile's
    variance under no node effect (rows with one run dropped)."""
    by_row: dict[str, list[NodeRun]] = defaultdict(list)
    for r in runs:
        by_row[r.row_id].append(r)
    return [x for rows in by_row.values() for x in row_percentiles(rows)]


@dataclass(frozen=True)
class NodeTotal:
    """One node's sums over the runs it took part in: all the test needs (a store can add
    them up in SQL, or row by row, instead of holding every run)."""

    node: str
    runs: int
    sum_percentile: float  # sum of the runs' mid-rank percentiles
    sum_variance: float  # sum of their variances under no node effect
    slow_runs: int  # runs at or above SLOW_PERCENTILE


def totals_of_rows(rows: Iterable[Sequence[NodeRun]]) -> list[NodeTotal]:
    """Each node's sums, from the runs given one row at a time (only one row's runs are held:
    a history of any size). A run counts once per distinct node."""
    sums: dict[str, list[float]] = {}
    for row in rows:
        for run, u, var in row_percentiles(row):
            slow = u >= SLOW_PERCENTILE
            for node in set(run.nodes):
                s = sums.get(node)
                if s is None:
                    sums[node] = [1, u, var, slow]
                else:
                    s[0] += 1
                    s[1] += u
                    s[2] += var
                    s[3] += slow
    return [NodeTotal(n, int(a), b, c, int(d)) for n, (a, b, c, d) in sums.items()]


def totals(runs: Iterable[NodeRun]) -> list[NodeTotal]:
    """Each node's sums over the runs that used it (a run counts once per distinct node)."""
    by_row: dict[str, list[NodeRun]] = defaultdict(list)
    for r in runs:
        by_row[r.row_id].append(r)
    return totals_of_rows(by_row.values())


def findings(
    node_totals: Iterable[NodeTotal], q: float = 0.05, min_runs: int = MIN_RUNS
) -> list[NodeFinding]:
    """Every node with at least min_runs runs, most suspect first (see the module doc)."""
    tested = sorted((t for t in node_totals if t.runs >= min_runs), key=lambda t: t.node)
    p_values = [
        NormalDist().cdf(-(t.sum_percentile - t.runs / 2) / math.sqrt(t.sum_variance))
        for t in tested
    ]
    flags = benjamini_hochberg(p_values, q) if tested else []
    found = [
        NodeFinding(
            node=t.node,
            runs=t.runs,
            slow_runs=t.slow_runs,
            mean_percentile=t.sum_percentile / t.runs,
            p_value=p,
            flagged=flag,
        )
        for t, p, flag in zip(tested, p_values, flags, strict=True)
    ]
    return sorted(found, key=lambda f: (not f.flagged, f.p_value, f.node))


def slow_nodes(
    runs: Iterable[NodeRun], q: float = 0.05, min_runs: int = MIN_RUNS
) -> list[NodeFinding]:
    """Every node with at least min_runs runs, most suspect first, from the runs themselves."""
    return findings(totals(runs), q, min_runs)


def exclude_list(findings: Sequence[NodeFinding]) -> str:
    """The flagged nodes as an sbatch option a user can paste ('' when none): host names only
    (perfgate.nodenames; the history's reader dropped any other), one line."""
    flagged = [f.node for f in findings if f.flagged and nodenames.is_name(f.node)]
    return f"--exclude={','.join(flagged)}" if flagged else ""
