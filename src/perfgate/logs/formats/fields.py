"""What several log formats share: field readers, units, log timestamps, and the step-time
derivation of formats that log throughput but no step time.

Pure stdlib (the workload imports it inside the container).
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Callable
from datetime import datetime, timezone
from decimal import Decimal

from perfgate.logs.formats.base import NUM_RE, Dense, Derive, Deriver, PartReport, Record, number

GIB = float(1 << 30)

# `| key: value |` fields of NeMo 2, Megatron and memory lines; the value's leading number is used.
_FIELD = re.compile(r"\|\s*([A-Za-z][^|:]*?)\s*:\s*([^|]*?)\s*(?=\||$)")
_LOG_TIME = re.compile(r"(\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d)(?:[,.](\d{1,6}))?")


def pipe_fields(text: str) -> dict[str, str]:
    """The `| key: value` fields of a record's text, values unparsed."""
    return {k: v for k, v in _FIELD.findall(text)}


def put(values: dict[str, float], key: str, raw: str | None, per: float = 1.0) -> None:
    """values[key] = the number in raw divided by per (a unit: 1000 for ms, 2**30 for bytes)."""
    if raw is None:
        return
    x = number(raw)
    if x is None:
        return
    if per == 1000.0 and math.isfinite(x):
        # Shift the decimal point of the logged text: 1510.4 ms -> 1.5104 s, not 1.5104000000000002.
        m = NUM_RE.match(raw.strip())
        x = float(Decimal(m.group(0)).scaleb(-3)) if m else x / per
        values[key] = x
    else:
        values[key] = x / per if per != 1.0 else x


def put_dense(values: dict[str, float], fields: dict[str, str], dense: Dense) -> None:
    """The values of a dense shape's fields, each from the first non-empty key it names."""
    for name, keys, per in dense.values:
        raw = next((fields[k] for k in keys if fields.get(k)), None)
        put(values, name, raw, per)


def milli(text: str) -> float:
    """A logged number of milliseconds in seconds, as put(..., 1000.0) converts it.

    The decimal exponent of the text moves by three (1510.4 ms is read as 1510.4e-3 s =
    1.5104, correctly rounded like Decimal's scaleb, which costs ten times as much);
    exponents and non-finite values take put's own path.
    """
    try:
        return float(text + "e-3")  # digits and a point only: the exact decimal, in s
    except ValueError:  # 1.5e3, nan, inf
        probe: dict[str, float] = {}
        put(probe, "x", text, 1000.0)
        return probe["x"]


def fraction(percent: float) -> float:
    """A logged percentage as a fraction, without binary noise (34.37% -> 0.3437)."""
    return round(percent / 100, 10)


def log_time(line: str, lo: int, hi: int) -> float | None:
    """POSIX seconds of the last `YYYY-MM-DD HH:MM:SS[,mmm]` stamp in line[lo:hi], if any."""
    stamps = list(_LOG_TIME.finditer(line, lo, hi))
    if not stamps:
        return None
    found = stamps[-1]
    # Read as UTC: only differences are used, and they must not move with the local zone.
    base = datetime.fromisoformat(found.group(1).replace("T", " ")).replace(tzinfo=timezone.utc)
    frac = found.group(2)
    return base.timestamp() + (int(frac) / 10 ** len(frac) if frac else 0.0)


def between_stamps(prev: Record | None, rec: Record, step: int) -> float | None:
    """Wall time from the previous logged step's line to this one, per step, in one attempt.

    Rounded to 1 us: stamps have at most 1 ms resolution, the rest is float noise.
    """
    if (
        prev is None
        or prev.time is None
        or rec.time is None
        or prev.values.get("_attempt") != rec.values.get("_attempt")
    ):
        return None
    return round((rec.time - prev.time) / (step - (prev.step or 0)), 6)


# step_times(kept, tokens_per_step, num_gpus) -> (how the times were had, steps left without).
StepTimes = Callable[[dict[int, Record], float | None, int | None], tuple[str | None, int]]


