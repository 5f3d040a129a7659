"""Per-rank timing in training logs: which rank (and node) was the slowest of a run.

Two reports the NeMo stack prints, verbatim examples in tests/data/logs/README.md:

- Megatron-Core's StragglerDetector (`--log-straggler`; Megatron-Bridge `straggler`), rank 0,
  every log interval: `| MnRtt/Rnk: 1446.49ms/13 | MxRtt/Rnk: 1570.32ms/30 | ... |
  MnEtpt/Rnk: 560.82TF/30 | MxEtpt/Rnk: 608.83TF/13`: the rank with the longest time in the
  timed ops (MxRtt: the one the others wait for). Ranks only.
- NVIDIA Resiliency Extension's straggler report (NeMo 2 / Bridge callbacks):
  `GPU relative performance:` then `Rank=76 Node=h100-001-253-012 Score=0.94` lines, worst
  first in the large-job form: the lowest score is the slowest, with its node's host name.

The slowest rank of a run is the one most often named slowest across its reports (a rank
slow in one interval is noise; one slow in most of them is a straggler). A node name in a
report is outside input: one that is not a Slurm host name (perfgate.nodenames) is dropped
with one warning naming the log, and the rank kept without a node. Pure stdlib: the workload
may import it inside the container.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from perfgate import nodenames, notices

# `MxRtt/Rnk: 1570.32ms/30`: the longest per-iteration op time and its rank
# (numbers of at most 9 digits before the point: a rank or a time never has more)
_MEGATRON = re.compile(r"\bMxRtt/Rnk:\s*(\d{1,12}(?:\.\d{1,12})?)ms/(\d{1,9})\b")
_MEGATRON_MIN_RTT = re.compile(r"\bMnRtt/Rnk:\s*(\d{1,12}(?:\.\d{1,12})?)ms/(\d{1,9})\b")
_NVRX_HEAD = "GPU relative performance:"
_NVRX_OTHER_HEAD = "GPU individual performance:"
_NVRX_RANK = re.compile(r"\bRank=(\d{1,9})\s+Node=(\S+)\s+Score=(\d{1,9}(?:\.\d{1,12})?)\b")


@dataclass(frozen=True)
class Slowest:
    """The slowest rank of a run as its logs report it."""

    rank: int
    node: str | None  # from the report itself (NVRx), or None (Megatron reports ranks only)
    reports: int  # reports that named it slowest
    of: int  # reports read
    how: str  # which report, in words, with its worst figure

    def to_dict(self) -> dict[str, object]:
        """JSON-ready (results.json runs[].slowest)."""
        return {
            "rank": self.rank,
            "node": self.node,
            "reports": self.reports,
            "of": self.of,
            "how": self.how,
        }


def slowest_rank(lines: Iterable[str], source: str = "a log") -> Slowest | None:
    """The rank most often slowest in the lines' straggler reports (None: no report);
    source names the log in the warning about a node name left out."""
    megatron: list[tuple[int, float, float]] = []  # (rank, its ms, the fastest rank's ms)
    nvrx: list[tuple[int, str | None, float]] = []  # the lowest score of each report
    current: list[tuple[int, str | None, float]] | None = None
    bad: list[str] = []
    for line in lines:
        if "Rnk:" in line:
            m = _MEGATRON.search(line)
            if m:  # the longest time in the timed ops names the slow rank
                low = _MEGATRON_MIN_RTT.search(line)
                fastest = float(low.group(1)) if low else float("nan")
                megatron.append((int(m.group(2)), float(m.group(1)), fastest))
            continue
        if _NVRX_HEAD in line:
            current = []
            continue
        if current is not None:
            m = _NVRX_RANK.search(line)
            if m:
                node: str | None = m.group(2)
                if not nodenames.is_name(node):
                    bad.append(node)  # type: ignore[arg-type]
                    node = None
                current.append((int(m.group(1)), node, float(m.group(3))))
                continue
            if _NVRX_OTHER_HEAD in line or ("performing" not in line and current):
                if current:
                    nvrx.append(min(current, key=lambda x: x[2]))
                current = None
    if current:
        nvrx.append(min(current, key=lambda x: x[2]))
    if bad:
        more = f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""
        notices.warn(
            f"{source}: NVRx straggler report: node name {bad[0][:60]!r} left out: "
            f"{nodenames.why_not(bad[0])}{more}"
        )
    if nvrx:
        return _from_nvrx(nvrx)
    if megatron:
        return _from_megatron(megatron)
    return None


def _from_nvrx(reports: Sequence[tuple[int, str | None, float]]) -> Slowest:
    counts = Counter((r, n) for r, n, _ in reports)
    (rank, node), times = counts.most_common(1)[0]
    worst = min(s for r, n, s in reports if (r, n) == (rank, node))
    how = f"NVRx straggler report: lowest relative score {worst:.2f}"
    return Slowest(rank, node, times, len(reports), how)


def _from_megatron(reports: Sequence[tuple[int, float, float]]) -> Slowest:
    counts = Counter(r for r, _, _ in reports)
    rank, times = counts.most_common(1)[0]
    ms, fastest = max((m, f) for r, m, f in reports if r == rank)
    spread = f" (fastest rank {fastest:.2f} ms)" if math.isfinite(fastest) else ""
    how = f"Megatron straggler detector: longest op time {ms:.2f} ms{spread}"
    return Slowest(rank, None, times, len(reports), how)


def node_of(rank: int, nodes: Sequence[str], tasks_per_node: int) -> str | None:
    """The node a rank ran on under Slurm's default block distribution (rank // tasks per
    node), as perfgate's srun lines start ranks; None when the layout does not say."""
    if tasks_per_node < 1 or not nodes:
        return None
    i = rank // tasks_per_node
    return nodes[i] if i < len(nodes) else None
