"""Nodes that slowed several rows in one session: tonight's own evidence about a node, before
the history has enough of it for `perfgate nodes`.

Each of tonight's first runs gives a one-sided p-value of "slower than its reference" (its
comparison's p_slower). If a node has nothing to do with speed, the runs it took part in are
independent, each p uniform; the test per node is Stouffer's: z = sum of the runs' normal
scores over sqrt(runs), p from the normal tail, and Benjamini-Hochberg at q across every node
that ran tonight (not only those that look slow: choosing them first would make any two slow
runs significant). A node is noted when it passes that bar and at least MIN_ROWS of the runs
on it were judged slow (a REGRESSION before any rerun). One slow row says nothing about its
nodes (the rerun tells that); two rows slowed on the same node in one night seldom happen by
chance, and the session says so at its end.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from statistics import NormalDist

from perfgate.stats.matrix import benjamini_hochberg

MIN_ROWS = 2  # slow rows on a node before the session notes it
P_FLOOR = 1e-12  # a p-value of 0 (a run far beyond its noise) counts as this


@dataclass(frozen=True)
class NightRun:
    """One row's first run tonight, as the test sees it (plain data)."""

    row_id: str
    p_slower: float  # one-sided p-value of "slower than its reference" (NaN: no estimate)
    slow: bool  # judged a REGRESSION on this run alone
    nodes: tuple[str, ...]
    delta: float = math.nan


@dataclass(frozen=True)
class NightNode:
    """A node that slowed several rows tonight."""

    node: str
    slow_rows: tuple[str, ...]  # rows whose first run on it was a REGRESSION
    runs: int  # tonight's first runs on it
    p_value: float
    deltas: tuple[float, ...]  # of the slow rows, in order

    def to_dict(self) -> dict[str, object]:
        """JSON-ready (results.json's session "slow_nodes_tonight")."""
        return {
            "node": self.node,
            "slow_rows": list(self.slow_rows),
            "runs": self.runs,
            "p_value": self.p_value,
            "deltas": [d if math.isfinite(d) else None for d in self.deltas],
        }


def slow_tonight(
    runs: Iterable[NightRun], q: float = 0.05, min_rows: int = MIN_ROWS
) -> list[NightNode]:
    """The nodes tonight's first runs single out (see the module doc), most suspect first."""
    per_node: dict[str, list[NightRun]] = defaultdict(list)
    for r in runs:
        if math.isfinite(r.p_slower):
            for node in dict.fromkeys(r.nodes):
                per_node[node].append(r)
    tested = sorted(per_node.items())
    if not tested:
        return []
    normal = NormalDist()
    p_values = []
    for _, rs in tested:
        z = sum(normal.inv_cdf(1 - min(max(r.p_slower, P_FLOOR), 1 - P_FLOOR)) for r in rs)
        p_values.append(normal.cdf(-z / math.sqrt(len(rs))))
    found = [
        NightNode(
            node,
            tuple(r.row_id for r in rs if r.slow),
            len(rs),
            p,
            tuple(r.delta for r in rs if r.slow),
        )
        for (node, rs), p, flag in zip(
            tested, p_values, benjamini_hochberg(p_values, q), strict=True
        )
        if flag and sum(1 for r in rs if r.slow) >= min_rows
    ]
    return sorted(found, key=lambda f: (f.p_value, f.node))
