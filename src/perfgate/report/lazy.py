"""The report's table at any size: light rows, detail blocks filled in when seen, paging.

pytest-html draws every row of its data, detail blocks included, on every click; a
detail block (verdict line, plots, folded scripts and logs) is most of a row's weight. So a
row's pytest-html extra is a stub naming its block, and the blocks wait in the page as inert
JSON (<script type="application/json">: the browser keeps the text and builds nothing); the
page's script (page.js) fills a block in when its row is open and near the view, opens the
rows to look at in one redraw, and pages a table of more than PAGE_ROWS rows.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from html import escape
from importlib.resources import files
from typing import Any

from perfgate.report import table
from perfgate.report.extras import detail_html, detail_id
from perfgate.rowrecord import RowRecord

PAGE_ROWS = 1000  # rows per page of the table (?rows=N or ?rows=all in the URL: the reader's)
FILL_NOW = 10  # open rows whose blocks are filled at once (the top of the page); the rest lazily


def script_json(value: Any) -> str:
    """JSON for the inside of a <script> element: no '</' or '<!--' (which would end or
    escape it); both are valid JSON escapes."""
    return json.dumps(value).replace("</", "<\\/").replace("<!--", "<\\u0021--")


def details_store(records: Sequence[RowRecord]) -> str:
    """Each row's detail block, as a JSON string in its own inert script element."""
    return "".join(
        f'<script type="application/json" id="{escape(detail_id(r["row_id"]))}">'
        f"{script_json(detail_html(r))}</script>"
        for r in records
    )


def to_open(records: Sequence[RowRecord]) -> list[str]:
    """The test ids (pytest-html's, the escaped row id) of the rows the sign-off lists to look
    at: shown open from the start (failed ones are already; passed ones are opened)."""
    return [escape(r["row_id"]) for r in records if r.get("verdict") not in table.QUIET]


def verdicts_by_outcome(records: Sequence[RowRecord]) -> dict[str, str]:
    """Per pytest outcome, the verdicts behind it ('passed': '2 INCONCLUSIVE, 1 NO_BASELINE'):
    pytest-html's filter strip counts outcomes, and a row to look at passes pytest."""
    counts: dict[str, dict[str, int]] = {}
    for rec in table.worst_first(records):
        by = counts.setdefault(str(rec.get("outcome") or "passed"), {})
        verdict = str(rec.get("verdict") or "")
        by[verdict] = by.get(verdict, 0) + 1
    return {k: ", ".join(f"{n} {v}" for v, n in by.items()) for k, by in counts.items()}


def page_script(records: Sequence[RowRecord]) -> str:
    """The stored detail blocks, the script's settings and the script itself."""
    config = {
        "open": to_open(records),
        "pageRows": PAGE_ROWS,
        "fillNow": FILL_NOW,
        "outcomeVerdicts": verdicts_by_outcome(records),
    }
    code = (files("perfgate.report") / "page.js").read_text(encoding="utf-8")
    return (
        details_store(records)
        + f'<script type="application/json" id="pg-config">{script_json(config)}</script>'
        + f"<script>{code}</script>"
    )
