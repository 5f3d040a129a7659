"""The A/B part of the report: both containers side by side, each pair, the paired estimate.

Computed from results.json records alone (record["ab"], record["comparison"]), shared by the
pytest-html extras and `perfgate report`. Everything from images, versions and messages is
escaped here.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from html import escape
from typing import Any

from perfgate.report.environment import VERSION_LABELS
from perfgate.report.format import seconds
from perfgate.report.phases import phases_html
from perfgate.rowrecord import RowRecord

Record = RowRecord
SIDES = ("baseline", "candidate")


def is_ab(rec: Record) -> bool:
    """True for a row judged (or planned) as A/B pairs."""
    return rec.get("mode") == "paired"


def _pct(x: float | None, fmt: str = "+.1%") -> str:
    return "" if x is None else f"{x:{fmt}}"


def _s(x: float | None) -> str:
    return seconds(x)


def mode_text(rec: Record) -> str:
    """The Mode column: "A/B 4 pairs" or how a single run was judged."""
    if is_ab(rec):
        n = (rec.get("ab") or {}).get("pairs_run")
        return f"A/B {n} pairs" if n else "A/B pairs"
    if rec.get("source") == "dry-run" or rec.get("mode") is None:
        return ""
    if rec.get("mode") == "history":
        return "step in the row's history"
    return "one run vs stored"


def changed_text(changed: dict[str, dict[str, Any]]) -> str:
    """NeMo 2.4.0 -> 2.5.0, Megatron-Core 0.13.1 -> 0.14.0 (or "none")."""
    if not changed:
        return "none"
    return ", ".join(
        f"{VERSION_LABELS.get(k, k)} {v.get('baseline') or '-'} -> {v.get('candidate') or '-'}"
        for k, v in changed.items()
    )


def _digest(side: dict[str, Any]) -> str:
    d = side.get("digest")
    if d:
        return f"{d} (sha256 of the squashfs file; with podman, its image ID)"
    return f"not known: {side.get('digest_note') or 'not recorded'}"


def _sides_table(ab: dict[str, Any]) -> str:
    sides = ab.get("sides") or {}
    a, b = sides.get("baseline") or {}, sides.get("candidate") or {}
    changed = ab.get("changed") or {}
    rows = [("Image", str(a.get("image") or ""), str(b.get("image") or ""), False)]
    rows.append(("Digest", _digest(a), _digest(b), a.get("digest") != b.get("digest")))
    rows.append(
        (
            "Launches",
            ", ".join(map(str, a.get("launches") or [])),
            ", ".join(map(str, b.get("launches") or [])),
            False,
        )
    )
    if a.get("step_time_s") is not None:
        rows.append(("Steady step time (pooled)", _pooled(a), _pooled(b), False))
    va, vb = a.get("versions") or {}, b.get("versions") or {}
    for key in dict.fromkeys([*va, *vb]):
        label = VERSION_LABELS.get(key, key)
        rows.append((label, str(va.get(key) or "-"), str(vb.get(key) or "-"), key in changed))
    if not va and not vb:
        rows.append(("Versions", "not recorded by the workload", "not recorded", False))
    hot_row = ' class="pg-changed"'
    body = "".join(
        f"<tr{hot_row if hot else ''}><td>{escape(name)}</td>"
        f"<td>{escape(x)}</td><td>{escape(y)}</td></tr>"
        for name, x, y, hot in rows
    )
    return (
        '<table class="pg-ab"><tr><th></th><th>Baseline (A)</th><th>Candidate (B)</th></tr>'
        f"{body}</table>"
    )


def _pooled(side: dict[str, Any]) -> str:
    if side.get("step_time_s") is None:
        return ""
    text = f"{seconds(side['step_time_s'])} over {side.get('n_runs')} run(s)"
    if side.get("spread_s") is not None:
        text += f", spread {seconds(side['spread_s'], 2)}"
    return text


def _launches(pair: dict[str, Any]) -> str:
    """The pair's two launches in time order, e.g. 3-4."""
    got = sorted(x for x in (pair.get("baseline_launch"), pair.get("candidate_launch")) if x)
    return "-".join(map(str, got))


