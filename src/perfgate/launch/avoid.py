"""Which nodes a job is kept off (sbatch --exclude): the one place that builds the list.

Two kinds of node are kept off: the nodes a job must avoid (a rerun: the nodes of the row's
earlier runs tonight, which it exists to avoid) and the nodes `perfgate nodes` flags in the
history (every job, first runs included: a first run on a known-slow node measures the node
and costs a rerun). Neither may starve the partition, so the list is capped:

- nothing is kept off beyond what leaves the job's node count in the partition's usable
  nodes (those sinfo does not report down, drained, failed or in maintenance);
- flagged nodes take at most CAP_FRACTION of the partition's usable nodes, at least one (the
  most suspect first, as `perfgate nodes` ranks them), and only those the partition has: a
  node gone from the cluster is not named to sbatch, which would refuse the job.

Without the partition's node list (sinfo failed, or an executor without nodes) the history's
flagged nodes are kept off reruns only, as before this list had a cap, and first runs go where
the scheduler puts them. Node names are taken as already validated strings (what the
executors read from Slurm and the history store holds).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

CAP_FRACTION = 0.10  # flagged nodes kept off: at most a tenth of the partition's usable nodes


@dataclass(frozen=True)
class Avoid:
    """The nodes a job is kept off, and the flagged nodes it could not be kept off."""

    nodes: tuple[str, ...]  # what sbatch --exclude holds (sorted)
    flagged: tuple[str, ...]  # of them, the history's flagged nodes
    left_out: tuple[str, ...]  # flagged nodes not kept off (the cap, or not in the partition)
    why: str  # one line: what was kept off, the cap, what was left out

    def to_dict(self) -> dict[str, object]:
        """JSON-ready (results.json's session "avoided_nodes")."""
        return {
            "nodes": list(self.nodes),
            "flagged": list(self.flagged),
            "left_out": list(self.left_out),
            "why": self.why,
        }


def cap_of(usable: int, need: int, cap_fraction: float = CAP_FRACTION) -> int:
    """How many flagged nodes a partition of `usable` nodes can spare for jobs of `need` nodes:
    a tenth of them (at least one), never so many that `need` nodes are not left."""
    return max(0, min(max(1, math.floor(cap_fraction * usable)), usable - need))


def exclusions(
    flagged: Sequence[str],
    *,
    must: Sequence[str] = (),
    partition: Sequence[str] | None = None,
    need: int = 1,
    cap_fraction: float = CAP_FRACTION,
    first_run: bool = False,
) -> Avoid:
    """The exclude list of one job (see the module doc).

    flagged: the history's slow nodes, most suspect first; must: nodes the job exists to
    avoid (a rerun's earlier runs); partition: the usable nodes of the job's partition (None:
    unknown); need: the job's node count (a session's first runs: its largest row's);
    first_run: a row's first job (kept off flagged nodes only where the partition is known).
    """
    must = list(dict.fromkeys(must))
    if partition is None:
        keep = [] if first_run else [n for n in flagged if n not in must]
        why = (
            "first runs not kept off the history's slow nodes: the partition's nodes are unknown"
            if first_run and flagged
            else ""
        )
        return _avoid(must, keep, [n for n in flagged if n not in keep and n not in must], why)
    usable = set(partition)
    room = max(0, len(usable) - need)
    taken = [n for n in must if n in usable][:room]
    cap = min(cap_of(len(usable), need, cap_fraction), room - len(taken))
    listed = [n for n in flagged if n in usable and n not in taken]
    keep = listed[: max(0, cap)]
    left = [n for n in flagged if n not in keep and n not in taken]
    parts = []
    inside = [n for n in must if n in usable]
    if len(taken) < len(inside):
        parts.append(
            f"kept off {len(taken)} of the {len(inside)} nodes of its earlier runs only (the "
            f"partition's {len(usable)} usable nodes must leave {need} for the job)"
        )
    if flagged:
        why = (
            f"kept off {len(keep)} of the {len(flagged)} node(s) perfgate nodes flags (cap: "
            f"{cap_fraction:.0%} of the partition's {len(usable)} usable nodes, at least one, "
            f"leaving at least {need} for the largest job)"
        )
        if left:
            gone = [n for n in left if n not in usable]
            why += f"; not kept off: {', '.join(left)}"
            if gone:
                why += f" ({len(gone)} not in the partition)"
        parts.append(why)
    return _avoid(taken, keep, left, "; ".join(parts))


def _avoid(must: Sequence[str], keep: Sequence[str], left: Sequence[str], why: str) -> Avoid:
    return Avoid(tuple(sorted({*must, *keep})), tuple(keep), tuple(left), why)
