"""Per-phase step times from the timer blocks Megatron-Core prints (Megatron-LM, Megatron-Bridge,
NeMo 2's MegatronStrategy): PhaseSeries, one column of seconds per phase.

With `--timing-log-level 1` (Bridge `logger.timing_log_level`, NeMo 2
`trainer.strategy.megatron_log_level`) the last rank prints, after each logged iteration line,

    (min, max) time across ranks (ms):
        forward-backward ...............................: (4687.59, 4725.48)
        optimizer ......................................: (2221.02, 2234.98)

(`max time across ranks (ms):` with one value, or `times across ranks (ms):` with a
`     rank  0: 12.34` line per rank; from Megatron-Core 0.16 the header is logged with an
`INFO:megatron.core.timers:` prefix; logs before Aug 2022 print one `time (ms) | name: value |`
line). Each value is that rank's time in the phase per iteration over the log interval; the
slowest rank's (max) is kept: it is the one every collective waits for. Blocks before the first
iteration line (setup, checkpoint loading) and level-0 timers are left out. Verbatim examples
and their sources: tests/data/reference/log_formats.md section 7.

Kept apart from Step and StepSeries (the step records): a run's phases are a few columns, read
from the timer rank's log (the last rank), which is not the log its steps come from.
Pure stdlib (the workload and the job import it).
"""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from perfgate.errors import LogParseError
from perfgate.logs.formats.base import NUM, number
from perfgate.logs.lines import split_prefix
from perfgate.logs.scan import LineScanner, open_log
from perfgate.logs.series import log_interval_of

# Bytes every line of interest holds (the scan skips the rest): a block header, a dotted
# minmax/max line (`name ....: (`; a name of 47+ characters has no dots: `name : (`), a
# per-rank line of the `all` option and its `  name:` line, the legacy one-liner, iteration lines.
MARKERS = (
    b"across ranks (ms):",
    b".: ",
    b" : (",
    b"     rank ",
    b":\n",
    b"time (ms) |",
    b"teration",
)

_HEADER = re.compile(r"(\(min, max\) time|max time|times) across ranks \(ms\):\s*$")
_OPTIONS = {"(min, max) time": "minmax", "max time": "max", "times": "all"}
_MINMAX = re.compile(r"(?:^|\s)([^\s:()]+) \.*: \((" + NUM + r"), (" + NUM + r")\)\s*$")
_MAX = re.compile(r"(?:^|\s)([^\s:()]+) \.*: (" + NUM + r")\s*$")
_ALL_NAME = re.compile(r"(?:^|\s)([^\s:()]+):\s*$")
_ALL_RANK = re.compile(r"(?:^|\s)rank\s+\d+: (" + NUM + r")\s*$")
_LEGACY = re.compile(r"time \(ms\) \|(.*)$")
# NeMo 2's progress line first: it also holds `iteration I/N |`, which Megatron's pattern reads.
_NEMO2 = re.compile(r"Training epoch \d+, iteration (\d+)/\d+(.*)$")
_GLOBAL_STEP = re.compile(r"\|\s*global_step:\s*(\d+)")
# Megatron-LM `iteration   10/ 80000 |`; Megatron-DeepSpeed (ALCF) `iteration=   1/  317892 |`.
_MEGATRON = re.compile(r"iteration[\s=]\s*(\d+)/\s*\d+\s*\|")

# Timers that are not a phase of a training step: setup, checkpointing, evaluation, and the
# interval timers behind `elapsed time per iteration` (timers.py level 0; startup-* at HEAD).
NOT_PHASES = frozenset(
    {
        "model-and-optimizer-setup",
        "train/valid/test-data-iterators-setup",
        "load-checkpoint",
        "save-checkpoint",
        "save-checkpoint-non-persistent",
        "evaluate",
        "gpu-sniff-test",
        "interval-time",
        "eval-time",
    }
)


