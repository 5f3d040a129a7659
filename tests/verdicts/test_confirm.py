"""A one-launch REGRESSION confirmed or contradicted by a launch on other nodes
(perfgate.verdicts.confirm), on a real 8-GPU B200 series (Megatron-Bridge, NeMo 26.02)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from perfgate import verdicts
from perfgate.catalog import Row
from perfgate.logs import Step, StepSeries
from perfgate.runs import Diagnosis, RunRecord, RunResult
from perfgate.verdicts.confirm import (
    combine,
    confirm,
    contradicts,
    settled,
    wants_confirmation,
)
from perfgate.verdicts.suspects import suspects


def result(steps: list[float], factor: float, job: str, nodes: tuple[str, ...]) -> RunResult:
    series = StepSeries("megatron", tuple(Step(i, t * factor) for i, t in enumerate(steps)))
    run = RunRecord(image="nemo:26.02", label="baseline", series=series)
    return RunResult("r", job, "COMPLETED", runs=(run,), nodes=nodes)


def judge(row: Row, steps: list[float], factor: float, job: str, nodes: tuple[str, ...]):
    return verdicts.evaluate(row, result(steps, factor, job, nodes), source="live")


STRAGGLER = {"rank": 12, "node": "n18", "reports": 5, "of": 6, "how": "NVRx straggler report"}


def with_slowest(ev: verdicts.Evaluation, **slowest) -> verdicts.Evaluation:
    """The evaluation with its run's straggler report replaced."""
    run = replace(ev.result.runs[0], slowest=slowest)
    return replace(ev, result=replace(ev.result, runs=(run,)))


def test_a_slow_first_run_is_unconfirmed_as_one_slow_launch_naming_no_node(row, steps) -> None:
    first = judge(row, steps, 1.045, "101", ("n17", "n18"))
    assert first.verdict == "REGRESSION"
    assert wants_confirmation(first) == "REGRESSION on one launch"
    again = judge(row, steps, 1.002, "102", ("n40", "n41"))
    ev = combine(first, [again], excluded=["n17", "n18"])
    assert ev.verdict == "UNCONFIRMED" and ev.verdict in verdicts.WARN
    assert ev.message.startswith(f"{row.id}: UNCONFIRMED: the first run was +4.")
    assert "job 101 on n17,n18" in ev.message and "job 102 on n40,n41" in ev.message
    # beyond the noise, but a slow launch is not a slow node: no evidence names one
    assert ev.message.endswith(
        ": the slowdown did not reproduce and no node explains it (the first run +4.3% vs the "
        "rerun, beyond the noise bound 3.2%: one slow launch, on no node perfgate nodes flags "
        "or a straggler report singles out)"
    )
    assert ev.measured == first.measured  # tonight's numbers stay the first run's
    info = ev.confirmation
    assert info["suspect_nodes"] == [] and info["excluded"] == ["n17", "n18"]
    assert [r["role"] for r in info["runs"]] == ["first", "confirmation 1"]
    assert info["runs"][1]["verdict"] == "PASS" and info["runs"][1]["nodes"] == ["n40", "n41"]
    assert ev.confirmed_by == (again,)


def test_a_real_slowdown_is_reproduced_and_stays_a_regression(row, steps) -> None:
    first = judge(row, steps, 1.06, "201", ("n1",))
    again = judge(row, steps, 1.058, "202", ("n2",))
    ev = combine(first, [again])
    assert ev.verdict == "REGRESSION"
    assert ev.message.startswith(first.message)
    assert ev.message.endswith("; reproduced on other nodes: +5.8% (job 202 on n2)")


