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


def percentiles(runs: Iterable[NodeRun]) -> list[tuple[NodeRun, float, float]]:
    """Each run with its mid-rank percentile among its row's runs and that percentile's
    variance under no node effect (rows with one run dropped)."""
    by_row: dict[str, list[NodeRun]] = defaultdict(list)
    for r in runs:
        if math.isfinite(r.step_time_s) and r.step_time_s > 0:
            by_row[r.row_id].append(r)
    out: list[tuple[NodeRun, float, float]] = []
    for rows in by_row.values():
        n = len(rows)
        if n < 2:
            continue
        times = sorted(r.step_time_s for r in rows)
        var = (n * n - 1) / (12 * n * n)
        for r in rows:
            below = sum(1 for t in times if t < r.step_time_s)
            equal = sum(1 for t in times if t == r.step_time_s)
            out.append((r, (below + equal / 2) / n, var))
    return out


def slow_nodes(
    runs: Iterable[NodeRun], q: float = 0.05, min_runs: int = MIN_RUNS
) -> list[NodeFinding]:
    """Every node with at least min_runs runs, most suspect first (see the module doc)."""
    per_node: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for run, u, var in percentiles(runs):
        for node in set(run.nodes):
            per_node[node].append((u, var))
    tested = sorted((n, uv) for n, uv in per_node.items() if len(uv) >= min_runs)
    p_values = []
    for _, uv in tested:
        z = math.fsum(u - 0.5 for u, _ in uv) / math.sqrt(math.fsum(v for _, v in uv))
        p_values.append(NormalDist().cdf(-z))
    flags = benjamini_hochberg(p_values, q) if tested else []
    found = [
        NodeFinding(
            node=node,
            runs=len(uv),
            slow_runs=sum(1 for u, _ in uv if u >= SLOW_PERCENTILE),
            mean_percentile=math.fsum(u for u, _ in uv) / len(uv),
            p_value=p,
            flagged=flag,
        )
        for (node, uv), p, flag in zip(tested, p_values, flags, strict=True)
    ]
    return sorted(found, key=lambda f: (not f.flagged, f.p_value, f.node))


def exclude_list(findings: Sequence[NodeFinding]) -> str:
    """The flagged nodes as an sbatch option a user can paste ('' when none): host names only
    (perfgate.nodenames; the history's reader dropped any other), one line."""
    flagged = [f.node for f in findings if f.flagged and nodenames.is_name(f.node)]
    return f"--exclude={','.join(flagged)}" if flagged else ""
