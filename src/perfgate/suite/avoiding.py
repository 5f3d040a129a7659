"""A session's first runs kept off the nodes the history flags, and the nodes that slowed
several rows tonight.

First runs: `perfgate nodes`' list (the history's slow nodes, most suspect first) goes into
every first job's sbatch --exclude, capped so the partition is never starved
(perfgate.launch.avoid: at most a tenth of the partition's usable nodes as sinfo lists them,
and never so many that the largest row's node count cannot be met). Not when the user pins
the jobs to nodes (--slurm-param nodelist/w: their choice), nor on an executor without other
nodes. The plan (dry run) and the report name the nodes and the cap.

Tonight: each first run's p-value of "slower" and its nodes, tested per node when the
session ends (perfgate.history.night_nodes); results.json's session keeps what was found, and
the sign-off (terminal and report: perfgate.report.nodes) names a node that slowed several
rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from perfgate.catalog import Row
from perfgate.history.night_nodes import NightNode, NightRun, slow_tonight
from perfgate.launch.avoid import Avoid, exclusions
from perfgate.launch.executors import executor_for
from perfgate.launch.planning import PINNING
from perfgate.launch.types import LaunchOptions
from perfgate.verdicts import REGRESSION, Evaluation


def first_runs(
    options: LaunchOptions, flagged: Sequence[str], rows: Sequence[Row]
) -> tuple[LaunchOptions, Avoid | None]:
    """The session's options with its first runs kept off the flagged nodes, and what was
    kept off (None: nothing flagged, or nowhere to keep off)."""
    executor = executor_for(options.executor)
    if not flagged or not rows or not executor.excludes_nodes:
        return options, None
    if any(k in options.slurm_params for k in PINNING):
        why = "first runs not kept off the history's slow nodes: --slurm-param pins the nodes"
        return options, Avoid((), (), tuple(flagged), why)
    partition = executor.partition_nodes(options.partition)
    need = max(r.nodes for r in rows)
    avoid = exclusions(flagged, partition=partition, need=need, first_run=True)
    return replace(options, avoid_nodes=avoid.nodes), avoid


def plan_line(avoid: Avoid | None) -> str | None:
    """What the plan says about the first runs' exclusions (None: nothing to say)."""
    if avoid is None:
        return None
    if not avoid.nodes:
        return f"perfgate: {avoid.why}"
    return f"perfgate: first runs --exclude={','.join(avoid.nodes)}: {avoid.why}"


def night_run(ev: Evaluation) -> NightRun | None:
    """A first run as tonight's node test sees it (None: no comparison or no nodes)."""
    comp, res = ev.comparison, ev.result
    if comp is None or res is None or not res.nodes or ev.mode not in ("stored", "history"):
        return None
    first = (ev.confirmation or {}).get("runs") or [{"verdict": ev.verdict}]
    slow = first[0].get("verdict") == REGRESSION  # the first run's own verdict, before reruns
    return NightRun(ev.row.id, comp.p_slower, slow, tuple(res.nodes), comp.delta)


def tonight(firsts: Sequence[Evaluation]) -> list[NightNode]:
    """The nodes tonight's first runs single out (perfgate.history.night_nodes)."""
    return slow_tonight(r for r in map(night_run, firsts) if r is not None)
