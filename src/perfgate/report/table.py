"""The report's columns and sign-off summary, computed from results.json records.

Shared by the pytest-html hooks and `perfgate report`, so both show the same numbers. Every
value that may come from a row, a job or a log is escaped here; callers get HTML-safe text.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from html import escape
from typing import Any

from perfgate.report import ab
from perfgate.verdicts import VERDICTS

VERDICT_ORDER = (*VERDICTS, "SKIPPED", "DRY_RUN")
Record = dict[str, Any]


def _num(x: Any, fmt: str, suffix: str = "") -> str:
    return "" if x is None else f"{x:{fmt}}{suffix}"


def sort_key(x: float | None) -> str:
    """A string that sorts like the number (pytest-html sorts columns as strings)."""
    return "" if x is None else f"{x + 1e9:021.6f}"


def _m(rec: Record, key: str) -> Any:
    return (rec.get("measured") or {}).get(key)


def _conv(rec: Record, key: str) -> tuple[float | None, str]:
    conv = rec.get("convention") or "nemo2"
    value = (_m(rec, key) or {}).get(conv)
    return value, conv


def _gpus(rec: Record) -> tuple[float | None, str]:
    row = rec["row"]
    return row["num_gpus"], f"{row['num_gpus']}× {row['gpu'].upper()}"


def _precision(rec: Record) -> tuple[float | None, str]:
    row = rec["row"]
    recipe = row.get("fp8_recipe")
    return None, row["precision"] + (f" ({recipe})" if recipe else "")


def _parallelism(rec: Record) -> tuple[float | None, str]:
    row = rec["row"]
    parts = [f"tp{row.get('tp', 1)}", f"pp{row.get('pp', 1)}", f"cp{row.get('cp', 1)}"]
    if row.get("vp"):
        parts.append(f"vp{row['vp']}")
    if row.get("ep", 1) > 1:
        parts.append(f"ep{row['ep']}")
    if row.get("etp"):
        parts.append(f"etp{row['etp']}")
    if row.get("fsdp"):
        parts.append("fsdp")
    return None, " ".join(parts) + f" mbs{row['mbs']} gbs{row['gbs']} seq{row['seq_len']}"


def _step(rec: Record) -> tuple[float | None, str]:
    med, se = _m(rec, "step_time_s"), _m(rec, "se_s")
    if med is None:
        return None, ""
    return med, f"{med:.4g} ± {se:.2g} s" if se is not None else f"{med:.4g} s"


def _baseline(rec: Record) -> tuple[float | None, str]:
    if ab.is_ab(rec) and rec.get("comparison"):  # the baseline image, in the same allocation
        b = rec["comparison"].get("baseline_step_time_s")
        return b, _num(b, ".4g", " s (A/B)")
    b = (rec.get("baseline") or {}).get("step_time_s")
    return b, _num(b, ".4g", " s")


def _delta(rec: Record) -> tuple[float | None, str]:
    d = (rec.get("comparison") or {}).get("delta")
    return d, _num(d, "+.2%")


def _tokens(rec: Record) -> tuple[float | None, str]:
    t = _m(rec, "tokens_per_s_per_gpu")
    return t, _num(t, ",.0f")


def _tflops(rec: Record) -> tuple[float | None, str]:
    v, conv = _conv(rec, "tflops_per_gpu")
    return v, "" if v is None else f"{v:.1f} ({conv})"


def _mfu(rec: Record) -> tuple[float | None, str]:
    v, conv = _conv(rec, "mfu")
    return v, "" if v is None else f"{v:.2%} ({conv})"


def _memory(rec: Record) -> tuple[float | None, str]:
    v = _m(rec, "peak_memory_gib")
    return v, _num(v, ".1f", " GiB")


def _verdict(rec: Record) -> tuple[float | None, str]:
    v = rec.get("verdict", "")
    rank = VERDICT_ORDER.index(v) if v in VERDICT_ORDER else len(VERDICT_ORDER)
    return rank, v


def _mode(rec: Record) -> tuple[float | None, str]:
    return None, ab.mode_text(rec)


def _job(rec: Record) -> tuple[float | None, str]:
    return None, str((rec.get("job") or {}).get("job_id") or "")


# (css/sort key, header, cell function -> (numeric sort value or None, plain text))
COLUMNS: Sequence[tuple[str, str, Callable[[Record], tuple[float | None, str]]]] = (
    ("gpus", "GPUs", _gpus),
    ("precision", "Precision", _precision),
    ("parallelism", "Parallelism", _parallelism),
    ("steptime", "Step time (median ± SE)", _step),
    ("baseline", "Baseline", _baseline),
    ("delta", "Δ step time", _delta),
    ("tokens", "Tokens/s/GPU", _tokens),
    ("tflops", "TFLOP/s/GPU", _tflops),
    ("mfu", "MFU", _mfu),
    ("memory", "Peak memory", _memory),
    ("verdict", "Verdict", _verdict),
    ("mode", "Judged by", _mode),
    ("jobid", "Slurm job", _job),
)


def header_cells() -> list[str]:
    """<th> cells of the extra columns (sortable in pytest-html)."""
    return [
        f'<th class="sortable" data-column-type="{key}">{escape(title)}</th>'
        for key, title, _ in COLUMNS
    ]


def row_cells(rec: Record | None) -> list[str]:
    """<td> cells of one record (empty cells when the test is not a row)."""
    cells = []
    for key, _, fn in COLUMNS:
        if rec is None:
            cells.append(f'<td class="col-{key}"></td>')
            continue
        value, text = fn(rec)
        hidden = f"<span hidden>{sort_key(value)}</span>" if value is not None else ""
        cls = f" verdict-{escape(text)}" if key == "verdict" else ""
        cells.append(f'<td class="col-{key}{cls}">{hidden}{escape(text)}</td>')
    return cells


def counts(records: Iterable[Record]) -> Counter:
    """Rows per verdict."""
    return Counter(r.get("verdict", "") for r in records)


def worst_first(records: Iterable[Record]) -> list[Record]:
    """Regressions by delta (largest slowdown first), then INFRA, then the rest by verdict."""

    def key(r: Record) -> tuple[int, float]:
        v = r.get("verdict", "")
        rank = VERDICT_ORDER.index(v) if v in VERDICT_ORDER else len(VERDICT_ORDER)
        delta = (r.get("comparison") or {}).get("delta")
        return rank, -(delta if delta is not None else float("-inf"))

    return sorted(records, key=key)


def signoff_html(records: Sequence[Record], session: dict[str, Any] | None = None) -> str:
    """The sign-off block: counts per verdict, then every non-PASS row, worst first."""
    c = counts(records)
    order = [v for v in VERDICT_ORDER if c.get(v)] + sorted(v for v in c if v not in VERDICT_ORDER)
    badges = " ".join(
        f'<span class="pg-badge pg-{escape(v)}">{escape(v)}: {c[v]}</span>' for v in order
    )
    mode = escape(str((session or {}).get("mode", "")))
    lines = [
        '<div class="perfgate-signoff">',
        f"<h2>perfgate sign-off</h2><p>{len(records)} rows ({mode}): {badges}</p>",
    ]
    if ab.signoff_summary(records):
        lines.append(f"<p>{escape(ab.signoff_summary(records))}</p>")
    quiet = ("PASS", "DRY_RUN", "SKIPPED")  # counted above; skip reasons are in pytest -rs
    notable = [r for r in worst_first(records) if r.get("verdict") not in quiet]
    if notable:
        lines.append(
            "<table><tr><th>Verdict</th><th>Row</th><th>Judged by</th><th>Δ step time</th>"
            "<th>Detail</th></tr>"
        )
        for r in notable:
            delta = _delta(r)[1]
            detail = r.get("message", "")
            if r.get("diagnosis"):
                detail = f"{r['diagnosis'].get('cause')}: {r['diagnosis'].get('message')}"
            lines.append(
                f"<tr><td>{escape(r.get('verdict', ''))}</td><td>{escape(r['row_id'])}</td>"
                f"<td>{escape(ab.mode_text(r))}</td><td>{escape(delta)}</td>"
                f"<td>{escape(detail)}</td></tr>"
            )
        lines.append("</table>")
    lines.append("</div>")
    return "\n".join(lines)


def terminal_lines(records: Sequence[Record]) -> list[str]:
    """Plain-text sign-off summary for the terminal."""
    c = counts(records)
    order = [v for v in VERDICT_ORDER if c.get(v)]
    out = ["  ".join(f"{v}: {c[v]}" for v in order)]
    if c.get("SKIPPED"):
        out[0] += "  (pytest -rs lists why rows were skipped)"
    if ab.signoff_summary(records):
        out.append(ab.signoff_summary(records))
    for r in worst_first(records):
        if r.get("verdict") in ("PASS", "DRY_RUN", "SKIPPED"):
            continue
        out.append(f"{r.get('verdict', ''):<12} {r.get('message', '')}")
    return out
