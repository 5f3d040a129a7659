"""Which nodes an UNCONFIRMED verdict names, and only when the evidence points at them.

A first run that a rerun on other nodes did not reproduce was slow for a reason the row does
not carry, but not every such run was on a slow node: a run in the tail of the row's own noise
is contradicted just the same, and naming its healthy nodes sends an administrator after
nothing. So nodes are named only on evidence (README "Confirmation on other nodes"):

- the first run used nodes `perfgate nodes` flags in the history: those nodes;
- else the first run was slower than the rerun that contradicted it by more than the noise:
  log(first / rerun) beyond the one-sided t quantile at a hundredth of the row's alpha
  (NAMING_SHARE), with the standard error of a difference of two launches (2 sigma^2 of the
  row's run-to-run sigma, plus each run's within-run error; the reference cancels). Then the
  first run's nodes no rerun ran on, the node of its slowest rank first when the straggler
  reports name one;
- else none: the message says that the slowdown did not reproduce and no node explains it.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from perfgate.runs import RunResult
from perfgate.stats.dist import t_quantile
from perfgate.verdicts.single import Evaluation

# Naming a node is an accusation: it needs far more evidence than a verdict. A first run that
# was a REGRESSION without a slow node is already a tail draw of the row's noise (it was picked
# for being high), so at the verdict's own alpha about a quarter of such runs would still look
# slower than their rerun, and at a tenth of it one in ten did (scripts/evaluate_detector.py
# --matrix, cluster model, where first runs are kept off the slow nodes and every UNCONFIRMED
# follows a healthy first run); at a hundredth, none of those did, while most first runs that
# were really slow by 3% or more still stand out (docs/statistics.md: which nodes an
# UNCONFIRMED names).
NAMING_SHARE = 0.01


@dataclass(frozen=True)
class Suspects:
    """The nodes an UNCONFIRMED verdict names and why ([] and why not, when none)."""

    nodes: list[str]
    why: str


def _nodes(res: RunResult | None) -> list[str]:
    return list(res.nodes) if res is not None else []


def slowest_node(ev: Evaluation) -> str | None:
    """The node of the slowest rank the run's straggler reports name (None: none say)."""
    runs = ev.result.runs if ev.result is not None else ()
    found = runs[-1].slowest if runs else None
    return found.get("node") if found else None


def only_on_first(first: Evaluation, reruns: Sequence[Evaluation]) -> list[str]:
    """The first run's nodes that no rerun ran on (all of them when they are disjoint), the
    node of its slowest rank first when its straggler reports name one."""
    elsewhere = {n for c in reruns for n in _nodes(c.result)}
    nodes = [n for n in _nodes(first.result) if n not in elsewhere]
    slow = slowest_node(first)
    return [slow, *(n for n in nodes if n != slow)] if slow in nodes else nodes


def slower_than(first: Evaluation, rerun: Evaluation) -> tuple[bool, float, float]:
    """(first slower than rerun by more than the noise, the difference, its bound at alpha).

    The difference is log(first / rerun) of their steady step times (a rerun judged on k
    launches together: their geometric mean); both were judged against the same reference,
    so only the launches' own noise is in it: sigma^2 (1 + 1/k) plus the within-run errors.
    """
    a, b = first.comparison, rerun.comparison
    if a is None or b is None or not a.candidate or not b.candidate:
        return False, math.nan, math.nan
    t1, t2 = a.candidate_step_time_s, b.candidate_step_time_s
    if not (math.isfinite(a.sigma) and math.isfinite(a.df) and t1 > 0 and t2 > 0):
        return False, math.nan, math.nan
    k = len(b.candidate)
    within = (a.candidate[0].rel_se or 0.0) ** 2
    within += sum((r.rel_se or 0.0) ** 2 for r in b.candidate) / k**2
    se = math.sqrt(a.sigma**2 * (1 + 1 / k) + within)
    d = math.log(t1 / t2)
    bound = t_quantile(1 - NAMING_SHARE * a.alpha, a.df) * se
    return d > bound, math.expm1(d), math.expm1(bound)


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
    if slower and candidates:
        return Suspects(
            candidates,
            f"the first run {d:+.1%} vs the rerun, beyond the noise bound {bound:.1%}",
        )
    if not math.isfinite(d):
        return Suspects([], "no node explains it")
    return Suspects(
        [],
        f"no node explains it (the first run {d:+.1%} vs the rerun, within the noise bound "
        f"{bound:.1%}, on no node perfgate nodes flags)",
    )
