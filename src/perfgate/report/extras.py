"""The detail block of a row in the report: verdict line, baseline provenance, plot, A/B
pairs, and folded details (statistics, repro command, scripts, recipe, log tail); and the
stub that stands for it in pytest-html's data (perfgate.report.lazy keeps the blocks).

pytest-html inserts "html" extras with innerHTML; everything that may come from rows, jobs or
logs is escaped here. One html extra per row (no image or link extras): the plot is inline
SVG at the width of the table, and pytest-html's media box would shrink it to a thumbnail.
"""

from __future__ import annotations

import json
from html import escape
from typing import Any

from perfgate.report import provenance, table
from perfgate.report.ab import ab_html
from perfgate.report.confirmation import confirmation_html, where_html
from perfgate.report.phases import versus_baseline_html
from perfgate.report.plot import svg_for_record
from perfgate.report.trend import record_svg
from perfgate.rowrecord import RowRecord


def _html(content: str) -> dict[str, Any]:
    return {
        "name": None,
        "format_type": "html",
        "content": content,
        "mime_type": None,
        "extension": None,
    }


def _details(summary: str, body: str) -> str:
    return (
        f'<details class="perfgate"><summary>{escape(summary)}</summary>'
        f"<pre>{escape(body)}</pre></details>"
    )


def stats_json(rec: RowRecord) -> dict[str, Any]:
    """The numbers behind the verdict (what the 'stats' extra shows)."""
    return {
        k: rec.get(k)
        for k in (
            "row_id",
            "verdict",
            "mode",
            "source",
            "tolerance",
            "convention",
            "measured",
            "baseline",
            "comparison",
            "ab",
            "notes",
        )
    }


def _without_row_id(rec: RowRecord, text: str) -> str:
    return text.removeprefix(f"{rec['row_id']}: ")


def verdict_text(rec: RowRecord) -> str:
    """The row's verdict in one line; for a failed job the cause once, without the log line
    that proves it (that line is marked in the log tail instead)."""
    diag = rec.get("diagnosis")
    if not diag:
        return _without_row_id(rec, str(rec.get("message") or rec.get("verdict") or ""))
    msg, evidence = str(diag.get("message") or ""), str(diag.get("evidence") or "")
    tail = str(diag.get("log_tail") or "")
    if evidence and evidence in tail and evidence in msg:
        msg = " ".join(msg.replace(evidence, " ").split()).replace(": (", " (").rstrip(": ")
    return f"{rec.get('verdict')} {diag.get('cause')}: {msg}"


def _log_tail(diag: dict[str, Any], log: str | None) -> str:
    tail, evidence = str(diag.get("log_tail") or ""), str(diag.get("evidence") or "")
    lines = []
    for line in tail.splitlines():
        hot = bool(evidence) and evidence in line
        lines.append(f"<mark>{escape(line)}</mark>" if hot else escape(line))
    where = f" of {log}" if log else ""
    return (
        f'<details class="perfgate" open><summary>{escape(f"log tail{where}")}</summary>'
        f"<pre>{chr(10).join(lines)}</pre></details>"
    )


def detail_html(rec: RowRecord) -> str:
    """The detail block of one row record (escaped HTML)."""
    v = str(rec.get("verdict") or "")
    parts = [f'<p class="pg-line {table.verdict_class(v)}">{escape(verdict_text(rec))}</p>']
    diag = rec.get("diagnosis") or {}
    evidence = str(diag.get("evidence") or "")
    if evidence and evidence not in str(diag.get("log_tail") or ""):
        parts.append(f'<p class="pg-evidence">evidence: {escape(evidence)}</p>')
    if rec.get("baseline") or rec.get("measured"):
        cross = provenance.cross_version(rec)
        text = provenance.provenance_text(rec)
        if cross:
            parts.append(
                f'<p class="pg-prov pg-cross">Cross-version reference, not a same-container '
                f"regression check: {escape(cross)}. {escape(text)}</p>"
            )
        else:
            parts.append(f'<p class="pg-prov">{escape(text)}</p>')
    if where_html(rec):
        parts.append(where_html(rec))
    if any(run.get("steps") for run in rec.get("runs", [])):
        parts.append(f'<div class="pg-plot">{svg_for_record(rec)}</div>')
    if confirmation_html(rec):
        parts.append(confirmation_html(rec))
    if rec.get("trend"):  # the row's history, tonight included, with its change points
        base = rec.get("baseline") or {}
        svg = record_svg(rec["row_id"], rec["trend"], base.get("step_time_s"), rec.get("tolerance"))
        parts.append(f'<div class="pg-plot pg-trend">{svg}</div>')
    if ab_html(rec):
        parts.append(ab_html(rec))
    elif rec.get("phases"):  # one run: its phases against the baseline's
        parts.append(versus_baseline_html(rec))
    comp = rec.get("comparison") or {}
    if comp.get("reason"):
        parts.append(_details(f"why {v}", comp["reason"]))
    if rec.get("measured") or rec.get("comparison"):
        parts.append(_details("statistics (JSON)", json.dumps(stats_json(rec), indent=1)))
    parts.append(_details("repro command", rec.get("repro", "")))
    plan = rec.get("plan") or {}
    job = rec.get("job") or {}
    script = plan.get("sbatch_script") or job.get("sbatch_script")
    if script:
        parts.append(_details("sbatch script", script))
    if plan.get("srun_command"):
        parts.append(_details("srun line", plan["srun_command"]))
    if plan.get("workload_spec"):
        parts.append(_details("workload spec", json.dumps(plan["workload_spec"], indent=1)))
    if rec.get("description"):
        parts.append(_details("recipe (workload.describe)", rec["description"]))
    if diag.get("log_tail"):
        logs = job.get("log_paths") or []
        parts.append(_log_tail(diag, logs[-1] if logs else None))
    return f'<div class="pg-row">{"".join(parts)}</div>'


def detail_id(row_id: str) -> str:
    """The id of the element that holds a row's detail block in the page (report.lazy)."""
    return "pg-d-" + row_id


def detail_stub(rec: RowRecord) -> str:
    """Where a row's detail block goes: the page's script fills it in from the block stored
    under detail_id (report.lazy) when the row is open and near the view. The blocks come with
    the session's end: a page pytest-html writes before (generate_report_on_test) says so."""
    return (
        f'<div class="pg-detail" data-detail="{escape(detail_id(rec["row_id"]))}">'
        "<p>This row's details come with the finished report.</p></div>"
    )


def extras_for(rec: RowRecord) -> list[dict[str, Any]]:
    """The pytest-html extras of one row record: the stub of its detail block (pytest-html
    draws every extra of every row on every click; the block itself waits in the page)."""
    return [_html(detail_stub(rec))]
