"""perfgate.rowrecord says what results.json holds: every key the suite writes is declared,
and every declared key is written, at every level (a replay and a dry run of the examples)."""

from __future__ import annotations

from typing import Any

from suite.pytester_suite import EXAMPLES

from perfgate import rowrecord as rr

pytest_plugins = ["pytester"]

NESTED = {
    "baseline": rr.BaselineRecord,
    "measured": rr.MeasuredRecord,
    "comparison": rr.ComparisonRecord,
    "job": rr.JobRecord,
    "diagnosis": rr.DiagnosisRecord,
    "plan": rr.PlanRecord,
}


def _keys_ok(rec: dict[str, Any], typed: Any, where: str) -> list[str]:
    required, optional = set(typed.__required_keys__), set(typed.__optional_keys__)
    missing = sorted(required - set(rec))
    unknown = sorted(set(rec) - required - optional)
    return [f"{where}: missing {k}" for k in missing] + [
        f"{where}: undeclared {k}" for k in unknown
    ]


def problems(rows: dict[str, dict[str, Any]]) -> tuple[list[str], set[str]]:
    """Key mismatches of every record, and the nested records that were seen filled."""
    bad: list[str] = []
    seen: set[str] = set()
    for row_id, rec in rows.items():
        bad += _keys_ok(rec, rr.RowRecord, row_id)
        for key, typed in NESTED.items():
            if rec.get(key) is not None:
                seen.add(key)
                bad += _keys_ok(rec[key], typed, f"{row_id}.{key}")
        for i, run in enumerate(rec.get("runs") or ()):
            seen.add("runs")
            bad += _keys_ok(run, rr.RunEntry, f"{row_id}.runs[{i}]")
    return bad, seen


def test_a_replay_writes_exactly_the_declared_keys(suite) -> None:
    suite.shipped_rows()
    suite.run(f"--replay={EXAMPLES}", "-m", "h100")
    bad, seen = problems(suite.results()["rows"])
    assert bad == []
    # the examples fill every nested record but the plan (a dry run's, below)
    assert seen == {*NESTED, "runs"} - {"plan"}


def test_a_dry_run_writes_exactly_the_declared_keys(suite) -> None:
    suite.shipped_rows()
    suite.run("--dry-run", "-m", "h100", "--gpus", "8")
    bad, seen = problems(suite.results()["rows"])
    assert bad == []
    assert "plan" in seen and "baseline" in seen


def test_the_check_would_catch_a_drifted_record() -> None:
    rec = {k: None for k in rr.RowRecord.__required_keys__} | {"surprise": 1}
    del rec["verdict"]
    rec["measured"] = {"step_time_s": 1.0}
    bad, _ = problems({"r": rec})
    assert "r: missing verdict" in bad and "r: undeclared surprise" in bad
    assert "r.measured: missing se_s" in bad
