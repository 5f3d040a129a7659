"""A dense kind's RecordTable -> its steps, by the same rules as perfgate.logs.assemble
applies to Record objects (per-rank streams, the last attempt of each, the lowest rank
winning), on arrays of record positions: a million-step log takes seconds and tens of bytes
per step. tests/logs/test_logs_dense.py holds the two paths to the same answers.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from perfgate.logs.formats import rank_key
from perfgate.logs.records import RecordTable
from perfgate.logs.series import even_gap
from perfgate.logs.table import NO_RANK, STEP_FIELDS, Column, StepTable


@dataclass
class Stream:
    """One rank's records after its restarts: positions in the table, in step order."""

    steps: array = field(default_factory=lambda: array("q"))
    index: array = field(default_factory=lambda: array("q"))
    restarts: int = 0
    segment_starts: list[int] = field(default_factory=list)
    duplicates: int = 0
    # (step, earlier step time, later step time) of the first repeat with another step time
    conflict: tuple[int, float, float] | None = None
    restart_notes: list[tuple[int, int]] = field(default_factory=list)  # (from step, to step)


def attempts(
    table: RecordTable, positions: Sequence[int], times: Callable[[int], float | None]
) -> Stream:
    """Keep the last attempt of a stream whose step numbers go back; count repeats."""
    out = Stream()
    numbers = table.steps
    if isinstance(positions, range) and positions == range(len(numbers)) and even_gap(numbers):
        # Every record of the table, steps strictly rising: nothing to drop (the usual log).
        out.steps, out.index = numbers, array("q", positions)
        return out
    steps, index = out.steps, out.index
    prev: int | None = None
    seg: list[int] = []
    for i in positions:
        s = numbers[i]
        if prev is None or s > prev:
            steps.append(s)
            index.append(i)
        elif s == prev:
            out.duplicates += 1
            if out.conflict is None:
                a, b = times(index[-1]), times(i)
                if a is not None and b is not None and a != b and not (a != a and b != b):
                    out.conflict = (s, a, b)  # NaN and NaN agree: both say "no number"
            index[-1] = i
        else:
            out.restarts += 1
            cut = bisect_left(steps, s)
            del steps[cut:]
            del index[cut:]
            steps.append(s)
            index.append(i)
            seg = [x for x in seg if x < s] + [s]
            out.restart_notes.append((s, prev))
        prev = s
    first = steps[0] if steps else 0
    out.segment_starts = [x for x in seg if x > first]
    return out


def merge(streams: Sequence[Stream], has_time: Callable[[int], bool]) -> tuple[array, array, int]:
    """(steps, positions, steps shared) over the streams, lowest rank first: a step takes the
    first stream's record, unless that one has no step time and a later one has."""
    steps, index = streams[0].steps, streams[0].index
    shared = 0
    for other in streams[1:]:
        out_s, out_i = array("q"), array("q")
        a = b = 0
        while a < len(steps) or b < len(other.steps):
            if b >= len(other.steps) or (a < len(steps) and steps[a] < other.steps[b]):
                out_s.append(steps[a])
                out_i.append(index[a])
                a += 1
            elif a >= len(steps) or other.steps[b] < steps[a]:
                out_s.append(other.steps[b])
                out_i.append(other.index[b])
                b += 1
            else:
                shared += 1
                keep = index[a]
                if not has_time(keep) and has_time(other.index[b]):
                    keep = other.index[b]  # a lower rank's record that has no step time loses
                out_s.append(steps[a])
                out_i.append(keep)
                a += 1
                b += 1
        steps, index = out_s, out_i
    return steps, index, shared


def rank_positions(table: RecordTable) -> list[tuple[int | None, Sequence[int]]]:
    """Each rank's record positions, lowest rank (unlabeled first) first."""
    ranks = table.ranks
    if not ranks:
        return []
    if ranks.count(ranks[0]) == len(ranks):
        r = ranks[0]
        return [(None if r == NO_RANK else r, range(len(ranks)))]
    by_rank: dict[int, array] = {}
    for i, r in enumerate(ranks):
        if r not in by_rank:
            by_rank[r] = array("q")
        by_rank[r].append(i)
    order = sorted((None if r == NO_RANK else r for r in by_rank), key=rank_key)
    return [(r, by_rank[NO_RANK if r is None else r]) for r in order]


def steps_of(table: RecordTable, index: Sequence[int], steps: array) -> StepTable:
    """The StepTable of the chosen records (each has a step time)."""
    times = table.values["step_time_s"]
    if len(index) == len(table) and index == array(
        "q", range(len(table))
    ):  # every record, in order: adopt the columns (no copy)
        fields = {k: table.values[k] for k in STEP_FIELDS if k in table.values}
        return StepTable(table.steps, times.values, fields, table.ranks)
    fields = {k: table.values[k].take(index) for k in STEP_FIELDS if k in table.values}
    return StepTable(
        array("q", steps),
        times.take(index).values,
        fields,
        array("i", map(table.ranks.__getitem__, index)),
    )


def with_time(table: RecordTable, index: array, steps: array) -> tuple[array, array]:
    """The positions (and steps) of records that carry a step time."""
    col = table.values.get("step_time_s")
    if col is None:
        return array("q"), array("q")
    if col.mask is None:
        return index, steps
    mask = col.mask
    keep = [k for k, i in enumerate(index) if mask[i]]
    return array("q", map(index.__getitem__, keep)), array("q", map(steps.__getitem__, keep))


def fill(table: StepTable, by_step: dict[int, dict[str, float]]) -> None:
    """Values logged on lines of their own (memory reports) where a step lacks them."""
    n = len(table)
    for step, values in by_step.items():
        k = bisect_left(table.numbers, step)
        if k >= n or table.numbers[k] != step:
            continue
        for key, val in values.items():
            if key not in STEP_FIELDS:
                continue
            col = table.fields.get(key)
            if col is None:
                col = table.fields[key] = Column.missing(n)
            if col.mask is not None and not col.mask[k]:
                col.values[k] = val
                col.mask[k] = 1


def nonzero(col: Column | None, index: Sequence[int], steps: Sequence[int]) -> dict[int, float]:
    """{step: value} where a chosen record's value is logged and not zero (NaN counts)."""
    if col is None or col.values.count(0.0) == len(col.values):
        return {}
    out = {}
    for k, i in enumerate(index):
        v = col.get(i)
        if v:
            out[steps[k]] = v
    return out


def time_getter(table: RecordTable) -> Callable[[int], float | None]:
    """Position -> the record's step time, or None."""
    col = table.values.get("step_time_s")
    return col.get if col is not None else (lambda i: None)


def has_time(table: RecordTable) -> Callable[[int], bool]:
    """Position -> True when the record carries a step time."""
    get = time_getter(table)
    return lambda i: get(i) is not None


__all__ = [
    "Stream",
    "attempts",
    "fill",
    "has_time",
    "merge",
    "nonzero",
    "rank_positions",
    "steps_of",
    "time_getter",
    "with_time",
]
