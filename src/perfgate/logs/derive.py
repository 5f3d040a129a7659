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
        elif (
            prev is not None
            and prev.time is not None
            and rec.time is not None
            and prev.values.get("_attempt") == v.get("_attempt")
        ):
            # Wall time between two log lines over the steps between them: the interval
            # TorchTitan's own tps is averaged over. Rounded to 1 us: the stamps have 1 ms
            # resolution, the rest is float noise.
            v["step_time_s"] = round((rec.time - prev.time) / (s - (prev.step or 0)), 6)
            how = "log timestamps between consecutive logged steps"
        else:
            missing += 1
        prev = rec
    return how, missing


def automodel_step_times(
    kept: dict[int, lf.Record], tokens_per_step: float, num_gpus: int | None
) -> None:
    """Automodel train_ft: step time = tokens_per_step / tps (global, non-padding tokens/s)."""
    for rec in kept.values():
        v = rec.values
        tps = v.get("tokens_per_s")
        if tps:
            v["step_time_s"] = tokens_per_step / tps
            if num_gpus:
                v["tokens_per_s_per_gpu"] = tps / num_gpus
            else:
                # Automodel's "/gpu" divides by dp*cp only: per GPU when tp = pp = 1.
                v["tokens_per_s_per_gpu"] = v["tokens_per_s_per_dp_rank"]


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