def test_a_later_confirmation_can_veto_but_need_not_reproduce(row, steps) -> None:
    """--confirm 2: the first rerun must reproduce; the second may only contradict."""
    first = judge(row, steps, 1.06, "301", ("n1",))
    yes = judge(row, steps, 1.06, "302", ("n2",))
    no = judge(row, steps, 1.0, "303", ("n3",))
    assert yes.verdict == "REGRESSION" and no.verdict == "PASS"
    ev = combine(first, [yes, no])
    assert ev.verdict == "UNCONFIRMED" and "(job 303 on n3)" in ev.message
    # n1 is the one node only the first run used: the one a straggler report can name
    straggler = {"rank": 3, "node": "n1", "reports": 4, "of": 4, "how": "NVRx"}
    assert suspects(with_slowest(first, **straggler), [yes, no], no).nodes == ["n1"]
    assert settled(first, [yes, no]) and not settled(first, [yes])
    # a second rerun that cannot tell (its interval overlaps the first run's) leaves it standing
    noisy = judge(row, steps, 1.05, "304", ("n4",))
    unsure = replace(noisy, verdict="INCONCLUSIVE",
                     comparison=replace(noisy.comparison, ci_low=0.01, ci_high=0.09))  # fmt: skip
    assert not contradicts(unsure, first) and contradicts(no, first)
    ev = combine(first, [yes, unsure])
    assert ev.verdict == "REGRESSION" and not settled(first, [yes, unsure])
    assert ev.message.endswith(
        "; reproduced on other nodes: +6.0% (job 302 on n2); not contradicted by +5.0% "
        "(INCONCLUSIVE, job 304 on n4)"
    )
    # ...but the first rerun must reproduce: an unsure first rerun settles it as INCONCLUSIVE
    assert combine(first, [unsure, yes]).verdict == "INCONCLUSIVE"
    assert settled(first, [unsure])
    # a failed rerun settles nothing: the next one is asked
    broken = RunResult("r", "305", "FAILED", nodes=("n5",), diagnosis=Diagnosis("NCCL", "x"))
    failed = verdicts.evaluate(row, broken, source="live")
    assert not settled(first, [failed]) and combine(first, [failed, yes]).verdict == "REGRESSION"


def test_a_confirmation_that_cannot_tell_is_inconclusive(row, steps) -> None:
    first = judge(row, steps, 1.06, "401", ("n1",))
    noisy = judge(row, steps, 1.05, "402", ("n2",))
    wide = replace(noisy.comparison, ci_low=0.01, ci_high=0.09)  # overlaps the first's
    ev = combine(first, [replace(noisy, verdict="INCONCLUSIVE", comparison=wide)])
    assert ev.verdict == "INCONCLUSIVE"
    assert "neither reproduced nor contradicted it" in ev.message
    assert ev.confirmation["suspect_nodes"] == []


def test_a_confirmation_wholly_below_the_first_run_contradicts_it(row, steps) -> None:
    first = judge(row, steps, 1.25, "411", ("n1",))
    noisy = judge(row, steps, 1.01, "412", ("n2",))
    wide = replace(noisy.comparison, ci_low=-0.04, ci_high=0.06)  # can't tell 5%, but not 25%
    assert wide.ci_high < first.comparison.ci_low
    ev = combine(first, [replace(noisy, verdict="INCONCLUSIVE", comparison=wide)])
    assert ev.verdict == "UNCONFIRMED" and ev.confirmation["suspect_nodes"] == []
    assert "+23.8% vs the rerun, beyond the noise bound" in ev.confirmation["suspects_why"]


def test_a_failed_confirmation_leaves_the_regression_standing(row, steps) -> None:
    first = judge(row, steps, 1.06, "501", ("n1",))
    broken = RunResult("r", "502", "FAILED", nodes=("n2",), diagnosis=Diagnosis("NCCL", "x"))
    failed = verdicts.evaluate(row, broken, source="live")
    ev = combine(first, [failed])
    assert ev.verdict == "REGRESSION" and ev.message == first.message
    assert any("job 502 on n2 failed (NCCL)" in n for n in ev.notes)


def test_the_local_executor_says_it_had_no_other_nodes(row, steps) -> None:
    first = judge(row, steps, 1.045, "601", ("gpu-box",))
    again = judge(row, steps, 1.0, "602", ("gpu-box",))
    note = "local executor: the confirmation ran on the same node (no other nodes)"
    ev = combine(first, [again], same_nodes_note=note)
    assert ev.verdict == "UNCONFIRMED" and "a confirmation on the same node" in ev.message
    assert "suspect" not in ev.message and note in ev.notes


