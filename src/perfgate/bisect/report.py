"""The bisection's answer and its evidence: terminal lines, and one HTML page beside bisect.json.

The answer names the first image whose step is slower (the gate's REGRESSION against the good
end), with what changed between it and the last good image; or, when a probe could not
decide, the range the first slower image is still in and why, never a guess. Each probe shows
its rows' A/B blocks as the suite's report does (both sides and their versions, where the
time went, every pair, the paired estimate). Built from bisect.json alone; escaped here.
"""

from __future__ import annotations

import math
from html import escape
from typing import Any

from perfgate.bisect.search import BAD, GOOD, Search, replay
from perfgate.bisect.state import finished
from perfgate.report.ab import ab_html
from perfgate.report.phases import changed_list, headline, phase_text

STYLE = """<style>
body{font-family:sans-serif;margin:1.5em;max-width:1200px}
table{border-collapse:collapse;margin:.5em 0}
td,th{border:1px solid #ccc;padding:2px 6px;overflow-wrap:anywhere}
.pg-changed td{background:#fde2e1}.bad{color:#b00020}.good{color:#1b5e20}
.undecided{color:#a15c00}.pg-answer{font-size:1.15em;font-weight:bold}
</style>"""


def _name(state: dict[str, Any], index: int) -> str:
    return f"image {index + 1} ({state['images'][index]})"


def _side_versions(state: dict[str, Any], index: int) -> dict[str, str] | None:
    """The versions measured for image `index`: the candidate side of its probe, or the
    baseline side of any probe for the good end."""
    for p in finished(state):
        for ev in (p.get("rows") or {}).values():
            sides = (ev.get("ab") or {}).get("sides") or {}
            if p["index"] == index and sides.get("candidate", {}).get("versions"):
                return sides["candidate"]["versions"]
            if index == 0 and sides.get("baseline", {}).get("versions"):
                return sides["baseline"]["versions"]
    return None


def changed_between(state: dict[str, Any], good: int, bad: int) -> list[str]:
    """`NCCL 2.27.3 -> 2.27.7` for each version that differs between two probed images."""
    a, b = _side_versions(state, good), _side_versions(state, bad)
    if a is None or b is None:
        return []
    keys = [k for k in dict.fromkeys([*a, *b]) if a.get(k) != b.get(k)]
    return changed_list({k: {"baseline": a.get(k), "candidate": b.get(k)} for k in keys})


def moved_at(state: dict[str, Any], index: int) -> list[str]:
    """The phases that moved when image `index` was probed (largest share first), per row."""
    p = next((p for p in reversed(finished(state)) if p["index"] == index), None)
    out = []
    for ev in ((p or {}).get("rows") or {}).values():
        ph = (ev.get("ab") or {}).get("phases") or {}
        rows = {x["name"]: x for x in ph.get("phases") or []}
        out += [phase_text(rows[n]) for n in ph.get("moved") or [] if n in rows]
    return list(dict.fromkeys(out))


def _probe_line(p: dict[str, Any]) -> str:
    """`probe 2: image 6 bad: row REGRESSION +12.3% [+9.1%, +15.6%], 3 pairs`."""
    parts = []
    for rid, ev in (p.get("rows") or {}).items():
        c = ev.get("comparison") or {}
        ci = ""
        if c.get("ci_low") is not None and c.get("ci_high") is not None:
            ci = f" [{c['ci_low']:+.1%}, {c['ci_high']:+.1%}]"
        delta = c.get("delta")
        d = f" {delta:+.1%}" if isinstance(delta, float) and math.isfinite(delta) else ""
        n = (ev.get("ab") or {}).get("pairs_run")
        pairs = f", {n} pair(s)" if n else ""
        parts.append(f"{rid} {ev.get('verdict')}{d}{ci}{pairs}")
    return "; ".join(parts)


def answer(state: dict[str, Any]) -> dict[str, Any]:
    """The bisection's answer: first bad image, last good, or where and why it stopped."""
    n = len(state["images"])
    probes = finished(state)
    ends = next((p for p in probes if p.get("kind") == "ends"), None)
    if ends is not None and ends.get("outcome") != BAD:
        why = "do not differ" if ends.get("outcome") == GOOD else "could not be told apart"
        return {
            "status": "ends-" + ("equal" if ends.get("outcome") == GOOD else "undecided"),
            "text": f"the ends {why}: {_probe_line(ends)}; nothing to bisect",
        }
    search: Search = replay(n, [p for p in probes if p.get("kind") != "ends"])
    mids = sum(1 for p in probes if p.get("kind") != "ends")
    if search.found is not None:
        first, last = search.found, search.good
        changed = changed_between(state, last, first)
        what = f"; what changed: {', '.join(changed)}" if changed else ""
        moved = moved_at(state, first)
        where = f"; where the time went: {'; '.join(moved)}" if moved else ""
        return {
            "status": "found",
            "first_bad": first,
            "first_bad_image": state["images"][first],
            "last_good": last,
            "probes": mids,
            "changed": changed,
            "moved": moved,
            "text": f"first slower image: {_name(state, first)}, after {_name(state, last)}, "
            f"in {mids} probe(s){where}{what}",
        }
    if search.stopped is not None:
        p = next(p for p in reversed(probes) if p["index"] == search.stopped)
        return {
            "status": "stopped",
            "range": [search.good + 1, search.bad],
            "probes": mids,
            "text": f"stopped at {_name(state, search.stopped)}: {_probe_line(p)}; the first "
            f"slower image is one of images {search.good + 2}..{search.bad + 1} "
            f"(after {_name(state, search.good)}); not narrowed further, no guess",
        }
    return {
        "status": "running",
        "range": [search.good + 1, search.bad],
        "probes": mids,
        "text": f"in progress: the first slower image is one of images {search.good + 2}.."
        f"{search.bad + 1}; at most {search.left} probe(s) to go",
    }


