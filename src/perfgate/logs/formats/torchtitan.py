"""TorchTitan lines: `step: N  loss: X  grad_norm: ...  memory: XGiB(..%)  tps: N  tflops: ...
mfu: Y%`, throughput per GPU but (most forks) no step time; step times come from
tokens_per_step and num_gpus or the log timestamps.

Verbatim examples: tests/data/reference/log_formats.md.
"""

from __future__ import annotations

import re

from perfgate.logs.formats.base import (
    Family,
    LogFormat,
    Record,
    Shape,
    Span,
    count_of,
    integer,
    records_of,
)
from perfgate.logs.formats.fields import between_stamps, fraction, log_time, throughput_deriver

TITAN = "torchtitan"  # TorchTitan `step: N  loss: ...  tps: ...`

# The lookahead leaves `loss:` to the field search (it is the first field).
_STEP = re.compile(r"\bstep:\s*([\d,]+)\s+(?=loss:)")
# TorchTitan's `key: value` fields after `step: N` (some forks prefix est_, add units).
_FIELD = re.compile(
    r"\b(loss|grad_norm|memory|tps|(?:est_)?tflops|(?:est_)?mfu|elapsed_time_per_step):\s*"
    r"(-?\d[\d,]*(?:\.\d*)?(?:[eE][-+]?\d+)?|nan|inf)"
)
_KEYS = {
    "loss": "loss",
    "grad_norm": "grad_norm",
    "memory": "mem_reserved_gib",  # max_reserved_gib, in GiB
    "tps": "tokens_per_s_per_gpu",  # TorchTitan's tps is per device
    "tflops": "tflops_per_gpu",
    "est_tflops": "tflops_per_gpu",
    "mfu": "mfu",
    "est_mfu": "mfu",
    "elapsed_time_per_step": "step_time_s",
}


def _step(span: Span) -> Record:
    v: dict[str, float] = {}
    for key, raw in _FIELD.findall(span.line, span.end, span.stop):
        x = float(raw.replace(",", ""))
        if x < 0:  # est_tflops / est_mfu are -1 when unknown
            continue
        v[_KEYS[key]] = fraction(x) if key.endswith("mfu") else x
    # TorchTitan's train_state.step is 1-based (incremented before the step runs).
    step = integer(span.match.group(1).replace(",", "")) - 1
    return Record(TITAN, step, v, time=log_time(span.line, span.prev_end, span.start))


def titan_step_times(
    kept: dict[int, Record], tokens_per_step: float | None, num_gpus: int | None
) -> tuple[str | None, int]:
    """Give one rank's TorchTitan records a step time; return (how, number left without one).

    TorchTitan logs tokens/s per GPU averaged since its previous log line, no step time.
    """
    how = None
    missing = 0
    prev: Record | None = None
    for s in sorted(kept):
        rec = kept[s]
        v = rec.values
        if "step_time_s" in v:
            how = how or "its logged elapsed_time_per_step"
        elif tokens_per_step and num_gpus and v.get("tokens_per_s_per_gpu"):
            v["step_time_s"] = tokens_per_step / num_gpus / v["tokens_per_s_per_gpu"]
            how = f"tokens_per_step / num_gpus / tps ({tokens_per_step:g} / {num_gpus})"
        elif (dt := between_stamps(prev, rec, s)) is not None:
            # The interval TorchTitan's own tps is averaged over.
            v["step_time_s"] = dt
            how = "log timestamps between consecutive logged steps"
        else:
            missing += 1
        prev = rec
    return how, missing


_DERIVER = throughput_deriver(
    "TorchTitan",
    titan_step_times,
    "TorchTitan lines log tps but no step time and no usable timestamps; pass tokens_per_step "
    "and num_gpus (--tokens-per-step, --num-gpus) to derive it",
)


FAMILY = Family(
    markers=(b"tps",),
    shapes=(Shape("tps", TITAN, _STEP, _step, all_ranks=True),),
    formats=(
        LogFormat("torchtitan", score=count_of(TITAN), records=records_of(TITAN), deriver=_DERIVER),
    ),
)
