"""Which nodes an UNCONFIRMED verdict names, and only on evidence about a node.

A first run that a rerun on other nodes did not reproduce was slow for a reason the row does
not carry, but a slow launch is not a slow node: on a healthy node a launch is slow now and
then (a congested fabric, a spike in the row's own heavy-tailed noise), and its nodes look
exactly as guilty from that one launch. Naming them sends an administrator after nothing, so
a node is named only on evidence about the node (docs/nightly.md "Confirmation on other nodes"):

- the first run used nodes `perfgate nodes` flags in the history: those nodes;
- the first run was slower than the rerun that contradicted it by more than the noise, and its
  straggler reports single out one rank (the slowest in most of at least MIN_REPORTS reports)
  that the rerun's reports do not: that rank's node. The launch's own slowness is the
  log(first / rerun) beyond the one-sided t quantile at a hundredth of the row's alpha
  (NAMING_SHARE), with the standard error of a difference of two launches;
- else none: the message says the slowdown did not reproduce and no node explains it, and, when
  the first run was beyond the noise, that it was one slow launch.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from perfgate import nodenames
from perfgate.runs import RunResult
from perfgate.stats.dist import t_quantile
from perfgate.verdicts.single import Evaluation

# A first run that was a REGRESSION without a slow node is already a tail draw of the row's
# noise (it was picked for being high), so at the verdict's own alpha about a quarter of such
# runs would still look slower than their rerun (scripts/evaluate_detector.py --matrix, cluster
# model). At a hundredth fewer do, but on a heavy-tailed held-out generator healthy first runs
# still went beyond it (docs/statistics.md: which nodes an UNCONFIRMED names): the bound says
# the launch was slow, never by itself which node made it so.
NAMING_SHARE = 0.01
# A rank slowest in most of this many reports or more singles itself out; one report is noise.
MIN_REPORTS = 3


@dataclass(frozen=True)
class Suspects:
    """The nodes an UNCONFIRMED verdict names and why ([] and why not, when none)."""

    nodes: list[str]
    why: str


def _nodes(res: RunResult | None) -> list[str]:
    return list(res.nodes) if res is not None else []


def _slowest(ev: Evaluation) -> dict[str, Any] | None:
    runs = ev.result.runs if ev.result is not None else ()
    found = runs[-1].slowest if runs else None
    return found if isinstance(found, dict) else None


def slowest_node(ev: Evaluation) -> str | None:
    """The node of the slowest rank the run's straggler reports name (None: none say)."""
    found = _slowest(ev)
    node = found.get("node") if found else None
    return node if nodenames.is_name(node) else None


def singled_out(ev: Evaluation) -> dict[str, Any] | None:
    """The run's straggler report when one rank was the slowest in most of at least
    MIN_REPORTS reports (None: no report, or the slowest rank changed from report to report)."""
    found = _slowest(ev)
    if not found:
        return None
    reports, of = found.get("reports"), found.get("of")
    if not isinstance(reports, int) or not isinstance(of, int) or of < MIN_REPORTS:
        return None
    return found if 2 * reports > of else None


def only_on_first(first: Evaluation, reruns: Sequence[Evaluation]) -> list[str]:
    """The first run's nodes that no rerun ran on (all of them when they are disjoint)."""
    elsewhere = {n for c in reruns for n in _nodes(c.result)}
    return [n for n in _nodes(first.result) if n not in elsewhere]


def gap(first: Evaluation, rerun: Evaluation) -> tuple[float, float, float] | None:
    """(log(first / rerun), its SE, its df) of two launches judged against one reference;
    None when either has no steady step time or no noise estimate.

    Both were judged against the same reference, so only the launches' own noise is in it:
    sigma^2 (1 + 1/k) plus the within-run errors (a rerun judged on k launches together: their
    geometric mean)."""
    a, b = first.comparison, rerun.comparison
    if a is None or b is None or not a.candidate or not b.candidate:
        return None
    t1, t2 = a.candidate_step_time_s, b.candidate_step_time_s
    if not (math.isfinite(a.sigma) and math.isfinite(a.df) and t1 > 0 and t2 > 0):
        return None
    k = len(b.candidate)
    within = (a.candidate[0].rel_se or 0.0) ** 2
    within += sum((r.rel_se or 0.0) ** 2 for r in b.candidate) / k**2
    return math.log(t1 / t2), math.sqrt(a.sigma**2 * (1 + 1 / k) + within), a.df


def slower_than(first: Evaluation, rerun: Evaluation) -> tuple[bool, float, float]:
    """(first slower than rerun by more than the noise, the difference, its bound at
    NAMING_SHARE x alpha): gap() against its one-sided t quantile."""
    found = gap(first, rerun)
    if found is None or first.comparison is None:
        return False, math.nan, math.nan
    d, se, df = found
    bound = t_quantile(1 - NAMING_SHARE * first.comparison.alpha, df) * se
    return d > bound, math.expm1(d), math.expm1(bound)


def _straggler(
    first: Evaluation, contra: Evaluation, candidates: list[str]
) -> tuple[str, str] | None:
    """(the node the first run's straggler reports single out, why), when the rerun's do not
    single out the same rank (a rank slow wherever it runs is its role in the job, not its
    node); None when they do not point at one of the candidates."""
    found, node = singled_out(first), slowest_node(first)
    if found is None or node not in candidates:
        return None
    again = singled_out(contra)
    if again is not None and again.get("rank") == found.get("rank"):
        return None
    return node, (
        f"rank {found.get('rank')} on {node} was the slowest in {found.get('reports')} of "
        f"{found.get('of')} straggler reports ({found.get('how')})"
    )


def suspects(
    first: Evaluation,
    reruns: Sequence[Evaluation],
    contra: Evaluation,
    flagged: Collection[str] = (),
) -> Suspects:
    """The nodes to name for an UNCONFIRMED first run, on the evidence of the module doc.

    contra: the rerun that contradicted the first; flagged: the nodes `perfgate nodes` flags.
    """
    candidates = only_on_first(first, reruns)
    known = [n for n in candidates if n in flagged]
    if known:
        return Suspects(known, "flagged by perfgate nodes")
    slower, d, bound = slower_than(first, contra)
    if not math.isfinite(d):
        return Suspects([], "no node explains it")
    vs = f"the first run {d:+.1%} vs the rerun"
    named = _straggler(first, contra, candidates) if slower else None
    if named is not None:
        return Suspects([named[0]], f"{named[1]}; {vs}, beyond the noise bound {bound:.1%}")
    if slower:
        return Suspects(
            [],
            f"no node explains it ({vs}, beyond the noise bound {bound:.1%}: one slow launch, "
            "on no node perfgate nodes flags or a straggler report singles out)",
        )
    return Suspects(
        [],
        f"no node explains it ({vs}, within the noise bound {bound:.1%}, on no node perfgate "
        "nodes flags)",
    )
