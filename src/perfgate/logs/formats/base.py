"""What a log format declares (Shape, LogFormat, Family) and what its records are (Record).

Pure stdlib (the workload imports it inside the container). Each record keeps the logger's own
step numbering converted to 0-based and its values converted to perfgate units (seconds, GiB,
fractions).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple, Protocol

# A logged number: `1.249e+03`, `2e+3`, `.5`, `nan`, `-inf` (the sign is the prefix's: a
# `-inf` alternative matched `--inf`, which float() refuses).
NUM = r"[-+]?(?:\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|nan|NaN|inf)"
NUM_RE = re.compile(NUM)

# No training run logs a step number this large: a line that says so is corrupt, not a record
# (a 400-digit number would overflow the float arithmetic on step numbers downstream).
MAX_STEP = 10**9


@dataclass(slots=True)
class Record:
    """One step record as found on a line: kind, 0-based step (None: unnumbered), values."""

    kind: str
    step: int | None
    values: dict[str, float] = field(default_factory=dict)
    rank: int | None = None  # from the line's srun/torchrun label or the record's own [Rank r]
    time: float | None = None  # the line's log timestamp (POSIX seconds), where it has one
    seq: int = 0  # position among all records of the file


def integer(text: str) -> int:
    """A logged step number or count (digits): one of more digits than any run logs reads as
    beyond MAX_STEP, so its record is dropped (int() of a 4300-digit string raises)."""
    return int(text) if len(text) <= 18 else 10 * MAX_STEP


def number(text: str) -> float | None:
    """The leading number of a logged value (`1.249e+03`, `2e+3`, `nan`, `5,856`), else None."""
    m = NUM_RE.match(text.strip().replace(",", ""))
    return float(m.group(0)) if m else None


def rank_key(rank: int | None) -> int:
    """Sort key of a rank label: unlabeled lines first, then rank 0, 1, ..."""
    return -1 if rank is None else rank


class Span(NamedTuple):
    """Where one record's anchor lies on its line, and the text around it that is the record's.

    A NamedTuple, not a frozen dataclass: one is built per record and a frozen dataclass's
    __init__ costs three times as much.
    """

    match: re.Match[str]  # the anchor
    line: str  # the whole line (rank label kept, ANSI codes stripped)
    start: int  # the anchor's span
    end: int
    stop: int  # where the record's text ends: the next anchor or the line end
    prev_end: int  # where the previous anchor on the line ended (0: none)


Builder = Callable[[Span], Record | None]
# A dense shape's step number from its anchor's groups and the step fields read (e.g. NeMo 2's
# global_step); the builder uses the same function, so both ways agree.
StepOf = Callable[[tuple[str | None, ...], dict[str, float]], int]
# The same for many lines at once: the anchor's groups and the step fields as columns.
StepsOf = Callable[[list[list[str]], dict[str, list[float]]], list[int]]


@dataclass(frozen=True, slots=True)
class Dense:
    """How the lines of a shape printed once per step are read in bulk (perfgate.logs.template).

    The anchor is followed by `| key: value` fields only (the builder reads them with
    fields.pipe_fields). values: (record value, the keys it is read from by precedence, unit:
    1000.0 for ms, a decimal shift); step_keys: fields read only for step_of; fields_at: where
    the fields start relative to the anchor's end (-1: the anchor ends with the first `|`).
    """

    values: tuple[tuple[str, tuple[str, ...], float], ...]
    step_of: StepOf
    steps_of: StepsOf  # step_of over columns (the template lane's bulk reads)
    step_keys: tuple[str, ...] = ()
    fields_at: int = 0


@dataclass(frozen=True, slots=True)
class Shape:
    """One line shape: the anchor that starts a record of a kind, and its builder.

    gate is a substring every match of regex contains: the regex runs only on lines holding
    it, and one `in` test is far cheaper than a regex search. all_ranks: every rank may print
    the line, so only the lowest ranks' records are kept (perfgate.logs.collect).
    dense: the shape's records are kept as columns and its lines matched by learned
    templates (perfgate.logs.template), so a million-step log stays fast and small.
    """

    gate: str
    kind: str
    regex: re.Pattern[str]
    build: Builder
    all_ranks: bool = False
    dense: Dense | None = None  # one line per step: read in bulk after the first (template)


class PartReport(Protocol):
    """What a format's assembly step may report on the file being read (assemble.Part)."""

    origin: str
    notes: list[str]
    problem: str | None
    min_rel_se: float  # the step times' own resolution, relative (StepSeries.min_rel_se)


ByKind = dict[str, list[Record]]  # a defaultdict: a kind with no records reads as []
# Completes one rank's steps (step times from throughput); True for the first stream read.
Derive = Callable[[dict[int, Record], bool], None]
Deriver = Callable[[PartReport, float | None, int | None], Derive]


@dataclass(frozen=True, slots=True)
class LogFormat:
    """One detect_format name: how its records score, and how they become step records.

    score(by_kind): how many steps the log holds in this format (the highest wins a detection).
    records(by_kind, part): its step records, numbered (pairing or numbering done here).
    deriver(part, tokens_per_step, num_gpus): the hook that completes each rank's steps.
    redraws: the same step is printed many times by design (tqdm), so repeats are no news.
    """

    name: str
    score: Callable[[ByKind], int]
    records: Callable[[ByKind, PartReport], list[Record]]
    deriver: Deriver | None = None
    redraws: bool = False


@dataclass(frozen=True, slots=True)
class Family:
    """One module's declaration: the line shapes it reads and the formats it tells apart.

    markers: bytes of which every line of its shapes holds one (perfgate.logs.scan skips the
    rest). reported: kinds whose values are run-level figures (StepSeries.reported).
    step_values(by_kind): values logged on lines of their own, by step, that fill in whichever
    format's steps lack them (Megatron's memory reports).
    """

    markers: tuple[bytes, ...]
    shapes: tuple[Shape, ...]
    formats: tuple[LogFormat, ...]
    reported: tuple[str, ...] = ()
    step_values: Callable[[ByKind], dict[int, dict[str, float]]] | None = None

    @property
    def kinds(self) -> tuple[str, ...]:
        """The record kinds its shapes yield, each once."""
        return tuple(dict.fromkeys(s.kind for s in self.shapes))


def count_of(kind: str) -> Callable[[ByKind], int]:
    """A score: the number of records of one kind."""
    return lambda by_kind: len(by_kind[kind])


def records_of(kind: str) -> Callable[[ByKind, PartReport], list[Record]]:
    """A format's step records when they are the records of one kind, as logged."""
    return lambda by_kind, part: by_kind[kind]
