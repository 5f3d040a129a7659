"""NeMo Automodel train_ft lines: `step N | epoch E | loss X | ... | tps X(Y/gpu)`, with
throughput but no step time; step times come from tokens_per_step or the log timestamps.

Verbatim examples: tests/data/reference/log_formats.md.
"""

from __future__ import annotations

import re

from perfgate.logs.formats.base import (
    NUM,
    Family,
    LogFormat,
    Record,
    Shape,
    Span,
    count_of,
    integer,
    records_of,
)
from perfgate.logs.formats.fields import between_stamps, log_time, throughput_deriver

AUTOMODEL = "automodel"  # NeMo Automodel train_ft `step N | epoch E | ... | tps X(Y/gpu)`

_STEP = re.compile(r"\bstep (\d+) \| epoch (\d+) \|")
_FIELDS = {
    "loss": re.compile(r"\| loss (" + NUM + ")"),
    "grad_norm": re.compile(r"\| grad_norm (" + NUM + ")"),
    "mem_peak_gib": re.compile(r"\| mem (" + NUM + ") GiB"),
    "tps": re.compile(r"\| tps (" + NUM + r")\((" + NUM + r")/gpu\)"),
}
# Automodel's validation line: `[val] name "default" | step 9 | epoch 0 | loss ...`.
_VAL = re.compile(r"\[val\](?: name \"[^\"]*\")? \|\s*$")
_LABEL_TOKENS = re.compile(r"\| num_label_tokens (\d+)")


def _step(span: Span) -> Record | None:
    line, start, prev_end = span.line, span.start, span.prev_end
    if _VAL.search(line, prev_end, start):
        return None  # a validation line (`[val] name "default" | step 9 | ...`), not a step
    text = line[start : span.stop]
    v: dict[str, float] = {}
    for key, regex in _FIELDS.items():
        fm = regex.search(text)
        if fm is None:
            continue
        if key == "tps":
            v["tokens_per_s"] = float(fm.group(1))
            v["tokens_per_s_per_dp_rank"] = float(fm.group(2))
        else:
            v[key] = float(fm.group(1))
    labels = _LABEL_TOKENS.search(text)
    if labels:
        v["num_label_tokens"] = float(labels.group(1))
    # train_ft's step counter is 0-based (logged before it is incremented).
    return Record(AUTOMODEL, integer(span.match.group(1)), v, time=log_time(line, prev_end, start))


def automodel_step_times(
    kept: dict[int, Record], tokens_per_step: float | None, num_gpus: int | None
) -> tuple[str, int]:
    """Give one rank's Automodel train_ft records a step time; return (how, number left without).

    Automodel's tps is the step's non-padding tokens over its wall time, and in fine-tuning
    that token count varies from step to step (gbs * seq_len would overstate it several
    times). tokens_per_step / tps is used only where every token of the step was a label
    (num_label_tokens == tokens_per_step: packed pretraining data); elsewhere the time
    between the log lines' timestamps.
    """
    how: list[str] = []
    missing = 0
    prev: Record | None = None
    for s in sorted(kept):
        rec = kept[s]
        v = rec.values
        tps = v.get("tokens_per_s")
        full = tokens_per_step and v.get("num_label_tokens") == tokens_per_step
        if tps and (full or (tokens_per_step and "num_label_tokens" not in v and not rec.time)):
            v["step_time_s"] = tokens_per_step / tps
            way = f"tokens_per_step / tps ({tokens_per_step:g} tokens per step)"
        elif (dt := between_stamps(prev, rec, s)) is not None:
            v["step_time_s"] = dt
            way = "log timestamps between consecutive logged steps"
        else:
            missing += 1
            way = None
        if way and way not in how:
            how.append(way)
        if tps:
            # Automodel's "/gpu" divides by dp*cp only: per GPU when tp = pp = 1.
            per_dp = v["tokens_per_s_per_dp_rank"]
            v["tokens_per_s_per_gpu"] = tps / num_gpus if num_gpus else per_dp
        prev = rec
    return "; ".join(how), missing


def _coarse_stamps(kept: dict[int, Record], how: str) -> str | None:
    """Whole-second stamps bound each derived time only to 1 s: say so."""
    stamps = [r.time for r in kept.values() if r.time is not None]
    if "log timestamps" in how and all(t == int(t) for t in stamps):
        return (
            "the log's timestamps have 1 s resolution; each step time is within 1 s, their sum "
            "over a window exact to 1 s"
        )
    return None


_DERIVER = throughput_deriver(
    "Automodel",
    automodel_step_times,
    "Automodel lines log tps but no step time, and no two timestamped lines to measure "
    "between; tokens_per_step / tps (--tokens-per-step) is used only when num_label_tokens "
    "equals it (tps counts each step's own non-padding tokens)",
    _coarse_stamps,
)


FAMILY = Family(
    markers=(b"tps",),
    shapes=(Shape("tps", AUTOMODEL, _STEP, _step, all_ranks=True),),
    formats=(
        LogFormat(
            "automodel", score=count_of(AUTOMODEL), records=records_of(AUTOMODEL), deriver=_DERIVER
        ),
    ),
)
