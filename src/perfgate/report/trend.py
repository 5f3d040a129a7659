"""A row's history for people: one line per session, and its trend plot with change points.

`perfgate history ROW` prints trend_lines and writes trend_svg / trend_html from the store's
runs(row_id) dicts, searching them for change points once. The report draws a row's trend
from its record (record_svg): the points and change points the session found, handed on by
the verdict (verdicts.nightly.trend_record); it never searches a history. Same SVG style as
the step-time plots, stdlib only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape
from typing import Any

from perfgate.history import trend
from perfgate.report.plot import Mark, Trace, step_time_svg


def _trend_runs(runs: Sequence[dict[str, Any]]) -> list[int]:
    """Indices into runs of the points of the trend (what the store's points() keeps)."""
    return [
        i
        for i, r in enumerate(runs)
        if r.get("steady")
        and r.get("step_time_s")
        and r.get("cause") is None
        and r.get("excluded") is None
        and r.get("mode") in ("stored", "repeat")
    ]


def analyse(runs: Sequence[dict[str, Any]]) -> tuple[list[int], list[trend.ChangePoint]]:
    """(indices of the trend's runs, change points over them)."""
    idx = _trend_runs(runs)
    xs = [math.log(runs[i]["step_time_s"]) for i in idx]
    return idx, trend.change_points(xs)


def trend_lines(row_id: str, runs: Sequence[dict[str, Any]], baseline_s: float | None) -> list[str]:
    """One line per run (date, session, job, container, step time, delta, verdict), with a
    line above the first run after each change point."""
    if not runs:
        return [f"{row_id}: no run in the history"]
    idx, cps = analyse(runs)
    starts = {idx[c.index]: c for c in cps}
    xs = [math.log(runs[i]["step_time_s"]) for i in idx]
    out = [
        f"{row_id}: {len(runs)} run(s) in {len({r['session_id'] for r in runs})} session(s), "
        f"{len(cps)} change point(s)" + (f"; baseline {baseline_s:.4g} s" if baseline_s else ""),
        f"{'date':<10}  {'session':>7}  {'job':<10} {'container':<28} {'step time':>10}"
        f"  {'vs base':>8}  verdict",
    ]
    cuts = [0, *(c.index for c in cps), len(xs)]
    for i, r in enumerate(runs):
        if i in starts:
            c = starts[i]
            k = cuts.index(c.index)
            before = xs[cuts[k - 1] : c.index]
            after = xs[c.index : cuts[k + 1]]
            step = math.expm1(sum(after) / len(after) - sum(before) / len(before))
            out.append(f"---- change point (p {c.p_value:.3f}): {step:+.1%} from here ----")
        t = r["step_time_s"]
        delta = f"{t / baseline_s - 1:+.1%}" if t and baseline_s else ""
        verdict = r["verdict"] or ""
        if r["cause"]:
            verdict = f"INFRA {r['cause']}"
        if r["excluded"]:
            verdict += f" (forgotten: {r['excluded']})"
        if r["mode"] == "paired":
            verdict += f" (A/B {r['label']})"
        out.append(
            f"{r['started_at'][:10]:<10}  {r['session_id']:>7}  {r['job_id'] or '-'!s:<10} "
            f"{str(r['image'] or '-')[-28:]:<28} {f'{t:.4g} s' if t else '-':>10}  "
            f"{delta:>8}  {verdict}"
        )
    return out


def _seconds(x: Any) -> float:
    """A point's step time; what is not a number is drawn as not finite (named, not plotted)."""
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else math.nan


def _svg(
    row_id: str,
    points: Sequence[dict[str, Any]],
    cps: Sequence[tuple[int, float]] | None,
    baseline_s: float | None,
    tolerance: float | None,
) -> str:
    """The plot of a trend's points (step_time_s, started_at, image) and its change points
    ((index of the first point after it, p value)); None: not known (said in the title)."""
    xy = [(k, _seconds(p.get("step_time_s"))) for k, p in enumerate(points)]
    marks = []
    for n, (index, p_value) in enumerate(cps or (), start=1):
        first = points[index]
        when = "this session" if first.get("tonight") else str(first.get("started_at") or "")[:10]
        label = f"{when} {first.get('image') or ''}".strip()
        marks.append(
            Mark(
                index - 0.5,
                f"change from {label} (p {p_value:.3f})",
                f"change point {n}" if len(cps or ()) > 1 else "change point",
                f"change point, p {p_value:.3f}",
            )
        )
    unknown = "; change points not recorded" if cps is None else ""
    return step_time_svg(
        [Trace("steady step time per run", xy, dots=True)],
        f"{row_id}: history ({len(xy)} runs{unknown})",
        baseline_s=baseline_s,
        tolerance=tolerance,
        x_label="run in the history (oldest first)",
        marks=marks if len(xy) >= 2 else (),
    )


def trend_svg(
    row_id: str,
    runs: Sequence[dict[str, Any]],
    baseline_s: float | None = None,
    tolerance: float | None = None,
) -> str:
    """The trend plot of a row's stored runs (`perfgate history --plot`): steady step time per
    run (oldest first), the baseline band, and a line before the first run after each change
    point (named in the legend: date and container)."""
    idx, cps = analyse(runs)
    points = [runs[i] for i in idx]
    return _svg(row_id, points, [(c.index, c.p_value) for c in cps], baseline_s, tolerance)


def record_svg(
    row_id: str,
    trend: dict[str, Any] | list[dict[str, Any]],
    baseline_s: float | None = None,
    tolerance: float | None = None,
) -> str:
    """The trend plot of a results.json record's "trend", with the change points the session
    found (no search here). A results.json written before they were kept holds the stored
    runs only: their trend is drawn without change points, and its title says so."""
    if isinstance(trend, list):
        return _svg(row_id, [trend[i] for i in _trend_runs(trend)], None, baseline_s, tolerance)
    points = trend.get("points") or []
    cps = [
        (c["index"], c["p_value"])
        for c in trend.get("change_points") or ()
        if isinstance(c.get("index"), int)
        and 0 < c["index"] < len(points)
        and isinstance(c.get("p_value"), (int, float))
    ]
    return _svg(row_id, points, cps, baseline_s, tolerance)


def trend_html(
    row_id: str,
    runs: Sequence[dict[str, Any]],
    baseline_s: float | None = None,
    tolerance: float | None = None,
) -> str:
    """A self-contained HTML page: the plot and the lines."""
    lines = "\n".join(trend_lines(row_id, runs, baseline_s))
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{escape(row_id)}</title>"
        f"</head><body>{trend_svg(row_id, runs, baseline_s, tolerance)}"
        f"<pre>{escape(lines)}</pre></body></html>\n"
    )
