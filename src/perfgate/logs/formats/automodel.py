"""NeMo Automodel train_ft lines: `step N | epoch E | loss X | ... | tps X(Y/gpu)`, with
throughput but no step time, and (Automodel >= 0.5) the tqdm bar that rank 0 redraws on the
same stream, glued in front of the next record.

A step's time comes from, in this order:
1. --tokens-per-step N, when given: N / tps for every step (tps is the step's tokens over
   its own wall time, exactly); the caller vouches that each step holds N tokens.
2. The tqdm bar: `Training:  k%|...| k/N [elapsed<left, 2.04s/step, loss=..., tps=...]`,
   drawn after step k-1 finished (its count is k), with tqdm's rate over the recent steps
   (an exponential moving average of step times, factor 0.3, three significant digits),
   when bars were drawn after at least BAR_COVERAGE of the steps.
3. The records' timestamps, which have whole-second resolution: only as a window mean
   (fields.window_mean_times), never per step, and with the SE floor they support.

Verbatim examples: tests/data/reference/log_formats.md; tests/data/logs/README.md.
"""

from __future__ import annotations

import re

from perfgate.logs.formats.base import (
    NUM,
    ByKind,
    Derive,
    Family,
    LogFormat,
    PartReport,
    Record,
    Shape,
    Span,
    count_of,
    integer,
)
from perfgate.logs.formats.fields import log_time, window_mean_times

AUTOMODEL = "automodel"  # NeMo Automodel train_ft `step N | epoch E | ... | tps X(Y/gpu)`
BAR = "automodel_tqdm"  # its tqdm bar state `| k/N [..., 2.04s/step` (the time of step k-1)

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
# The bar times the run when it was drawn after nearly every step (tqdm skips a redraw within
# 0.1 s of the last; a grep may have dropped the bars): else a stray bar is ignored.
BAR_COVERAGE = 0.9
# tqdm's unit is `step`: `2.04s/step` below one step a second, `4.57step/s` above; a bar cut
# by the terminal's width may end right after the rate.
_BAR = re.compile(r"\|\s*(\d+)/(\d+)\s*\[[^\]|]*?,\s*(" + NUM + r")(s/step|step/s)")


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


def _bar(span: Span) -> Record | None:
    m = span.match
    count, rate = int(m.group(1)), float(m.group(3))
    if count < 1 or not rate > 0:
        return None  # the first frame (`0/N [00:00<?, ?step/s]`) times nothing
    seconds = rate if m.group(4) == "s/step" else 1.0 / rate
    return Record(BAR, count - 1, {"tqdm_step_time_s": seconds})


def _records(by_kind: ByKind, part: PartReport) -> list[Record]:
    """The step records, each with the time of the first bar drawn after it (the bar of
    count k follows step k-1's record in the file; a restarted attempt's record is the
    latest of its step number by then)."""
    latest: dict[int, Record] = {}
    for rec in sorted([*by_kind[AUTOMODEL], *by_kind[BAR]], key=lambda r: r.seq):
        if rec.kind == AUTOMODEL:
            latest[rec.step] = rec  # type: ignore[index]
        elif (step := latest.get(rec.step)) is not None:  # type: ignore[arg-type]
            step.values.setdefault("tqdm_step_time_s", rec.values["tqdm_step_time_s"])
    return list(by_kind[AUTOMODEL])


def automodel_step_times(
    kept: dict[int, Record], tokens_per_step: float | None, num_gpus: int | None
) -> tuple[str | None, int, float]:
    """Give one rank's records a step time (see the module doc); return (how, steps left
    without one, the relative SE floor of the times)."""
    floor = 0.0
    tps_of = {s: r.values.get("tokens_per_s") for s, r in kept.items()}
    if tokens_per_step and any(tps_of.values()):
        for s, rec in kept.items():
            if tps_of[s]:
                rec.values["step_time_s"] = tokens_per_step / tps_of[s]  # type: ignore[operator]
        how = f"--tokens-per-step / tps ({tokens_per_step:g} tokens in every step, as given)"
    elif sum("tqdm_step_time_s" in r.values for r in kept.values()) >= BAR_COVERAGE * len(kept):
        for rec in kept.values():
            if "tqdm_step_time_s" in rec.values:
                rec.values["step_time_s"] = rec.values["tqdm_step_time_s"]
        how = (
            "the tqdm bar's s/step drawn after each step (tqdm's moving average of the recent "
            "steps, 3 significant digits)"
        )
    elif (read := window_mean_times(kept)) is not None:
        floor, _ = read
        how = (
            "the log's whole-second timestamps as one window mean: every step of the run's "
            "steady stretch gets its total time over its steps (slow intervals such as "
            f"warm-up or a checkpoint keep their own); the mean is known to {floor:.2%} "
            "(the SE floor the statistics use)"
        )
    else:
        how = None
    missing = sum(1 for r in kept.values() if "step_time_s" not in r.values)
    for rec in kept.values():
        tps = rec.values.get("tokens_per_s")
        if tps:
            # Automodel's "/gpu" divides by dp*cp only: per GPU when tp = pp = 1.
            per_dp = rec.values["tokens_per_s_per_dp_rank"]
            rec.values["tokens_per_s_per_gpu"] = tps / num_gpus if num_gpus else per_dp
    return how, missing, floor


def _deriver(part: PartReport, tokens_per_step: float | None, num_gpus: int | None) -> Derive:
    def derive(kept: dict[int, Record], first_stream: bool) -> None:
        how, missing, floor = automodel_step_times(kept, tokens_per_step, num_gpus)
        if not first_stream:
            return
        if how is None:
            part.problem = (
                "Automodel lines log tps but no step time, no tqdm bar with a rate, and no two "
                "timestamped lines to measure between; pass --tokens-per-step N when every "
                "step holds N tokens"
            )
            return
        part.min_rel_se = max(part.min_rel_se, floor)
        part.notes.append(f"{part.origin}: Automodel step times derived from {how}")
        if missing:
            steps = "step had" if missing == 1 else "steps had"
            part.notes.append(
                f"{part.origin}: {missing} logged {steps} nothing to time it by (the first "
                "step of an attempt has no earlier timestamp); dropped"
            )

    return derive


FAMILY = Family(
    markers=(b"tps", b"s/step", b"step/s"),
    shapes=(
        Shape("tps", AUTOMODEL, _STEP, _step, all_ranks=True),
        Shape("s/step", BAR, _BAR, _bar),  # tqdm's unit is `step`, its rate `2.04s/step`
        Shape("step/s", BAR, _BAR, _bar),  # ... or `4.57step/s`
    ),
    formats=(
        LogFormat("automodel", score=count_of(AUTOMODEL), records=_records, deriver=_deriver),
    ),
)
