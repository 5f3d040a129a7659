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
from perfgate.report import format as fmt
from perfgate.rowrecord import RowRecord
from perfgate.verdicts import VERDICTS

# Worst first: what blocks a release, then what needs a look, then what is fine; perfgate.verdicts
# lists its verdicts in this order (REGRESSION, INFRA, UNCONFIRMED, SHIFT, INCONCLUSIVE,
# NO_BASELINE, IMPROVEMENT, PASS), then the rows that were not judged.
VERDICT_ORDER = (*VERDICTS, "DRY_RUN", "SKIPPED")
# The colour family of each verdict: red blocks, amber needs a look, blue and green are fine.
VERDICT_TONE = {
    "REGRESSION": "red",
    "INFRA": "red",
    "UNCONFIRMED": "amber",
    "SHIFT": "amber",
    "INCONCLUSIVE": "amber",
    "NO_BASELINE": "amber",
    "IMPROVEMENT": "blue",
    "PASS": "green",
    "DRY_RUN": "grey",
    "SKIPPED": "grey",
}
QUIET = ("PASS", "DRY_RUN", "SKIPPED")  # counted in the sign-off, not listed there
Record = RowRecord


def sort_key(x: float | None) -> str:
    """A string that sorts like the number (pytest-html sorts columns as strings)."""
    return "" if x is None else f"{x + 1e9:021.6f}"


def rank(verdict: str) -> int:
    """Position of a verdict in the worst-first order (unknown verdicts last)."""
    return VERDICT_ORDER.index(verdict) if verdict in VERDICT_ORDER else len(VERDICT_ORDER)


def order_key(rec: Record) -> str:
    """The worst-first key of a row as one string: verdict rank, then the largest slowdown
    first, then the row id (pytest-html's initial sort compares these strings). It ends in a
    space, below every character of an id: pytest-html compares the cell's HTML, where the key
    is followed by '</span>', and "m8</span>" would sort after "m85</span>"."""
    delta = (rec.get("comparison") or {}).get("delta")
    by_delta = sort_key(-delta) if delta is not None else "~"
    return f"{rank(rec.get('verdict', '')):02d} {by_delta} {rec.get('row_id', '')} "


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
    if se is None:
        return med, fmt.seconds(med)
    return med, f"{fmt.sig(med)} ± {fmt.sig(se, 2)} s"


def _baseline(rec: Record) -> tuple[float | None, str]:
    if ab.is_ab(rec) and rec.get("comparison"):  # the baseline image, in the same allocation
        b = rec["comparison"].get("baseline_step_time_s")
        return b, fmt.seconds(b) + (" (A/B)" if b is not None else "")
    b = (rec.get("baseline") or {}).get("step_time_s")
    return b, fmt.seconds(b)


def _delta(rec: Record) -> tuple[float | None, str]:
    d = (rec.get("comparison") or {}).get("delta")
    return d, fmt.pct(d, signed=True)


def _tokens(rec: Record) -> tuple[float | None, str]:
    t = _m(rec, "tokens_per_s_per_gpu")
    return t, fmt.integer(t)


def _tflops(rec: Record) -> tuple[float | None, str]:
    v, conv = _conv(rec, "tflops_per_gpu")
    return v, "" if v is None else f"{fmt.sig(v)} ({conv})"


def _mfu(rec: Record) -> tuple[float | None, str]:
    v, conv = _conv(rec, "mfu")
    return v, "" if v is None else f"{fmt.pct(v)} ({conv})"


def _memory(rec: Record) -> tuple[float | None, str]:
    v = _m(rec, "peak_memory_gib")
    return v, "" if v is None else f"{v:.1f} GiB"


def _verdict(rec: Record) -> tuple[float | None, str]:
    return None, rec.get("verdict", "")


def _mode(rec: Record) -> tuple[float | None, str]:
    return None, ab.mode_text(rec)


def _job(rec: Record) -> tuple[float | None, str]:
    return None, str((rec.get("job") or {}).get("job_id") or "")


# (css/sort key, header, cell function -> (numeric sort value or None, plain text))
COLUMNS: Sequence[tuple[str, str, Callable[[Record], tuple[float | None, str]]]] = (
    ("verdict", "Verdict", _verdict),
    ("delta", "Δ step time", _delta),
    ("steptime", "Step time (median ± SE)", _step),
    ("baseline", "Baseline", _baseline),
    ("gpus", "GPUs", _gpus),
    ("precision", "Precision", _precision),
    ("parallelism", "Parallelism", _parallelism),
    ("tokens", "Tokens/s/GPU", _tokens),
    ("tflops", "TFLOP/s/GPU", _tflops),
    ("mfu", "MFU", _mfu),
    ("memory", "Peak memory", _memory),
    ("mode", "Judged by", _mode),
    ("jobid", "Slurm job", _job),
)


def header_cells() -> list[str]:
    """<th> cells of the perfgate columns (sortable in pytest-html)."""
    return [
        f'<th class="sortable" data-column-type="{key}">{escape(title)}</th>'
        for key, title, _ in COLUMNS
    ]


def row_cells(rec: Record | None) -> list[str]:
    """<td> cells of one record (empty cells when the test is not a row). The verdict cell
    sorts worst first and carries the verdict's colour class."""
    cells = []
    for key, _, fn in COLUMNS:
        if rec is None:
            hidden = "<span hidden>99</span>" if key == "verdict" else ""
            cells.append(f'<td class="col-{key}">{hidden}</td>')
            continue
        value, text = fn(rec)
        if key == "verdict":
            hidden, cls = f"<span hidden>{escape(order_key(rec))}</span>", f" {verdict_class(text)}"
        else:
            hidden = f"<span hidden>{sort_key(value)}</span>" if value is not None else ""
            cls = ""
        cells.append(f'<td class="col-{key}{cls}">{hidden}{escape(text)}</td>')
    return cells


def verdict_class(verdict: str) -> str:
    """CSS classes of a verdict: its own and its colour family (pg-red, pg-amber, ...)."""
    tone = VERDICT_TONE.get(verdict, "grey")
    return f"verdict-{escape(verdict)} pg-{tone}"


def counts(records: Iterable[Record]) -> Counter:
    """Rows per verdict."""
    return Counter(r.get("verdict", "") for r in records)


def worst_first(records: Iterable[Record]) -> list[Record]:
    """Rows in the report's order: REGRESSION, INFRA, UNCONFIRMED, SHIFT, INCONCLUSIVE,
    NO_BASELINE, IMPROVEMENT, PASS; within a verdict the largest slowdown first."""
    return sorted(records, key=order_key)