def test_only_one_run_verdicts_ask_for_a_confirmation(row, steps) -> None:
    ok = judge(row, steps, 1.0, "701", ("n1",))
    assert wants_confirmation(ok) is None
    leaning = replace(judge(row, steps, 1.03, "702", ("n1",)), verdict="INCONCLUSIVE")
    assert wants_confirmation(leaning) is None
    assert wants_confirmation(leaning, inconclusive=True).startswith("INCONCLUSIVE leaning slow")
    paired = replace(judge(row, steps, 1.06, "703", ("n1",)), mode="paired")
    assert wants_confirmation(paired) is None  # A/B pairs already share their nodes


def test_results_and_history_keep_both_runs_with_their_own_jobs_and_nodes(
    row, steps, tmp_path
) -> None:
    from perfgate.history.records import record_mode, runs_from_record
    from perfgate.history.sqlite import SqliteStore
    from perfgate.history.store import Session
    from perfgate.report import results

    first = with_slowest(judge(row, steps, 1.045, "101", ("n17", "n18")), **STRAGGLER)
    ev = combine(first, [judge(row, steps, 1.0, "102", ("n40", "n41"))], excluded=["n17", "n18"])
    rec = results.record(ev, row, nodeid="t", outcome="passed", repro="r", source="live")
    assert [r["label"] for r in rec["runs"]] == ["baseline", "confirmation 1"]
    assert rec["runs"][1]["job_id"] == "102" and rec["runs"][1]["nodes"] == ["n40", "n41"]
    assert rec["confirmation"]["suspect_nodes"] == ["n18"]
    assert record_mode(rec) == "stored"  # a confirmation does not make it a --repeat row
    from perfgate.report.extras import detail_html

    page = detail_html(rec)
    assert "<td>confirmation 1</td><td>PASS</td>" in page and "<td>n40, n41</td>" in page
    assert (
        "reruns kept off: n17, n18; suspect nodes: n18 (rank 12 on n18 was the slowest in 5 "
        in page
    )
    assert "of 6 straggler reports (NVRx straggler report); the first run +4.5% vs the " in page
    assert "rerun, beyond the noise bound 3.2%)" in page  # why it is named
    assert "Ran as job 101 on n17, n18; slowest rank 12 on n18 (NVRx" in page
    runs = runs_from_record(rec)
    assert [(r.job_id, r.nodes, r.verdict) for r in runs] == [
        ("101", ("n17", "n18"), "UNCONFIRMED"),
        ("102", ("n40", "n41"), "PASS"),
    ]
    store = SqliteStore(tmp_path / "h.sqlite")
    store.add_runs(store.start_session(Session("live")), runs)
    # the night's trend point is the confirmation: the first run's nodes were slow, not the row
    assert [p.job_id for p in store.points(row.id)] == ["102"]
    assert len(store.node_runs()) == 2  # both are evidence about their nodes


def test_a_slow_launch_whose_straggler_reports_single_out_a_node_names_that_node(
    row, steps
) -> None:
    first = with_slowest(judge(row, steps, 1.045, "801", ("n17", "n18")), **STRAGGLER)
    ev = combine(first, [judge(row, steps, 1.0, "802", ("n40",))])
    assert ev.confirmation["suspect_nodes"] == ["n18"]
    assert ev.message.endswith(
        ": suspect nodes n18 (rank 12 on n18 was the slowest in 5 of 6 straggler reports (NVRx "
        "straggler report); the first run +4.5% vs the rerun, beyond the noise bound 3.2%)"
    )


