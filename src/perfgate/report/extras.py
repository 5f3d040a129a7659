"""Per-row extras of the pytest-html report: plot, stats JSON, repro command, scripts, log tail.

pytest-html inserts "html" extras with innerHTML and shows text/json extras as links to data,
so everything that may come from rows, jobs or logs is escaped in the html extras here.
"""

from __future__ import annotations

import base64
import json
from html import escape
from typing import Any

from perfgate.report.ab import ab_html
from perfgate.report.plot import svg_for_record


def _html(content: str) -> dict[str, Any]:
    return {
        "name": None,
        "format_type": "html",
        "content": content,
        "mime_type": None,
        "extension": None,
    }


def _text(content: str, name: str) -> dict[str, Any]:
    return {
        "name": name,
        "format_type": "text",
        "content": content,
        "mime_type": "text/plain",
        "extension": "txt",
    }


def _json(content: Any, name: str) -> dict[str, Any]:
    return {
        "name": name,
        "format_type": "json",
        "content": content,
        "mime_type": "application/json",
        "extension": "json",
    }


def _svg(svg: str, name: str) -> dict[str, Any]:
    data = base64.b64encode(svg.encode("utf-8")).decode("ascii")
    return {
        "name": name,
        "format_type": "image",
        "content": data,
        "mime_type": "image/svg+xml",
        "extension": "svg",
    }


def _details(summary: str, body: str) -> str:
    return (
        f'<details class="perfgate"><summary>{escape(summary)}</summary>'
        f"<pre>{escape(body)}</pre></details>"
    )


def stats_json(rec: dict[str, Any]) -> dict[str, Any]:
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


def extras_for(rec: dict[str, Any]) -> list[dict[str, Any]]:
    """The pytest-html extras of one row record."""
    out: list[dict[str, Any]] = []
    if any(run.get("steps") for run in rec.get("runs", [])):
        out.append(_svg(svg_for_record(rec), "step time plot"))
    if rec.get("measured") or rec.get("comparison"):
        out.append(_json(stats_json(rec), "stats"))
    out.append(_text(rec.get("repro", ""), "repro command"))
    parts = [ab_html(rec)] if ab_html(rec) else []
    comp = rec.get("comparison") or {}
    if comp.get("reason"):
        parts.append(_details(f"verdict: {rec.get('verdict')}", comp["reason"]))
    parts.append(_details("repro command", rec.get("repro", "")))
    plan = rec.get("plan") or {}
    job = rec.get("job") or {}
    script = plan.get("sbatch_script") or job.get("sbatch_script")
    if script:
        out.append(_text(script, "sbatch script"))
        parts.append(_details("sbatch script", script))
    if plan.get("srun_command"):
        parts.append(_details("srun line", plan["srun_command"]))
    if plan.get("workload_spec"):
        parts.append(_details("workload spec", json.dumps(plan["workload_spec"], indent=1)))
    if rec.get("description"):
        parts.append(_details("recipe (workload.describe)", rec["description"]))
    diag = rec.get("diagnosis")
    if diag:
        head = f"{diag.get('cause')}: {diag.get('message')}"
        if diag.get("evidence"):
            head += f"\nevidence: {diag['evidence']}"
        parts.append(_details(f"failure: {diag.get('cause')}", head))
        if diag.get("log_tail"):
            out.append(_text(diag["log_tail"], "log tail"))
            parts.append(_details("log tail", diag["log_tail"]))
    out.append(_html("".join(parts)))
    return out
