"""The parts of one run (one a file, in order) -> one StepSeries: step numbering continued
across files, one format, and the first reason the run cannot be judged.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Sequence

from perfgate.errors import LogParseError
from perfgate.logs.assemble import Part
from perfgate.logs.formats import FORMATS
from perfgate.logs.series import StepSeries, log_interval_of
from perfgate.logs.table import StepTable, concat


def chain(parts: Sequence[Part]) -> StepSeries:
    """Chain the parts of one run in order into a StepSeries, or raise LogParseError."""
    origins = [p.origin for p in parts]
    formats = {p.format for p in parts if p.steps and p.format}
    if not formats:
        problems = [f"{p.origin}: {p.problem}" for p in parts if p.problem]
        if problems:
            raise LogParseError("; ".join(problems))
        raise LogParseError(
            f"{', '.join(origins)}: no step-time lines found (tried formats: {', '.join(FORMATS)})"
        )
    if formats == {"megatron", "megatron_bridge"}:
        formats = {"megatron_bridge"}
    if len(formats) > 1:
        desc = ", ".join(f"{p.origin} is {p.format}" for p in parts if p.steps)
        raise LogParseError(f"the files of one run must share a log format: {desc}")
    tables: list[StepTable] = []
    last: int | None = None
    notes: list[str] = []
    seg: list[int] = []
    nan_its: dict[int, float] = {}
    conflicts: dict[int, str] = {}
    reported: dict[str, float] = {}
    restarts = 0
    for part in parts:
        notes.extend(part.notes)
        reported.update(part.reported)
        if not part.steps:
            notes.append(f"{part.origin}: no step records ({part.problem or 'none found'})")
            continue
        offset = 0
        numbers = part.steps.numbers
        if last is not None:
            restarts += 1
            first = numbers[0]
            if first <= last:
                interval = log_interval_of(numbers)
                offset = last + interval - first
                notes.append(
                    f"{part.origin}: step numbering restarts at {first}; continued after "
                    f"step {last} of the previous file (+{offset})"
                )
            seg.append(first + offset)
        restarts += part.restarts
        tables.append(part.steps.renumbered(offset))
        last = numbers[-1] + offset
        seg.extend(s + offset for s in part.segment_starts)
        nan_its.update({s + offset: n for s, n in part.nan_iterations.items()})
        conflicts.update({s + offset: why for s, why in part.conflicts.items()})
    steps = concat(tables)
    reason = _invalid_reason(steps, nan_its, conflicts)
    return StepSeries(
        format=formats.pop(),
        steps=steps,
        source_files=tuple(origins),
        log_interval=log_interval_of(steps.numbers),
        restarts=restarts,
        invalid_reason=reason[1] if reason else None,
        invalid_cause=reason[0] if reason else None,
        notes=tuple(notes),
        segment_starts=tuple(seg),
        reported=reported,
    )


def _invalid_reason(
    steps: StepTable, nan_iterations: dict[int, float], conflicts: dict[int, str]
) -> tuple[str, str] | None:
    """(cause, reason) of the first reason, in step order, that the run cannot be judged."""
    found: list[tuple[int, int, str]] = []  # (step, rank of the check, reason)
    bad = _first_not_finite(steps.times)
    if bad is not None:
        x = steps.times[bad]
        found.append(
            (steps.numbers[bad], 0, f"{_nan_or_inf(x)} step time at step {steps.numbers[bad]}")
        )
    for order, (name, what) in enumerate((("grad_norm", "grad norm"), ("loss", "loss")), 1):
        col = steps.fields.get(name)
        bad = col.first_not_finite() if col is not None else None
        if bad is not None:
            x = col.values[bad]  # type: ignore[union-attr]
            found.append(
                (steps.numbers[bad], order, f"{_nan_or_inf(x)} {what} at step {steps.numbers[bad]}")
            )
    if nan_iterations:
        s = min(nan_iterations)
        n = nan_iterations[s]  # a corrupt count may be inf or NaN: no int() of it
        count = int(n) if math.isfinite(n) else n
        found.append((s, 3, f"{count} NaN iteration(s) reported by Megatron at step {s}"))
    if conflicts:
        s = min(conflicts)
        found.append((s, 4, conflicts[s]))
    if not found:
        return None
    _, order, why = min(found)
    return ("BAD_LOG" if order == 4 else "NAN"), why


def _first_not_finite(values: array) -> int | None:
    if math.isfinite(sum(values)):  # sum: inf or NaN when any is, never an exception
        return None
    return next((i for i, x in enumerate(values) if x - x != 0), None)  # x - x: NaN for inf


def _nan_or_inf(x: float) -> str:
    return "NaN" if x != x else "infinite"
