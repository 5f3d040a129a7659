"""NeMo 2.x progress lines (MegatronProgressBar / ProgressPrinter; llmb and DGXC NeMo 2 logs):
`Training epoch E, iteration I/N | key: value | ...`, one line per logged step.

Verbatim examples: tests/data/reference/log_formats.md.
"""

from __future__ import annotations

import math
import re

from perfgate.logs.formats.base import (
    Dense,
    Family,
    LogFormat,
    Record,
    Shape,
    Span,
    count_of,
    integer,
    records_of,
)
from perfgate.logs.formats.fields import GIB, pipe_fields, put, put_dense

NEMO2 = "nemo2"  # NeMo 2.x MegatronProgressBar / ProgressPrinter line

_PROGRESS = re.compile(r"Training epoch (\d+), iteration (\d+)/(\d+)")


def _step_of(groups: tuple[str | None, ...], read: dict[str, float]) -> int:
    # global_step is monotonic across epochs; `iteration` restarts at 0 in every epoch.
    gs = read.get("global_step")
    return int(gs) if gs is not None and math.isfinite(gs) else integer(groups[1] or "0")


def _steps_of(anchor: list[list[str]], read: dict[str, list[float]]) -> list[int]:
    gs = read.get("global_step")
    if gs is None:
        return list(map(integer, anchor[1]))
    if math.isfinite(sum(gs)):  # C speed: inf or NaN when one is
        return list(map(int, gs))
    return [_step_of((None, it), {"global_step": g}) for it, g in zip(anchor[1], gs, strict=True)]


DENSE = Dense(
    values=(
        ("step_time_s", ("train_step_timing in s",), 1.0),
        ("tflops_per_gpu", ("TFLOPS_per_GPU",), 1.0),
        ("tokens_per_s_per_gpu", ("tokens_per_sec_per_gpu",), 1.0),
        ("loss", ("reduced_train_loss",), 1.0),
        # NeMo logs torch.cuda memory counters in bytes.
        ("mem_peak_gib", ("max_memory_allocated", "peak_memory_usage"), GIB),
        ("mem_reserved_gib", ("max_memory_reserved",), GIB),
        ("mem_allocated_gib", ("memory_allocated",), GIB),
    ),
    step_of=_step_of,
    steps_of=_steps_of,
    step_keys=("global_step",),
)


def _progress(span: Span) -> Record:
    f = pipe_fields(span.line[span.end : span.stop])
    v: dict[str, float] = {}
    put_dense(v, f, DENSE)
    read: dict[str, float] = {}
    if "global_step" in f:
        put(read, "global_step", f["global_step"])
    return Record(NEMO2, _step_of(span.match.groups(), read), v)


FAMILY = Family(
    markers=(b"teration",),
    shapes=(Shape("iteration", NEMO2, _PROGRESS, _progress, all_ranks=True, dense=DENSE),),
    formats=(LogFormat("nemo2", score=count_of(NEMO2), records=records_of(NEMO2)),),
)
