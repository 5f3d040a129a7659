"""Records of perfgate.logs.formats -> one StepSeries: formats, ranks, attempts, pairing, chaining.

The rules are listed in perfgate.logs' module doc; every time one of them changes the data a
note says so, so a report can show how the numbers were read.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from perfgate.errors import LogParseError
from perfgate.logs import formats as lf
from perfgate.logs.derive import (
    automodel_step_times,
    memory_by_step,
    number_benchmark,
    pair_step_time,
    rank_key,
    titan_step_times,
)
from perfgate.logs.series import Step, StepSeries, log_interval_of, renumber

# detect_format names, in the order that breaks a tie in record counts.
FORMATS = (
    "megatron_bridge",
    "megatron",
    "nemo2",
    "nemo_delta_timing",
    "nemo1_tqdm",
    "automodel",
    "automodel_benchmark",
    "torchtitan",
)
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


# Kinds every rank may print (all-rank logs): only the lowest MAX_RANK_STREAMS ranks' records
# are kept, so a 1000-rank log costs no more memory or time than an 8-rank one. The lowest
# rank wins each step anyway; the others matter only if all of those lack the step.
MAX_RANK_STREAMS = 8
_CAPPED = {lf.NEMO2, lf.NEMO_DELTA, lf.TQDM, lf.MEGATRON, lf.AUTOMODEL, lf.TITAN}


@dataclass
class Collected:
    """The records of one log by kind, in file order, and the ranks whose records were skipped."""

    by_kind: dict[str, list[lf.Record]]
    skipped_ranks: dict[str, set[int | None]]


def collect(lines: Iterable[str]) -> Collected:
    """All records of the lines, by kind, in file order (all-rank kinds: lowest ranks only).

    When lines is a LineScanner, its marker search is narrowed to the kinds found so far: a
    log holds one format, and fewer byte searches make multi-GB all-rank logs faster.
    """
    by_kind: dict[str, list[lf.Record]] = defaultdict(list)
    streams: dict[str, dict[int | None, list[lf.Record]]] = defaultdict(dict)
    skipped: dict[str, set[int | None]] = defaultdict(set)

    def keep(kind: str, rank: int | None) -> bool:
        if kind not in _CAPPED:
            return True
        kept = streams[kind]
        if rank in kept:
            return True
        if len(kept) >= MAX_RANK_STREAMS:
            worst = max(kept, key=rank_key)
            if rank_key(rank) > rank_key(worst):
                skipped[kind].add(rank)
                return False
            del kept[worst]
            skipped[kind].add(worst)
        kept[rank] = []
        return True

    narrow = getattr(lines, "narrow", None)
    seen: set[str] = set()
    seq = 0
    for line in lines:
        for rec in lf.extract(line, keep):
            rec.seq = seq
            seq += 1
            if rec.kind not in seen:
                seen.add(rec.kind)
                if narrow is not None:
                    narrow(lf.markers_for(seen))
            if rec.kind in _CAPPED:
                streams[rec.kind][rec.rank].append(rec)
            else:
                by_kind[rec.kind].append(rec)
    for kind, per_rank in streams.items():
        by_kind[kind] = sorted((r for recs in per_rank.values() for r in recs), key=_seq)
    return Collected(by_kind, skipped)


def _seq(rec: lf.Record) -> int:
    return rec.seq


def detect(lines: Iterable[str]) -> str | None:
    """The format of the lines' step records, or None when there are none."""
    return _choose(collect(lines).by_kind)


def _choose(by_kind: dict[str, list[lf.Record]]) -> str | None:
    counts = {
        "megatron_bridge": len(by_kind[lf.STEP_TIME])
        and max(len(by_kind[lf.STEP_TIME]), len(by_kind[lf.MEGATRON])),
        "megatron": 0 if by_kind[lf.STEP_TIME] else len(by_kind[lf.MEGATRON]),
        "nemo2": len(by_kind[lf.NEMO2]),
        "nemo_delta_timing": len(by_kind[lf.NEMO_DELTA]),
        "nemo1_tqdm": len({r.step for r in by_kind[lf.TQDM]}),
        "automodel": len(by_kind[lf.AUTOMODEL]),
        "automodel_benchmark": len(by_kind[lf.AM_TIME]),
        "torchtitan": len(by_kind[lf.TITAN]),
    }
    best = max(counts.values())
    if best == 0:
        return None
    return next(f for f in FORMATS if counts[f] == best)


