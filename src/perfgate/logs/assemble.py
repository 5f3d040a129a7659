"""One file's records (perfgate.logs.collect) -> its Part: the format's records paired or
derived into steps, one stream per rank, the last attempt of each, the lowest rank winning.
Parts are chained into one StepSeries by perfgate.logs.chain.

The rules are listed in perfgate.logs' module doc; every time one of them changes the data a
note says so, so a report can show how the numbers were read.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from perfgate.logs import formats as lf
from perfgate.logs import resolve
from perfgate.logs.collect import MAX_RANK_STREAMS, choose, collect
from perfgate.logs.formats import Derive, rank_key
from perfgate.logs.records import RecordTable
from perfgate.logs.series import Step
from perfgate.logs.table import STEP_FIELDS, StepTable


@dataclass
class Part:
    """What one file (or text) yielded, before chaining."""

    origin: str
    format: str | None
    steps: StepTable = field(default_factory=StepTable)
    notes: list[str] = field(default_factory=list)
    restarts: int = 0
    segment_starts: list[int] = field(default_factory=list)
    nan_iterations: dict[int, float] = field(default_factory=dict)
    reported: dict[str, float] = field(default_factory=dict)
    problem: str | None = None  # why records were found but no step time could be had
    # The first step logged twice in a row with two step times: which copy is right cannot
    # be known, so the run cannot be judged (step -> the reason).
    conflicts: dict[int, str] = field(default_factory=dict)
    min_rel_se: float = 0.0  # see StepSeries.min_rel_se


def parse_lines(
    lines: Iterable[str], origin: str, tokens_per_step: float | None, num_gpus: int | None
) -> Part:
    """Parse one file's candidate lines into a Part."""
    collected = collect(lines)
    by_kind = collected.by_kind
    fmt = choose(by_kind)
    part = Part(origin, fmt.name if fmt else None)
    if collected.cut_record:
        part.notes.append(f"{origin}: {collected.cut_record}")
    for kind in lf.REPORTED_KINDS:
        for rec in by_kind[kind]:
            part.reported.update(rec.values)
    if fmt is None:
        return part
    records = fmt.records(by_kind, part)
    derive = fmt.deriver(part, tokens_per_step, num_gpus) if fmt.deriver else None
    side = [step_values(by_kind) for step_values in lf.STEP_VALUES]
    if isinstance(records, RecordTable) and derive is None:
        n_chosen = _dense(records, part, fmt.redraws, side)
    else:
        n_chosen = _objects(list(records), part, fmt.redraws, derive, side)
    skipped = set().union(*collected.skipped_ranks.values())
    if skipped:
        part.notes.append(
            f"{origin}: {len(skipped)} more ranks logged step lines; only the "
            f"{MAX_RANK_STREAMS} lowest ranks' lines were read (the lowest rank wins)"
        )
    if not part.steps and part.problem is None:
        part.problem = (
            f"{n_chosen} {fmt.name} step lines found but none carries a step time "
            "(e.g. NeMo 2 without its timing callback)"
        )
    return part


def _objects(
    records: list[lf.Record],
    part: Part,
    redraws: bool,
    derive: Derive | None,
    side: list[dict[int, dict[str, float]]],
) -> int:
    """Record objects -> part.steps; returns the number of steps chosen."""
    chosen = _resolve(records, part, redraws=redraws, derive=derive)
    steps = []
    for s in sorted(chosen):
        rec = chosen[s]
        values = rec.values
        if "step_time_s" not in values:
            continue
        for by_step in side:
            for key, val in by_step.get(s, {}).items():
                values.setdefault(key, val)
        if values.get("nan_iterations"):
            part.nan_iterations[s] = values["nan_iterations"]
        kwargs = {k: values[k] for k in STEP_FIELDS if k in values}
        steps.append(Step(step=s, step_time_s=values["step_time_s"], rank=rec.rank, **kwargs))
    part.steps = StepTable.from_steps(steps)
    return len(chosen)


def _dense(
    table: RecordTable, part: Part, redraws: bool, side: list[dict[int, dict[str, float]]]
) -> int:
    """A dense kind's columns -> part.steps, by the rules of _resolve (perfgate.logs.resolve)."""
    times = resolve.time_getter(table)
    streams = []
    for i, (rank, positions) in enumerate(resolve.rank_positions(table)):
        st = resolve.attempts(table, positions, times)
        streams.append(st)
        if i:
            continue
        part.restarts += st.restarts
        part.segment_starts.extend(st.segment_starts)
        for s, prev in st.restart_notes:
            part.notes.append(_restart_note(part.origin, s, prev))
        if st.duplicates and not redraws:
            part.notes.append(_duplicate_note(part.origin, st.duplicates, rank))
        if st.conflict is not None and not redraws:
            part.conflicts[st.conflict[0]] = _conflict(*st.conflict)
    if not streams:
        return 0
    steps, index, shared = resolve.merge(streams, resolve.has_time(table))
    if shared:
        ranks = [r for r, _ in resolve.rank_positions(table)]
        part.notes.append(_shared_note(part.origin, ranks))
    n_chosen = len(index)
    index, steps = resolve.with_time(table, index, steps)
    part.nan_iterations.update(resolve.nonzero(table.values.get("nan_iterations"), index, steps))
    part.steps = resolve.steps_of(table, index, steps) if index else StepTable()
    for by_step in side:
        resolve.fill(part.steps, by_step)
    return n_chosen


