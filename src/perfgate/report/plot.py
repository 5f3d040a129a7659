"""Step time per iteration as a self-contained SVG: steady window, median, baseline band.

No plotting library: the report must render on a login node with nothing but the stdlib.
The y axis is scaled to the steady part and the baseline band, so a 40x warm-up step does not
flatten the picture; points off the scale are drawn on its edge as triangles, and their values
are written above the plot area (never over the markers). The legend sits below the axis,
laid out by the length of its labels, and the SVG is as tall as it needs; the report scales
the SVG to the width of the page (viewBox).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from html import escape

from perfgate.report import format as fmt
from perfgate.report.decimate import MAX_POINTS, decimate
from perfgate.rowrecord import RowRecord

W = 1000  # viewBox width; the page scales it
PH = 300  # plot area height
LEFT, RIGHT, TOP = 64, 20, 44
AXIS = 40  # below the plot area: tick labels and the axis title
LEGEND_ROW = 18
CHAR_W = 7.2  # a generous average glyph width of 12px sans-serif: labels never run over
FONT = 12
MARK_COLOR = "#d62728"
COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd")


@dataclass(frozen=True)
class Trace:
    """One run's steps: (step, seconds) pairs, with a label for the legend."""

    label: str
    points: Sequence[tuple[int, float]]
    color: str | None = None  # None: the next of COLORS
    legend: bool = True  # False: same label and color as an earlier trace (A/B runs)
    dots: bool = False  # a marker at each point (a history: one point per run)


@dataclass(frozen=True)
class Mark:
    """A vertical line at an x value (a change point in a history), named in the legend."""

    x: float
    label: str  # the legend's text
    tag: str  # the short name written above the plot, at the line
    title: str = ""  # the hover text


def _nice_ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    span = hi - lo
    if not (math.isfinite(span) and span > 0) or span < 1e-300:
        return [lo] if math.isfinite(lo) else []
    raw = span / n
    mag = 10 ** _floor_log10(raw)
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    first = step * _ceil_div(lo, step)
    out = []
    v = first
    while v <= hi + 1e-12:
        out.append(round(v, 10))
        v += step
    return out


def _floor_log10(x: float) -> int:
    """floor(log10(x)) of a finite x > 0, exact at powers of ten (log10 may round below)."""
    e = math.floor(math.log10(x))
    if 10.0 ** (e + 1) <= x:
        e += 1
    elif 10.0**e > x:
        e -= 1
    return e


