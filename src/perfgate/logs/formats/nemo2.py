"""NeMo 2.x progress lines (MegatronProgressBar / ProgressPrinter; llmb and DGXC NeMo 2 logs):
`Training epoch E, iteration I/N | key: value | ...`, one line per logged step.

Verbatim examples: tests/data/reference/log_formats.md.
"""

from __future__ import annotations

import math
import re

from perfgate.logs.formats.base import (
    Family,
    LogFormat,
    Record,
    Shape,
    Span,
    count_of,
    number,
    records_of,
)
from perfgate.logs.formats.fields import GIB, pipe_fields, put

NEMO2 = "nemo2"  # NeMo 2.x MegatronProgressBar / ProgressPrinter line

_PROGRESS = re.compile(r"Training epoch (\d+), iteration (\d+)/(\d+)")


def _progress(span: Span) -> Record:
    f = pipe_fields(span.line[span.end : span.stop])
    v: dict[str, float] = {}
    put(v, "step_time_s", f.get("train_step_timing in s"))
    put(v, "tflops_per_gpu", f.get("TFLOPS_per_GPU"))
    put(v, "tokens_per_s_per_gpu", f.get("tokens_per_sec_per_gpu"))
    put(v, "loss", f.get("reduced_train_loss"))
    # NeMo logs torch.cuda memory counters in bytes.
    put(v, "mem_peak_gib", f.get("max_memory_allocated") or f.get("peak_memory_usage"), GIB)
    put(v, "mem_reserved_gib", f.get("max_memory_reserved"), GIB)
    put(v, "mem_allocated_gib", f.get("memory_allocated"), GIB)
    # global_step is monotonic across epochs; `iteration` restarts at 0 in every epoch.
    gs = number(f["global_step"]) if "global_step" in f else None
    step = int(gs) if gs is not None and math.isfinite(gs) else int(span.match.group(2))
    return Record(NEMO2, step, v)


FAMILY = Family(
    markers=(b"teration",),
    shapes=(Shape("iteration", NEMO2, _PROGRESS, _progress, all_ranks=True),),
    formats=(LogFormat("nemo2", score=count_of(NEMO2), records=records_of(NEMO2)),),
)