@pytest.mark.parametrize(
    "first_report, rerun_report, factor",
    [
        ({**STRAGGLER, "reports": 3}, None, 1.045),  # slowest in 3 of 6: no majority
        ({**STRAGGLER, "reports": 2, "of": 2}, None, 1.045),  # two reports are too few
        (STRAGGLER, {**STRAGGLER, "node": "n40"}, 1.045),  # rank 12 slow wherever it runs
        ({**STRAGGLER, "node": "n40"}, None, 1.045),  # a node the rerun also ran on
        (STRAGGLER, None, 1.02),  # the launch within the noise of its rerun
    ],
    ids=["no-majority", "too-few-reports", "rank-slow-everywhere", "not-only-first", "in-noise"],
)
def test_a_straggler_report_names_no_node_without_the_evidence(
    row, steps, first_report, rerun_report, factor
) -> None:
    first = with_slowest(judge(row, steps, factor, "811", ("n17", "n18")), **first_report)
    again = judge(row, steps, 1.0, "812", ("n40",))
    if rerun_report:
        again = with_slowest(again, **rerun_report)
    found = suspects(first, [again], again)
    assert found.nodes == [] and found.why.startswith("no node explains it"), found


# --- the one loop of live sessions, replays and the evaluator (confirm) ---------------------


@pytest.fixture(scope="module")
def launches(row, steps) -> dict[str, verdicts.Evaluation]:
    """The first run (+6%, REGRESSION) and reruns of each kind, on their own nodes."""
    reg = judge(row, steps, 1.058, "r", ("n2",))
    noisy = judge(row, steps, 1.05, "i", ("n3",))
    broken = RunResult("r", "f", "FAILED", nodes=("n4",), diagnosis=Diagnosis("NCCL", "x"))
    out = {
        "first": judge(row, steps, 1.06, "0", ("n1",)),
        "REGRESSION": reg,
        "PASS": judge(row, steps, 1.0, "p", ("n5",)),
        "INCONCLUSIVE": replace(noisy, verdict="INCONCLUSIVE",
                                comparison=replace(noisy.comparison, ci_low=0.01, ci_high=0.09)),
        "INFRA": verdicts.evaluate(row, broken, source="live"),
        "NEAR": judge(row, steps, 1.035, "n", ("n6",)),  # a PASS, but not at a tenth of alpha
    }  # fmt: skip
    assert [out[k].verdict for k in ("first", "REGRESSION", "PASS", "INFRA")] == [
        "REGRESSION", "REGRESSION", "PASS", "INFRA"
    ]  # fmt: skip
    return out


# (reruns on offer in order, --confirm N) -> (the row's verdict, reruns asked for)
PATHS = {
    # one rerun
    (("REGRESSION",), 1): ("REGRESSION", 1),
    (("PASS",), 1): ("UNCONFIRMED", 1),
    (("INCONCLUSIVE",), 1): ("INCONCLUSIVE", 1),
    (("INFRA",), 1): ("REGRESSION", 1),
    # two: a failed rerun settles nothing, the next one is asked
    (("INFRA", "PASS"), 2): ("UNCONFIRMED", 2),
    (("INFRA", "REGRESSION"), 2): ("REGRESSION", 2),
    (("INFRA", "INCONCLUSIVE"), 2): ("INCONCLUSIVE", 2),
    (("INFRA", "INFRA"), 2): ("REGRESSION", 2),
    # the first judged rerun must reproduce; a later one may only veto
    (("REGRESSION", "PASS"), 2): ("UNCONFIRMED", 2),
    (("REGRESSION", "REGRESSION"), 2): ("REGRESSION", 2),
    (("REGRESSION", "INCONCLUSIVE"), 2): ("REGRESSION", 2),
    (("REGRESSION", "INFRA"), 2): ("REGRESSION", 2),
    (("PASS", "REGRESSION"), 2): ("UNCONFIRMED", 1),
    (("INCONCLUSIVE", "REGRESSION"), 2): ("INCONCLUSIVE", 1),
    # three
    (("REGRESSION", "INFRA", "PASS"), 3): ("UNCONFIRMED", 3),
    (("REGRESSION", "INCONCLUSIVE", "PASS"), 3): ("UNCONFIRMED", 3),
    (("REGRESSION", "REGRESSION", "REGRESSION"), 3): ("REGRESSION", 3),
    (("REGRESSION", "PASS", "REGRESSION"), 3): ("UNCONFIRMED", 2),
    (("INFRA", "REGRESSION", "PASS"), 3): ("UNCONFIRMED", 3),
    (("INFRA", "INFRA", "PASS"), 3): ("UNCONFIRMED", 3),
}


