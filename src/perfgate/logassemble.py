"""Records of perfgate.logformats -> one StepSeries: formats, ranks, attempts, pairing, chaining.

The rules are listed in perfgate.logs' module doc; every time one of them changes the data a
note says so, so a report can show how the numbers were read.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from perfgate import logformats as lf
from perfgate.errors import LogParseError
from perfgate.logs import Step, StepSeries, log_interval_of, renumber

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
_MEM_FIELDS = ("mem_allocated_gib", "mem_peak_gib", "mem_reserved_gib")


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


def collect(lines: Iterable[str]) -> dict[str, list[lf.Record]]:
    """All records of the lines, by kind, in file order."""
    by_kind: dict[str, list[lf.Record]] = defaultdict(list)
    seq = 0
    for line in lines:
        for rec in lf.extract(line):
            rec.seq = seq
            seq += 1
            by_kind[rec.kind].append(rec)
    return by_kind


def detect(lines: Iterable[str]) -> str | None:
    """The format of the lines' step records, or None when there are none."""
    return _choose(collect(lines))


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
    by_kind = collect(lines)
    fmt = _choose(by_kind)
    part = Part(origin, fmt)
    for rec in by_kind[lf.AM_SUMMARY]:
        part.reported.update(rec.values)
    if fmt is None:
        return part
    if fmt in ("megatron", "megatron_bridge"):
        records = _pair_step_time(by_kind[lf.MEGATRON], by_kind[lf.STEP_TIME], part)
    elif fmt == "automodel_benchmark":
        records = _number_benchmark(by_kind, part)
    else:
        kind = {"nemo2": lf.NEMO2, "nemo_delta_timing": lf.NEMO_DELTA, "nemo1_tqdm": lf.TQDM}
        records = by_kind[kind.get(fmt, fmt)]
    chosen = _resolve(records, part, redraws=fmt == "nemo1_tqdm")
    if fmt == "torchtitan":
        _titan_step_times(chosen, part, tokens_per_step, num_gpus)
    elif fmt == "automodel":
        _automodel_step_times(chosen, part, tokens_per_step, num_gpus)
    memory = _memory_by_step(by_kind[lf.MEMORY])
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
    return part


def _resolve(records: list[lf.Record], part: Part, redraws: bool) -> dict[int, lf.Record]:
    """One record per step: per-rank streams, last attempt within a stream, lowest rank wins."""
    streams: dict[int | None, list[lf.Record]] = defaultdict(list)
    for rec in records:
        if rec.step is not None:
            streams[rec.rank].append(rec)
    kept: dict[int | None, dict[int, lf.Record]] = {}
    order = sorted(streams, key=lambda r: -1 if r is None else r)
    for i, rank in enumerate(order):
        steps, restarts, seg, dups = _attempts(streams[rank], part.origin, part.notes, i == 0)
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
            if s in chosen:
                shared += 1
            else:
                chosen[s] = rec
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


def _pair_step_time(
    iterations: list[lf.Record], step_times: list[lf.Record], part: Part
) -> list[lf.Record]:
    """Megatron-Bridge: give each `Step Time` line the step of its iteration line.

    Rank 0 prints `Step Time`, the last rank the iteration line, once per logged step each, in
    either order and sometimes buffered; the k-th of one belongs with the k-th of the other.
    The iteration line's ms value is kept (finer than Step Time's 10 ms); Step Time supplies
    TFLOP/s (and memory) when the iteration line lacks them.
    """
    if not step_times:
        return iterations
    first_rank = min((r.rank for r in step_times), key=lambda r: -1 if r is None else r)
    own = [r for r in step_times if r.rank == first_rank]
    if len(own) < len(step_times):
        part.notes.append(
            f"{part.origin}: `Step Time` lines from several ranks; used rank {first_rank}'s"
        )
    its = [r for r in iterations if r.rank == _lowest(iterations)] if iterations else []
    if not its:
        for k, rec in enumerate(own):
            rec.step = k
        part.notes.append(
            f"{part.origin}: `Step Time` lines carry no iteration numbers; numbered 0..."
            f"{len(own) - 1} in order of appearance"
        )
        return own
    interval = log_interval_of([r.step for r in its if r.step is not None])
    n_its = len(its)
    disagree = 0
    for k, st in enumerate(own):
        if k < n_its:
            it = its[k]
            st.step = it.step
            ms_s, st_s = it.values["step_time_s"], st.values["step_time_s"]
            if abs(ms_s - st_s) > 0.006 + 1e-3 * ms_s:
                disagree += 1
            for key in ("tflops_per_gpu", "mem_allocated_gib"):
                if key in st.values:
                    it.values.setdefault(key, st.values[key])
        else:
            # Step Time printed, its iteration line not (log cut between the two prints).
            last = its[-1].step if its[-1].step is not None else -1
            st.step = last + interval
            its.append(st)
            part.notes.append(
                f"{part.origin}: `Step Time` line without its iteration line kept as step "
                f"{st.step} (10 ms resolution)"
            )
    if disagree:
        part.notes.append(
            f"{part.origin}: {disagree} `Step Time` values differ from their iteration line's "
            "by more than rounding; the pairing by order may be off there"
        )
    return its + [r for r in iterations if r.rank != _lowest(iterations)]


