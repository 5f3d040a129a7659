"""`perfgate report results.json --html out.html`: the sign-off report from results.json alone.

A static, self-contained page (no scripts): sign-off summary, environment, the table of rows
worst first with the same columns as the pytest-html report, and per row the step-time plot,
the stats, the repro command, the scripts and (on failure) the escaped log tail.
"""

from __future__ import annotations

import json
from html import escape
from pathlib import Path
from typing import Any

from perfgate.report import results, table
from perfgate.report.ab import ab_html
from perfgate.report.environment import environment
from perfgate.report.extras import stats_json
from perfgate.report.plot import svg_for_record

CSS = """
body{font-family:sans-serif;font-size:13px;margin:16px}
table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 6px;text-align:left}
.pg-badge{padding:1px 6px;margin-right:4px;border-radius:3px;background:#eee}
.pg-REGRESSION,.pg-INFRA,.verdict-REGRESSION,.verdict-INFRA{background:#f8d0d0}
.pg-PASS,.verdict-PASS{background:#d4f0d4}
.pg-INCONCLUSIVE,.pg-NO_BASELINE,.pg-SHIFT,.verdict-INCONCLUSIVE,.verdict-NO_BASELINE,.verdict-SHIFT{background:#fbeecb}
.pg-IMPROVEMENT,.verdict-IMPROVEMENT{background:#d0e4f8}
pre{white-space:pre-wrap;max-height:30em;overflow:auto;background:#f7f7f7;padding:4px}
section.row{margin:14px 0;border-top:1px solid #ddd;padding-top:6px}
.pg-changed{background:#fff3c4;font-weight:bold}
"""


def _details(title: str, body: str, open_: bool = False) -> str:
    o = " open" if open_ else ""
    return f"<details{o}><summary>{escape(title)}</summary><pre>{escape(body)}</pre></details>"


def _row_section(rec: dict[str, Any]) -> str:
    rid = escape(rec["row_id"])
    parts = [
        f'<section class="row" id="{rid}"><h3>{rid}: {escape(rec.get("verdict", ""))}</h3>',
        f"<p>{escape(rec.get('message', ''))}</p>",
    ]
    if any(run.get("steps") for run in rec.get("runs", [])):
        parts.append(f'<div class="plot">{svg_for_record(rec)}</div>')
    parts.append(ab_html(rec))
    if rec.get("measured") or rec.get("comparison"):
        parts.append(_details("stats", json.dumps(stats_json(rec), indent=1)))
    parts.append(_details("repro command", rec.get("repro", "")))
    plan = rec.get("plan") or {}
    job = rec.get("job") or {}
    if plan.get("sbatch_script") or job.get("sbatch_script"):
        parts.append(_details("sbatch script", plan.get("sbatch_script") or job["sbatch_script"]))
    if plan.get("srun_command"):
        parts.append(_details("srun line", plan["srun_command"]))
    if rec.get("description"):
        parts.append(_details("recipe (workload.describe)", rec["description"]))
    diag = rec.get("diagnosis")
    if diag:
        parts.append(_details(f"failure: {diag.get('cause')}", diag.get("message") or "", True))
        if diag.get("log_tail"):
            parts.append(_details("log tail", diag["log_tail"], True))
    parts.append("</section>")
    return "\n".join(parts)


def render(data: dict[str, Any], title: str = "perfgate report") -> str:
    """The HTML page of a results.json document."""
    records = table.worst_first(list(data["rows"].values()))
    session = data.get("session") or {}
    env = data.get("environment") or environment(records, session)
    head = "".join(f"<th>{escape(t)}</th>" for t in ("Row", "Outcome")) + "".join(
        table.header_cells()
    )
    body_rows = []
    for rec in records:
        cells = "".join(table.row_cells(rec))
        rid = escape(rec["row_id"])
        body_rows.append(
            f'<tr><td><a href="#{rid}">{rid}</a></td><td>{escape(rec.get("outcome", ""))}</td>'
            f"{cells}</tr>"
        )
    env_rows = "".join(
        f"<tr><td>{escape(str(k))}</td><td>{escape(str(v))}</td></tr>" for k, v in env.items()
    )
    when = escape(f"{session.get('started', '')} .. {session.get('finished') or 'unfinished'}")
    return "\n".join(
        [
            "<!DOCTYPE html>",
            f'<html><head><meta charset="utf-8"><title>{escape(title)}</title>',
            f"<style>{CSS}</style></head><body>",
            f"<h1>{escape(title)}</h1><p>session {when}</p>",
            table.signoff_html(records, session),
            f"<h2>Environment</h2><table>{env_rows}</table>",
            f"<h2>Rows</h2><table><tr>{head}</tr>{''.join(body_rows)}</table>",
            *(_row_section(r) for r in records),
            "</body></html>",
        ]
    )


def render_file(results_path: str | Path, html_path: str | Path) -> int:
    """Read results.json, write the HTML report; returns the number of rows rendered."""
    data = results.read(results_path)
    out = Path(html_path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render(data, title=f"perfgate report: {Path(results_path).name}"))
    return len(data["rows"])