def parse_lines(
    lines: Iterable[str], origin: str, tokens_per_step: float | None, num_gpus: int | None
) -> Part:
    """Parse one file's candidate lines into a Part."""
    collected = collect(lines)
    by_kind = collected.by_kind
    fmt = _choose(by_kind)
    part = Part(origin, fmt)
    for rec in by_kind[lf.AM_SUMMARY]:
        part.reported.update(rec.values)
    if fmt is None:
        return part
    derive = None
    if fmt in ("megatron", "megatron_bridge"):
        records = pair_step_time(by_kind[lf.MEGATRON], by_kind[lf.STEP_TIME], origin, part.notes)
    elif fmt == "automodel_benchmark":
        events = by_kind[lf.AM_ITER] + by_kind[lf.AM_TIME] + by_kind[lf.AM_MFU]
        records = number_benchmark(sorted(events, key=lambda r: r.seq))
    else:
        kind = {"nemo2": lf.NEMO2, "nemo_delta_timing": lf.NEMO_DELTA, "nemo1_tqdm": lf.TQDM}
        records = by_kind[kind.get(fmt, fmt)]
        if fmt == "torchtitan":
            derive = _titan(part, tokens_per_step, num_gpus)
        elif fmt == "automodel":
            derive = _automodel(part, tokens_per_step, num_gpus)
    chosen = _resolve(records, part, redraws=fmt == "nemo1_tqdm", derive=derive)
    skipped = set().union(*collected.skipped_ranks.values())
    if skipped:
        part.notes.append(
            f"{origin}: {len(skipped)} more ranks logged step lines; only the "
            f"{MAX_RANK_STREAMS} lowest ranks' lines were read (the lowest rank wins)"
        )
    memory = memory_by_step(by_kind[lf.MEMORY])
    for s in sorted(chosen):
        rec = chosen[s]
        values = rec.values
        if "step_time_s" not in values:
            continue
        for key, val in memory.get(s, {}).items():
            values.setdefault(key, val)
        if values.get("nan_iterations"):
            part.nan_iterations[s] = values["nan_iterations"]
        kwargs = {k: values[k] for k in _STEP_FIELDS if k in values}
        part.steps.append(Step(step=s, step_time_s=values["step_time_s"], rank=rec.rank, **kwargs))
    if not part.steps and part.problem is None:
        part.problem = (
            f"{len(chosen)} {fmt} step lines found but none carries a step time "
            "(e.g. NeMo 2 without its timing callback)"
        )
    return part


Derive = Callable[[dict[int, lf.Record], bool], None]


def _titan(part: Part, tokens_per_step: float | None, num_gpus: int | None) -> Derive:
    def derive(kept: dict[int, lf.Record], first_stream: bool) -> None:
        how, missing = titan_step_times(kept, tokens_per_step, num_gpus)
        if not first_stream:
            return
        if how is None:
            part.problem = (
                "TorchTitan lines log tps but no step time and no usable timestamps; pass "
                "tokens_per_step and num_gpus (--tokens-per-step, --num-gpus) to derive it"
            )
            return
        part.notes.append(f"{part.origin}: TorchTitan step times derived from {how}")
        if missing:
            part.notes.append(
                f"{part.origin}: {missing} logged steps had no earlier timestamp in the same "
                "attempt to measure from; dropped"
            )

    return derive


