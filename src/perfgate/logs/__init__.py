"""Parse training logs of every NeMo-stack format into one StepSeries.

Formats (detect_format names): "nemo2" (NeMo 2.x progress lines; llmb/dgxc NeMo 2 logs),
"nemo1_tqdm" (NeMo 1.x Lightning bars), "nemo_delta_timing" (DeltaTimingCallback),
"megatron" (Megatron-LM iteration lines), "megatron_bridge" (Megatron-Bridge `Step Time :` and
iteration lines; llmb/dgxc logs of NeMo >= 25.09), "automodel" (Automodel train_ft),
"automodel_benchmark" (Automodel benchmark recipe), "torchtitan". Each format family's line
shapes, scoring and assembly step: perfgate.logs.formats (one module per family, and the
registry); verbatim lines: tests/data/reference/log_formats.md.

Rules the parser applies, each reported in StepSeries.notes when it fires:
- steps are 0-based whatever the logger's numbering (Megatron/TorchTitan `iteration N` -> N-1);
- all-rank logs: every rank's records form a stream; for each step the lowest rank's record
  wins (unlabeled lines count as lowest); a step repeated in one stream keeps the latest copy;
- a NaN or infinite step time, grad norm or loss anywhere (warm-up included) makes the run
  invalid (invalid_reason names the step);
- a stream whose step numbers go back (a requeue or restart appending to the same file) keeps
  the last attempt: earlier records from that step on are dropped; a step logged twice in a
  row with two step times makes the run invalid (BAD_LOG: which copy is right is unknown);
- a file's last line without a line break was cut while being written: its last record is
  left out (its last number may be cut short);
- files given together are consecutive segments of one run, chained in the given order; a
  segment that restarts numbering continues after the previous segment's last step.
"""

from __future__ import annotations

import io
import json
import math
import statistics
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, TextIO

from perfgate.errors import LogParseError
from perfgate.logs import assemble, chain, collect
from perfgate.logs.scan import LineScanner, open_log
from perfgate.logs.series import Step, StepSeries, log_interval_of, renumber
from perfgate.logs.table import NO_RANK, STEP_FIELDS, StepTable

__all__ = [
    "Step",
    "StepSeries",
    "detect_format",
    "jsonable",
    "log_interval_of",
    "parse_files",
    "parse_text",
    "peak_memory_per_step",
    "renumber",
    "step_dicts",
    "summarize",
    "to_dict",
    "write_json",
]


def parse_files(
    paths: Sequence[str | Path],
    *,
    tokens_per_step: float | None = None,
    num_gpus: int | None = None,
    growing: bool = False,
) -> StepSeries:
    """Parse the log files of one run, chained in the given order (restarts, requeues).

    tokens_per_step (global tokens per optimizer step, e.g. gbs * seq_len) and num_gpus are
    needed only for formats that log throughput but no step time (Automodel, TorchTitan).
    A file whose last line has no line break was cut while being written: that line's last
    record is left out, with a note (`in s: 2.` may have been 2.5). growing=True: the last
    file is still being written; its unfinished last line is left out without a note.
    """
    if not paths:
        raise LogParseError("no log files given")
    parts = []
    for i, p in enumerate(paths):
        path = str(p)
        lines = _read(path)
        lines.skip_unterminated = growing and i == len(paths) - 1
        parts.append(assemble.parse_lines(lines, path, tokens_per_step, num_gpus))
    return chain.chain(parts)


def parse_text(
    text: str | bytes,
    origin: str = "<text>",
    *,
    tokens_per_step: float | None = None,
    num_gpus: int | None = None,
) -> StepSeries:
    """Parse one log held in memory; origin names it in notes and errors."""
    part = assemble.parse_lines(_text_lines(text), origin, tokens_per_step, num_gpus)
    return chain.chain([part])


def detect_format(text: str | bytes) -> str:
    """The format name of a log's step records (see the module doc), or "unknown"."""
    return collect.detect(_text_lines(text)) or "unknown"


