"""Where the time went and what changed: the A/B record's phases (perfgate.verdicts.phases)
beside the versions that differ between the two images.

Shared by the A/B block of the suite's report (perfgate.report.ab) and `perfgate bisect`'s
report; a one-run row shows its phases against the baseline's stored ones (phases_s, which
--update-baselines stores from each run entry's "phases"). Built from results.json data alone;
everything that came from a log is escaped here.
"""

from __future__ import annotations

import statistics
from html import escape
from typing import Any

from perfgate.logs.phases import PhaseSeries
from perfgate.report.environment import VERSION_LABELS
from perfgate.report.format import pct, sig

SLOWER, FASTER = "slower", "faster"
SHOWN_MOVED = 3  # phases named in the one-line headline, largest share of the step first


def _ms(x: float | None) -> str:
    return "" if x is None else f"{sig(x * 1000)} ms"


def _interval(p: dict[str, Any]) -> str:
    if p.get("ci_low") is None or p.get("ci_high") is None:
        return ""
    return f"[{p['ci_low']:+.1%}, {p['ci_high']:+.1%}]"


def phase_text(p: dict[str, Any]) -> str:
    """`optimizer +18.2% [+12.0%, +24.7%] (+3.1% of the step)`."""
    share = p.get("share")
    of_step = f" ({pct(share, signed=True)} of the step)" if share is not None else ""
    words = [p["name"], pct(p.get("delta"), signed=True), _interval(p)]
    return " ".join(w for w in words if w) + of_step


def changed_list(changed: dict[str, dict[str, Any]]) -> list[str]:
    """`NCCL 2.27.3 -> 2.27.7` per version that differs between the sides."""
    return [
        f"{VERSION_LABELS.get(k, k)} {v.get('baseline') or '-'} -> {v.get('candidate') or '-'}"
        for k, v in changed.items()
    ]


def headline(ab: dict[str, Any]) -> str:
    """One line: the phases that moved (largest first), that the rest stayed flat, what changed."""
    ph = ab.get("phases") or {}
    rows = {p["name"]: p for p in ph.get("phases") or []}
    changed = changed_list(ab.get("changed") or {})
    what = f"; what changed: {', '.join(changed)}" if changed else "; no recorded version changed"
    if not rows:
        return "Phases: the runs printed no timers" + what
    moved = [rows[n] for n in ph.get("moved") or [] if n in rows]
    compared = [p for p in rows.values() if p.get("moved")]
    if not moved:
        return f"Where the time went: no phase moved ({len(compared)} compared)" + what
    shown = ", ".join(phase_text(p) for p in moved[:SHOWN_MOVED])
    more = f" and {len(moved) - SHOWN_MOVED} more" if len(moved) > SHOWN_MOVED else ""
    rest = len(compared) - len(moved)
    flat = f"; {rest} other phase{'s' if rest != 1 else ''} flat" if rest else ""
    return f"Where the time went: {shown}{more}{flat}" + what


def phases_html(ab: dict[str, Any]) -> str:
    """The phase table of one A/B record (escaped HTML), with the headline; empty without timers."""
    ph = ab.get("phases") or {}
    rows = ph.get("phases") or []
    if not rows:
        return ""
    level = ph.get("ci_level")
    head = (
        "Phase",
        "Baseline (A)",
        "Candidate (B)",
        "Δ",
        "Interval" + (f" ({level:.1%})" if level else ""),
        "Share of step",
        "Moved",
        "Pairs",
    )
    body = []
    for p in rows:
        moved = p.get("moved") or p.get("note") or ""
        hot = p.get("moved") in (SLOWER, FASTER)
        cells = (
            p["name"],
            _ms(p.get("baseline_s")),
            _ms(p.get("candidate_s")),
            pct(p.get("delta"), signed=True),
            _interval(p),
            pct(p.get("share"), signed=True),
            moved,
            str(p.get("pairs", 0)),
        )
        cls = ' class="pg-changed"' if hot else ""
        body.append(f"<tr{cls}>" + "".join(f"<td>{escape(str(c))}</td>" for c in cells) + "</tr>")
    ths = "".join(f"<th>{escape(h)}</th>" for h in head)
    option = ph.get("option") or "minmax"
    note = f"Timers ({option}, slowest rank per phase); {ph.get('note') or ''}."
    return (
        f'<div class="pg-phases"><p class="pg-headline">{escape(headline(ab))}</p>'
        f'<table class="pg-phases"><tr>{ths}</tr>{"".join(body)}</table>'
        f"<p>{escape(note)}</p></div>"
    )


# --- one run against the stored baseline's phases (results.json's record "phases") ----------


def window_medians(run: dict[str, Any], first: int, last: int) -> dict[str, float]:
    """A results.json run entry's median seconds per phase over steps [first, last]."""
    data = run.get("phases")
    return PhaseSeries.from_dict(data).medians(first, last) if data else {}


def stored_phases(per_run: list[dict[str, float]]) -> dict[str, float]:
    """A baseline's phases: the median over its runs of each phase every run timed."""
    if not per_run or not all(per_run):
        return {}
    names = [n for n in per_run[0] if all(n in r for r in per_run)]
    return {n: round(statistics.median(r[n] for r in per_run), 6) for n in names}


def versus_baseline(rec: dict[str, Any]) -> dict[str, Any] | None:
    """One run's phases over its steady window against the baseline's stored ones (a point
    comparison: one run says nothing of its own phase noise, so no interval is claimed)."""
    stored = (rec.get("baseline") or {}).get("phases_s") or {}
    measured = rec.get("measured") or {}
    runs = [r for r in rec.get("runs") or () if r.get("phases") and r.get("label") == "baseline"]
    if not runs or not measured.get("window"):
        return None
    first, last = measured["window"]  # --repeat K: the median over the K runs
    mine = stored_phases([window_medians(r, first, last) for r in runs])
    rows = []
    for name, x in mine.items():
        base = stored.get(name)
        share = (x - base) / stored_step if base and (stored_step := _step(rec)) else None
        rows.append(
            {
                "name": name,
                "run_s": x,
                "baseline_s": base,
                "delta": x / base - 1 if base else None,
                "share": share,
            }
        )
    return {"phases": rows, "stored": bool(stored)}


def _step(rec: dict[str, Any]) -> float | None:
    return (rec.get("baseline") or {}).get("step_time_s")


def versus_baseline_html(rec: dict[str, Any]) -> str:
    """The phase table of a one-run row against its baseline (escaped HTML)."""
    ph = rec.get("phases") or {}
    rows = ph.get("phases") or []
    if not rows:
        return ""
    head = ("Phase", "This run", "Baseline", "Δ", "Share of step")
    body = "".join(
        "<tr>"
        + "".join(
            f"<td>{escape(c)}</td>"
            for c in (
                p["name"],
                _ms(p.get("run_s")),
                _ms(p.get("baseline_s")) or "not stored",
                pct(p.get("delta"), signed=True),
                pct(p.get("share"), signed=True),
            )
        )
        + "</tr>"
        for p in rows
    )
    why = (
        "one run against the baseline's stored phase medians: point estimates (one run shows "
        "no phase noise of its own)"
        if ph.get("stored")
        else "the baseline stores no phases yet (--update-baselines stores them)"
    )
    ths = "".join(f"<th>{escape(h)}</th>" for h in head)
    return (
        f'<div class="pg-phases"><p>Phases: {escape(why)}.</p>'
        f'<table class="pg-phases"><tr>{ths}</tr>{body}</table></div>'
    )
