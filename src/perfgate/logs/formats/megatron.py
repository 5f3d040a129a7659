"""Megatron-LM and Megatron-Bridge lines: `iteration N/ M | key: value | ...`, Bridge's
`Step Time : X.XXs` (no step number), and the `(after N iterations) memory (GB)` reports.

Two formats from one family: a log with `Step Time` lines is "megatron_bridge" (llmb/dgxc logs
of NeMo >= 25.09), one with iteration lines alone "megatron". Verbatim examples:
tests/data/reference/log_formats.md.
"""

from __future__ import annotations

import re
from collections import defaultdict

from perfgate.logs.formats.base import (
    NUM,
    ByKind,
    Dense,
    Family,
    LogFormat,
    PartReport,
    Record,
    Shape,
    Span,
    integer,
    rank_key,
)
from perfgate.logs.formats.fields import GIB, pipe_fields, put, put_dense
from perfgate.logs.series import log_interval_of

MEGATRON = "megatron"  # Megatron-LM / Megatron-Bridge `iteration N/ M | ...` line
STEP_TIME = "step_time"  # Megatron-Bridge `Step Time : X.XXs ...` line (no step number)
MEMORY = "memory"  # Megatron `[Rank r] (after N iterations) memory (GB|MB) | ...` line

_ITERATION = re.compile(r"iteration\s+(\d+)/\s*(\d+)\s*\|")
_STEP_TIME = re.compile(r"(?:\[Rank (\d{1,6})\]\s*)?Step Time\s*:\s*(" + NUM + r")\s*s")
# 2020 Megatron-LM printed `after 100 iterations memory (MB) | ... | max cached: ...`.
_MEMORY = re.compile(r"(?:\[Rank (\d{1,6})\]\s*)?\(?after (\d+) iterations\)? memory \((GB|MB)\)")
_GPU_UTIL = re.compile(r"\s*GPU utilization:\s*(" + NUM + r")\s*(?:MODEL_)?TFLOP/s/GPU")
# Megatron-LM 2019-2020 (pretrain_gpt2.py): `| learning rate 1.210E-04 | lm loss 1.112287E-01 |`.
_LM_LOSS_NO_COLON = re.compile(r"\|\s*lm loss (" + NUM + r")\s*\|")

_GB = 1e9  # Megatron "memory (GB)" and mem-*-gigabytes are bytes / 1e9
_MB = float(1 << 20)  # Megatron's older "memory (MB)" is bytes / 2**20
_GIB_PER_GB = GIB / _GB  # divide a GB figure by this to get GiB
_GIB_PER_MB = GIB / _MB
_MEM_FIELDS = ("mem_allocated_gib", "mem_peak_gib", "mem_reserved_gib")


def _step_of(groups: tuple[str | None, ...], read: dict[str, float]) -> int:
    return integer(groups[0] or "0") - 1  # Megatron numbers iterations from 1 (completed steps)


def _steps_of(anchor: list[list[str]], read: dict[str, list[float]]) -> list[int]:
    return [integer(s) - 1 for s in anchor[0]]


DENSE = Dense(
    values=(
        ("step_time_s", ("elapsed time per iteration (ms)",), 1000.0),
        ("tflops_per_gpu", ("throughput per GPU (TFLOP/s/GPU)", "TFLOPs"), 1.0),
        # GPT models report `lm loss`; others (DiT, world models) their loss dict's `loss`.
        ("loss", ("lm loss", "loss"), 1.0),
        ("grad_norm", ("grad norm",), 1.0),
        ("nan_iterations", ("number of nan iterations",), 1.0),
    ),
    step_of=_step_of,
    steps_of=_steps_of,
    fields_at=-1,
)


def _iteration(span: Span) -> Record | None:
    line, end, stop = span.line, span.end, span.stop
    f = pipe_fields(line[end - 1 : stop])
    if f.get("elapsed time per iteration (ms)") is None:
        return None
    v: dict[str, float] = {}
    put_dense(v, f, DENSE)
    if "loss" not in v:
        old = _LM_LOSS_NO_COLON.search(line, end - 1, stop)
        put(v, "loss", old.group(1) if old else None)
    return Record(MEGATRON, _step_of(span.match.groups(), {}), v)


def _step_time(span: Span) -> Record:
    m = span.match
    text = span.line[span.end : span.stop]
    v: dict[str, float] = {"step_time_s": float(m.group(2))}
    util = _GPU_UTIL.match(text)
    if util:
        v["tflops_per_gpu"] = float(util.group(1))
    f = pipe_fields(text)
    put(v, "mem_allocated_gib", f.get("mem-allocated-gigabytes"), _GIB_PER_GB)
    rank = int(m.group(1)) if m.group(1) else None
    return Record(STEP_TIME, None, v, rank=rank)


