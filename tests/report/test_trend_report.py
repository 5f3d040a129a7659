"""A row with a history shows its trend in the report: one point per run, tonight included,
the change point marked and named (date and container), the same from `perfgate report`.
The change points are the session's, found once per row (by the verdict, or for a row whose
verdict searched no history, when its record is kept): rendering never searches."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest
from rowfactory import make_row, with_baseline
from suite.test_history_replay import ROW, SEL, _logs, _measured_baseline

from perfgate import verdicts
from perfgate.cli import main as perfgate_main
from perfgate.history import trend as history_trend
from perfgate.history.sqlite import SqliteStore
from perfgate.history.store import Run, Session
from perfgate.history.trend import Point
from perfgate.logs import Step, StepSeries
from perfgate.report import extras, results
from perfgate.runs import RunRecord, RunResult
from perfgate.stats import changepoint
from report.test_html_report import row_details

pytest_plugins = ["pytester"]
NS = "{http://www.w3.org/2000/svg}"
LEVELS = [2.50, 2.49, 2.51, 2.505, 2.495, 2.50, 2.51, 2.49, 2.58, 2.59, 2.60]


def _history(path) -> None:
    """Eleven nightly sessions of ROW; a +3.6% step from the ninth on (a new container)."""
    store = SqliteStore(path)
    for day, level in enumerate(LEVELS, start=2):
        sid = store.start_session(Session("live", started_at=f"2026-01-{day:02d}T01:00:00+00:00"))
        image = "nemo:26.02" if level > 2.55 else "nemo:25.11"
        run = Run(ROW, "stored", "baseline", 1, True, level, 0.002, job_id=str(1000 + day))
        store.add_runs(sid, [Run(**{**run.__dict__, "image": image})])
        store.finish_session(sid)


def test_trend_with_change_point_in_the_row_block(suite, tmp_path, monkeypatch):
    _measured_baseline(suite, 2.50, 0.10)
    hist = suite.path / "h.sqlite"
    _history(hist)
    args = (f"--replay={_logs(suite)}", *SEL, f"--history={hist}", "--store-replay")
    suite.run(*args, "--html", "report.html", "--self-contained-html")
    rec = suite.results()["rows"][ROW]
    points = rec["trend"]["points"]
    assert [r["step_time_s"] for r in points[:-1]] == LEVELS
    assert points[-1]["tonight"] and points[-1]["step_time_s"] == pytest.approx(2.63, rel=1e-3)
    # the change point the verdict found, handed on: the report draws it, searching nothing
    assert rec["trend"]["change_points"] == [
        {"index": 8, "p_value": c["p_value"]} for c in rec["history"]["change_points"]
    ]
    detail = row_details((suite.path / "report.html").read_text())[ROW]
    svgs = re.findall(r'<div class="pg-plot pg-trend">(<svg.*?</svg>)', detail, re.S)
    (svg,) = [ET.fromstring(s) for s in svgs]
    (poly,) = svg.iter(f"{NS}polyline")
    assert len(poly.get("points").split()) == 12
    (cp,) = [e for e in svg.iter(f"{NS}line") if e.get("class") == "change-point"]
    xs = [float(p.split(",")[0]) for p in poly.get("points").split()]
    assert xs[7] < float(cp.get("x1")) < xs[8]  # before the first run of the new level
    legend = [t.text for t in svg.iter(f"{NS}text")]
    named = "change point: change from 2026-01-10 nemo:26.02"
    assert any(t and t.startswith(named) for t in legend)
    assert "run in the history (oldest first)" in legend
    # perfgate report draws the same trend from results.json alone (no history store needed,
    # no search: the change points are the session's)
    hist.unlink()
    _no_search(monkeypatch)
    out = tmp_path / "again.html"
    results = suite.path / "perfgate-results" / "results.json"
    assert perfgate_main(["report", str(results), "--html", str(out)]) == 0
    assert row_details(out.read_text())[ROW] == detail


def test_no_trend_without_two_runs_in_the_history(suite):
    suite.shipped_rows()
    hist = suite.path / "h.sqlite"
    suite.run(f"--replay={_logs(suite)}", *SEL, f"--history={hist}", "--store-replay")
    assert suite.results()["rows"][ROW]["trend"] is None  # one run: nothing to trend
    assert len(SqliteStore(hist).runs(ROW)) == 1


def _no_search(monkeypatch) -> None:
    """Any change-point search from here on fails the test."""

    def searched(*a, **k):
        raise AssertionError("a history was searched while rendering")

    for module in (changepoint, history_trend):
        monkeypatch.setattr(module, "change_points", searched)


def _counted(monkeypatch, module) -> list[int]:
    """Count the change-point searches made through module."""
    calls: list[int] = []
    real = changepoint.change_points

    def counting(xs, *a, **k):
        calls.append(len(xs))
        return real(xs, *a, **k)

    monkeypatch.setattr(module, "change_points", counting)
    return calls


def test_the_verdict_hands_on_the_trend_it_searched(monkeypatch):
    """One search per row, by the verdict; the record keeps its series and change points; the
    detail block draws them without searching again."""
    row = with_baseline(make_row(), 2.50, 0.05)
    points = [
        Point(i + 1, f"2026-01-{i + 2:02d}T01:00:00+00:00", level, 0.002, job_id=str(1000 + i),
              container="nemo:26.02" if level > 2.55 else "nemo:25.11")
        for i, level in enumerate(LEVELS)
    ]  # fmt: skip
    steps = StepSeries("megatron", tuple(Step(k, 2.61 * (1 + 0.001 * (k % 3))) for k in range(60)))
    result = RunResult(row.id, "77", "COMPLETED", (RunRecord("nemo:26.02", "baseline", steps),))
    calls = _counted(monkeypatch, history_trend)
    ev = verdicts.evaluate(row, result, source="live", history=points)
    assert calls == [len(LEVELS) + 1]  # history and tonight, searched once
    rec = results.record(ev, row, nodeid="t", outcome="passed", repro="", source="live")
    kept = rec["trend"]
    assert [p["step_time_s"] for p in kept["points"][:-1]] == LEVELS
    assert [p["job_id"] for p in kept["points"][:2]] == ["1000", "1001"]
    assert kept["points"][-1]["tonight"] and kept["points"][-1]["session_id"] is None
    assert kept["points"][-1]["step_time_s"] == pytest.approx(ev.measured.step_time_s)
    assert [c["index"] for c in kept["change_points"]] == [8]
    assert kept["change_points"] == [
        {"index": c["index"], "p_value": c["p_value"]} for c in rec["history"]["change_points"]
    ]
    _no_search(monkeypatch)
    (svg,) = re.findall(
        r'<div class="pg-plot pg-trend">(<svg.*?</svg>)', extras.detail_html(rec), re.S
    )
    legend = [t.text for t in ET.fromstring(svg).iter(f"{NS}text")]
    assert any(
        t and t.startswith("change point: change from 2026-01-10 nemo:26.02") for t in legend
    )


def test_a_row_whose_verdict_searched_nothing_gets_its_trend_once(suite, tmp_path, monkeypatch):
    """NO_BASELINE: no verdict searched the row's history; the session does, once, when it keeps
    the record (tonight's stored run included), and `perfgate report` draws it as kept."""
    suite.write_rows([make_row()])  # ROW without a baseline
    hist = suite.path / "h.sqlite"
    _history(hist)
    import perfgate.suite.state as state

    calls = _counted(monkeypatch, state)
    suite.run(f"--replay={_logs(suite)}", *SEL, f"--history={hist}", "--store-replay")
    rec = suite.results()["rows"][ROW]
    assert rec["verdict"] == "NO_BASELINE"
    assert calls == [len(LEVELS) + 1]
    points = rec["trend"]["points"]
    assert [p["step_time_s"] for p in points[:-1]] == LEVELS
    assert points[-1]["session_id"] == max(p["session_id"] for p in points)  # tonight, stored
    assert [c["index"] for c in rec["trend"]["change_points"]] == [8]
    _no_search(monkeypatch)
    out = tmp_path / "again.html"
    results_json = suite.path / "perfgate-results" / "results.json"
    assert perfgate_main(["report", str(results_json), "--html", str(out)]) == 0
    assert "change point: change from 2026-01-10 nemo:26.02" in row_details(out.read_text())[ROW]


def test_a_results_file_from_before_draws_its_trend_without_searching(monkeypatch):
    """A results.json written before change points were kept holds the stored runs: drawn as
    they are, the title saying the change points were not recorded."""
    old = [
        {"step_time_s": level, "steady": True, "cause": None, "excluded": None, "mode": "stored",
         "started_at": f"2026-01-{i + 2:02d}T01:00:00+00:00", "image": "nemo:25.11"}
        for i, level in enumerate(LEVELS)
    ]  # fmt: skip
    old.insert(3, {**old[0], "mode": "paired"})  # an A/B run: not part of a trend
    rec = {"row_id": ROW, "verdict": "PASS", "trend": old, "baseline": {"step_time_s": 2.5}}
    _no_search(monkeypatch)
    (svg,) = re.findall(
        r'<div class="pg-plot pg-trend">(<svg.*?</svg>)', extras.detail_html(rec), re.S
    )
    doc = ET.fromstring(svg)
    (poly,) = doc.iter(f"{NS}polyline")
    assert len(poly.get("points").split()) == len(LEVELS)
    assert not [e for e in doc.iter(f"{NS}line") if e.get("class") == "change-point"]
    assert any("change points not recorded" in (t.text or "") for t in doc.iter(f"{NS}text"))
