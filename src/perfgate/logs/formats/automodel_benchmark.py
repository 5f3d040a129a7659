"""NeMo Automodel's benchmark recipe: `Rank r | Iteration i ...`, then `Max iter time: X
seconds` and `MFU: Y%` on lines of their own, and a closing `Average iteration time: ...` /
`Average MFU: ...` summary (reported as logged, whatever the format).

Line shapes of nemo_automodel/recipes/llm/benchmark.py; verbatim examples:
tests/data/reference/log_formats.md.
"""

from __future__ import annotations

import re
from collections import defaultdict

from perfgate.logs.formats.base import (
    NUM,
    ByKind,
    Family,
    LogFormat,
    PartReport,
    Record,
    Shape,
    Span,
    count_of,
    integer,
)
from perfgate.logs.formats.fields import fraction

AM_ITER = "automodel_iteration"  # Automodel benchmark `Rank r | Iteration i ...`
AM_TIME = "automodel_iter_time"  # Automodel benchmark `Max iter time: X seconds`
AM_MFU = "automodel_mfu"  # Automodel benchmark `MFU: Y%` (follows Max iter time)
AM_SUMMARY = "automodel_summary"  # `Average iteration time: ...` / `Average MFU: ...`

_ITERATION = re.compile(r"Rank (\d{1,6}) \| Iteration (\d+)\b")
_ITER_TIME = re.compile(r"Max iter time: (" + NUM + ") seconds")
_MFU = re.compile(r"(?<!Average )MFU: (" + NUM + ")%")
_AVERAGE_TIME = re.compile(
    r"Average iteration time: (" + NUM + r") seconds"
    r"(?: \(excluding first (\d+) warmup iterations\))?"
)
_AVERAGE_MFU = re.compile(r"Average MFU: (" + NUM + ")%")
_MEM = re.compile(r"Max Memory Allocated: (" + NUM + ") GB")
_LOSS = re.compile(r"\bloss=(" + NUM + ")")


def _iteration(span: Span) -> Record:
    text = span.line[span.end : span.stop]
    v: dict[str, float] = {}
    mem = _MEM.search(text)
    if mem:
        v["mem_peak_gib"] = float(mem.group(1))  # Automodel divides by 1024**3
    loss = _LOSS.search(text)
    if loss:
        v["loss"] = float(loss.group(1))
    m = span.match
    return Record(AM_ITER, integer(m.group(2)), v, rank=int(m.group(1)))


def _iter_time(span: Span) -> Record:
    return Record(AM_TIME, None, {"step_time_s": float(span.match.group(1))})


def _mfu(span: Span) -> Record:
    return Record(AM_MFU, None, {"mfu": fraction(float(span.match.group(1)))})


def _average_time(span: Span) -> Record:
    m = span.match
    v = {"average_step_time_s": float(m.group(1))}
    if m.group(2):
        v["warmup_steps"] = float(m.group(2))
    return Record(AM_SUMMARY, None, v)


def _average_mfu(span: Span) -> Record:
    return Record(AM_SUMMARY, None, {"average_mfu": fraction(float(span.match.group(1)))})


def number_benchmark(events: list[Record]) -> list[Record]:
    """Automodel benchmark: `Max iter time` takes the number of the `Iteration i` line before it.

    events are the Iteration, Max iter time and MFU records in file order. A `Max iter time`
    with no fresh `Iteration` line before it follows the previous one.
    """
    out: list[Record] = []
    current: int | None = None
    fresh = consumed = False
    extra: dict[int, dict[str, float]] = defaultdict(dict)
    for rec in events:
        if rec.kind == AM_ITER and rec.step is not None:
            # Each iteration logs `Iteration i` at its start and end; a new number, or the
            # same number after its time was taken (a rerun), opens a new one.
            if rec.step != current or consumed:
                fresh, consumed = True, False
            current = rec.step
            extra[rec.step].update(rec.values)
        elif rec.kind == AM_TIME:
            if fresh and current is not None:
                rec.step = current
                consumed = True
            else:
                rec.step = (out[-1].step or 0) + 1 if out else 0
            fresh = False
            out.append(rec)
        elif rec.kind == AM_MFU and out:
            out[-1].values.update(rec.values)
    for rec in out:
        for key, val in extra.get(rec.step or 0, {}).items():
            rec.values.setdefault(key, val)
    return out


def _numbered(by_kind: ByKind, part: PartReport) -> list[Record]:
    events = by_kind[AM_ITER] + by_kind[AM_TIME] + by_kind[AM_MFU]
    return number_benchmark(sorted(events, key=lambda r: r.seq))


FAMILY = Family(
    markers=(b"teration", b"Max iter time", b"MFU:"),
    shapes=(
        Shape("Iteration", AM_ITER, _ITERATION, _iteration),
        Shape("Max iter time", AM_TIME, _ITER_TIME, _iter_time),
        Shape("MFU:", AM_MFU, _MFU, _mfu),
        Shape("iteration", AM_SUMMARY, _AVERAGE_TIME, _average_time),
        Shape("MFU:", AM_SUMMARY, _AVERAGE_MFU, _average_mfu),
    ),
    formats=(LogFormat("automodel_benchmark", score=count_of(AM_TIME), records=_numbered),),
    reported=(AM_SUMMARY,),
)