def _automodel(part: Part, tokens_per_step: float | None, num_gpus: int | None) -> Derive:
    def derive(kept: dict[int, lf.Record], first_stream: bool) -> None:
        how, missing = automodel_step_times(kept, tokens_per_step, num_gpus)
        if not first_stream:
            return
        if not how:
            part.problem = (
                "Automodel lines log tps but no step time, and no two timestamped lines to "
                "measure between; tokens_per_step / tps (--tokens-per-step) is used only when "
                "num_label_tokens equals it (tps counts each step's own non-padding tokens)"
            )
            return
        part.notes.append(f"{part.origin}: Automodel step times derived from {'; '.join(how)}")
        stamps = [r.time for r in kept.values() if r.time is not None]
        if "log timestamps" in " ".join(how) and all(t == int(t) for t in stamps):
            part.notes.append(
                f"{part.origin}: the log's timestamps have 1 s resolution; each step time is "
                "within 1 s, their sum over a window exact to 1 s"
            )
        if missing:
            part.notes.append(
                f"{part.origin}: {missing} logged steps had no earlier timestamp in the same "
                "attempt to measure from; dropped"
            )

    return derive


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


def chain(parts: Sequence[Part]) -> StepSeries:
    """Chain the parts of one run in order into a StepSeries, or raise LogParseError."""
    origins = [p.origin for p in parts]
    formats = {p.format for p in parts if p.steps and p.format}
    if not formats:
        problems = [f"{p.origin}: {p.problem}" for p in parts if p.problem]
        if problems:
            raise LogParseError("; ".join(problems))
        raise LogParseError(
            f"{', '.join(origins)}: no step-time lines found (tried formats: {', '.join(FORMATS)})"
        )
    if formats == {"megatron", "megatron_bridge"}:
        formats = {"megatron_bridge"}
    if len(formats) > 1:
        desc = ", ".join(f"{p.origin} is {p.format}" for p in parts if p.steps)
        raise LogParseError(f"the files of one run must share a log format: {desc}")
    steps: list[Step] = []
    notes: list[str] = []
    seg: list[int] = []
    nan_its: dict[int, float] = {}
    reported: dict[str, float] = {}
    restarts = 0
    for part in parts:
        notes.extend(part.notes)
        reported.update(part.reported)
        if not part.steps:
            notes.append(f"{part.origin}: no step records ({part.problem or 'none found'})")
            continue
        offset = 0
        if steps:
            restarts += 1
            first, last = part.steps[0].step, steps[-1].step
            if first <= last:
                interval = log_interval_of([s.step for s in part.steps])
                offset = last + interval - first
                notes.append(
                    f"{part.origin}: step numbering restarts at {first}; continued after "
                    f"step {last} of the previous file (+{offset})"
                )
            seg.append(first + offset)
        restarts += part.restarts
        steps.extend(renumber(part.steps, offset))
        seg.extend(s + offset for s in part.segment_starts)
        nan_its.update({s + offset: n for s, n in part.nan_iterations.items()})
    return StepSeries(
        format=formats.pop(),
        steps=tuple(steps),
        source_files=tuple(origins),
        log_interval=log_interval_of([s.step for s in steps]),
        restarts=restarts,
        invalid_reason=_invalid_reason(steps, nan_its),
        notes=tuple(notes),
        segment_starts=tuple(seg),
        reported=reported,
    )


def _invalid_reason(steps: list[Step], nan_iterations: dict[int, float]) -> str | None:
    """The first reason, in step order, that the run cannot be judged."""
    for s in steps:
        if not math.isfinite(s.step_time_s):
            return f"{_nan_or_inf(s.step_time_s)} step time at step {s.step}"
        if s.grad_norm is not None and not math.isfinite(s.grad_norm):
            return f"{_nan_or_inf(s.grad_norm)} grad norm at step {s.step}"
        if s.loss is not None and not math.isfinite(s.loss):
            return f"{_nan_or_inf(s.loss)} loss at step {s.step}"
        if nan_iterations.get(s.step):
            n = nan_iterations[s.step]  # a corrupt count may be inf or NaN: no int() of it
            count = int(n) if math.isfinite(n) else n
            return f"{count} NaN iteration(s) reported by Megatron at step {s.step}"
    return None


def _nan_or_inf(x: float) -> str:
    return "NaN" if x != x else "infinite"