@pytest.mark.parametrize(("offered", "most"), list(PATHS), ids=lambda x: str(x))
def test_every_path_of_reruns_settles_one_way(launches, offered, most) -> None:
    """confirm() asks for reruns only while the verdict is open, in any order of outcomes."""
    asked: list[int] = []

    def rerun(n: int):
        asked.append(n)
        return launches[offered[n - 1]]

    ev = confirm(launches["first"], rerun, most)
    verdict, reruns = PATHS[offered, most]
    assert (ev.verdict, len(asked)) == (verdict, reruns)
    assert asked == list(range(1, reruns + 1))
    assert [r["verdict"] for r in ev.confirmation["runs"][1:]] == list(offered[:reruns])
    assert ev.verdict != "UNCONFIRMED" or "UNCONFIRMED" in ev.message


def test_reruns_that_are_not_there_stop_the_loop_and_say_why(launches) -> None:
    """A replay without confirm-2/ (or a session out of rerun budget) keeps what it has."""
    first, reg = launches["first"], launches["REGRESSION"]
    ev = confirm(first, lambda n: reg if n == 1 else "no confirm-2/ folder", 2)
    assert ev.verdict == "REGRESSION" and ev.confirmation["stopped"] == "no confirm-2/ folder"
    assert "no further confirmation: no confirm-2/ folder" in ev.notes
    none = confirm(first, lambda n: "the rerun budget is spent", 2)
    assert none.verdict == "REGRESSION" and none.confirmed_by == ()
    assert any("the rerun budget is spent" in n for n in none.notes)
    assert confirm(first, lambda n: reg, 0) is first  # --confirm 0: nothing asked
    ok = launches["PASS"]
    assert confirm(ok, lambda n: pytest.fail("a PASS asks for no rerun"), 2) is ok


# --- which nodes an UNCONFIRMED verdict names (perfgate.verdicts.suspects) -----------------


def test_a_first_run_within_the_noise_of_its_rerun_names_no_node(row, steps) -> None:
    first = judge(row, steps, 1.045, "901", ("n17",))
    close = judge(row, steps, 1.035, "902", ("n40",))  # a PASS, 1% below the first run
    assert (first.verdict, close.verdict) == ("REGRESSION", "PASS")
    ev = combine(first, [close])
    assert ev.verdict == "UNCONFIRMED" and ev.confirmation["suspect_nodes"] == []
    assert ev.message.endswith(
        ": the slowdown did not reproduce and no node explains it (the first run +1.0% vs the "
        "rerun, within the noise bound 3.2%, on no node perfgate nodes flags)"
    )
    # the same runs, with the history flagging the first run's node: it is named
    flagged = combine(first, [close], flagged={"n17", "n99"})
    assert flagged.confirmation["suspect_nodes"] == ["n17"]
    assert flagged.message.endswith(": suspect nodes n17 (flagged by perfgate nodes)")
    assert flagged.confirmation["suspects_why"] == "flagged by perfgate nodes"


def test_the_noise_bound_of_two_launches_is_the_rows_own(row, steps) -> None:
    from perfgate.verdicts.suspects import slower_than

    first = judge(row, steps, 1.045, "911", ("n1",))
    again = judge(row, steps, 1.0, "912", ("n2",))
    slower, d, bound = slower_than(first, again)
    c = first.comparison
    se = 2 * c.sigma**2 + c.candidate[0].rel_se ** 2 + again.comparison.candidate[0].rel_se ** 2
    from perfgate.stats.dist import t_quantile

    assert slower and d == pytest.approx(0.045, abs=0.002)
    assert bound == pytest.approx(t_quantile(0.9999, c.df) * se**0.5, rel=0.02)


