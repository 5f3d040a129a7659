"""Lines that carry Lightning's `train_step_timing in s=` metric: NeMo's DeltaTimingCallback
(`Step N: train_step_timing in s=X`) and NeMo 1.x tqdm bar states, whose postfix holds it.

One module for both: they share the gate, and each is read where the other is not.
Verbatim examples: tests/data/reference/log_formats.md.
"""

from __future__ import annotations

import math
import re

from perfgate.logs.formats.base import (
    NUM,
    ByKind,
    Family,
    LogFormat,
    Record,
    Shape,
    Span,
    count_of,
    integer,
    number,
    records_of,
)
from perfgate.logs.formats.fields import put

NEMO_DELTA = "nemo_delta_timing"  # NeMo DeltaTimingCallback `Step N: train_step_timing in s=X`
TQDM = "nemo1_tqdm"  # NeMo 1.x Lightning tqdm bar state

_DELTA = re.compile(r"Step (\d+): train_step_timing in s=(" + NUM + ")")
_TQDM = re.compile(r"train_step_timing in s=")
_TQDM_FIELD = re.compile(r"([A-Za-z_][\w/ ]*?)=([^,\]]*)")
_TQDM_BAR = re.compile(r"\|\s*(\d+)/\d+\s*\[|(\d+)it\s*\[")  # `| 7/15 [` or `1it [`


def _delta(span: Span) -> Record:
    m = span.match
    return Record(NEMO_DELTA, integer(m.group(1)), {"step_time_s": float(m.group(2))})


def _tqdm(span: Span) -> Record | None:
    line, start, end, stop, prev_end = span.line, span.start, span.end, span.stop, span.prev_end
    # The postfix of one bar state: from the `[` that opens it to the `]` that closes it.
    lo = line.rfind("[", prev_end, start)
    hi = line.find("]", end, stop)
    # A state cut before its `]` and glued to the next one ends where the next bar begins
    # (`...in s=49.50Epoch 0: :  53%|█████▎    | 8/15 [`): its fields must not mix in.
    nxt = _TQDM_BAR.search(line, end, stop)
    if nxt is not None and (hi < 0 or nxt.start() < hi):
        hi = nxt.start()
    region = line[lo + 1 if lo >= 0 else prev_end : hi if hi >= 0 else stop]
    f = {k.strip(): v for k, v in _TQDM_FIELD.findall(region)}
    v: dict[str, float] = {}
    put(v, "step_time_s", f.get("train_step_timing in s"))
    put(v, "loss", f.get("reduced_train_loss"))
    if "step_time_s" not in v:
        return None
    gs = number(f["global_step"]) if "global_step" in f else None
    if gs is None or not math.isfinite(gs):
        # No usable global_step in the postfix: fall back to the bar counter (`| n/total`, `n it`).
        bar = _TQDM_BAR.search(line, prev_end, start)
        if bar is None:
            return None
        gs = integer(bar.group(1) or bar.group(2)) - 1
    return Record(TQDM, int(gs), v)


def _tqdm_score(by_kind: ByKind) -> int:
    """Distinct steps: a bar redraws each step's state many times."""
    return len({r.step for r in by_kind[TQDM]})


FAMILY = Family(
    markers=(b"train_step_timing",),
    shapes=(
        Shape("train_step_timing in s=", NEMO_DELTA, _DELTA, _delta, all_ranks=True),
        Shape("train_step_timing in s=", TQDM, _TQDM, _tqdm, all_ranks=True),
    ),
    formats=(
        LogFormat("nemo_delta_timing", score=count_of(NEMO_DELTA), records=records_of(NEMO_DELTA)),
        LogFormat("nemo1_tqdm", score=_tqdm_score, records=records_of(TQDM), redraws=True),
    ),
)
