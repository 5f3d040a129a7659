"""The sign-off summary at the top of the report, and its plain-text twin for the terminal.

Counts per verdict, what was compared (containers, baselines' provenance), who ran it, when
and where, the rows to look at worst first (linked to their table rows), and the skipped and
deselected rows folded into one expandable line. Everything from rows, jobs and logs is
escaped here.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from datetime import datetime
from html import escape
from typing import Any

from perfgate.report import ab, provenance, table
from perfgate.report import format as fmt
from perfgate.report.extras import verdict_text
from perfgate.report.nodes import nodes_text
from perfgate.rowrecord import RowRecord
from perfgate.stats.matrix import expected_false_alarms

Record = RowRecord
WORST_SHOWN = 12  # rows listed in the sign-off (all of them are in the table below)


def _badges(c: Counter) -> str:
    order = sorted(c, key=table.rank)
    return " ".join(
        f'<span class="pg-badge {table.verdict_class(v)}">{escape(v)} {c[v]}</span>' for v in order
    )


def headline(records: Sequence[Record]) -> str:
    """The one-line decision: what blocks, what needs a look, or that all passed."""
    c = table.counts(records)
    red = [f"{c[v]} {v}" for v in table.VERDICT_ORDER if table.VERDICT_TONE[v] == "red" and c[v]]
    amber = [
        f"{c[v]} {v}" for v in table.VERDICT_ORDER if table.VERDICT_TONE[v] == "amber" and c[v]
    ]
    judged = sum(n for v, n in c.items() if v not in ("SKIPPED", "DRY_RUN"))
    if red:
        look = f"; to look at: {', '.join(amber)}" if amber else ""
        return f"Not ready: {', '.join(red)}{look}"
    if amber:
        return f"Needs a look: {', '.join(amber)}"
    if judged:
        return f"All {judged} judged rows pass"
    if c.get("DRY_RUN"):
        return f"Dry run: {c['DRY_RUN']} rows planned, nothing ran"
    return "No row was judged"


def session_took(session: dict[str, Any]) -> str:
    """How long the session took, start to finish ('2.08 s', '14.3 min'; '' while unfinished):
    the page's one duration (the summary and the session line say the same)."""
    try:
        a = datetime.fromisoformat(session["started"])
        b = datetime.fromisoformat(session["finished"])
    except (KeyError, TypeError, ValueError):
        return ""
    s = max(0.0, (b - a).total_seconds())
    if s < 60:
        return fmt.seconds(s, 3)
    return f"{fmt.sig(s / 3600, 3)} h" if s >= 3600 else f"{fmt.sig(s / 60, 3)} min"


def who_when_where(session: dict[str, Any]) -> str:
    """Mode, user and host, start and duration, partition/account (plain text)."""
    opts = session.get("options") or {}
    mode = str(session.get("mode") or "")
    if mode == "replay" and opts.get("replay"):
        mode = f"replay of {opts['replay']}"
    who = "@".join(x for x in (session.get("user"), session.get("host")) if x) or "unknown"
    started = str(session.get("started") or "?").replace("T", " ")
    finished = "" if session.get("finished") else " (unfinished)"
    if str(session.get("mode") or "") == "replay":
        where = "logs read here, nothing ran"  # no executor ran anything
    else:
        where = (
            ", ".join(f"{k} {opts[k]}" for k in ("partition", "account") if opts.get(k))
            or f"executor {opts.get('executor') or '?'}"
        )
        if session.get("cluster"):
            where = f"cluster {session['cluster']}, {where}"
    took = session_took(session)
    took = f", took {took}" if took else ""
    return f"{mode}; by {who}; started {started}{took}{finished}; {where}"


def containers_text(records: Sequence[Record], session: dict[str, Any]) -> str:
    """What was compared with what: the measured containers and where the baselines come from."""
    if ab.signoff_summary(records):
        return ab.signoff_summary(records)
    judged = [r for r in records if r.get("verdict") != "SKIPPED"]
    if not judged:
        return "Nothing was measured."
    replayed = " (replayed logs)" if session.get("mode") == "replay" else ""
    none = f"container not recorded{replayed}"
    measured = Counter(provenance.measured_image(r) or none for r in judged)
    opts = session.get("options") or {}
    if opts.get("container_image") and set(measured) == {none}:
        measured = Counter({f"{opts['container_image']} (requested)": len(judged)})
    if session.get("mode") == "dry-run":
        measured = Counter({"nothing (dry run)": len(judged)})
    bases = Counter(
        (r.get("baseline") or {}).get("container") or "container not recorded"
        for r in judged
        if r.get("baseline")
    )
    text = f"Measured with: {_listing(measured)}. Baselines: "
    if bases:
        text += f"{sum(bases.values())} of {len(judged)} rows, from {_listing(bases)}"
    else:
        text += f"none for the {len(judged)} rows"
    cross = sum(1 for r in judged if provenance.cross_version(r))
    if cross:
        text += f"; {cross} of them from another container (cross-version reference)"
    return text + "."