def _pairs_table(ab: dict[str, Any]) -> str:
    head = "".join(
        f"<th>{escape(h)}</th>"
        for h in ("Pair", "Order", "Launches", "Baseline", "Candidate", "Δ", "Used")
    )
    body = []
    for p in ab.get("pairs") or []:
        used = "yes" if p.get("used") else f"no: {p.get('left_out') or ''}"
        cells = (
            str(p.get("pair")),
            str(p.get("order")),
            _launches(p),
            _s(p.get("baseline_step_time_s")),
            _s(p.get("candidate_step_time_s")),
            _pct(p.get("delta")),
            used,
        )
        body.append("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in cells) + "</tr>")
    return f'<table class="pg-pairs"><tr>{head}</tr>{"".join(body)}</table>'


def estimate_text(rec: Record) -> str:
    """The paired estimate in one sentence: delta, interval, resolution, detectable, pairs."""
    ab, c = rec.get("ab") or {}, rec.get("comparison") or {}
    if not c:
        return ""
    n, first, top = ab.get("pairs_run"), ab.get("first_pairs"), ab.get("max_pairs")
    added = f" + {n - first} added" if n and first and n > first else ""
    level = c.get("ci_level")
    ci = ""
    if c.get("ci_low") is not None and c.get("ci_high") is not None:
        ci = f" [{c['ci_low']:+.1%}, {c['ci_high']:+.1%}]"
        ci += f" ({level:.1%} interval)" if level else ""
    detect = c.get("detectable")
    return (
        f"Paired estimate: Δ step time {_pct(c.get('delta'))}{ci}; resolution "
        f"{_pct(c.get('resolution'), '.1%')}; a slowdown of "
        f"{_pct(detect, '.1%') or 'n/a'} is flagged 95% of the time; "
        f"{ab.get('pairs_used')} of {n} pairs used ({first} planned{added}, at most {top}); "
        f"false alarms {_pct(c.get('alpha'), '.2%')} per look; tolerance "
        f"{_pct(c.get('tolerance'), '.1%')}: {rec.get('verdict')}"
    )


def drift_text(ab: dict[str, Any]) -> str:
    """Both images against the stored baseline (or that there is none)."""
    d = ab.get("drift")
    if not d:
        return "Stored baseline: none for this row (the A/B verdict does not need one)."
    parts = []
    for side in SIDES:
        x = d.get(side) or {}
        ci = ""
        if x.get("ci_low") is not None and x.get("ci_high") is not None:
            ci = f" [{x['ci_low']:+.1%}, {x['ci_high']:+.1%}]"
        parts.append(f"{side} image {_pct(x.get('delta'), '+.1%')}{ci}")
    return (
        f"Drift vs the stored baseline {seconds(d['stored_step_time_s'])}: {', '.join(parts)} "
        "(informational: measured elsewhere, another day; it does not decide the row)."
    )


def ab_html(rec: Record) -> str:
    """The A/B block of one row (escaped HTML); empty for other rows."""
    ab = rec.get("ab")
    if not is_ab(rec) or not ab:
        return ""
    parts = [
        '<div class="perfgate-ab"><h4>A/B pairs in one allocation</h4>',
        f"<p>Launch order (A baseline, B candidate): {escape(str(ab.get('order') or ''))}; "
        f"versions changed: {escape(changed_text(ab.get('changed') or {}))}</p>",
        _sides_table(ab),
        phases_html(ab),  # where the time went, beside what changed (empty without timers)
    ]
    if ab.get("pairs"):
        parts.append(_pairs_table(ab))
    if rec.get("comparison"):
        parts.append(f"<p>{escape(estimate_text(rec))}</p>")
    parts.append(f"<p>{escape(drift_text(ab))}</p></div>")
    return "".join(parts)


def _images(records: Sequence[Record]) -> dict[str, str]:
    out = {}
    for side in SIDES:
        seen = Counter(
            str(((r.get("ab") or {}).get("sides") or {}).get(side, {}).get("image") or "")
            for r in records
        )
        seen.pop("", None)
        out[side] = "; ".join(seen) if seen else "?"
    return out


def signoff_summary(records: Sequence[Record]) -> str:
    """One plain sentence: which rows were judged by A/B, the images, what changed."""
    ab = [r for r in records if is_ab(r) and r.get("ab")]
    if not ab:
        return ""
    images = _images(ab)
    changed: dict[str, str] = {}
    for r in ab:
        for k, v in (r["ab"].get("changed") or {}).items():
            changed.setdefault(k, changed_text({k: v}))
    return (
        f"A/B gate: {len(ab)} of {len(records)} rows judged by A/B pairs in one allocation "
        f"per row ({', '.join(sorted(r['row_id'] for r in ab))}); baseline image "
        f"{images['baseline']}, candidate image {images['candidate']}; versions changed: "
        f"{', '.join(changed.values()) if changed else 'none recorded'}."
    )