def _restart_note(origin: str, s: int, prev: int) -> str:
    return (
        f"{origin}: steps {s}..{prev} were logged again (a requeued or restarted "
        f"attempt in the same file); kept the last attempt from step {s} on"
    )


def _duplicate_note(origin: str, dups: int, rank: int | None) -> str:
    who = "without rank labels" if rank is None else f"by rank {rank}"
    return (
        f"{origin}: {dups} step records repeated {who} (duplicate prints); "
        "kept the last copy of each"
    )


def _shared_note(origin: str, order: list[int | None]) -> str:
    labels = [r for r in order if r is not None]
    if not labels:
        return f"{origin}: several streams logged the same steps; kept the first"
    return (
        f"{origin}: {len(order)} ranks logged the same steps (ranks {labels[0]}..."
        f"{labels[-1]}); kept the lowest rank's record for each step"
    )


def _differ(a: float | None, b: float | None) -> bool:
    """Two logged step times of one step that disagree (NaN and NaN agree: "no number")."""
    return a is not None and b is not None and a != b and not (a != a and b != b)


def _conflict(step: int, first: float, second: float) -> str:
    return f"step {step} logged twice with different step times ({first!r} s, then {second!r} s)"


def _resolve(
    records: list[lf.Record], part: Part, redraws: bool, derive: Derive | None
) -> dict[int, lf.Record]:
    """One record per step: per-rank streams, last attempt within a stream, lowest rank wins.

    derive, if given, completes each stream's records (step times from throughput) before
    the streams are merged, so a step's values all come from one rank.
    """
    streams: dict[int | None, list[lf.Record]] = defaultdict(list)
    for rec in records:
        if rec.step is not None:
            streams[rec.rank].append(rec)
    kept: dict[int | None, dict[int, lf.Record]] = {}
    order = sorted(streams, key=rank_key)
    for i, rank in enumerate(order):
        steps, restarts, seg, dups, conflict = _attempts(
            streams[rank], part.origin, part.notes, i == 0
        )
        if derive is not None:
            derive(steps, i == 0)
        kept[rank] = steps
        if i == 0:
            part.restarts += restarts
            part.segment_starts.extend(seg)
            if dups and not redraws:
                part.notes.append(_duplicate_note(part.origin, dups, rank))
            if conflict is not None and not redraws:
                part.conflicts[conflict[0]] = _conflict(*conflict)
    chosen: dict[int, lf.Record] = {}
    shared = 0
    for rank in order:
        for s, rec in kept[rank].items():
            if s not in chosen:
                chosen[s] = rec
                continue
            shared += 1
            if "step_time_s" not in chosen[s].values and "step_time_s" in rec.values:
                chosen[s] = rec  # a lower rank's record that has no step time loses
    if shared:
        part.notes.append(_shared_note(part.origin, order))
    return chosen


def _attempts(
    stream: list[lf.Record], origin: str, notes: list[str], report: bool
) -> tuple[dict[int, lf.Record], int, list[int], int, tuple[int, float, float] | None]:
    """Keep the last attempt of a stream whose step numbers go back; count repeats, and name
    the first repeat whose step time differs (step, earlier time, later time)."""
    kept: dict[int, lf.Record] = {}
    restarts = dups = 0
    conflict = None
    seg: list[int] = []
    prev: int | None = None
    for rec in stream:
        s = rec.step
        assert s is not None
        if prev is not None and s < prev:
            restarts += 1
            for old in [k for k in kept if k >= s]:
                del kept[old]
            seg = [x for x in seg if x < s] + [s]
            if report:
                notes.append(_restart_note(origin, s, prev))
        elif s == prev:
            dups += 1
            a, b = kept[s].values.get("step_time_s"), rec.values.get("step_time_s")
            if conflict is None and _differ(a, b):
                conflict = (s, a, b)  # type: ignore[assignment]
        kept[s] = rec
        rec.values["_attempt"] = restarts
        prev = s
    first = min(kept) if kept else 0
    return kept, restarts, [x for x in seg if x > first], dups, conflict
