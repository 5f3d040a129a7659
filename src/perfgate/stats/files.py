"""Read one run's step times from a file: a training log, or a plain step-time file.

Plain files are useful on their own (a spreadsheet export, a series cut from a report):
one number per line (seconds), or CSV with a header naming a `step_time_s` (or
`iteration_time_s`) column and optionally a `step` column. Lines starting with `#` are
comments. Anything else is a training log and goes to perfgate.logs.parse_files.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from perfgate import inputs
from perfgate.errors import LogParseError
from perfgate.logs import parse_files

TIME_COLUMNS = ("step_time_s", "iteration_time_s")
SNIFF_BYTES = 1 << 16


@dataclass(frozen=True)
class RunSeries:
    """The step times of one run as read from its file(s)."""

    step_times: tuple[float, ...]
    step_numbers: tuple[int, ...]
    format: str  # "plain", "csv" or the log format perfgate.logs recognised
    sources: tuple[str, ...]
    invalid_reason: str | None = None  # e.g. a NaN grad norm: the run cannot be judged


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _read_plain(path: Path, text: str) -> RunSeries | None:
    lines = [ln.strip() for ln in text.splitlines()]
    lines = [ln for ln in lines if ln and not ln.startswith("#")]
    if not lines:
        return None
    values = [_number(ln) for ln in lines]
    if all(v is not None for v in values):
        times = tuple(float(v) for v in values if v is not None)
        return RunSeries(times, tuple(range(len(times))), "plain", (str(path),))
    header = [h.strip() for h in next(csv.reader([lines[0]]))]
    column = next((c for c in TIME_COLUMNS if c in header), None)
    if column is None:
        return None
    reader = csv.DictReader(io.StringIO("\n".join(lines)))
    times: list[float] = []
    steps: list[int] = []
    for lineno, row in enumerate(reader, start=2):
        raw = (row.get(column) or "").strip()
        value = math.nan if raw.lower() in ("", "nan") else _number(raw)
        if value is None:
            raise LogParseError(f"{path}: data line {lineno}: {column} = {raw!r} is not a number")
        step_raw = (row.get("step") or "").strip()
        if step_raw:
            try:
                steps.append(int(float(step_raw)))
            except ValueError:
                raise LogParseError(
                    f"{path}: data line {lineno}: step = {step_raw!r} is not a number"
                ) from None
        times.append(value)
    if not times:
        raise LogParseError(f"{path}: CSV has a {column} column but no rows")
    if steps and len(steps) != len(times):
        raise LogParseError(f"{path}: the step column is empty on some rows")
    numbers = tuple(steps) if steps else tuple(range(len(times)))
    return RunSeries(tuple(times), numbers, "csv", (str(path),))


def _looks_plain(path: Path) -> bool:
    """Sniff the head only: training logs of big jobs run to gigabytes."""
    with inputs.open_regular(path, LogParseError) as f:
        head = f.read(SNIFF_BYTES).decode("utf-8", errors="replace")
    lines = [ln.strip() for ln in head.splitlines()[:-1] or head.splitlines()]
    lines = [ln for ln in lines if ln and not ln.startswith("#")]
    if not lines:
        return False
    if _number(lines[0]) is not None:
        return True
    return any(c in [h.strip() for h in lines[0].split(",")] for c in TIME_COLUMNS)


def read_run(paths: Sequence[str | Path]) -> RunSeries:
    """Read one run from one file, or from several log files of one run (restarts, in order)."""
    files = [Path(p) for p in paths]
    for f in files:
        inputs.require_regular(f, LogParseError)
    if len(files) == 1 and _looks_plain(files[0]):
        plain = _read_plain(files[0], inputs.read_text(files[0], LogParseError, "replace"))
        if plain is not None:
            return plain
    series = parse_files(files)
    return RunSeries(
        tuple(s.step_time_s for s in series.steps),
        tuple(s.step for s in series.steps),
        series.format,
        tuple(str(f) for f in files),
        series.invalid_reason,
    )
