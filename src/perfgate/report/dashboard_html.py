"""The dashboard's pages as HTML text (perfgate.report.dashboard builds what they show).

Everything from the history is escaped (row ids, images, versions and node names come from
outside). Colours are the report's verdict tones (report/table.py); the matrix page's filter
is a small script over data attributes, so the site needs no server and no library.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from perfgate.history.nodes import NodeFinding
from perfgate.report.dashboard_views import RowView
from perfgate.report.plot import Mark, Trace, step_time_svg
from perfgate.report.table import VERDICT_TONE

CSS = """
body{font:13px/1.4 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#222;margin:16px;
  max-width:1320px}
h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:18px 0 6px}
.sub{color:#555;margin-bottom:10px}
.filters{display:flex;gap:12px;flex-wrap:wrap;align-items:center;margin:10px 0;
  padding:8px;background:#f5f5f5;border-radius:4px}
.filters label{font-weight:600}.filters select,.filters input{font-size:13px;padding:2px 4px}
table{border-collapse:collapse;width:100%}
th,td{border-bottom:1px solid #e5e5e5;padding:4px 6px;text-align:left;vertical-align:middle}
th{background:#fafafa;position:sticky;top:0;font-weight:600}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
td.id{max-width:420px;overflow-wrap:anywhere}
.strip{display:flex;gap:1px}.strip span{display:inline-block;width:8px;height:14px}
.t-red{background:#c62828}.t-amber{background:#e0a000}.t-blue{background:#1e66c8}
.t-green{background:#2e7d32}.t-grey{background:#bdbdbd}
.slow{color:#c62828;font-weight:600}.up{color:#c62828}.down{color:#1e66c8}
.count{color:#555}.plot svg{width:100%;height:auto}
.changes td{vertical-align:top}table.nodes{width:auto;min-width:360px}
"""

JS = """
(function () {
  const rows = [...document.querySelectorAll('#matrix tbody tr')];
  const pick = id => document.getElementById(id);
  function apply() {
    const want = {gpu: pick('f-gpu').value, model: pick('f-model').value,
                  backend: pick('f-backend').value};
    const text = pick('f-text').value.trim().toLowerCase();
    let shown = 0;
    for (const tr of rows) {
      const ok = Object.entries(want).every(([k, v]) => !v || tr.dataset[k] === v)
        && (!text || tr.dataset.id.toLowerCase().includes(text));
      tr.hidden = !ok;
      shown += ok;
    }
    pick('shown').textContent = shown;
  }
  for (const id of ['f-gpu', 'f-model', 'f-backend', 'f-text']) {
    pick(id).addEventListener('input', apply);
  }
  apply();
})();
"""


NODES_SHOWN = 30  # a row's page lists its most used nodes (every flagged one among them first)


def _tone(verdict: str) -> str:
    return VERDICT_TONE.get(verdict.split(" ")[0], "grey")


def _pct(x: float | None) -> str:
    if x is None:
        return ""
    cls = "up" if x > 0 else "down"
    return f'<span class="{cls}">{x:+.1%}</span>'


def _seconds(x: float | None) -> str:
    return "" if x is None else f"{x:.4g} s"


def _strip(view: RowView) -> str:
    cells = "".join(
        f'<span class="t-{_tone(v)}" title="{escape(f"{d[:10]} session {s}: {v}")}"></span>'
        for d, v, s in view.strip
    )
    return f'<div class="strip">{cells}</div>'


def _plot(view: RowView) -> str:
    """The row's trend as `perfgate history ROW --plot` draws it (report/plot.py), from the
    change points the view already holds (the search is not run twice a row)."""
    many = len(view.changes) > 1
    marks = [
        Mark(
            c.index - 0.5,
            f"change from {f'{c.date[:10]} {c.image or str()}'.strip()} (p {c.p_value:.3f})",
            f"change point {n}" if many else "change point",
            f"change point, p {c.p_value:.3f}",
        )
        for n, c in enumerate(view.changes, start=1)
    ]
    return step_time_svg(
        [Trace("steady step time per run", view.trend, dots=True)],
        f"{view.row_id}: history ({len(view.trend)} runs)",
        baseline_s=view.baseline_s,
        tolerance=view.tolerance,
        x_label="run in the history (oldest first)",
        marks=marks if len(view.trend) >= 2 else (),
    )


def _page(title: str, body: str, up: str = "") -> str:
    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width'>"
        f"<title>{escape(title)}</title><link rel='stylesheet' href='{up}dashboard.css'>"
        f"</head><body>{body}</body></html>\n"
    )


def _options(name: str, values: Sequence[str]) -> str:
    opts = "".join(f"<option>{escape(v)}</option>" for v in sorted(set(values)))
    return (
        f"<label for='f-{name}'>{name}</label>"
        f"<select id='f-{name}'><option value=''>all</option>{opts}</select>"
    )


def index_page(views: Sequence[RowView], findings: Sequence[NodeFinding], location: str) -> str:
    """The matrix page: every row, with the filters."""
    flagged = [f for f in findings if f.flagged]
    slow = ", ".join(escape(f.node) for f in flagged) or "none"
    stepped = sum(1 for v in views if v.changes)
    head = (
        "<h1>perfgate history</h1>"
        f"<div class='sub'>{len(views)} rows from {escape(location)}; {stepped} with change "
        f"points; slow nodes: <span class='slow'>{slow}</span></div>"
        "<div class='filters'>"
        + _options("gpu", [v.gpu for v in views])
        + _options("model", [v.model for v in views])
        + _options("backend", [v.backend for v in views])
        + "<label for='f-text'>row</label><input id='f-text' placeholder='part of the id'>"
        f"<span class='count'><span id='shown'>{len(views)}</span> rows shown</span></div>"
    )
    rows = []
    for v in views:
        last_cp = v.changes[-1] if v.changes else None
        cp = (
            f"{len(v.changes)}: last {escape(last_cp.date[:10])} {_pct(last_cp.step)}"
            if last_cp
            else ""
        )
        rows.append(
            f"<tr data-gpu='{escape(v.gpu)}' data-model='{escape(v.model)}' "
            f"data-backend='{escape(v.backend)}' data-id='{escape(v.row_id)}'>"
            f"<td class='id'><a href='rows/{escape(v.page)}'>{escape(v.row_id)}</a></td>"
            f"<td>{escape(v.gpu)}</td><td>{escape(v.model)}</td><td>{escape(v.backend)}</td>"
            f"<td class='num'>{_seconds(v.latest_s)}</td>"
            f"<td class='num'>{_seconds(v.baseline_s)}</td><td class='num'>{_pct(v.delta)}</td>"
            f"<td>{_strip(v)}</td><td>{cp}</td>"
            f"<td class='slow'>{escape(', '.join(v.slow_nodes))}</td></tr>"
        )
    table = (
        "<table id='matrix'><thead><tr><th>row</th><th>GPU</th><th>model</th><th>backend</th>"
        "<th>latest step</th><th>baseline</th><th>vs baseline</th>"
        "<th>verdicts, last nights</th><th>change points</th><th>slow nodes</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table><script src='dashboard.js'></script>"
    )
    return _page("perfgate history", head + table)


def row_page(view: RowView) -> str:
    """One row's page: trend, change points with what changed, nodes."""
    tol = view.tolerance
    plot = _plot(view)
    meta = (
        f"{escape(view.task)} / {escape(view.model)} / {escape(view.gpu)} / "
        f"{escape(view.backend)}; {view.n_runs} runs; latest {_seconds(view.latest_s)}"
        + (
            f" vs baseline {_seconds(view.baseline_s)} {_pct(view.delta)}"
            if view.delta is not None
            else ""
        )
        + (f", tolerance {tol:.1%}" if tol else "")
    )
    changes = "".join(
        f"<tr><td>{escape(c.date[:19])}</td><td class='num'>{c.session_id}</td>"
        f"<td class='num'>{_pct(c.step)}</td><td class='num'>{c.p_value:.3f}</td><td>"
        + (
            "<br>".join(
                f"{escape(k)}: {escape(str(a))} &rarr; {escape(str(b))}"
                for k, (a, b) in c.changed.items()
            )
            or "<span class='count'>no recorded image or version changed here</span>"
        )
        + "</td></tr>"
        for c in view.changes
    )
    cp_table = (
        "<table class='changes'><thead><tr><th>first run after</th><th>session</th>"
        "<th>step</th><th>p</th><th>what changed</th></tr></thead>"
        f"<tbody>{changes}</tbody></table>"
        if view.changes
        else "<p>No change point in this row's history.</p>"
    )
    node_rows = "".join(
        f"<tr><td class='{'slow' if flagged else ''}'>{escape(n)}</td><td class='num'>{k}</td>"
        f"<td>{'slow (perfgate nodes)' if flagged else ''}</td></tr>"
        for n, k, flagged in view.nodes[:NODES_SHOWN]
    )
    more = len(view.nodes) - NODES_SHOWN
    nodes_table = (
        "<table class='nodes'><thead><tr><th>node</th><th>runs</th><th></th></tr></thead>"
        f"<tbody>{node_rows}</tbody></table>"
        + (f"<p class='count'>and {more} more nodes with fewer runs</p>" if more > 0 else "")
        if view.nodes
        else "<p>No node recorded.</p>"
    )
    body = (
        "<p><a href='../index.html'>&larr; all rows</a></p>"
        f"<h1>{escape(view.row_id)}</h1><div class='sub'>{meta}</div>{_strip(view)}"
        f"<div class='plot'>{plot}</div><h2>Change points</h2>{cp_table}"
        f"<h2>Nodes</h2>{nodes_table}"
    )
    return _page(view.row_id, body, up="../")
