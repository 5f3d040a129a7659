"""`perfgate dashboard`: the whole matrix's history as a static site (no server).

    index.html          every row, worst last night first: latest step time vs its baseline,
                        the verdict of each of the last nights as a strip, change points, slow
                        nodes; filters by GPU, model and backend (a few lines of JavaScript)
    rows/<row>.html     one per row: its trend with the baseline band and change points
                        (report/trend.py's plot), the versions that changed at each change
                        point, the nodes its runs used

Input is plain data from the history store (perfgate.history.store: row_ids, runs,
node_totals) and, when the catalog is at hand, each row's GPU, model, backend and baseline;
a row no longer in the catalog keeps what its id and its runs say. Pages are HTML with
inline SVG, readable at 1366 px, and open from the file system. The site is made again
whole each time (nothing in it is a record): plain writes, no fsync.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from perfgate.catalog import BACKENDS, Catalog
from perfgate.catalog.rows import DEFAULT_BACKEND
from perfgate.history import nodes
from perfgate.history.store import HistoryStore
from perfgate.report import dashboard_html as html
from perfgate.report.dashboard_views import ChangeView, RowView
from perfgate.report.table import VERDICT_TONE
from perfgate.report.trend import analyse
from perfgate.stats.changepoint import ChangePoint

NIGHTS = 30  # verdicts shown in a row's strip


_SAFE = re.compile(r"[A-Za-z0-9._-]{1,150}")


def page_name(row_id: str) -> str:
    """The row's page file: its id when that is a plain file name, else a hash of it."""
    if _SAFE.fullmatch(row_id) and not row_id.startswith("."):
        return f"{row_id}.html"
    return f"row-{hashlib.sha256(row_id.encode('utf-8', 'replace')).hexdigest()[:16]}.html"


def identity(row_id: str, catalog: Catalog | None) -> tuple[str, str, str, str]:
    """(task, model, gpu, backend) of a row: the catalog's, else read from its id."""
    row = catalog.by_id.get(row_id) if catalog is not None else None
    if row is not None:
        return row.task, row.model, row.gpu, row.backend
    parts = row_id.split("-")
    backend = parts[6] if len(parts) > 6 and parts[6] in BACKENDS else DEFAULT_BACKEND
    task, model, gpu = [*parts, "?", "?", "?"][:3]
    return task, model, gpu, backend


def _changes(
    runs: Sequence[dict[str, Any]], idx: Sequence[int], cps: Sequence[ChangePoint]
) -> list[ChangeView]:
    xs = [math.log(runs[i]["step_time_s"]) for i in idx]
    cuts = [0, *(c.index for c in cps), len(xs)]
    out = []
    for k, c in enumerate(cps, start=1):
        before, after = runs[idx[c.index - 1]], runs[idx[c.index]]
        a, b = xs[cuts[k - 1] : c.index], xs[c.index : cuts[k + 1]]
        versions = {**before["versions"], **after["versions"]}
        changed = {
            name: (before["versions"].get(name), after["versions"].get(name))
            for name in sorted(versions)
            if before["versions"].get(name) != after["versions"].get(name)
        }
        if before["image"] != after["image"]:
            changed = {"image": (before["image"], after["image"]), **changed}
        out.append(
            ChangeView(
                c.index,
                after["started_at"],
                after["session_id"],
                after["image"],
                c.p_value,
                math.expm1(sum(b) / len(b) - sum(a) / len(a)),
                changed,
            )
        )
    return out


def _strip(runs: Sequence[dict[str, Any]], nights: int) -> list[tuple[str, str, int]]:
    """The row's verdict per session (its last run's in that session), the last `nights`."""
    per_session: dict[int, tuple[str, str, int]] = {}
    for r in runs:
        verdict = f"INFRA {r['cause']}" if r["cause"] else (r["verdict"] or "NONE")
        per_session[r["session_id"]] = (r["started_at"], verdict, r["session_id"])
    return list(per_session.values())[-nights:]


def row_view(
    row_id: str,
    runs: list[dict[str, Any]],
    catalog: Catalog | None,
    flagged: set[str],
    nights: int = NIGHTS,
) -> RowView:
    """One row's view from its stored runs (oldest first)."""
    task, model, gpu, backend = identity(row_id, catalog)
    view = RowView(row_id, task, model, gpu, backend, page_name(row_id), len(runs), runs=runs)
    row = catalog.by_id.get(row_id) if catalog is not None else None
    if row is not None and row.baseline is not None:
        view.baseline_s, view.tolerance = row.baseline.step_time_s, row.baseline.tolerance
    stamped = [r for r in runs if r["baseline_s"]]
    if view.baseline_s is None and stamped:  # the baseline the last session judged against
        view.baseline_s, view.tolerance = stamped[-1]["baseline_s"], stamped[-1]["tolerance"]
    steady = [r for r in runs if r["steady"] and r["step_time_s"] and r["mode"] != "paired"]
    if steady:
        view.latest_s, view.latest_date = steady[-1]["step_time_s"], steady[-1]["started_at"]
    view.strip = _strip(runs, nights)
    idx, cps = analyse(runs)  # once a row: its page's plot and its summary share them
    view.changes = _changes(runs, idx, cps)
    view.trend = [(k, runs[i]["step_time_s"]) for k, i in enumerate(idx)]
    used = Counter(n for r in runs for n in set(r["nodes"]))
    view.nodes = [
        (n, k, n in flagged)
        for n, k in sorted(used.items(), key=lambda x: (x[0] not in flagged, -x[1], x[0]))
    ]
    last = view.strip[-1][2] if view.strip else None
    view.slow_nodes = sorted(
        {n for r in runs if r["session_id"] == last for n in r["nodes"]} & flagged
    )
    return view


_TONE_RANK = {"red": 0, "amber": 1}


def _worst_first(view: RowView) -> tuple[int, float, str]:
    """Rows whose last night was red first, then amber; within them the largest slowdown."""
    last = view.strip[-1][1].split(" ")[0] if view.strip else ""
    return (_TONE_RANK.get(VERDICT_TONE.get(last, ""), 2), -(view.delta or 0.0), view.row_id)


def build(
    store: HistoryStore,
    out: Path,
    catalog: Catalog | None = None,
    nights: int = NIGHTS,
    rows: Iterable[str] | None = None,
    progress: Callable[[int, int], None] = lambda done, total: None,
) -> list[RowView]:
    """Write the site into out (index.html, rows/*.html, the style and the filter script);
    the rows' views, for the caller's summary."""
    findings = nodes.findings(store.node_totals())
    flagged = {f.node for f in findings if f.flagged}
    ids = list(rows) if rows is not None else store.row_ids()
    (out / "rows").mkdir(parents=True, exist_ok=True)
    views = []
    for n, row_id in enumerate(ids, start=1):
        view = row_view(row_id, store.runs(row_id), catalog, flagged, nights)
        (out / "rows" / view.page).write_text(html.row_page(view), encoding="utf-8")
        view.runs, view.trend = [], []  # a page's worth of data a row is not kept for all
        views.append(view)
        progress(n, len(ids))
    views.sort(key=_worst_first)
    for name, text in (
        ("dashboard.css", html.CSS),
        ("dashboard.js", html.JS),
        ("index.html", html.index_page(views, findings, store.location)),
    ):
        (out / name).write_text(text, encoding="utf-8")
    return views