def throughput_deriver(
    logger: str,
    step_times: StepTimes,
    problem: str,
    caveat: Callable[[dict[int, Record], str], str | None] | None = None,
) -> Deriver:
    """The deriver of a format without step times: each rank's stream gets step_times; the
    first stream's outcome is noted (or problem, when no step time could be had).
    """

    def deriver(part: PartReport, tokens_per_step: float | None, num_gpus: int | None) -> Derive:
        def derive(kept: dict[int, Record], first_stream: bool) -> None:
            how, missing = step_times(kept, tokens_per_step, num_gpus)
            if not first_stream:
                return
            if not how:
                part.problem = problem
                return
            part.notes.append(f"{part.origin}: {logger} step times derived from {how}")
            note = caveat(kept, how) if caveat else None
            if note:
                part.notes.append(f"{part.origin}: {note}")
            if missing:
                part.notes.append(
                    f"{part.origin}: {missing} logged steps had no earlier timestamp in the "
                    "same attempt to measure from; dropped"
                )

        return derive

    return deriver


# --- whole-second timestamps as a window mean ---------------------------------------------

STAMP_RESOLUTION_S = 1.0
_STAMP_SD = STAMP_RESOLUTION_S / math.sqrt(6)  # of a difference of two floored stamps
SLOW_FACTOR = 2.0  # an interval this many times the typical step (+ the resolution) is slow


def window_mean_times(kept: dict[int, Record]) -> tuple[float, int] | None:
    """Step times of one rank's records from whole-second stamps, as a window mean; returns
    (the relative standard error the mean can support, steps left without), or None when
    no two records of one attempt have stamps.

    A stamp marks the end of its step, floored to the second, so the time between two
    records is known to +-1 s: one interval of a 2 s step reads 1, 2 or 3 s and two records
    in one second read 0. Only a long stretch is measured well, so the run's time is read
    as one window: every step of an interval that is not slow gets the mean of all of them
    (their total time over their steps), the only figure the stamps resolve to better than
    a second. Slow intervals (above SLOW_FACTOR x the typical step + 1 s: warm-up, a
    checkpoint or a validation pass) keep their own mean, so the statistics can drop them as
    warm-up or clip them as spikes instead of having them spread into every step. The mean's
    own error: each contiguous stretch of steady intervals adds one stamp difference, sd
    1/sqrt(6) s; divided by the stretches' total time it is the relative SE returned, which
    the statistics take as the floor of the run's SE (a window of equal values would claim
    none). The first logged step has no earlier stamp and keeps no time.
    """
    recs = [kept[s] for s in sorted(kept)]
    spans = []  # (record ending the interval, seconds, steps)
    for a, b in itertools.pairwise(recs):
        same = a.values.get("_attempt") == b.values.get("_attempt")
        if a.time is not None and b.time is not None and same and b.step > a.step:
            spans.append((b, max(b.time - a.time, 0.0), b.step - a.step))  # type: ignore[operator]
    if not spans:
        return None
    later = spans[len(spans) // 4 :]  # the start is warm-up: it must not set "typical"
    typical = sum(sec for _, sec, _ in later) / sum(n for _, _, n in later)
    slow = [sec / n > SLOW_FACTOR * typical + STAMP_RESOLUTION_S for _, sec, n in spans]
    seconds = sum(sec for (_, sec, _), s in zip(spans, slow, strict=True) if not s)
    steps = sum(n for (_, _, n), s in zip(spans, slow, strict=True) if not s)
    stretches = sum(1 for i, s in enumerate(slow) if not s and (i == 0 or slow[i - 1]))
    # Steps faster than the resolution may all share one second: the expected time is then
    # half of it, never zero.
    seconds = max(seconds, STAMP_RESOLUTION_S / 2)
    mean = seconds / steps if steps else None
    for (rec, sec, n), is_slow in zip(spans, slow, strict=True):
        rec.values["step_time_s"] = round(sec / n if is_slow or mean is None else mean, 6)
    missing = len(recs) - len(spans)
    return math.sqrt(stretches) * _STAMP_SD / seconds, missing
