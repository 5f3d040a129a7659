"""Format-specific reconstruction of step records that a log does not state outright.

Megatron-Bridge prints a step's time twice on two ranks without a common step number;
Automodel's benchmark recipe numbers iterations on a separate line; TorchTitan and Automodel
train_ft log throughput but no step time. Each function here says in a note what it did.
"""

from __future__ import annotations

from collections import defaultdict

from perfgate.logs import formats as lf
from perfgate.logs.series import log_interval_of

_MEM_FIELDS = ("mem_allocated_gib", "mem_peak_gib", "mem_reserved_gib")


def rank_key(rank: int | None) -> int:
    """Sort key of a rank label: unlabeled lines first, then rank 0, 1, ..."""
    return -1 if rank is None else rank


def pair_step_time(
    iterations: list[lf.Record], step_times: list[lf.Record], origin: str, notes: list[str]
) -> list[lf.Record]:
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


def number_benchmark(events: list[lf.Record]) -> list[lf.Record]:
    """Automodel benchmark: `Max iter time` takes the number of the `Iteration i` line before it.

    events are the Iteration, Max iter time and MFU records in file order. A `Max iter time`
    with no fresh `Iteration` line before it follows the previous one.
    """
    out: list[lf.Record] = []
    current: int | None = None
    fresh = consumed = False
    extra: dict[int, dict[str, float]] = defaultdict(dict)
    for rec in events:
        if rec.kind == lf.AM_ITER and rec.step is not None:
            # Each iteration logs `Iteration i` at its start and end; a new number, or the
            # same number after its time was taken (a rerun), opens a new one.
            if rec.step != current or consumed:
                fresh, consumed = True, False
            current = rec.step
            extra[rec.step].update(rec.values)
        elif rec.kind == lf.AM_TIME:
            if fresh and current is not None:
                rec.step = current
                consumed = True
            else:
                rec.step = (out[-1].step or 0) + 1 if out else 0
            fresh = False
            out.append(rec)
        elif rec.kind == lf.AM_MFU and out:
            out[-1].values.update(rec.values)
    for rec in out:
        for key, val in extra.get(rec.step or 0, {}).items():
            rec.values.setdefault(key, val)
    return out


def _between_stamps(prev: lf.Record | None, rec: lf.Record, step: int) -> float | None:
    """Wall time from the previous logged step's line to this one, per step, in one attempt.

    Rounded to 1 us: stamps have at most 1 ms resolution, the rest is float noise.
    """
    if (
        prev is None
        or prev.time is None
        or rec.time is None
        or prev.values.get("_attempt") != rec.values.get("_attempt")
    ):
        return None
    return round((rec.time - prev.time) / (step - (prev.step or 0)), 6)


def titan_step_times(
    kept: dict[int, lf.Record], tokens_per_step: float | None, num_gpus: int | None
) -> tuple[str | None, int]:
    """Give one rank's TorchTitan records a step time; return (how, number left without one).

    TorchTitan logs tokens/s per GPU averaged since its previous log line, no step time.
    """
    how = None
    missing = 0
    prev: lf.Record | None = None
    for s in sorted(kept):
        rec = kept[s]
        v = rec.values
        if "step_time_s" in v:
            how = how or "its logged elapsed_time_per_step"
        elif tokens_per_step and num_gpus and v.get("tokens_per_s_per_gpu"):
            v["step_time_s"] = tokens_per_step / num_gpus / v["tokens_per_s_per_gpu"]
            how = f"tokens_per_step / num_gpus / tps ({tokens_per_step:g} / {num_gpus})"
        elif (dt := _between_stamps(prev, rec, s)) is not None:
            # The interval TorchTitan's own tps is averaged over.
            v["step_time_s"] = dt
            how = "log timestamps between consecutive logged steps"
        else:
            missing += 1
        prev = rec
    return how, missing


def automodel_step_times(
    kept: dict[int, lf.Record], tokens_per_step: float | None, num_gpus: int | None
) -> tuple[list[str], int]:
    """Give one rank's Automodel train_ft records a step time; return (how, number left without).

    Automodel's tps is the step's non-padding tokens over its wall time, and in fine-tuning
    that token count varies from step to step (gbs * seq_len would overstate it several
    times). tokens_per_step / tps is used only where every token of the step was a label
    (num_label_tokens == tokens_per_step: packed pretraining data); elsewhere the time
    between the log lines' timestamps.
    """
    how: list[str] = []
    missing = 0
    prev: lf.Record | None = None
    for s in sorted(kept):
        rec = kept[s]
        v = rec.values
        tps = v.get("tokens_per_s")
        full = tokens_per_step and v.get("num_label_tokens") == tokens_per_step
        if tps and (full or (tokens_per_step and "num_label_tokens" not in v and not rec.time)):
            v["step_time_s"] = tokens_per_step / tps
            way = f"tokens_per_step / tps ({tokens_per_step:g} tokens per step)"
        elif (dt := _between_stamps(prev, rec, s)) is not None:
            v["step_time_s"] = dt
            way = "log timestamps between consecutive logged steps"
        else:
            missing += 1
            way = None
        if way and way not in how:
            how.append(way)
        if tps:
            # Automodel's "/gpu" divides by dp*cp only: per GPU when tp = pp = 1.
            per_dp = v["tokens_per_s_per_dp_rank"]
            v["tokens_per_s_per_gpu"] = tps / num_gpus if num_gpus else per_dp
        prev = rec
    return how, missing


def memory_by_step(records: list[lf.Record]) -> dict[int, dict[str, float]]:
    """Megatron memory reports by step: the last per rank, then the maximum over ranks.

    Peak memory matters per GPU (the one that runs out first), hence the maximum.
    """
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
