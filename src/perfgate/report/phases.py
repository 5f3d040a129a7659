"""Where the time went and what changed: the A/B record's phases (perfgate.verdicts.phases)
beside the versions that differ between the two images.

Shared by the A/B block of the suite's report (perfgate.report.ab) and `perfgate bisect`'s
report. Built from results.json data alone; everything that came from a log is escaped here.
"""

from __future__ import annotations

from html import escape
from typing import Any

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