def probe_lines(state: dict[str, Any], p: dict[str, Any], label: str) -> list[str]:
    """One probe for the terminal: its outcome per row, then where the time went."""
    out = [f"{label}: {_name(state, p['index'])} {p.get('outcome')}: {_probe_line(p)}"]
    for ev in (p.get("rows") or {}).values():
        if ev.get("ab") and ev["ab"].get("phases"):
            out.append(f"  {headline(ev['ab'])}")
    return out


def labels(state: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(label, probe) of each finished probe: "ends", "probe 1", "probe 2", ..."""
    out, k = [], 0
    for p in finished(state):
        k += p.get("kind") != "ends"
        out.append(("ends" if p.get("kind") == "ends" else f"probe {k}", p))
    return out


def terminal_lines(state: dict[str, Any]) -> list[str]:
    """The summary for the terminal: each probe, then the answer."""
    out = [line for label, p in labels(state) for line in probe_lines(state, p, label)]
    return [*out, "answer: " + answer(state)["text"]]


def _images_table(state: dict[str, Any]) -> str:
    status: dict[int, str] = {0: GOOD, len(state["images"]) - 1: BAD}
    for p in finished(state):
        status[p["index"]] = p.get("outcome", "")
    rows = "".join(
        f'<tr><td>{i + 1}</td><td>{escape(img)}</td><td class="{escape(status.get(i, ""))}">'
        f"{escape(status.get(i, 'not probed'))}</td></tr>"
        for i, img in enumerate(state["images"])
    )
    return f"<table><tr><th>#</th><th>Image</th><th>Probed</th></tr>{rows}</table>"


def _probe_html(state: dict[str, Any], label: str, p: dict[str, Any]) -> str:
    title = "The ends" if label == "ends" else label.capitalize()
    out = [
        f'<h2>{escape(title)}: {escape(_name(state, p["index"]))} <span class="'
        f'{escape(str(p.get("outcome")))}">{escape(str(p.get("outcome")))}</span></h2>'
    ]
    for rid, ev in (p.get("rows") or {}).items():
        out.append(f"<h3>{escape(rid)}: {escape(str(ev.get('verdict')))}</h3>")
        out.append(f"<p>{escape(str(ev.get('message') or ''))}</p>")
        if ev.get("diagnosis"):
            d = ev["diagnosis"]
            out.append(f"<p>{escape(str(d.get('cause')))}: {escape(str(d.get('message')))}</p>")
        jobs = ", ".join(str(j.get("job_id")) for j in ev.get("jobs") or [])
        out.append(f"<p>Jobs: {escape(jobs)}</p>")
        rec = {"mode": "paired", "ab": ev.get("ab"), "comparison": ev.get("comparison")}
        rec["verdict"] = ev.get("verdict")
        out.append(ab_html(rec))  # type: ignore[arg-type]
    return "".join(out)


def html(state: dict[str, Any]) -> str:
    """The bisection's page: the answer, the images, each probe's evidence."""
    ans = answer(state)
    s = state.get("settings") or {}
    gate = state.get("gate")
    gate_text = (
        "; ".join(f"{k}: {v}" for k, v in gate.items())
        if isinstance(gate, dict)
        else "checked by the ends' own probe"
    )
    body = [
        f"<h1>perfgate bisect: {escape(', '.join(state['rows']))}</h1>",
        f'<p class="pg-answer">{escape(ans["text"])}</p>',
        f"<p>The gate on the ends: {escape(gate_text)}. Rule: A/B pairs against image 1, "
        f"{escape(str(s.get('pairs')))}..{escape(str(s.get('cap')))} pairs per probe, "
        f"tolerance {escape(str(s.get('tolerance')))}.</p>",
        _images_table(state),
    ]
    for label, p in labels(state):
        body.append(_probe_html(state, label, p))
    return (
        f'<!DOCTYPE html><html><head><meta charset="utf-8"><title>perfgate bisect</title>'
        f"{STYLE}</head><body>{''.join(body)}</body></html>"
    )