def _listing(c: Counter) -> str:
    if len(c) == 1:
        return next(iter(c))
    return ", ".join(f"{k} ({n} rows)" for k, n in c.most_common())


def short_detail(rec: Record) -> str:
    """Why a row is listed, in one short line (the full text is in its row of the table)."""
    if rec.get("diagnosis"):
        text = verdict_text(rec).removeprefix(f"{rec.get('verdict')} ")
        return text if len(text) <= 160 else text[:157] + "..."
    c = rec.get("comparison") or {}
    m = rec.get("measured") or {}
    parts = []
    if m.get("step_time_s") is not None:
        parts.append(f"step time {fmt.seconds(m['step_time_s'])}")
    if c.get("baseline_step_time_s") is not None:
        parts.append(f"vs {fmt.seconds(c['baseline_step_time_s'])}")
    if c.get("ci_low") is not None and c.get("ci_high") is not None:
        parts.append(f"interval [{fmt.pct(c['ci_low'], True)}, {fmt.pct(c['ci_high'], True)}]")
    if c.get("tolerance") is not None:
        parts.append(f"tolerance {fmt.pct(c['tolerance'])}")
    if provenance.cross_version(rec):
        parts.append("cross-version baseline")
    return ", ".join(parts) or str(rec.get("message") or "")


def _reason_groups(records: Sequence[Record]) -> dict[str, list[str]]:
    groups: dict[str, list[str]] = defaultdict(list)
    for r in records:
        reason = str(r.get("message") or "skipped").replace(r["row_id"], "<row>")
        groups[reason].append(r["row_id"])
    return groups


def skipped_html(records: Sequence[Record], session: dict[str, Any]) -> str:
    """Skipped and deselected rows as one line with counts, expandable to the lists."""
    skipped = [r for r in records if r.get("verdict") == "SKIPPED"]
    deselected = list(session.get("deselected") or [])
    if not skipped and not deselected:
        return ""
    head = []
    if skipped:
        head.append(f"{len(skipped)} rows skipped")
    if deselected:
        head.append(f"{len(deselected)} deselected (-m, -k, --gpus)")
    body = []
    for reason, ids in sorted(_reason_groups(skipped).items(), key=lambda kv: -len(kv[1])):
        body.append(
            f'<p>{len(ids)} skipped: {escape(reason)}</p><p class="pg-ids">'
            f"{escape(', '.join(sorted(ids)))}</p>"
        )
    if deselected:
        body.append(
            f'<p>{len(deselected)} deselected:</p><p class="pg-ids">'
            f"{escape(', '.join(sorted(deselected)))}</p>"
        )
    return (
        f'<details class="pg-skipped"><summary>{escape(", ".join(head))} (not run; '
        f"click to list)</summary>{''.join(body)}</details>"
    )


def signoff_html(records: Sequence[Record], session: dict[str, Any] | None = None) -> str:
    """The sign-off block: decision, counts, containers, who/when/where, worst rows, skipped."""
    session = session or {}
    c = table.counts(records)
    shown = [r for r in table.worst_first(records) if r.get("verdict") not in table.QUIET]
    tones = {table.VERDICT_TONE.get(v) for v in c}
    tone = "pg-red" if "red" in tones else "pg-amber" if "amber" in tones else ""
    lines = [
        '<div class="perfgate-signoff">',
        f'<h2 class="pg-headline {tone}">Sign-off: {escape(headline(records))}</h2>',
        f'<p class="pg-counts">{_badges(c)}</p>',
        '<table class="pg-facts">',
        f"<tr><th>Compared</th><td>{escape(containers_text(records, session))}</td></tr>",
        f'<tr><th>Session</th><td class="pg-session">{escape(who_when_where(session))}</td></tr>',
    ]
    night = night_text(records, session)
    if night:
        lines.append(f"<tr><th>False alarms</th><td>{escape(night)}</td></tr>")
    nodes = nodes_text(session)
    if nodes:
        lines.append(f"<tr><th>Nodes</th><td>{escape(nodes)}</td></tr>")
    lines += [
        "</table>",
    ]
    if shown:
        lines.append(
            '<table class="pg-worst"><tr><th>Verdict</th><th>Row</th><th>Δ step time</th>'
            "<th>Why</th></tr>"
        )
        for r in shown[:WORST_SHOWN]:
            v = r.get("verdict", "")
            delta = fmt.pct((r.get("comparison") or {}).get("delta"), signed=True)
            lines.append(
                f'<tr><td class="{table.verdict_class(v)}">{escape(v)}</td>'
                f'<td><a href="#{escape(r["row_id"])}">{escape(r["row_id"])}</a></td>'
                f"<td>{escape(delta)}</td><td>{escape(short_detail(r))}</td></tr>"
            )
        lines.append("</table>")
        if len(shown) > WORST_SHOWN:
            lines.append(f"<p>... and {len(shown) - WORST_SHOWN} more in the table below.</p>")
    lines.append(skipped_html(records, session))
    lines.append(ran_html(records, session))
    lines.append("</div>")
    return "\n".join(lines)