def _ceil_div(a: float, b: float) -> int:
    q = int(a // b)
    return q if q * b >= a - 1e-12 else q + 1


def step_time_svg(
    traces: Sequence[Trace],
    title: str,
    window: tuple[int, int] | None = None,
    median_s: float | None = None,
    baseline_s: float | None = None,
    tolerance: float | None = None,
    x_label: str = "step (0-based)",
    marks: Sequence[Mark] = (),
) -> str:
    """The SVG document (text) of the step-time plot (a history's trend: one point per run,
    x_label naming the runs, marks at its change points). Steps that are not a finite time
    (NaN, inf, <= 0: a broken run) are named above the plot, never drawn or scaled to. A trace
    of more than decimate.MAX_POINTS steps is drawn from the fastest and slowest step of each
    bucket of steps (its spikes stay visible; the SVG stays small)."""
    traces = [_decimated(t) for t in traces]
    unplottable = [(i, s) for t in traces for i, s in t.points if not _plottable(s)]
    traces = [replace(t, points=[(i, s) for i, s in t.points if _plottable(s)]) for t in traces]
    pts = [p for t in traces for p in t.points]
    if not pts:
        return _empty(title, "no finite step times" if unplottable else "no step times recorded")
    median_s, baseline_s = (v if v is not None and _plottable(v) else None
                            for v in (median_s, baseline_s))  # fmt: skip
    steady = [s for t in traces for (i, s) in t.points if window and window[0] <= i <= window[1]]
    core = steady or [s for _, s in pts]
    extra = [v for v in (median_s, baseline_s) if v is not None]
    if baseline_s is not None and tolerance is not None:
        extra += [baseline_s * (1 - tolerance), baseline_s * (1 + tolerance)]
    lo, hi = min(core + extra), max(core + extra)
    pad = max((hi - lo) * 0.12, hi * 0.01)
    lo, hi = max(lo - pad, 0.0), hi + pad
    x0 = min(i for i, _ in pts)
    x1 = max(max(i for i, _ in pts), x0 + 1)
    pw, ph = W - LEFT - RIGHT, PH
    legend, legend_h = _legend(
        traces, window, baseline_s, tolerance, median_s, TOP + ph + AXIS, marks
    )
    height = TOP + ph + AXIS + legend_h + 6

    def sx(i: float) -> float:
        return LEFT + (i - x0) / (x1 - x0) * pw

    def sy(v: float) -> float:
        return TOP + (hi - min(max(v, lo), hi)) / (hi - lo) * ph

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{height}" '
        f'viewBox="0 0 {W} {height}" font-family="sans-serif" font-size="{FONT}">',
        f'<rect x="0" y="0" width="{W}" height="{height}" fill="white"/>',
        f'<text x="{LEFT}" y="17" font-size="14" font-weight="bold">{escape(title)}</text>',
    ]
    off_scale: list[tuple[int, float]] = []
    if window is not None:
        a, b = sx(window[0]), sx(window[1])
        out.append(
            f'<rect class="steady-window" x="{a:.1f}" y="{TOP}" width="{max(b - a, 1):.1f}" '
            f'height="{ph}" fill="#2ca02c" fill-opacity="0.08"/>'
        )
    if baseline_s is not None:
        if tolerance is not None:
            y_top, y_bot = sy(baseline_s * (1 + tolerance)), sy(baseline_s * (1 - tolerance))
            out.append(
                f'<rect class="baseline-band" x="{LEFT}" y="{y_top:.1f}" width="{pw}" '
                f'height="{max(y_bot - y_top, 1):.1f}" fill="#ff7f0e" fill-opacity="0.15"/>'
            )
        y = sy(baseline_s)
        out.append(
            f'<line class="baseline" x1="{LEFT}" x2="{LEFT + pw}" y1="{y:.1f}" y2="{y:.1f}" '
            'stroke="#ff7f0e" stroke-dasharray="6 3"/>'
        )
    if median_s is not None:
        y = sy(median_s)
        out.append(
            f'<line class="median" x1="{LEFT}" x2="{LEFT + pw}" y1="{y:.1f}" y2="{y:.1f}" '
            'stroke="#333" stroke-width="0.8"/>'
        )
    for k, t in enumerate(traces):
        color = t.color or COLORS[k % len(COLORS)]
        line = " ".join(f"{sx(i):.1f},{sy(s):.1f}" for i, s in t.points)
        out.append(
            f'<polyline class="steps" points="{line}" fill="none" stroke="{color}" '
            'stroke-width="1.2"/>'
        )
        if t.dots:
            out += [
                f'<circle class="run" cx="{sx(i):.1f}" cy="{sy(s):.1f}" r="3.5" fill="{color}">'
                f"<title>{escape(t.label)} {i}: {fmt.seconds(s)}</title></circle>"
                for i, s in t.points
            ]
        for i, s in t.points:
            if s > hi or s < lo:
                y = TOP + 5 if s > hi else TOP + ph - 1
                mark = "▲" if s > hi else "▼"
                out.append(
                    f'<text class="clipped" x="{sx(i):.1f}" y="{y:.1f}" fill="{color}" '
                    f'font-size="10" text-anchor="middle">{mark}'
                    f"<title>step {i}: {fmt.seconds(s)}</title></text>"
                )
                off_scale.append((i, s))
    # axes and ticks
    out.append(f'<path d="M{LEFT},{TOP} V{TOP + ph} H{LEFT + pw}" fill="none" stroke="#444"/>')
    for v in _nice_ticks(lo, hi):
        y = sy(v)
        out.append(
            f'<line x1="{LEFT - 4}" x2="{LEFT}" y1="{y:.1f}" y2="{y:.1f}" stroke="#444"/>'
            f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{v:g}</text>'
        )
    for v in _nice_ticks(x0, x1, 8):
        x = sx(v)
        out.append(
            f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{TOP + ph}" y2="{TOP + ph + 4}" stroke="#444"/>'
            f'<text x="{x:.1f}" y="{TOP + ph + 16}" text-anchor="middle">{v:g}</text>'
        )
    out.append(
        f'<text x="{LEFT + pw / 2:.0f}" y="{TOP + ph + 30}" text-anchor="middle">'
        f"{escape(x_label)}</text>"
        f'<text x="14" y="{TOP + ph / 2:.0f}" text-anchor="middle" '
        f'transform="rotate(-90 14 {TOP + ph / 2:.0f})">step time (s)</text>'
    )
    if off_scale or unplottable:  # in the margin above the plot, right-aligned
        note = "; ".join(
            x
            for x in (
                _off_scale_note(off_scale) if off_scale else "",
                _unplottable_note(unplottable) if unplottable else "",
            )
            if x
        )
        out.append(
            f'<text class="off-scale" x="{W - RIGHT}" y="{TOP - 8}" text-anchor="end" '
            f'fill="#555">{escape(note)}</text>'
        )
    for m in marks:  # the line in the plot, its short tag in the margin above
        x = sx(m.x)
        out.append(
            f'<line class="change-point" x1="{x:.1f}" x2="{x:.1f}" y1="{TOP}" y2="{TOP + ph}" '
            f'stroke="{MARK_COLOR}" stroke-dasharray="5 3" stroke-width="1.5"/>'
            f'<text class="mark-tag" x="{x:.1f}" y="{TOP - 8}" text-anchor="middle" '
            f'fill="{MARK_COLOR}">{escape(m.tag)}<title>{escape(m.title)}</title></text>'
        )
    out.append(legend)
    out.append("</svg>")
    return "\n".join(out)


def _decimated(t: Trace) -> Trace:
    if len(t.points) <= MAX_POINTS:
        return t
    steps, times = [i for i, _ in t.points], [s for _, s in t.points]
    return replace(t, points=decimate(steps, times))


