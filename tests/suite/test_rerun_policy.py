"""--confirm auto|N (perfgate.suite.settings.parse_confirm), the plan's "up to" for reruns
(perfgate.suite.preflight), the session's rerun budget (perfgate.suite.confirming.RerunBudget)
and the sign-off's line about nodes (perfgate.report.nodes)."""

from __future__ import annotations

import pytest

from perfgate.errors import ConfigError
from perfgate.report.nodes import nodes_text
from perfgate.suite.confirming import RerunBudget
from perfgate.suite.preflight import reruns_counted
from perfgate.suite.settings import parse_confirm
from perfgate.verdicts.confirm import AUTO, OFF, RerunPolicy


def test_confirm_is_auto_for_one_run_rows_and_off_for_several() -> None:
    assert parse_confirm(None, several=False) == AUTO and AUTO.name == "auto"
    assert parse_confirm(None, several=True) == OFF
    assert parse_confirm("auto", several=False) == AUTO
    assert parse_confirm(" 2 ", several=False) == RerunPolicy(2) and RerunPolicy(2).name == "2"
    assert parse_confirm("0", several=False) == OFF
    for bad in ("4", "-1", "two", ""):
        with pytest.raises(ConfigError, match="--confirm"):
            parse_confirm(bad, several=False)


def test_the_plan_counts_one_rerun_for_auto_and_n_for_confirm_n() -> None:
    # auto's second reruns stay within the one-per-row budget: the plan's bound is unchanged
    assert reruns_counted(AUTO) == 1
    assert [reruns_counted(RerunPolicy(n)) for n in (0, 1, 2, 3)] == [0, 1, 2, 3]


def test_a_second_rerun_waits_until_every_first_rerun_still_fits() -> None:
    budget = RerunBudget({"a": 10.0, "b": 10.0, "c": 40.0})
    assert budget.total == 60.0
    budget.judged.add("a")
    assert budget.take("a", 1) is None and budget.spent == 10.0  # its own share, always
    # a second rerun of a: b and c are not judged yet and may need their first reruns (50)
    why = budget.take("a", 2)
    assert why is not None and "rerun 2 does not fit" in why and budget.spent == 10.0
    budget.judged.update({"b", "c"})  # b and c passed: their shares are free
    assert budget.take("a", 2) is None and budget.spent == 20.0
    assert budget.take("c", 1) is None and budget.spent == 60.0  # c's first rerun still fits
    assert budget.take("c", 2) is not None  # nothing left: c keeps its one rerun's verdict


def test_the_signoff_names_the_nodes_kept_off_and_the_slow_ones_tonight() -> None:
    assert nodes_text({}) is None
    session = {
        "avoided_nodes": {"nodes": ["n3", "n7"], "why": "kept off 2 of the 2 node(s) ..."},
        "slow_nodes_tonight": [
            {"node": "n9", "slow_rows": ["r1", "r2"], "runs": 3, "p_value": 2e-8, "deltas": []}
        ],
    }
    assert nodes_text(session) == (
        "first runs kept off n3, n7 (--exclude): kept off 2 of the 2 node(s) ...; slow tonight, "
        "several rows on each beyond chance: n9 (2 rows slow: r1, r2; p 2e-08); keep them off "
        "with --slurm-param exclude=n9"
    )
    unknown = {"avoided_nodes": {"nodes": [], "why": "first runs not kept off ..."}}
    assert nodes_text(unknown) == "first runs not kept off ..."