def summarize(series: StepSeries) -> dict[str, Any]:
    """What the parser knows about a run, as plain data (steady state: perfgate.stats)."""
    times = [t for t in series.step_times if math.isfinite(t)]
    numbers = series.step_numbers
    return {
        "format": series.format,
        "n_steps": len(numbers),
        "first_step": numbers[0] if numbers else None,
        "last_step": numbers[-1] if numbers else None,
        "median_step_time_s": statistics.median(times) if times else None,
        "mean_step_time_s": _mean(times) if times else None,
        "log_interval": series.log_interval,
        "restarts": series.restarts,
        "segment_starts": list(series.segment_starts),
        "invalid_reason": series.invalid_reason,
        "source_files": list(series.source_files),
        "notes": list(series.notes),
        "reported": dict(series.reported),
    }


def _mean(times: list[float]) -> float:
    try:
        return statistics.fmean(times)
    except OverflowError:  # corrupt 1e308 s steps: the sum has no float
        return math.inf


def to_dict(series: StepSeries) -> dict[str, Any]:
    """{"format", "steps", "summary"} ready for json.dumps(allow_nan=False): NaN -> "nan"."""
    summary = {k: jsonable(v) for k, v in summarize(series).items()}
    return {"format": series.format, "steps": list(step_dicts(series)), "summary": summary}


def step_dicts(series: StepSeries) -> Iterator[dict[str, Any]]:
    """Each step as to_dict has it (Step's fields in order, NaN -> "nan"), from the columns."""
    table = series.steps
    assert isinstance(table, StepTable)
    columns = [table.fields.get(name) for name in STEP_FIELDS]
    times, ranks = table.times, table.ranks
    for i, step in enumerate(table.numbers):
        d: dict[str, Any] = {"step": step, "step_time_s": jsonable(times[i])}
        for name, col in zip(STEP_FIELDS, columns, strict=True):
            d[name] = None if col is None else jsonable(col.get(i))
        d["rank"] = None if ranks[i] == NO_RANK else ranks[i]
        yield d


def jsonable(value: Any) -> Any:
    """value ready for json.dumps(allow_nan=False): NaN, inf -> "nan", "inf" (dicts too)."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)  # "nan", "inf", "-inf": JSON has no literal for them
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    return value


def _read(path: str) -> LineScanner:
    """Candidate lines of one file, streamed; a missing or unreadable file is a one-line error."""
    try:
        stream = open_log(path)
    except FileNotFoundError:
        raise LogParseError(f"{path}: no such log file") from None
    except IsADirectoryError:
        raise LogParseError(f"{path}: is a directory, not a log file") from None
    except OSError as e:
        raise LogParseError(f"{path}: cannot read the log ({e.strerror or e})") from None
    return LineScanner(stream, origin=path)


def _text_lines(text: str | bytes) -> Iterable[str]:
    data = text.encode("utf-8", "surrogateescape") if isinstance(text, str) else bytes(text)
    # Text held in memory is whole: its last line is not a cut one (see parse_files).
    return LineScanner(io.BytesIO(data if data.endswith((b"\n", b"\r")) else data + b"\n"))


def write_json(series: StepSeries, summary: dict[str, Any], out: TextIO) -> None:
    """json.dumps({"format", "steps", "summary"}, indent=2) of to_dict(series) with this summary,
    byte for byte, written a step at a time (a million-step log never sits in memory twice)."""
    out.write("{\n" + f'  "format": {json.dumps(series.format)},\n  "steps": [')
    first = True
    for step in step_dicts(series):
        text = json.dumps(step, indent=2, allow_nan=False, default=str)
        out.write(("\n" if first else ",\n") + "    " + text.replace("\n", "\n    "))
        first = False
    out.write("\n  ],\n" if not first else "],\n")
    body = json.dumps({"summary": summary}, indent=2, allow_nan=False, default=str)
    out.write(body[body.index('"summary"') - 2 :] + "\n")


def peak_memory_per_step(series: StepSeries) -> Iterator[float | None]:
    """Each step's Step.peak_memory_gib (allocated, else reserved), from the columns."""
    fields = series.steps.fields  # type: ignore[attr-defined]  # a StepTable
    peak, reserved = fields.get("mem_peak_gib"), fields.get("mem_reserved_gib")
    for i in range(len(series.steps)):
        p = peak.get(i) if peak is not None else None
        yield p if p is not None or reserved is None else reserved.get(i)