def ran_html(records: Sequence[Record], session: dict[str, Any]) -> str:
    """How many rows were judged, in how long a session: the page's one run count (pytest-html's
    own leaves out errors and skipped rows, so the page hides it) and its one duration."""
    judged = [r for r in records if r.get("verdict") not in ("SKIPPED", "DRY_RUN")]
    planned = [r for r in records if r.get("verdict") == "DRY_RUN"]
    what = f"{len(judged)} row(s) judged" if judged or not planned else ""
    if planned:
        what = ", ".join(x for x in (what, f"{len(planned)} row(s) planned") if x)
    took = session_took(session)
    took = f" in a session of {took}" if took else " so far (the session has not finished)"
    return f'<p class="pg-ran">{escape(what)}{escape(took)}.</p>'


def night_text(records: Sequence[Record], session: dict[str, Any]) -> str | None:
    """What noise alone gives a night of this many one-run rows at the session's alpha, and
    what confirmation and --fdr make of it (None: no such row)."""
    judged = [r for r in records if r.get("comparison") and r.get("mode") != "paired"]
    m = len(judged)
    if not m:
        return None
    opts = session.get("options") or {}
    alpha = opts.get("alpha") or 0.01
    confirm = str(opts.get("confirm") or 0)
    expected, none = expected_false_alarms(m, alpha)
    runs = sorted({int((r.get("comparison") or {}).get("n_candidate") or 1) for r in judged})
    each = "one run each" if runs == [1] else f"{'/'.join(map(str, runs))} run(s) each"
    text = (
        f"{m} rows judged on {each} against their baselines at {alpha:.1%} false alarms: noise "
        f"alone gives up to {expected:.2f} false REGRESSIONs a night (none on {none:.0%} of such "
        "nights)"
    )
    rerun = sum(1 for r in records if (r.get("confirmation") or {}).get("runs"))
    if confirm not in ("0", "None") and session.get("mode") == "replay":
        # A replay reruns nothing; it reads a live session's reruns from confirm-<n>/ folders.
        text += (
            f"; {rerun} row(s) read with their reruns on other nodes from the replayed folders"
            if rerun
            else "; nothing was rerun (a replay reads reruns only from confirm-<n>/ folders)"
        )
    elif confirm not in ("0", "None"):
        after, clean = expected_false_alarms(m, alpha**2)
        how = (
            "a second rerun when the first reproduced it, which may veto it"
            + (" (a third when the second could not tell)" if confirm == "auto" else "")
            if confirm != "1"
            else "one rerun"
        )
        text += (
            f"; each REGRESSION was rerun on other nodes (--confirm {confirm}: {how}; {rerun} "
            f"row(s) were tonight), so a false one must recur there: about {after:.3f} a night "
            f"if the reruns were independent (none on {clean:.1%} of nights)"
        )
    if opts.get("fdr"):
        text += (
            f"; --fdr {opts['fdr']:g}: any false REGRESSION on at most {opts['fdr']:.0%} of nights"
        )
    return text


def terminal_lines(records: Sequence[Record], session: dict[str, Any] | None = None) -> list[str]:
    """Plain-text sign-off summary for the terminal: the page's summary, line for line (the
    headline, the counts, the session, the night, the rows to look at; report.format numbers)."""
    session = session or {}
    c = table.counts(records)
    out = [
        f"sign-off: {headline(records)}",
        "  ".join(f"{v}: {c[v]}" for v in sorted(c, key=table.rank)),
    ]
    if session.get("started"):
        out.append(f"session: {who_when_where(session)}")
    night = night_text(records, session)
    if night:
        out.append(f"false alarms: {night}")
    nodes = nodes_text(session)
    if nodes:
        out.append(f"nodes: {nodes}")
    if c.get("SKIPPED"):
        out[1] += "  (pytest -rs lists why rows were skipped)"
    if ab.signoff_summary(records):
        out.append(ab.signoff_summary(records))
    for r in table.worst_first(records):
        if r.get("verdict") in table.QUIET:
            continue
        out.append(f"{r.get('verdict', ''):<12} {r.get('message', '')}")
    return out