def _seconds(ms: str) -> float:
    """A logged millisecond value in seconds, without binary noise (4725.48 -> 4.72548)."""
    try:
        return float(Decimal(ms).scaleb(-3))
    except InvalidOperation:  # nan, inf
        return float(ms) / 1000.0


def is_phase(name: str) -> bool:
    """True for a timer that times part of a training iteration."""
    return name not in NOT_PHASES and not name.startswith("startup-")


@dataclass(frozen=True)
class PhaseSeries:
    """Seconds per iteration in each phase, one value per logged step (NaN: not in that block).

    steps are 0-based step numbers (the iteration line each block follows); option says how
    the timers were printed (minmax, max, all, legacy); log_interval > 1: each value is an
    average over that many iterations.
    """

    steps: tuple[int, ...]
    phases: dict[str, tuple[float, ...]] = field(hash=False)
    option: str = "minmax"
    log_interval: int = 1
    source: str | None = None
    notes: tuple[str, ...] = ()

    @property
    def names(self) -> list[str]:
        """The phases, in the order the log first printed them."""
        return list(self.phases)

    def window(self, first: int, last: int) -> tuple[list[int], dict[str, list[float]]]:
        """(steps, phase -> values) of the logged steps in [first, last]."""
        keep = [i for i, s in enumerate(self.steps) if first <= s <= last]
        steps = [self.steps[i] for i in keep]
        return steps, {n: [v[i] for i in keep] for n, v in self.phases.items()}

    def medians(self, first: int, last: int) -> dict[str, float]:
        """The median of each phase over the logged steps in [first, last] (NaN left out)."""
        _, cols = self.window(first, last)
        out = {}
        for name, values in cols.items():
            finite = [x for x in values if math.isfinite(x)]
            if finite:
                out[name] = statistics.median(finite)
        return out

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (NaN as null)."""
        return {
            "steps": list(self.steps),
            "phases": {
                n: [x if math.isfinite(x) else None for x in v] for n, v in self.phases.items()
            },
            "option": self.option,
            "log_interval": self.log_interval,
            "source": self.source,
            "notes": list(self.notes),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PhaseSeries:
        """The inverse of to_dict."""
        return cls(
            steps=tuple(int(s) for s in data["steps"]),
            phases={
                n: tuple(math.nan if x is None else float(x) for x in v)
                for n, v in data["phases"].items()
            },
            option=str(data.get("option", "minmax")),
            log_interval=int(data.get("log_interval", 1)),
            source=data.get("source"),
            notes=tuple(data.get("notes", ())),
        )


class _Reader:
    """The state of one log's scan: each rank's last step and open block, the steps found."""

    def __init__(self, origin: str) -> None:
        self.origin = origin
        self.last_step: dict[int | None, int] = {}  # rank label -> its last iteration's step
        self.block: dict[int | None, tuple[str, int | None, dict[str, float]]] = {}
        self.all_name: dict[int | None, str] = {}  # `all` option: the timer being listed
        self.by_step: dict[int, dict[str, float]] = {}
        self.iteration_steps: list[int] = []
        self.options: list[str] = []
        self.dropped_setup = 0

    def close(self, rank: int | None) -> None:
        """File the rank's open block under its step (a block with no step is setup time)."""
        opened = self.block.pop(rank, None)
        self.all_name.pop(rank, None)
        if opened is None:
            return
        option, step, values = opened
        values = {k: v for k, v in values.items() if is_phase(k)}
        if not values:
            return
        if step is None:
            self.dropped_setup += 1
            return
        self.by_step.setdefault(step, {}).update(values)
        self.options.append(option)

    def line(self, raw: str) -> None:
        rank, text = split_prefix(raw)
        m = _NEMO2.search(text)
        if m is not None:
            gs = _GLOBAL_STEP.search(m.group(2))
            self._iteration(rank, int(gs.group(1)) if gs else int(m.group(1)))
            return
        m = _MEGATRON.search(text)
        if m is not None:
            self._iteration(rank, int(m.group(1)) - 1)  # Megatron counts iterations from 1
            return
        m = _HEADER.search(text)
        if m is not None:
            self.close(rank)
            self.block[rank] = (_OPTIONS[m.group(1)], self._step_for(rank), {})
            return
        m = _LEGACY.search(text)
        if m is not None:
            self._legacy(rank, m.group(1))
            return
        opened = self.block.get(rank)
        if opened is None:
            return
        option, _, values = opened
        if option == "minmax" and (m := _MINMAX.search(text)):
            values[m.group(1)] = _seconds(m.group(3))  # the slowest rank's
        elif option == "max" and (m := _MAX.search(text)):
            values[m.group(1)] = _seconds(m.group(2))
        elif option == "all":
            self._all(rank, text, values)

    def _step_for(self, rank: int | None) -> int | None:
        if rank in self.last_step:
            return self.last_step[rank]
        # The iteration line may come from another label than the block (or from none).
        return self.last_step.get(None, max(self.last_step.values(), default=None))

    def _iteration(self, rank: int | None, step: int) -> None:
        self.close(rank)
        self.last_step[rank] = step
        self.iteration_steps.append(step)

    def _all(self, rank: int | None, text: str, values: dict[str, float]) -> None:
        m = _ALL_RANK.search(text)
        if m is not None and rank in self.all_name:
            name, x = self.all_name[rank], _seconds(m.group(1))
            values[name] = max(x, values.get(name, x))
            return
        m = _ALL_NAME.search(text)
        if m is not None:
            self.all_name[rank] = m.group(1)

    def _legacy(self, rank: int | None, fields: str) -> None:
        """`time (ms) | forward-compute: 193.77 | ...`: rank 0's times after its iteration line."""
        values: dict[str, float] = {}
        for part in fields.split("|"):
            name, sep, value = part.partition(":")
            x = number(value) if sep else None
            if x is not None and name.strip():
                values[name.strip()] = _seconds(value.split()[0]) if math.isfinite(x) else x
        self.close(rank)
        self.block[rank] = ("legacy", self._step_for(rank), values)
        self.close(rank)

    def series(self) -> PhaseSeries | None:
        for rank in list(self.block):
            self.close(rank)
        if not self.by_step:
            return None
        steps = sorted(self.by_step)
        names = list(dict.fromkeys(n for s in steps for n in self.by_step[s]))
        phases = {n: tuple(self.by_step[s].get(n, math.nan) for s in steps) for n in names}
        notes = []
        if self.dropped_setup:
            notes.append(
                f"{self.origin}: {self.dropped_setup} timer block(s) before the first iteration "
                "line left out (setup, not a training step)"
            )
        option = max(set(self.options), key=self.options.count)
        interval = log_interval_of(sorted(set(self.iteration_steps)))
        return PhaseSeries(tuple(steps), phases, option, interval, self.origin, tuple(notes))


def parse_phase_lines(lines: Iterable[str], origin: str = "<text>") -> PhaseSeries | None:
    """The phases of a log's lines, or None when it holds no per-iteration timer block."""
    reader = _Reader(origin)
    for raw in lines:
        reader.line(raw)
    return reader.series()


def parse_phase_text(text: str, origin: str = "<text>") -> PhaseSeries | None:
    """parse_phase_lines on a log held in memory."""
    return parse_phase_lines(text.splitlines(), origin)


def parse_phase_file(path: str | Path) -> PhaseSeries | None:
    """The phases of one log file, streamed (only lines holding a MARKERS string are read)."""
    try:
        scanner = LineScanner(open_log(str(path)), origin=str(path))
    except (OSError, LogParseError):
        return None
    scanner.narrow(MARKERS)
    try:
        return parse_phase_lines(scanner, str(path))
    except LogParseError:
        return None


def phases_of_run(paths: Sequence[str | Path]) -> PhaseSeries | None:
    """The phases of one launch: the first of its logs (timer rank first) that has any."""
    for path in paths:
        found = parse_phase_file(path)
        if found is not None:
            return found
    return None
