"""A one-run REGRESSION confirmed, or not, by another launch of the row on other nodes.

On a real cluster most false REGRESSIONs of a nightly are one launch whose nodes were slow
(a throttling GPU, a bad link): the same row run again on other nodes tells that apart from a
slower container. The rule (docs/nightly.md):

    first run REGRESSION, confirmation REGRESSION      -> REGRESSION (reproduced elsewhere)
    first run REGRESSION, confirmation PASS/SHIFT/...  -> UNCONFIRMED: passes with a warning
                                                          naming the first run's nodes
    first run REGRESSION, confirmation INCONCLUSIVE    -> INCONCLUSIVE (neither reproduced
                                                          nor contradicted), or UNCONFIRMED
                                                          when its interval lies wholly below
                                                          the first run's
    first run REGRESSION, confirmation INFRA           -> REGRESSION stands, with the cause
    first run INCONCLUSIVE leaning slow (an option)    -> both runs judged together

With --confirm auto, a first rerun that neither reproduces nor contradicts is followed by a
second and the two are judged together; two reruns that disagree beyond their noise leave
the row INCONCLUSIVE (one was a slow launch: their mean is no measurement of the row).

The confirmation is judged exactly as the first run is (same baseline, same history, the
same rule), with its run in place of the first: a row that is really slower stays slower.

With several confirmations (--confirm N), the first must reproduce the REGRESSION (two
launches on different nodes agree) and each later one may only veto it: a later PASS, or an
interval wholly below the first run's, makes the row UNCONFIRMED; a later INCONCLUSIVE or
REGRESSION leaves it standing. A later rerun runs only while the REGRESSION stands. Where
slowness is not tied to nodes, two slow launches of one row look like a real slowdown and a
third launch tells them apart (it is seldom slow too); asking that launch only not to
contradict, rather than to reproduce, spares a real slowdown near the tolerance from clearing
the bar a third time (docs/statistics.md, "A night of the whole matrix").
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, replace
from typing import Any

from perfgate import nodenames
from perfgate.runs import RunResult
from perfgate.stats.dist import t_quantile
from perfgate.verdicts.single import (
    INCONCLUSIVE,
    INFRA,
    REGRESSION,
    UNCONFIRMED,
    Evaluation,
)
from perfgate.verdicts.suspects import gap, suspects

SUSPECTS_SHOWN = 8  # nodes named in a message (all of them are in results.json)


@dataclass(frozen=True)
class RerunPolicy:
    """How many reruns a one-launch REGRESSION may get (--confirm auto, or --confirm N)."""

    most: int  # reruns at most, each asked only while the verdict is open
    budget: bool = False  # the session's reruns within one rerun per row (perfgate.suite)
    # A rerun contradicts a REGRESSION when it is shown within the tolerance at this share of
    # alpha (1: its own PASS verdict), or lies wholly below the first run.
    veto_share: float = 1.0
    # A first rerun that neither reproduces nor contradicts is followed by another, and the
    # two are judged together (else it leaves the row INCONCLUSIVE).
    pool_open: bool = False
    # An INCONCLUSIVE first run whose one-sided p of "slower" is at most this is rerun too,
    # and becomes a REGRESSION only when its reruns reproduce one (None: never).
    lean_p: float | None = None
    # After a reproduced REGRESSION, a second reproduction settles it, and a third rerun runs
    # only when the second neither reproduced nor contradicted it (else, with most >= 3, each
    # later rerun may veto until most).
    third_if_open: bool = False

    @property
    def name(self) -> str:
        """What --confirm says."""
        return "auto" if self.budget else str(self.most)


# The default where a row's verdict rests on one run (docs/nightly.md, "Confirmation on
# other nodes").
AUTO = RerunPolicy(3, budget=True, veto_share=0.1, pool_open=True, lean_p=0.02, third_if_open=True)
OFF = RerunPolicy(0)  # --confirm 0, and sessions whose verdicts rest on several runs
MAX_RERUNS = 3  # --confirm N at most

# The n-th rerun of a row, judged; or, as a string, why there is none (a replay folder
# without it, a session whose rerun budget is spent): the reruns stop there.
Rerun = Callable[[int], "Evaluation | str"]


def wants_confirmation(
    ev: Evaluation, inconclusive: bool = False, lean_p: float | None = None
) -> str | None:
    """Why this row's verdict needs a confirmation run, or None (one-run modes only).

    inconclusive: an INCONCLUSIVE run leaning slow too (--confirm-inconclusive); lean_p: one
    whose p of "slower" is at most this (the rerun policy's lean_p)."""
    if ev.mode not in ("stored", "history") or ev.comparison is None:
        return None
    if ev.verdict == REGRESSION:
        return "REGRESSION on one launch"
    delta = ev.comparison.delta
    if ev.verdict != INCONCLUSIVE or not (math.isfinite(delta) and delta > 0):
        return None
    if inconclusive:
        return f"INCONCLUSIVE leaning slow ({delta:+.1%})"
    p = ev.comparison.p_slower
    if lean_p is not None and p <= lean_p:
        return f"INCONCLUSIVE leaning slow ({delta:+.1%}, p {p:.3f} <= {lean_p:g})"
    return None


def _nodes(res: RunResult | None) -> list[str]:
    """The run's node names (host names only: the readers at the door dropped the rest)."""
    return [n for n in res.nodes if nodenames.is_name(n)] if res is not None else []


def _job(ev: Evaluation) -> str:
    res = ev.result
    job = f"job {res.job_id}" if res is not None and res.job_id else "a launch"
    nodes = _nodes(res)
    shown = ",".join(nodes[:SUSPECTS_SHOWN]) + (",..." if len(nodes) > SUSPECTS_SHOWN else "")
    return f"{job} on {shown}" if nodes else job


def _delta(ev: Evaluation) -> str:
    d = ev.delta
    return f"{d:+.1%}" if d is not None and math.isfinite(d) else "no delta"


def _run_dict(ev: Evaluation, role: str) -> dict[str, Any]:
    res = ev.result
    d = ev.delta
    return {
        "role": role,
        "verdict": ev.verdict,
        "delta": d if d is not None and math.isfinite(d) else None,
        "step_time_s": ev.measured.step_time_s if ev.measured is not None else None,
        "job_id": res.job_id if res is not None else None,
        "nodes": _nodes(res),
        "cause": ev.cause,
    }


def _below(confirmation: Evaluation, first: Evaluation) -> bool:
    """The confirmation's interval lies wholly below the first run's: it measured something
    else, even if it cannot tell its own delta from the tolerance (INCONCLUSIVE)."""
    a, b = confirmation.comparison, first.comparison
    if a is None or b is None:
        return False
    return math.isfinite(a.ci_high) and math.isfinite(b.ci_low) and a.ci_high < b.ci_low


def within_at(ev: Evaluation, share: float) -> bool:
    """The run is shown within its tolerance at share x its alpha (upper bound of the slowdown
    at that level below the tolerance): with share 1, its own PASS or IMPROVEMENT."""
    c = ev.comparison
    if c is None or not (math.isfinite(c.delta) and math.isfinite(c.se) and c.delta > -1):
        return False
    high = math.expm1(math.log1p(c.delta) + t_quantile(1 - share * c.alpha, c.df) * c.se)
    return high <= c.tolerance


def contradicts(
    confirmation: Evaluation,
    first: Evaluation,
    share: float = 1.0,
    reproduced: Evaluation | None = None,
) -> bool:
    """The confirmation measured no slowdown where the first run did: shown within the
    tolerance (a verdict other than REGRESSION, INCONCLUSIVE or INFRA; with share < 1, at
    share x alpha), or an interval wholly below the first run's (and, after a rerun that
    reproduced the REGRESSION, below that rerun's too: a first run that was a slow launch on
    top of a real slowdown is not what a later rerun should be measured against)."""
    if confirmation.verdict in (REGRESSION, INFRA):
        return False
    if _below(confirmation, first) and (reproduced is None or _below(confirmation, reproduced)):
        return True
    if share >= 1:
        return confirmation.verdict != INCONCLUSIVE
    return within_at(confirmation, share)


def settled(
    first: Evaluation, confirmations: Sequence[Evaluation], policy: RerunPolicy | None = None
) -> bool:
    """No further confirmation can change the row's verdict (the reruns stop).

    A failed rerun (INFRA) settles nothing. The first judged rerun settles the row when it
    contradicts the REGRESSION, and when it is open (neither reproduces nor contradicts)
    unless the policy pools (then the next judged rerun settles it: the two are judged
    together). After a reproduced REGRESSION, the first later rerun that contradicts it does,
    and (with the policy's third_if_open) one that reproduces it again.
    """
    policy = policy or RerunPolicy(MAX_RERUNS)
    share = policy.veto_share
    judged = [c for c in confirmations if c.verdict != INFRA]
    if not judged:
        return False
    if judged[0].verdict != REGRESSION:
        if policy.pool_open and _open(judged[0], first, share):
            return len(judged) >= 2
        return True
    later = judged[1:]
    if any(contradicts(c, first, share, judged[0]) for c in later):
        return True
    return policy.third_if_open and bool(later) and later[0].verdict == REGRESSION


def _open(rerun: Evaluation, first: Evaluation, share: float) -> bool:
    """A rerun that neither reproduced the REGRESSION nor contradicted it."""
    return rerun.verdict not in (REGRESSION, INFRA) and not contradicts(rerun, first, share)


Pool = Callable[[Sequence[Evaluation]], Evaluation]  # launches of the row judged together


def disagree(a: Evaluation, b: Evaluation) -> bool:
    """Two launches of the row measured different step times beyond their noise (two-sided, at
    the row's alpha): where one was slow, judging them together would only halve its slowness."""
    found = gap(a, b)
    if found is None or a.comparison is None:
        return False
    d, se, df = found
    return abs(d) > t_quantile(1 - a.comparison.alpha / 2, df) * se


def confirm(
    first: Evaluation,
    rerun: Rerun,
    policy: RerunPolicy | int,
    *,
    inconclusive: bool = False,
    pool: Pool | None = None,
    same_nodes_note: str | None = None,
    excluded: Sequence[str] = (),
    flagged: Collection[str] = (),
) -> Evaluation:
    """The row's verdict after the reruns its first run asks for: the one loop of a live
    session, a replay and the evaluator.

    rerun(n) is the n-th rerun judged (n = 1, 2, ... up to the policy's most), asked only
    while the verdict is not settled; a string instead says why there is no n-th rerun, and
    the reruns stop there. pool(launches) judges launches of the row together (an
    INCONCLUSIVE first run leaning slow with its rerun, with inconclusive=True; two reruns
    after an open one, with the policy's pool_open). same_nodes_note,
    excluded and flagged: as combine().
    """
    policy = policy if isinstance(policy, RerunPolicy) else RerunPolicy(policy)
    if policy.most < 1 or wants_confirmation(first, inconclusive, policy.lean_p) is None:
        return first
    kw = {"same_nodes_note": same_nodes_note, "excluded": excluded, "flagged": flagged}
    if first.verdict != REGRESSION and inconclusive:  # --confirm-inconclusive: both runs
        got = rerun(1)
        if isinstance(got, str):
            return combine(first, [], stopped=got, **kw)
        return combine(first, [got], pooled=pool([first, got]) if pool else None, **kw)
    if pool is None:
        policy = replace(policy, pool_open=False)
    reruns: list[Evaluation] = []
    stopped = None
    for n in range(1, policy.most + 1):
        got = rerun(n)
        if isinstance(got, str):
            stopped = got
            break
        reruns.append(got)
        if settled(first, reruns, policy):
            break
    judged = [c for c in reruns if c.verdict != INFRA]
    together = None
    if policy.pool_open and len(judged) >= 2 and _open(judged[0], first, policy.veto_share):
        together = pool(judged[:2])  # type: ignore[misc]
    if first.verdict != REGRESSION:  # leaning INCONCLUSIVE: only its reruns can make it one
        return _leaning(first, reruns, together, stopped, policy, kw)
    return combine(first, reruns, stopped=stopped, together=together, policy=policy, **kw)


def _leaning(
    first: Evaluation,
    reruns: Sequence[Evaluation],
    together: Evaluation | None,
    stopped: str | None,
    policy: RerunPolicy,
    kw: dict[str, Any],
) -> Evaluation:
    """An INCONCLUSIVE first run leaning slow, after its reruns: settled as a REGRESSION's
    would be; a REGRESSION when they reproduce one, else INCONCLUSIVE as it was."""
    as_if = replace(first, verdict=REGRESSION)
    ev = combine(as_if, reruns, stopped=stopped, together=together, policy=policy, **kw)
    where = "on the same node" if kw["same_nodes_note"] else "on other nodes"
    assert ev.confirmation is not None
    ev.confirmation["runs"][0]["verdict"] = first.verdict
    if ev.verdict == REGRESSION:
        shown = ", ".join(f"{_delta(c)} ({_job(c)})" for c in ev.confirmed_by if c.verdict != INFRA)
        message = (
            f"{first.row.id}: REGRESSION: the first run was {_delta(first)} slower than the "
            f"baseline, INCONCLUSIVE alone ({_job(first)}); reruns {where} reproduced a "
            f"slowdown: {shown}"
        )
        return replace(ev, message=message)
    judged = [c for c in ev.confirmed_by if c.verdict != INFRA]
    said = ", ".join(f"{_delta(c)} ({c.verdict}, {_job(c)})" for c in judged) or "none judged"
    message = f"{first.message}; reruns {where} did not reproduce a slowdown: {said}"
    return replace(ev, verdict=first.verdict, message=message)


def combine(
    first: Evaluation,
    confirmations: Sequence[Evaluation],
    *,
    same_nodes_note: str | None = None,
    excluded: Sequence[str] = (),
    pooled: Evaluation | None = None,
    flagged: Collection[str] = (),
    stopped: str | None = None,
    together: Evaluation | None = None,
    policy: RerunPolicy | None = None,
) -> Evaluation:
    """The row's verdict from its first run and its confirmation runs (see the module doc).

    same_nodes_note: why the confirmations could not run on other nodes (local executor).
    excluded: the nodes the confirmations were kept off. pooled: the row judged on the first
    run and the confirmation together (an INCONCLUSIVE leaning slow): its verdict is the row's.
    flagged: the nodes `perfgate nodes` flags (evidence against a first run's nodes:
    perfgate.verdicts.suspects). stopped: why the reruns stopped before the verdict settled.
    together: the first two judged reruns judged together, after the first was open
    (--confirm auto): a REGRESSION reproduces it, a PASS contradicts it. policy: how strict a
    contradiction is (its veto_share; default: a rerun's own PASS).
    """
    policy = policy or RerunPolicy(MAX_RERUNS)
    share = policy.veto_share
    if not confirmations and stopped is None:
        return first
    info: dict[str, Any] = {
        "runs": [_run_dict(first, "first")]
        + [_run_dict(c, f"confirmation {i + 1}") for i, c in enumerate(confirmations)],
        "excluded": list(excluded),
        "suspect_nodes": [],
        "suspects_why": None,
        "note": same_nodes_note,
        "stopped": stopped,
    }
    where = "on the same node" if same_nodes_note else "on other nodes"
    failed = [c for c in confirmations if c.verdict == INFRA]
    judged = [c for c in confirmations if c.verdict != INFRA]
    notes = list(first.notes)
    if same_nodes_note:
        notes.append(same_nodes_note)
    if failed:
        notes.append(
            "confirmation "
            + "; ".join(f"{_job(c)} failed ({c.cause})" for c in failed)
            + ": the first run's verdict stands"
        )
    if stopped and not settled(first, confirmations, policy):
        notes.append(f"no further confirmation: {stopped}")
    keep = {"confirmation": info, "confirmed_by": tuple(confirmations), "notes": tuple(notes)}
    if not judged:
        return replace(first, **keep)
    if pooled is not None:
        shown = ", ".join(_job(c) for c in judged)
        message = f"{pooled.message}; judged on the first run and a confirmation {where} ({shown})"
        # the numbers are both runs'; each run stays with its own job in results and history
        return replace(pooled, message=message, result=first.result, **keep)
    if together is not None:
        return _together(first, judged[:2], together, where, flagged, info, keep, same_nodes_note)
    vetoes = [c for c in judged[1:] if contradicts(c, first, share, judged[0])]
    if judged[0].verdict == REGRESSION and not vetoes:
        shown = ", ".join(f"{_delta(c)} ({_job(c)})" for c in judged if c.verdict == REGRESSION)
        more = [c for c in judged[1:] if c.verdict != REGRESSION]
        tail = "; not contradicted by " + ", ".join(
            f"{_delta(c)} ({_unsure(c, share)}, {_job(c)})" for c in more
        ) if more else ""  # fmt: skip
        return replace(first, message=f"{first.message}; reproduced {where}: {shown}{tail}", **keep)
    contra = judged[0] if judged[0].verdict != REGRESSION else vetoes[0]
    if contra is judged[0] and not contradicts(contra, first, share):
        verdict, what = INCONCLUSIVE, "neither reproduced nor contradicted it"
        blame = ""
    else:
        verdict, what = UNCONFIRMED, f"measured {_delta(contra)} ({contra.verdict})"
        blame = _blame(first, judged, contra, flagged, info) if not same_nodes_note else ""
    message = (
        f"{first.row.id}: {verdict}: the first run was {_delta(first)} slower than the baseline "
        f"({first.verdict}, {_job(first)}) but a confirmation {where} {what} "
        f"({_job(contra)}){blame}"
    )
    # The row keeps its first run's numbers (what the report plots as tonight's run); the
    # confirmation's are in `confirmed_by` and results.json's runs.
    return replace(first, verdict=verdict, message=message, **keep)


def _unsure(rerun: Evaluation, share: float) -> str:
    """A later rerun's verdict as the message shows it: a PASS that is not shown within the
    tolerance at share x alpha does not contradict, and says so."""
    c = rerun.comparison
    if rerun.verdict != "PASS" or share >= 1 or c is None:
        return rerun.verdict
    return f"PASS, not within {c.tolerance:.0%} at {share * c.alpha:.1%}"


def _together(
    first: Evaluation,
    pair: Sequence[Evaluation],
    both: Evaluation,
    where: str,
    flagged: Collection[str],
    info: dict[str, Any],
    keep: dict[str, Any],
    same_nodes_note: str | None,
) -> Evaluation:
    """The verdict of a first run whose first rerun was INCONCLUSIVE, on the two reruns
    judged together: REGRESSION reproduces it, PASS (or IMPROVEMENT, SHIFT) contradicts it,
    INCONCLUSIVE leaves it at that."""
    jobs = " and ".join(_job(c) for c in pair)
    what = f"two reruns {where} together ({jobs}) measured {_delta(both)} ({both.verdict})"
    if both.verdict == REGRESSION and disagree(*pair):
        message = (
            f"{first.row.id}: INCONCLUSIVE: the first run was {_delta(first)} slower than the "
            f"baseline ({first.verdict}, {_job(first)}); two reruns {where} disagree beyond "
            f"their noise ({_delta(pair[0])}, {_job(pair[0])}; {_delta(pair[1])}, "
            f"{_job(pair[1])}): one of them was a slow launch, so their mean tells nothing"
        )
        return replace(first, verdict=INCONCLUSIVE, message=message, **keep)
    if both.verdict == REGRESSION:
        return replace(first, message=f"{first.message}; reproduced by {what}", **keep)
    verdict = INCONCLUSIVE if both.verdict == INCONCLUSIVE else UNCONFIRMED
    blame = ""
    if verdict == UNCONFIRMED and not same_nodes_note:
        blame = _blame(first, pair, both, flagged, info)
    message = (
        f"{first.row.id}: {verdict}: the first run was {_delta(first)} slower than the baseline "
        f"({first.verdict}, {_job(first)}) but {what}{blame}"
    )
    return replace(first, verdict=verdict, message=message, **keep)


def _blame(
    first: Evaluation,
    judged: Sequence[Evaluation],
    contra: Evaluation,
    flagged: Collection[str],
    info: dict[str, Any],
) -> str:
    """The message's tail for an UNCONFIRMED row: the suspect nodes and why, or that no node
    explains the slowdown (perfgate.verdicts.suspects); fills info's suspect_nodes."""
    found = suspects(first, judged, contra, flagged)
    info["suspect_nodes"], info["suspects_why"] = found.nodes, found.why
    if not found.nodes:
        return f": the slowdown did not reproduce and {found.why}"
    named = found.nodes
    listed = ", ".join(named[:SUSPECTS_SHOWN]) + (" ..." if len(named) > SUSPECTS_SHOWN else "")
    return f": suspect nodes {listed} ({found.why})"
