"""A row with a history shows its trend in the report: one point per run, tonight included,
the change point marked and named (date and container), the same from `perfgate report`."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from suite.test_history_replay import ROW, SEL, _logs, _measured_baseline

from perfgate.cli import main as perfgate_main
from perfgate.history.sqlite import SqliteStore
from perfgate.history.store import Run, Session
from report.test_html_report import page_blob, row_tests

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


def test_trend_with_change_point_in_the_row_block(suite, tmp_path):
    _measured_baseline(suite, 2.50, 0.10)
    hist = suite.path / "h.sqlite"
    _history(hist)
    args = (f"--replay={_logs(suite)}", *SEL, f"--history={hist}", "--store-replay")
    suite.run(*args, "--html", "report.html", "--self-contained-html")
    rec = suite.results()["rows"][ROW]
    assert [r["step_time_s"] for r in rec["trend"]] == [*LEVELS, 2.63]  # tonight is the last
    detail = row_tests(page_blob((suite.path / "report.html").read_text()))[ROW]["extras"][0]
    svgs = re.findall(r'<div class="pg-plot pg-trend">(<svg.*?</svg>)', detail["content"], re.S)
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
    # perfgate report draws the same trend from results.json alone (no history store needed)
    hist.unlink()
    out = tmp_path / "again.html"
    results = suite.path / "perfgate-results" / "results.json"
    assert perfgate_main(["report", str(results), "--html", str(out)]) == 0
    again = row_tests(page_blob(out.read_text()))[ROW]["extras"][0]["content"]
    assert again == detail["content"]


def test_no_trend_without_two_runs_in_the_history(suite):
    suite.real_baselines()
    hist = suite.path / "h.sqlite"
    suite.run(f"--replay={_logs(suite)}", *SEL, f"--history={hist}", "--store-replay")
    assert suite.results()["rows"][ROW]["trend"] is None  # one run: nothing to trend
    assert len(SqliteStore(hist).runs(ROW)) == 1
