"""A row's history for people: one line per session, and its trend plot with change points.

`perfgate history ROW` prints trend_lines and writes trend_svg / trend_html; the report can
call trend_svg for a row (the same SVG style as its step-time plots, stdlib only). Input is
plain data from perfgate.history.store: its runs(row_id) dicts.
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
        if r["steady"]
        and r["step_time_s"]
        and r["cause"] is None
        and r["excluded"] is None
        and r["mode"] in ("stored", "repeat")
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


def trend_svg(
    row_id: str,
    runs: Sequence[dict[str, Any]],
    baseline_s: float | None = None,
    tolerance: float | None = None,
) -> str:
    """The trend plot: steady step time per run (oldest first), the baseline band, and a line
    before the first run after each change point (named in the legend: date and container)."""
    idx, cps = analyse(runs)
    points = [(k, runs[i]["step_time_s"]) for k, i in enumerate(idx)]
    marks = []
    for n, c in enumerate(cps, start=1):
        first = runs[idx[c.index]]
        label = f"{first['started_at'][:10]} {first['image'] or ''}".strip()
        marks.append(
            Mark(
                c.index - 0.5,
                f"change from {label} (p {c.p_value:.3f})",
                f"change point {n}" if len(cps) > 1 else "change point",
                f"change point, p {c.p_value:.3f}",
            )
        )
    return step_time_svg(
        [Trace("steady step time per run", points, dots=True)],
        f"{row_id}: history ({len(points)} runs)",
        baseline_s=baseline_s,
        tolerance=tolerance,
        x_label="run in the history (oldest first)",
        marks=marks if len(points) >= 2 else (),
    )


# What results.json keeps of each stored run for the report's trend plot.
TREND_FIELDS = (
    "session_id",
    "started_at",
    "job_id",
    "image",
    "step_time_s",
    "steady",
    "cause",
    "excluded",
    "mode",
    "verdict",
    "label",
)


def trend_record(runs: Sequence[dict[str, Any]]) -> list[dict[str, Any]] | None:
    """A row's stored runs as results.json keeps them for its trend, or None when the history
    has fewer than two points of a trend for the row."""
    if len(_trend_runs(runs)) < 2:
        return None
    return [{k: r.get(k) for k in TREND_FIELDS} for r in runs]


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
