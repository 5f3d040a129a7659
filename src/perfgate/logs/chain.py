"""The parts of one run (one a file, in order) -> one StepSeries: step numbering continued
across files, one format, and the first reason the run cannot be judged.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from perfgate.errors import LogParseError
from perfgate.logs.assemble import Part
from perfgate.logs.formats import FORMATS
from perfgate.logs.series import Step, StepSeries, log_interval_of, renumber


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
    steps: list[Step] = []
    notes: list[str] = []
    seg: list[int] = []
    nan_its: dict[int, float] = {}
    reported: dict[str, float] = {}
    restarts = 0
    for part in parts:
        notes.extend(part.notes)
        reported.update(part.reported)
        if not part.steps:
            notes.append(f"{part.origin}: no step records ({part.problem or 'none found'})")
            continue
        offset = 0
        if steps:
            restarts += 1
            first, last = part.steps[0].step, steps[-1].step
            if first <= last:
                interval = log_interval_of([s.step for s in part.steps])
                offset = last + interval - first
                notes.append(
                    f"{part.origin}: step numbering restarts at {first}; continued after "
                    f"step {last} of the previous file (+{offset})"
                )
            seg.append(first + offset)
        restarts += part.restarts
        steps.extend(renumber(part.steps, offset))
        seg.extend(s + offset for s in part.segment_starts)
        nan_its.update({s + offset: n for s, n in part.nan_iterations.items()})
    return StepSeries(
        format=formats.pop(),
        steps=tuple(steps),
        source_files=tuple(origins),
        log_interval=log_interval_of([s.step for s in steps]),
        restarts=restarts,
        invalid_reason=_invalid_reason(steps, nan_its),
        notes=tuple(notes),
        segment_starts=tuple(seg),
        reported=reported,
        min_rel_se=max((p.min_rel_se for p in parts if p.steps), default=0.0),
    )


def _invalid_reason(steps: list[Step], nan_iterations: dict[int, float]) -> str | None:
    """The first reason, in step order, that the run cannot be judged."""
    for s in steps:
        if not math.isfinite(s.step_time_s):
            return f"{_nan_or_inf(s.step_time_s)} step time at step {s.step}"
        if s.grad_norm is not None and not math.isfinite(s.grad_norm):
            return f"{_nan_or_inf(s.grad_norm)} grad norm at step {s.step}"
        if s.loss is not None and not math.isfinite(s.loss):
            return f"{_nan_or_inf(s.loss)} loss at step {s.step}"
        if nan_iterations.get(s.step):
            n = nan_iterations[s.step]  # a corrupt count may be inf or NaN: no int() of it
            count = int(n) if math.isfinite(n) else n
            return f"{count} NaN iteration(s) reported by Megatron at step {s.step}"
    return None


def _nan_or_inf(x: float) -> str:
    return "NaN" if x != x else "infinite"
