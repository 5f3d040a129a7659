"""The one sign-off page: pytest-html's page, with every perfgate part built from records.

Both ways to the page go through here. During a session the pytest-html hooks
(perfgate.report.html) take their cells, row logs and summary from these functions, fed by
the results.json record each row's report carries. `perfgate report results.json --html`
builds the same pytest-html data from results.json with the same functions and renders it
with pytest-html's own template, scripts and style; so both pages are one page (a test
compares them). Skipped rows leave the table (one expandable line in the summary counts them).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from datetime import datetime
from html import escape
from importlib.resources import files
from typing import Any

from pytest_html import __version__ as pytest_html_version
from pytest_html.util import _process_css, _read_template

from perfgate.report import lazy, signoff, table
from perfgate.report.environment import environment
from perfgate.report.extras import extras_for
from perfgate.rowrecord import RowRecord

Record = RowRecord
INITIAL_SORT = "verdict"  # worst first: perfgate.report.table.order_key in the verdict cell
# pytest-html 4's own header cells; "Links" is dropped (a row's details are in its block).
PYTEST_HTML_HEADER = (
    '<th class="sortable" data-column-type="result">Result</th>',
    '<th class="sortable" data-column-type="testId">Test</th>',
    '<th class="sortable" data-column-type="duration">Duration</th>',
    "<th>Links</th>",
)
# pytest-html 4's outcome counters (key, label), in its order.
OUTCOMES = (
    ("failed", "Failed"),
    ("passed", "Passed"),
    ("skipped", "Skipped"),
    ("xfailed", "Expected failures"),
    ("xpassed", "Unexpected passes"),
    ("error", "Errors"),
    ("rerun", "Reruns"),
    ("retried", "Retried"),
)
_ANSI = re.compile(r"\x1b\[[0-9;]*[a-zA-Z]")

CSS = """
body{display:flex;flex-direction:column;color:#333}
body>h1{order:0}body>p{order:1}.summary{order:2}#results-table{order:3}
#environment-header{order:4}#environment{order:5}footer{order:6}
.run-count,.filters input[data-test-result=skipped],.filters span.skipped{display:none}
.perfgate-signoff{font-size:13px;color:#222;margin-bottom:8px}
.perfgate-signoff table{border-collapse:collapse;margin:6px 0}
.perfgate-signoff td,.perfgate-signoff th{border:1px solid #ccc;padding:3px 8px;text-align:left;
 vertical-align:top}
.pg-headline{font-size:18px;padding:6px 10px;border-left:8px solid #2e7d32;background:#eef7ee}
.pg-headline.pg-red{border-left-color:#c62828;background:#fdecea}
.pg-headline.pg-amber{border-left-color:#e0a000;background:#fff6e0}
.pg-badge{display:inline-block;padding:2px 8px;margin:0 4px 4px 0;border-radius:3px;
 font-weight:bold}
.pg-red{background:#f4c7c3;color:#7f1d1d}.pg-amber{background:#fde7b0;color:#6b4500}
.pg-blue{background:#cfe2fb;color:#0b3d91}.pg-green{background:#c8e6c9;color:#1b5e20}
.pg-grey{background:#e0e0e0;color:#333}
.pg-skipped summary{cursor:pointer;color:#555}.pg-ids{font-size:11px;color:#666}
#results-table{color:#333;font-size:12px;table-layout:auto;max-width:100%}
#results-table td{vertical-align:top}
#results-table th{white-space:normal}
#results-table td.col-verdict{font-weight:bold;white-space:nowrap}
#results-table td.col-delta,#results-table td.col-baseline,#results-table td.col-jobid{
 white-space:nowrap}
#results-table td.col-testId{font-weight:bold;min-width:9em;overflow-wrap:anywhere}
#results-table td.col-parallelism{min-width:6em}
#results-table td,#results-table th{padding:4px 5px}
td.col-result.pg-red{color:#c62828;background:none}
td.col-result.pg-amber{color:#a15c00;background:none}
td.col-result.pg-blue{color:#0b3d91;background:none}
td.col-result.pg-green{color:#2e7d32;background:none}
td.col-result.pg-grey{color:#555;background:none}
#results-table td.col-result.pg-red{border-left:6px solid #c62828}
#results-table td.col-result.pg-amber{border-left:6px solid #e0a000}
#results-table td.col-result.pg-blue{border-left:6px solid #1565c0}
.logwrapper>.logexpander:only-child{display:none}
.pg-detail:not([data-pg-filled]){min-height:30em}
.pg-pager{order:3;margin:6px 0;font-size:13px;color:#222}.pg-pager a{color:#0b3d91}
.pg-row{color:#222;font-size:13px}
.pg-row p{margin:4px 0}
.pg-line{padding:4px 8px;font-weight:bold}
.pg-prov{color:#444}.pg-prov.pg-cross{background:#fde7b0;padding:4px 8px;color:#6b4500}
.pg-plot svg{width:100%;height:auto;display:block;max-width:1600px}
.pg-row pre{white-space:pre-wrap;max-height:30em;overflow:auto;background:#f5f5f5;padding:4px}
.pg-row mark{background:#f4c7c3}
.perfgate-ab table{border-collapse:collapse;margin:4px 0}
.perfgate-ab td,.perfgate-ab th{border:1px solid #ccc;padding:2px 6px;text-align:left}
.pg-changed{background:#fff3c4;font-weight:bold}
"""


def title(session: dict[str, Any]) -> str:
    """The page title: what the report signs off."""
    return f"perfgate report: {session.get('mode', '')}"


def in_table(rec: Record | None) -> bool:
    """Skipped rows stay out of the table (the summary folds them into one line)."""
    return rec is None or rec.get("verdict") != "SKIPPED"


def duration_text(seconds: float | None) -> str:
    """A test's duration as pytest-html prints it: '138 ms' or '00:12:03'."""
    s = float(seconds or 0.0)
    if s < 1:
        return f"{round(s * 1000)} ms"
    h, rest = divmod(s, 3600)
    return f"{int(h):02d}:{int(rest // 60):02d}:{round(rest % 60):02d}"


def header_cells(pytest_html_cells: Sequence[str]) -> list[str]:
    """pytest-html's header cells without Links, then perfgate's columns."""
    return [c for c in pytest_html_cells if ">Links</th>" not in c] + table.header_cells()


def row_cells(rec: Record | None, pytest_html_cells: Sequence[str] = ()) -> list[str]:
    """All cells of a test's table row: for a row, from its record alone (the result cell
    coloured by verdict, the row id as test name); [] for a skipped row (left out)."""
    if rec is None:  # another test of the session: pytest-html's cells, without links
        return [c for c in pytest_html_cells if "col-links" not in c] + table.row_cells(None)
    if not in_table(rec):
        return []
    outcome = str(rec.get("outcome") or "").capitalize()
    tone = table.verdict_class(str(rec.get("verdict") or "")).split()[-1]
    return [
        f'<td class="col-result {tone}">{escape(outcome)}</td>',
        f'<td class="col-testId" title="{escape(str(rec.get("nodeid") or ""))}">'
        f"{escape(rec['row_id'])}</td>",
        f'<td class="col-duration">{duration_text(rec.get("duration_s"))}</td>',
        *table.row_cells(rec),
    ]


def log_lines(rec: Record) -> list[str]:
    """pytest-html's log of a row: only an unexpected error's text (the verdict, the failure
    and the log tail are in the row's block, each once)."""
    error = _ANSI.sub("", str(rec.get("error") or ""))
    return [escape(error) + "\n"] if error else []


def summary_html(records: Sequence[Record], session: dict[str, Any]) -> str:
    """The summary prefix: the report's style, the sign-off block, then the table's detail
    blocks and the script that fills them in, opens the rows to look at and pages the table
    (perfgate.report.lazy)."""
    shown = table.worst_first(r for r in records if in_table(r))  # one order, either way
    return (
        f"<style>{CSS}</style>" + signoff.signoff_html(records, session) + lazy.page_script(shown)
    )


def environment_entries(records: Sequence[Record], session: dict[str, Any]) -> dict[str, str]:
    """perfgate's environment table entries (keys prefixed, values escaped)."""
    return {f"perfgate: {k}": escape(v) for k, v in environment(records, session).items()}


# --- `perfgate report`: the same page from results.json --------------------------------------


def _hydrate(test: dict[str, Any], header: Sequence[str], cells: Sequence[str]) -> None:
    """What pytest-html keeps of each sortable cell for sorting (its inner HTML)."""
    for th, cell in zip(header, cells, strict=False):
        name, data = re.search(r"col-(\w+)", cell), re.search(r"<td.*?>(.*?)</td>", cell)
        if "sortable" in th and name and data:
            test[name.group(1)] = data.group(1)


def test_entry(rec: Record, header: Sequence[str]) -> dict[str, Any]:
    """pytest-html's data for one row's test."""
    cells = row_cells(rec)
    test: dict[str, Any] = {"extras": extras_for(rec)}
    _hydrate(test, header, cells)
    test["resultsTableRow"] = cells
    test["log"] = "\n".join(log_lines(rec))
    return test


def _pytest_html() -> tuple[Any, str]:
    """pytest-html's template and style (the page is pytest-html's; its private helpers are
    used so the style matches byte for byte: the page test catches a pytest-html change)."""
    resources = files("pytest_html") / "resources"
    return _read_template([str(resources)]), _process_css(resources / "style.css", [])


def render(data: dict[str, Any]) -> str:
    """The report page of a results.json document (self-contained, as --self-contained-html)."""
    template, css = _pytest_html()
    session = data.get("session") or {}
    records = table.worst_first(list(data["rows"].values()))
    header = header_cells(PYTEST_HTML_HEADER)
    shown = [r for r in records if in_table(r)]
    env = dict(session.get("metadata") or {})
    env.update(environment_entries(records, session))
    blob = {
        "environment": env,
        # pytest-html keeps an empty list for a test left out of the table (skipped rows)
        "tests": {r["nodeid"]: [test_entry(r, header)] if in_table(r) else [] for r in records},
        "renderCollapsed": ["passed"],
        "initialSort": INITIAL_SORT,
        "title": title(session),
    }
    outcomes = {k: {"label": label, "value": 0} for k, label in OUTCOMES}
    for r in shown:
        outcomes[str(r.get("outcome") or "passed")]["value"] += 1
    ran = sum(outcomes[k]["value"] for k in ("passed", "failed", "xpassed", "xfailed"))
    took = signoff.session_took(session)  # hidden (CSS): the summary's own line says it
    now = datetime.now()
    return template.render(
        title=title(session),
        date=now.strftime("%d-%b-%Y"),
        time=now.strftime("%H:%M:%S"),
        version=pytest_html_version,
        styles=css,
        run_count=f"{ran} {'tests' if ran > 1 else 'test'} in a session of {took or '?'}.",
        running_state="finished",
        self_contained=True,
        outcomes=outcomes,
        test_data=json.dumps(blob),
        table_head=header,
        additional_summary={
            "prefix": [summary_html(records, session)],
            "summary": [],
            "postfix": [],
        },
    )