# --confirm auto: after an INCONCLUSIVE rerun a second, the two judged together
AUTO_PATHS = {
    ("PASS",): ("UNCONFIRMED", 1),
    ("REGRESSION", "PASS"): ("UNCONFIRMED", 2),
    ("REGRESSION", "REGRESSION"): ("REGRESSION", 2),  # reproduced twice: no third
    # reproduced, then a rerun that neither reproduces nor contradicts: a third may veto
    ("REGRESSION", "INCONCLUSIVE", "REGRESSION"): ("REGRESSION", 3),
    ("REGRESSION", "INCONCLUSIVE", "INCONCLUSIVE"): ("REGRESSION", 3),
    ("REGRESSION", "INCONCLUSIVE", "PASS"): ("UNCONFIRMED", 3),
    ("REGRESSION", "INCONCLUSIVE", "INFRA"): ("REGRESSION", 3),
    ("INCONCLUSIVE", "REGRESSION"): ("REGRESSION", 2),  # +5.0% and +5.8% together
    ("INCONCLUSIVE", "PASS"): ("UNCONFIRMED", 2),  # +5.0% and +0.0% together: within 5%
    # a failed rerun settles nothing: a third takes its place
    ("INCONCLUSIVE", "INFRA", "PASS"): ("UNCONFIRMED", 3),
    ("INFRA", "INCONCLUSIVE", "REGRESSION"): ("REGRESSION", 3),
    ("INCONCLUSIVE", "INFRA", "INFRA"): ("INCONCLUSIVE", 3),
    ("INFRA", "PASS"): ("UNCONFIRMED", 2),
    # a PASS close to the tolerance neither reproduces nor contradicts: a second rerun
    ("NEAR", "PASS"): ("UNCONFIRMED", 2),  # +3.5% and +0.0% together
    # +3.5% and +5.8%: 2.3% apart, beyond two launches' noise on this row (0.45% each): one
    # was a slow launch, so their mean (+4.6%) is no measurement of the row
    ("NEAR", "REGRESSION"): ("INCONCLUSIVE", 2),
    # after a reproduction a PASS that is not within 5% at alpha/10 does not veto
    ("REGRESSION", "NEAR", "NEAR"): ("REGRESSION", 3),
    ("REGRESSION", "NEAR", "PASS"): ("UNCONFIRMED", 3),
}


@pytest.mark.parametrize("offered", list(AUTO_PATHS), ids=lambda x: ">".join(x))
def test_auto_judges_two_reruns_together_after_an_inconclusive_one(row, launches, offered):
    from perfgate.suite.confirming import together
    from perfgate.verdicts.confirm import AUTO

    asked: list[int] = []

    def rerun(n: int):
        asked.append(n)
        return launches[offered[n - 1]]

    pooled: list[list[str]] = []

    def pool(evs):
        pooled.append([e.verdict for e in evs])
        return verdicts.evaluate(row, together(evs), source="live")

    ev = confirm(launches["first"], rerun, AUTO, pool=pool)
    assert (ev.verdict, len(asked)) == AUTO_PATHS[offered]
    judged = [k for k in offered if k != "INFRA"]
    both = judged[0] in ("INCONCLUSIVE", "NEAR") and len(judged) >= 2
    shown = [launches[k].verdict for k in judged[:2]]
    assert pooled == ([shown] if both else [])
    if offered[:2] == ("INCONCLUSIVE", "REGRESSION"):
        assert (
            "; reproduced by two reruns on other nodes together (job i on n3 and job r "
            in ev.message
        )
        assert "measured +5.4% (REGRESSION)" in ev.message
    if offered[:2] == ("NEAR", "REGRESSION"):
        assert "two reruns on other nodes disagree beyond their noise (+3.5%, job n on n6; " in (
            ev.message
        )
        assert "+5.8%, job r on n2): one of them was a slow launch" in ev.message
    if offered[:2] == ("INCONCLUSIVE", "PASS"):
        assert ev.message.startswith(f"{row.id}: UNCONFIRMED: the first run was +6.0%")
        assert "but two reruns on other nodes together (job i on n3 and job p on n5)" in ev.message
        assert "measured +2.5% (PASS)" in ev.message
    if offered == ("REGRESSION", "NEAR", "NEAR"):
        assert ev.message.endswith(
            "not contradicted by +3.5% (PASS, not within 5% at 0.1%, job n on n6), "
            "+3.5% (PASS, not within 5% at 0.1%, job n on n6)"
        )
    if offered == ("REGRESSION", "NEAR", "PASS"):
        assert "a confirmation on other nodes measured +0.0% (PASS) (job p on n5)" in ev.message