def _memory(span: Span) -> Record:
    m = span.match
    f = pipe_fields(span.line[span.end : span.stop])
    v: dict[str, float] = {}
    if m.group(3) == "GB":
        put(v, "mem_allocated_gib", f.get("mem-allocated-gigabytes"), _GIB_PER_GB)
        put(v, "mem_peak_gib", f.get("mem-max-allocated-gigabytes"), _GIB_PER_GB)
        put(v, "mem_reserved_gib", f.get("mem-max-reserved-gigabytes"), _GIB_PER_GB)
    else:
        put(v, "mem_allocated_gib", f.get("allocated"), _GIB_PER_MB)
        put(v, "mem_peak_gib", f.get("max allocated"), _GIB_PER_MB)
        put(v, "mem_reserved_gib", f.get("max reserved") or f.get("max cached"), _GIB_PER_MB)
    rank = int(m.group(1)) if m.group(1) else None
    return Record(MEMORY, integer(m.group(2)) - 1, v, rank=rank)


def pair_step_time(
    iterations: list[Record], step_times: list[Record], origin: str, notes: list[str]
) -> list[Record]:
    """Megatron-Bridge: give each `Step Time` line the step of its iteration line.

    Rank 0 prints `Step Time`, the last rank the iteration line, once per logged step each, in
    either order and sometimes buffered; the k-th of one belongs with the k-th of the other.
    The iteration line's ms value is kept (finer than Step Time's 10 ms); Step Time supplies
    TFLOP/s (and memory) when the iteration line lacks them.
    """
    if not step_times:
        return iterations
    st_rank = min((r.rank for r in step_times), key=rank_key)
    own = [r for r in step_times if r.rank == st_rank]
    if len(own) < len(step_times):
        notes.append(f"{origin}: `Step Time` lines from several ranks; used rank {st_rank}'s")
    if not iterations:
        for k, rec in enumerate(own):
            rec.step = k
        notes.append(
            f"{origin}: `Step Time` lines carry no iteration numbers; numbered 0..."
            f"{len(own) - 1} in order of appearance"
        )
        return own
    it_rank = min((r.rank for r in iterations), key=rank_key)
    its = [r for r in iterations if r.rank == it_rank]
    interval = log_interval_of([r.step for r in its if r.step is not None])
    n_its = len(its)
    disagree = 0
    for k, st in enumerate(own):
        if k < n_its:
            it = its[k]
            st.step = it.step
            ms_s, st_s = it.values.get("step_time_s"), st.values.get("step_time_s")
            if ms_s is None and st_s is not None:  # a damaged iteration line: Step Time's
                it.values["step_time_s"] = st_s
            elif ms_s is not None and st_s is not None and abs(ms_s - st_s) > 0.006 + 1e-3 * ms_s:
                disagree += 1  # Step Time rounds to 10 ms
            for key in ("tflops_per_gpu", "mem_allocated_gib"):
                if key in st.values:
                    it.values.setdefault(key, st.values[key])
        else:
            # Step Time printed, its iteration line not (log cut between the two prints).
            st.step = (its[-1].step or 0) + interval
            its.append(st)
            notes.append(
                f"{origin}: `Step Time` line without its iteration line kept as step "
                f"{st.step} (10 ms resolution)"
            )
    if disagree:
        notes.append(
            f"{origin}: {disagree} `Step Time` values differ from their iteration line's by "
            "more than rounding; the pairing by order may be off there"
        )
    return its + [r for r in iterations if r.rank != it_rank]


def memory_by_step(by_kind: ByKind) -> dict[int, dict[str, float]]:
    """Megatron memory reports by step: the last per rank, then the maximum over ranks.

    Peak memory matters per GPU (the one that runs out first), hence the maximum.
    """
    last: dict[tuple[int | None, int], dict[str, float]] = {}
    for rec in by_kind[MEMORY]:
        if rec.step is not None:
            last[(rec.rank, rec.step)] = rec.values
    out: dict[int, dict[str, float]] = defaultdict(dict)
    for (_, step), values in last.items():
        for key in _MEM_FIELDS:
            if key in values:
                out[step][key] = max(values[key], out[step].get(key, values[key]))
    return out


def _paired(by_kind: ByKind, part: PartReport) -> list[Record]:
    return pair_step_time(by_kind[MEGATRON], by_kind[STEP_TIME], part.origin, part.notes)


def _bridge_score(by_kind: ByKind) -> int:
    """Any `Step Time` line makes a Bridge log; its steps are those of the longer list."""
    n = len(by_kind[STEP_TIME])
    return n and max(n, len(by_kind[MEGATRON]))


def _megatron_score(by_kind: ByKind) -> int:
    return 0 if by_kind[STEP_TIME] else len(by_kind[MEGATRON])


FAMILY = Family(
    markers=(b"teration", b"Step Time"),
    shapes=(
        Shape("iteration", MEGATRON, _ITERATION, _iteration, all_ranks=True, dense=DENSE),
        Shape("Step Time", STEP_TIME, _STEP_TIME, _step_time),
        Shape("iteration", MEMORY, _MEMORY, _memory),
    ),
    formats=(
        LogFormat("megatron_bridge", score=_bridge_score, records=_paired),
        LogFormat("megatron", score=_megatron_score, records=_paired),
    ),
    step_values=memory_by_step,
)