def _plottable(s: float) -> bool:
    return math.isfinite(s) and 0 < s < 1e15


def _unplottable_note(points: list[tuple[int, float]]) -> str:
    shown = ", ".join(f"step {i} {s!r}" for i, s in points[:3])
    more = f" and {len(points) - 3} more" if len(points) > 3 else ""
    return f"not a step time: {shown}{more}"


def _off_scale_note(points: list[tuple[int, float]]) -> str:
    """The values of the points off the scale: each when few, else their span and extreme."""
    if len(points) <= 4:
        return "off the scale (▲▼): " + ", ".join(f"step {i} {fmt.seconds(s)}" for i, s in points)
    steps = sorted({i for i, _ in points})
    i, s = max(points, key=lambda p: p[1])
    return (
        f"off the scale (▲▼): {len(points)} points, steps {steps[0]}-{steps[-1]}, "
        f"highest {fmt.seconds(s)} (step {i})"
    )


def _legend(
    traces, window, baseline_s, tolerance, median_s, top: float, marks: Sequence[Mark] = ()
) -> tuple[str, int]:
    """Legend entries under the x axis (never over the data), wrapped by the length of their
    labels; returns the SVG and the height it takes."""
    items = [
        (t.color or COLORS[k % len(COLORS)], t.label) for k, t in enumerate(traces) if t.legend
    ]
    if median_s is not None:
        items.append(("#333", f"steady median {fmt.seconds(median_s)}"))
    if window is not None:
        items.append(("#2ca02c", f"steady window {window[0]}-{window[1]}"))
    if baseline_s is not None:
        band = f" ± {fmt.pct(tolerance)}" if tolerance is not None else ""
        items.append(("#ff7f0e", f"baseline {fmt.seconds(baseline_s)}{band}"))
    items += [(MARK_COLOR, f"{m.tag}: {m.label}") for m in marks]
    parts = []
    x, y = LEFT, top + LEGEND_ROW - 4
    for color, label in items:
        width = 30 + CHAR_W * len(label)
        if x + width > W - RIGHT and x > LEFT:
            x, y = LEFT, y + LEGEND_ROW  # wrap: the SVG grows by a row
        parts.append(
            f'<g class="legend-item"><rect x="{x:.0f}" y="{y - 10}" width="11" height="11" '
            f'fill="{color}" fill-opacity="0.7"/><text x="{x + 16:.0f}" y="{y}">'
            f"{escape(label)}</text></g>"
        )
        x += width
    return "".join(parts), int(y - top + 6)


def _empty(title: str, why: str = "no step times recorded") -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="60" viewBox="0 0 {W} 60" '
        'font-family="sans-serif">'
        f'<text x="10" y="20" font-size="12">{escape(title)}</text>'
        f'<text x="10" y="42" font-size="11">{escape(why)}</text></svg>'
    )


def _time(t: object) -> float:
    """A step time from results.json: null (a NaN or inf the JSON could not hold) is NaN."""
    return float(t) if isinstance(t, int | float) else math.nan


def svg_for_record(rec: RowRecord) -> str:
    """The plot of one results.json record (A/B: every run, colored by side)."""
    runs = [run for run in rec.get("runs", []) if run.get("steps")]
    m = rec.get("measured") or {}
    window = tuple(m["window"]) if m.get("window") else None
    if rec.get("mode") == "paired":
        return _ab_svg(rec, runs, window)
    traces = []
    for run in runs:
        # One run: it is simply "the measured step time"; several are named by label/image.
        label = "measured step time" if len(runs) == 1 else run["label"]
        if len(runs) > 1 and run.get("image"):
            label += f" ({run['image']})"
        traces.append(Trace(label, [(int(i), _time(t)) for i, t in run["steps"]]))
    base = rec.get("baseline") or {}
    return step_time_svg(
        traces,
        title=rec["row_id"],
        window=window,  # type: ignore[arg-type]
        median_s=m.get("step_time_s"),
        baseline_s=base.get("step_time_s"),
        tolerance=rec.get("tolerance") if base else None,
    )


def _ab_svg(rec: RowRecord, runs: list[dict], window: tuple | None) -> str:
    """A/B: baseline runs in blue, candidate runs in red; the band is the baseline image's."""
    color = {"baseline": COLORS[0], "candidate": COLORS[1]}
    traces, shown = [], set()
    for run in runs:
        label = run["label"]
        n = sum(1 for r in runs if r["label"] == label)
        text = f"{label} ({run.get('image')}, {n} runs)" if run.get("image") else label
        traces.append(
            Trace(
                text,
                [(int(i), _time(t)) for i, t in run["steps"]],
                color=color.get(label),
                legend=label not in shown,
            )
        )
        shown.add(label)
    comp = rec.get("comparison") or {}
    m = rec.get("measured") or {}
    return step_time_svg(
        traces,
        title=f"{rec['row_id']}: A/B pairs",
        window=window,  # type: ignore[arg-type]
        median_s=m.get("step_time_s"),
        baseline_s=comp.get("baseline_step_time_s"),
        tolerance=rec.get("tolerance") if comp else None,
    )
