"""The parts of one run (one a file, in order) -> one StepSeries: step numbering continued
across files, one format, and the first reason the run cannot be judged.
"""

from __future__ import annotations

from collections.abc import Sequence

from perfgate.errors import LogParseError
from perfgate.logs.assemble import Part
from perfgate.logs.formats import FORMATS
from perfgate.logs.series import StepSeries, invalid, log_interval_of
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
    reason = invalid(steps, nan_its, conflicts)
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
        min_rel_se=max((p.min_rel_se for p in parts if p.steps), default=0.0),
    )