def test_a_leaning_inconclusive_run_is_a_regression_only_when_its_reruns_reproduce_one(
    row, launches
) -> None:
    from perfgate.verdicts.confirm import AUTO

    lean = AUTO  # --confirm auto reruns an INCONCLUSIVE run whose p of slower is <= 2 alpha
    first = launches["INCONCLUSIVE"]  # +5.0%, an interval of +1%..+9%
    assert AUTO.lean_p == 0.02 and first.comparison.p_slower <= 0.02
    assert wants_confirmation(first) is None
    assert wants_confirmation(first, lean_p=0.02).startswith("INCONCLUSIVE leaning slow (+5.0%")
    unsure = replace(first, comparison=replace(first.comparison, delta=0.01))
    assert unsure.comparison.p_slower > 0.02 and wants_confirmation(unsure, lean_p=0.02) is None
    offer = {"yes": ["REGRESSION", "REGRESSION"], "no": ["PASS"]}

    def run(which: str):
        return confirm(first, lambda n: launches[offer[which][n - 1]], lean)

    yes = run("yes")
    assert yes.verdict == "REGRESSION" and len(yes.confirmed_by) == 2
    assert yes.message.startswith(
        f"{row.id}: REGRESSION: the first run was +5.0% slower than the baseline, INCONCLUSIVE "
        "alone (job i on n3); reruns on other nodes reproduced a slowdown: +5.8% (job r on n2)"
    )
    assert yes.confirmation["runs"][0]["verdict"] == "INCONCLUSIVE"
    no = run("no")
    assert no.verdict == "INCONCLUSIVE" and len(no.confirmed_by) == 1
    assert no.message.endswith(
        "; reruns on other nodes did not reproduce a slowdown: +0.0% (PASS, job p on n5)"
    )
    # without lean_p (--confirm N), an INCONCLUSIVE first run asks for nothing
    assert confirm(first, lambda n: pytest.fail("no rerun"), replace(AUTO, lean_p=None)) is first


def test_the_message_counts_the_runs_a_verdict_was_judged_on(row, steps) -> None:
    one = judge(row, steps, 1.0, "201", ("n1",))
    assert "(one run vs stored baseline)" in one.message
    series = one.result.runs[0].series
    three = RunResult(
        "r",
        "202",
        "COMPLETED",
        runs=tuple(RunRecord("nemo:26.02", "baseline", series) for _ in "abc"),
    )  # --repeat 3: three launches in one job
    ev = verdicts.evaluate(row, three, source="live")
    assert ev.comparison.n_candidate == 3 and "(3 runs vs stored baseline)" in ev.message


@pytest.mark.parametrize(
    ("ci", "verdict"),
    [((0.01, 0.09), "REGRESSION"), ((-0.01, 0.03), "UNCONFIRMED")],
    ids=["below-the-first-only", "below-both"],
)
def test_after_a_reproduction_a_veto_by_interval_must_lie_below_both_launches(
    row, steps, launches, ci, verdict
) -> None:
    from perfgate.verdicts.confirm import AUTO

    # a slow launch on top of a real slowdown: +12%, then a rerun reproduces it at +5.8%
    first = judge(row, steps, 1.12, "0", ("n1",))
    assert first.comparison.ci_low > 0.09 and launches["REGRESSION"].comparison.ci_low < 0.09
    noisy = launches["INCONCLUSIVE"]
    later = replace(noisy, comparison=replace(noisy.comparison, ci_low=ci[0], ci_high=ci[1]))
    offered = [launches["REGRESSION"], later]
    ev = confirm(first, lambda n: offered[n - 1] if n <= 2 else "no more", AUTO)
    assert ev.verdict == verdict