def _lowest(records: list[lf.Record]) -> int | None:
    return min((r.rank for r in records), key=lambda r: -1 if r is None else r)


def _number_benchmark(by_kind: dict[str, list[lf.Record]], part: Part) -> list[lf.Record]:
    """Automodel benchmark: `Max iter time` takes the step of the last `Iteration i` line."""
    events = sorted(
        by_kind[lf.AM_ITER] + by_kind[lf.AM_TIME] + by_kind[lf.AM_MFU],
        key=lambda r: r.seq,
    )
    out: list[lf.Record] = []
    current: int | None = None
    extra: dict[int, dict[str, float]] = defaultdict(dict)
    for rec in events:
        if rec.kind == lf.AM_ITER:
            current = rec.step
            extra[rec.step or 0].update(rec.values)
        elif rec.kind == lf.AM_TIME:
            taken = {r.step for r in out}
            rec.step = current if current is not None and current not in taken else len(out)
            out.append(rec)
        elif out:
            out[-1].values.update(rec.values)
    for rec in out:
        for key, val in extra.get(rec.step or 0, {}).items():
            rec.values.setdefault(key, val)
    return out


def _titan_step_times(
    chosen: dict[int, lf.Record], part: Part, tokens_per_step: float | None, num_gpus: int | None
) -> None:
    """TorchTitan logs tokens/s per GPU, no step time: derive it, saying how."""
    how = None
    dropped = 0
    prev: lf.Record | None = None
    for s in sorted(chosen):
        v = chosen[s].values
        if "step_time_s" in v:
            how = how or "logged elapsed_time_per_step"
        elif tokens_per_step and num_gpus and v.get("tokens_per_s_per_gpu"):
            v["step_time_s"] = tokens_per_step / num_gpus / v["tokens_per_s_per_gpu"]
            how = f"tokens_per_step / num_gpus / tps ({tokens_per_step:g} / {num_gpus})"
        elif (
            prev is not None
            and prev.time is not None
            and chosen[s].time is not None
            and prev.values.get("_attempt") == v.get("_attempt")
        ):
            # Wall time between two log lines over the steps between them: the interval
            # TorchTitan's own tps is computed over (millisecond timestamps).
            # Rounded to 1 us: the stamps have 1 ms resolution, the rest is float noise.
            v["step_time_s"] = round((chosen[s].time - prev.time) / (s - (prev.step or 0)), 6)
            how = "log timestamps between consecutive logged steps"
        else:
            dropped += 1
        prev = chosen[s]
    if how:
        part.notes.append(f"{part.origin}: TorchTitan step times derived from {how}")
    if dropped and how:
        part.notes.append(
            f"{part.origin}: {dropped} logged steps had no earlier timestamp in the same "
            "attempt to measure from; dropped"
        )
    if how is None:
        part.problem = (
            "TorchTitan lines log tps but no step time and no usable timestamps; "
            "pass tokens_per_step and num_gpus (--tokens-per-step, --num-gpus) to derive it"
        )


def _automodel_step_times(
    chosen: dict[int, lf.Record], part: Part, tokens_per_step: float | None, num_gpus: int | None
) -> None:
    """Automodel train_ft logs global tps (non-padding tokens / step wall time), no step time."""
    if not tokens_per_step:
        part.problem = (
            "Automodel lines log tps but no step time; pass tokens_per_step "
            "(the global tokens per step Automodel counts, e.g. gbs * seq_len) to derive it"
        )
        return
    for rec in chosen.values():
        v = rec.values
        tps = v.get("tokens_per_s")
        if tps:
            v["step_time_s"] = tokens_per_step / tps
            if num_gpus:
                v["tokens_per_s_per_gpu"] = tps / num_gpus
            else:
                # Automodel's "/gpu" divides by dp*cp only: per GPU when tp = pp = 1.
                v["tokens_per_s_per_gpu"] = v["tokens_per_s_per_dp_rank"]
    part.notes.append(
        f"{part.origin}: Automodel step times derived as tokens_per_step / tps "
        f"({tokens_per_step:g} tokens per step)"
    )


def _memory_by_step(records: list[lf.Record]) -> dict[int, dict[str, float]]:
    """Megatron memory reports by step: the last per rank, then the maximum over ranks."""
    last: dict[tuple[int | None, int], dict[str, float]] = {}
    for rec in records:
        if rec.step is not None:
            last[(rec.rank, rec.step)] = rec.values
    out: dict[int, dict[str, float]] = defaultdict(dict)
    for (_, step), values in last.items():
        for key in _MEM_FIELDS:
            if key in values:
                out[step][key] = max(values[key], out[step].get(key, values[key]))
    return out


def chain(parts: Sequence[Part]) -> StepSeries:
    """Chain the parts of one run in order into a StepSeries, or raise LogParseError."""
    origins = [p.origin for p in parts]
    formats = {p.format for p in parts if p.steps}
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
            n = int(nan_iterations[s.step])
            return f"{n} NaN iteration(s) reported by Megatron at step {s.step}"
    return None


def _nan_or_inf(x: float) -> str:
    return "NaN" if x != x else "infinite"
