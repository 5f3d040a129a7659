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
from perfgate.logs.collect import MAX_RANK_STREAMS, choose, collect
from perfgate.logs.formats import Derive, rank_key
from perfgate.logs.series import Step

_STEP_FIELDS = (
    "tflops_per_gpu",
    "tokens_per_s_per_gpu",
    "mem_allocated_gib",
    "mem_peak_gib",
    "loss",
    "grad_norm",
    "mem_reserved_gib",
    "mfu",
)


@dataclass
class Part:
    """What one file (or text) yielded, before chaining."""

    origin: str
    format: str | None
    steps: list[Step] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    restarts: int = 0
    segment_starts: list[int] = field(default_factory=list)
    nan_iterations: dict[int, float] = field(default_factory=dict)
    reported: dict[str, float] = field(default_factory=dict)
    problem: str | None = None  # why records were found but no step time could be had
    min_rel_se: float = 0.0  # see StepSeries.min_rel_se


def parse_lines(
    lines: Iterable[str], origin: str, tokens_per_step: float | None, num_gpus: int | None
) -> Part:
    """Parse one file's candidate lines into a Part."""
    collected = collect(lines)
    by_kind = collected.by_kind
    fmt = choose(by_kind)
    part = Part(origin, fmt.name if fmt else None)
    for kind in lf.REPORTED_KINDS:
        for rec in by_kind[kind]:
            part.reported.update(rec.values)
    if fmt is None:
        return part
    records = fmt.records(by_kind, part)
    derive = fmt.deriver(part, tokens_per_step, num_gpus) if fmt.deriver else None
    chosen = _resolve(records, part, redraws=fmt.redraws, derive=derive)
    skipped = set().union(*collected.skipped_ranks.values())
    if skipped:
        part.notes.append(
            f"{origin}: {len(skipped)} more ranks logged step lines; only the "
            f"{MAX_RANK_STREAMS} lowest ranks' lines were read (the lowest rank wins)"
        )
    side = [step_values(by_kind) for step_values in lf.STEP_VALUES]
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
        kwargs = {k: values[k] for k in _STEP_FIELDS if k in values}
        part.steps.append(Step(step=s, step_time_s=values["step_time_s"], rank=rec.rank, **kwargs))
    if not part.steps and part.problem is None:
        part.problem = (
            f"{len(chosen)} {fmt.name} step lines found but none carries a step time "
            "(e.g. NeMo 2 without its timing callback)"
        )
    return part


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
        steps, restarts, seg, dups = _attempts(streams[rank], part.origin, part.notes, i == 0)
        if derive is not None:
            derive(steps, i == 0)
        kept[rank] = steps
        if i == 0:
            part.restarts += restarts
            part.segment_starts.extend(seg)
            if dups and not redraws:
                who = "without rank labels" if rank is None else f"by rank {rank}"
                part.notes.append(
                    f"{part.origin}: {dups} step records repeated {who} (duplicate prints); "
                    "kept the last copy of each"
                )
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
        labels = [r for r in order if r is not None]
        part.notes.append(
            f"{part.origin}: {len(order)} ranks logged the same steps (ranks {labels[0]}..."
            f"{labels[-1]}); kept the lowest rank's record for each step"
            if labels
            else f"{part.origin}: several streams logged the same steps; kept the first"
        )
    return chosen


def _attempts(
    stream: list[lf.Record], origin: str, notes: list[str], report: bool
) -> tuple[dict[int, lf.Record], int, list[int], int]:
    """Keep the last attempt of a stream whose step numbers go back; count repeats."""
    kept: dict[int, lf.Record] = {}
    restarts = dups = 0
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
                notes.append(
                    f"{origin}: steps {s}..{prev} were logged again (a requeued or restarted "
                    f"attempt in the same file); kept the last attempt from step {s} on"
                )
        elif s == prev:
            dups += 1
        kept[s] = rec
        rec.values["_attempt"] = restarts
        prev = s
    first = min(kept) if kept else 0
    return kept, restarts, [x for x in seg if x > first], dups
