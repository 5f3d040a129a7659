"""Which nodes an UNCONFIRMED verdict names, and only when the evidence points at them.

A first run that a rerun on other nodes did not reproduce was slow for a reason the row does
not carry, but not every such run was on a slow node: a run in the tail of the row's own noise
is contradicted just the same, and naming its healthy nodes sends an administrator after
nothing. So nodes are named only on evidence (README "Confirmation on other nodes"):

- the first run used nodes `perfgate nodes` flags in the history: those nodes;
- else the first run was slower than the rerun that contradicted it by more than the noise:
  log(first / rerun) beyond the one-sided t quantile at the row's alpha, with the standard
  error of a difference of two launches (2 sigma^2 of the row's run-to-run sigma, plus each
  run's within-run error; the reference cancels). Then the first run's nodes no rerun ran
  on, the node of its slowest rank first when the straggler reports name one;
- else none: the message says that the slowdown did not reproduce and no node explains it.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from perfgate.runs import RunResult
from perfgate.stats.dist import t_quantile
from perfgate.verdicts.single import Evaluation


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

    The difference is log(first / rerun) of their steady step times; both were judged against
    the same reference, so only the launches' own noise is in it.
    """
    a, b = first.comparison, rerun.comparison
    if a is None or b is None or first.measured is None or rerun.measured is None:
        return False, math.nan, math.nan
    if not (math.isfinite(a.sigma) and math.isfinite(a.df)):
        return False, math.nan, math.nan
    d = math.log(first.measured.step_time_s / rerun.measured.step_time_s)
    within = sum((r.rel_se or 0.0) ** 2 for r in (*a.candidate[:1], *b.candidate[:1]))
    se = math.sqrt(2 * a.sigma**2 + within)
    bound = t_quantile(1 - a.alpha, a.df) * se
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
