"""Where a row ran, and its confirmation reruns on other nodes, in the report (escaped HTML)."""

from __future__ import annotations

from html import escape

from perfgate.report import format as fmt
from perfgate.rowrecord import RowRecord

NODES_SHOWN = 8


def _nodes(nodes: list[str]) -> str:
    shown = ", ".join(nodes[:NODES_SHOWN])
    return shown + (f" +{len(nodes) - NODES_SHOWN} more" if len(nodes) > NODES_SHOWN else "")


def where_html(rec: RowRecord) -> str:
    """One line: the job and the nodes the row's run used ('' when neither is known)."""
    job = rec.get("job") or {}
    nodes = list(job.get("nodes") or [])
    if not nodes and not job.get("job_id"):
        return ""
    text = f"job {job.get('job_id') or '(local)'}" + (f" on {_nodes(nodes)}" if nodes else "")
    runs = rec.get("runs") or []
    slow = runs[0].get("slowest") if runs else None
    if slow:
        where = f" on {slow['node']}" if slow.get("node") else ""
        text += f"; slowest rank {slow['rank']}{where} ({slow['how']}, {slow['reports']} of "
        text += f"{slow['of']} reports)"
    return f'<p class="pg-where">Ran as {escape(text)}</p>'


def confirmation_html(rec: RowRecord) -> str:
    """The first run and its reruns on other nodes: verdict, delta, job, nodes; the nodes the
    reruns were kept off and the suspects ('' for a row without reruns)."""
    info = rec.get("confirmation") or {}
    runs = info.get("runs") or []
    if not runs:
        return ""
    rows = "".join(
        f"<tr><td>{escape(str(r.get('role')))}</td><td>{escape(str(r.get('verdict')))}</td>"
        f"<td>{escape(fmt.pct(r.get('delta'), signed=True))}</td>"
        f"<td>{escape(str(r.get('job_id') or ''))}</td>"
        f"<td>{escape(_nodes(list(r.get('nodes') or [])))}</td></tr>"
        for r in runs
    )
    notes = []
    if info.get("excluded"):
        notes.append(f"reruns kept off: {_nodes(list(info['excluded']))}")
    if info.get("suspect_nodes"):
        why = f" ({info['suspects_why']})" if info.get("suspects_why") else ""
        notes.append(f"suspect nodes: {_nodes(list(info['suspect_nodes']))}{why}")
    elif info.get("suspects_why"):
        notes.append(f"no suspect node: {info['suspects_why']}")
    if info.get("stopped"):
        notes.append(f"no further rerun: {info['stopped']}")
    if info.get("note"):
        notes.append(str(info["note"]))
    foot = f"<p>{escape('; '.join(notes))}</p>" if notes else ""
    return (
        '<div class="pg-confirm"><table class="pg-worst"><tr><th>Run</th><th>Verdict</th>'
        f"<th>Δ step time</th><th>Job</th><th>Nodes</th></tr>{rows}</table>{foot}</div>"
    )
