"""One physical log line -> the step records it holds, for every log format perfgate reads.

Pure stdlib (the workload imports it inside the container). Each record keeps the logger's own
step numbering converted to 0-based and its values converted to perfgate units (seconds, GiB,
fractions). Turning records into one series (ranks, restarts, pairing) is perfgate.logs' job.
Verbatim examples of every line shape: tests/data/reference/log_formats.md.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from decimal import Decimal

# Record kinds, and the format name each one implies.
NEMO2 = "nemo2"  # NeMo 2.x MegatronProgressBar / ProgressPrinter line
NEMO_DELTA = "nemo_delta_timing"  # NeMo DeltaTimingCallback `Step N: train_step_timing in s=X`
TQDM = "nemo1_tqdm"  # NeMo 1.x Lightning tqdm bar state
MEGATRON = "megatron"  # Megatron-LM / Megatron-Bridge `iteration N/ M | ...` line
STEP_TIME = "step_time"  # Megatron-Bridge `Step Time : X.XXs ...` line (no step number)
MEMORY = "memory"  # Megatron `[Rank r] (after N iterations) memory (GB|MB) | ...` line
AUTOMODEL = "automodel"  # NeMo Automodel train_ft `step N | epoch E | ... | tps X(Y/gpu)`
AM_ITER = "automodel_iteration"  # Automodel benchmark `Rank r | Iteration i ...`
AM_TIME = "automodel_iter_time"  # Automodel benchmark `Max iter time: X seconds`
AM_MFU = "automodel_mfu"  # Automodel benchmark `MFU: Y%` (follows Max iter time)
AM_SUMMARY = "automodel_summary"  # `Average iteration time: ...` / `Average MFU: ...`
TITAN = "torchtitan"  # TorchTitan `step: N  loss: ...  tps: ...`

# Byte strings of which every line holding a record contains at least one; lines without
# any are skipped before a regex runs (NCCL INFO floods are most of an all-rank log).
MARKERS: tuple[bytes, ...] = (
    b"teration",  # NeMo 2, Megatron iteration and memory lines, Automodel `Iteration`/summary
    b"Step Time",  # Megatron-Bridge
    b"train_step_timing",  # NeMo 1 tqdm, DeltaTimingCallback
    b"tps",  # Automodel train_ft, TorchTitan
    b"Max iter time",  # Automodel benchmark
    b"MFU:",  # Automodel benchmark
)
# The markers a log needs once it is known to hold records of a kind: the scan narrows to
# them after the first records (fewer byte searches over the rest of a multi-GB file).
_MARKERS_OF_KIND: dict[str, tuple[bytes, ...]] = {}


def markers_for(kinds: set[str]) -> tuple[bytes, ...]:
    """The marker strings needed to find every record of the given kinds."""
    wanted = {m for k in kinds for m in _MARKERS_OF_KIND.get(k, MARKERS)}
    return tuple(m for m in MARKERS if m in wanted)


_NUM = r"[-+]?(?:\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|nan|NaN|inf|-inf)"
_NUM_RE = re.compile(_NUM)
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
# srun -l label (`0: `, ` 0: `), torchrun --tee labels (`[default3]:`, `[rank3]:`), possibly
# behind an external timestamp (`[2025-10-17T11:32:59+08:00] `).
_TS_PREFIX = re.compile(r"\[\d{4}-\d\d-\d\d[T ][^\]]{0,40}\]\s*")
_RANK_PREFIX = re.compile(r"\s*(\d{1,6}): |\[(?:default|rank)(\d{1,6})\]:")

_NEMO2 = re.compile(r"Training epoch (\d+), iteration (\d+)/(\d+)")
_DELTA = re.compile(r"Step (\d+): train_step_timing in s=(" + _NUM + ")")
_TQDM = re.compile(r"train_step_timing in s=")
_MEGATRON = re.compile(r"iteration\s+(\d+)/\s*(\d+)\s*\|")
_STEP_TIME = re.compile(r"(?:\[Rank (\d+)\]\s*)?Step Time\s*:\s*(" + _NUM + r")\s*s")
# 2020 Megatron-LM printed `after 100 iterations memory (MB) | ... | max cached: ...`.
_MEMORY = re.compile(r"(?:\[Rank (\d+)\]\s*)?\(?after (\d+) iterations\)? memory \((GB|MB)\)")
_AUTOMODEL = re.compile(r"\bstep (\d+) \| epoch (\d+) \|")
_AM_ITER = re.compile(r"Rank (\d+) \| Iteration (\d+)\b")
_AM_TIME = re.compile(r"Max iter time: (" + _NUM + ") seconds")
_AM_MFU = re.compile(r"(?<!Average )MFU: (" + _NUM + ")%")
_AM_AVG = re.compile(
    r"Average iteration time: (" + _NUM + r") seconds"
    r"(?: \(excluding first (\d+) warmup iterations\))?"
)
_AM_AVG_MFU = re.compile(r"Average MFU: (" + _NUM + ")%")
# The lookahead leaves `loss:` to the field search (it is the first field).
_TITAN = re.compile(r"\bstep:\s*([\d,]+)\s+(?=loss:)")

# `| key: value |` fields of NeMo 2, Megatron and memory lines; the value's leading number is used.
_FIELD = re.compile(r"\|\s*([A-Za-z][^|:]*?)\s*:\s*([^|]*?)\s*(?=\||$)")
_TQDM_FIELD = re.compile(r"([A-Za-z_][\w/ ]*?)=([^,\]]*)")
# TorchTitan's `key: value` fields after `step: N` (some forks prefix est_, add units).
_TITAN_FIELD = re.compile(
    r"\b(loss|grad_norm|memory|tps|(?:est_)?tflops|(?:est_)?mfu|elapsed_time_per_step):\s*"
    r"(-?\d[\d,]*(?:\.\d*)?(?:[eE][-+]?\d+)?|nan|inf)"
)
_TITAN_KEYS = {
    "loss": "loss",
    "grad_norm": "grad_norm",
    "memory": "mem_reserved_gib",  # max_reserved_gib, in GiB
    "tps": "tokens_per_s_per_gpu",  # TorchTitan's tps is per device
    "tflops": "tflops_per_gpu",
    "est_tflops": "tflops_per_gpu",
    "mfu": "mfu",
    "est_mfu": "mfu",
    "elapsed_time_per_step": "step_time_s",
}
_AUTOMODEL_FIELDS = {
    "loss": re.compile(r"\| loss (" + _NUM + ")"),
    "grad_norm": re.compile(r"\| grad_norm (" + _NUM + ")"),
    "mem_peak_gib": re.compile(r"\| mem (" + _NUM + ") GiB"),
    "tps": re.compile(r"\| tps (" + _NUM + r")\((" + _NUM + r")/gpu\)"),
}
_GPU_UTIL = re.compile(r"\s*GPU utilization:\s*(" + _NUM + r")\s*(?:MODEL_)?TFLOP/s/GPU")
_TQDM_BAR = re.compile(r"\|\s*(\d+)/\d+\s*\[|(\d+)it\s*\[")  # `| 7/15 [` or `1it [`
# Megatron-LM 2019-2020 (pretrain_gpt2.py): `| learning rate 1.210E-04 | lm loss 1.112287E-01 |`.
_LM_LOSS_NO_COLON = re.compile(r"\|\s*lm loss (" + _NUM + r")\s*\|")
# Automodel's validation line: `[val] name "default" | step 9 | epoch 0 | loss ...`.
_AM_VAL = re.compile(r"\[val\](?: name \"[^\"]*\")? \|\s*$")
_AM_LABEL_TOKENS = re.compile(r"\| num_label_tokens (\d+)")
_AM_MEM = re.compile(r"Max Memory Allocated: (" + _NUM + ") GB")
_AM_LOSS = re.compile(r"\bloss=(" + _NUM + ")")
_LOG_TIME = re.compile(r"(\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d)(?:[,.](\d{1,6}))?")

GIB = float(1 << 30)
_GB = 1e9  # Megatron "memory (GB)" and mem-*-gigabytes are bytes / 1e9
_MB = float(1 << 20)  # Megatron's older "memory (MB)" is bytes / 2**20
_GIB_PER_GB = GIB / _GB  # divide a GB figure by this to get GiB
_GIB_PER_MB = GIB / _MB


@dataclass(slots=True)
class Record:
    """One step record as found on a line: kind, 0-based step (None: unnumbered), values."""

    kind: str
    step: int | None
    values: dict[str, float] = field(default_factory=dict)
    rank: int | None = None  # from the line's srun/torchrun label or the record's own [Rank r]
    time: float | None = None  # the line's log timestamp (POSIX seconds), where it has one
    seq: int = 0  # position among all records of the file


def number(text: str) -> float | None:
    """The leading number of a logged value (`1.249e+03`, `2e+3`, `nan`, `5,856`), else None."""
    m = _NUM_RE.match(text.strip().replace(",", ""))
    return float(m.group(0)) if m else None


def split_prefix(line: str) -> tuple[int | None, str]:
    """Strip ANSI codes; return the srun/torchrun rank label (None if unlabeled) and the line."""
    if "\x1b" in line:
        line = _ANSI.sub("", line)
    m = _RANK_PREFIX.match(line)
    if m is None:
        ts = _TS_PREFIX.match(line)
        if ts is not None:
            m = _RANK_PREFIX.match(line, ts.end())
    if m is None:
        return None, line
    return int(m.group(1) or m.group(2)), line


def extract(line: str, keep: Callable[[str, int | None], bool] | None = None) -> list[Record]:
    """Every step record on one physical line (records may be glued without a newline).

    keep(kind, rank), if given, is asked before a record is built: False skips it cheaply.
    """
    rank, line = split_prefix(line)
    anchors: list[tuple[int, int, str, re.Match[str]]] = []

    def find(kind: str, regex: re.Pattern[str]) -> None:
        for m in regex.finditer(line):
            anchors.append((m.start(), m.end(), kind, m))

    if "iteration" in line:
        find(NEMO2, _NEMO2)
        find(MEGATRON, _MEGATRON)
        find(MEMORY, _MEMORY)
        find(AM_SUMMARY, _AM_AVG)
    if "Step Time" in line:
        find(STEP_TIME, _STEP_TIME)
    if "train_step_timing in s=" in line:
        find(NEMO_DELTA, _DELTA)
        find(TQDM, _TQDM)
    if "tps" in line:
        find(AUTOMODEL, _AUTOMODEL)
        find(TITAN, _TITAN)
    if "Iteration" in line:
        find(AM_ITER, _AM_ITER)
    if "Max iter time" in line:
        find(AM_TIME, _AM_TIME)
    if "MFU:" in line:
        find(AM_MFU, _AM_MFU)
        find(AM_SUMMARY, _AM_AVG_MFU)
    if not anchors:
        return []
    anchors.sort(key=lambda a: (a[0], -a[1]))
    anchors = _drop_nested(anchors)
    records = []
    for i, (start, end, kind, m) in enumerate(anchors):
        if keep is not None and not keep(kind, rank):
            continue
        stop = anchors[i + 1][0] if i + 1 < len(anchors) else len(line)
        prev_end = anchors[i - 1][1] if i else 0
        rec = _BUILDERS[kind](m, line, start, end, stop, prev_end)
        if rec is not None and (rec.step is None or abs(rec.step) <= MAX_STEP):
            if rec.rank is None:
                rec.rank = rank
            records.append(rec)
    return records


# No training run logs a step number this large: a line that says so is corrupt, not a record
# (a 400-digit number would overflow the float arithmetic on step numbers downstream).
MAX_STEP = 10**9


def _drop_nested(
    anchors: list[tuple[int, int, str, re.Match[str]]],
) -> list[tuple[int, int, str, re.Match[str]]]:
    """Drop anchors inside an earlier one (`iteration 45/99 |` inside a NeMo 2 prefix)."""
    kept: list[tuple[int, int, str, re.Match[str]]] = []
    for a in anchors:
        if not kept or a[0] >= kept[-1][1]:
            kept.append(a)
    return kept


def _fields(text: str) -> dict[str, str]:
    """The `| key: value` fields of a record's text, values unparsed."""
    return {k: v for k, v in _FIELD.findall(text)}


def _put(values: dict[str, float], key: str, raw: str | None, per: float = 1.0) -> None:
    """values[key] = the number in raw divided by per (a unit: 1000 for ms, 2**30 for bytes)."""
    if raw is None:
        return
    x = number(raw)
    if x is None:
        return
    if per == 1000.0 and math.isfinite(x):
        # Shift the decimal point of the logged text: 1510.4 ms -> 1.5104 s, not 1.5104000000000002.
        m = _NUM_RE.match(raw.strip())
        x = float(Decimal(m.group(0)).scaleb(-3)) if m else x / per
        values[key] = x
    else:
        values[key] = x / per if per != 1.0 else x


def _nemo2(m: re.Match[str], line: str, start: int, end: int, stop: int, prev_end: int) -> Record:
    f = _fields(line[end:stop])
    v: dict[str, float] = {}
    _put(v, "step_time_s", f.get("train_step_timing in s"))
    _put(v, "tflops_per_gpu", f.get("TFLOPS_per_GPU"))
    _put(v, "tokens_per_s_per_gpu", f.get("tokens_per_sec_per_gpu"))
    _put(v, "loss", f.get("reduced_train_loss"))
    # NeMo logs torch.cuda memory counters in bytes.
    _put(v, "mem_peak_gib", f.get("max_memory_allocated") or f.get("peak_memory_usage"), GIB)
    _put(v, "mem_reserved_gib", f.get("max_memory_reserved"), GIB)
    _put(v, "mem_allocated_gib", f.get("memory_allocated"), GIB)
    # global_step is monotonic across epochs; `iteration` restarts at 0 in every epoch.
    gs = number(f["global_step"]) if "global_step" in f else None
    step = int(gs) if gs is not None and math.isfinite(gs) else int(m.group(2))
    return Record(NEMO2, step, v)


def _delta(m: re.Match[str], line: str, start: int, end: int, stop: int, prev_end: int) -> Record:
    return Record(NEMO_DELTA, int(m.group(1)), {"step_time_s": float(m.group(2))})


def _tqdm(
    m: re.Match[str], line: str, start: int, end: int, stop: int, prev_end: int
) -> Record | None:
    # The postfix of one bar state: from the `[` that opens it to the `]` that closes it.
    lo = line.rfind("[", prev_end, start)
    hi = line.find("]", end, stop)
    # A state cut before its `]` and glued to the next one ends where the next bar begins
    # (`...in s=49.50Epoch 0: :  53%|█████▎    | 8/15 [`): its fields must not mix in.
    nxt = _TQDM_BAR.search(line, end, stop)
    if nxt is not None and (hi < 0 or nxt.start() < hi):
        hi = nxt.start()
    region = line[lo + 1 if lo >= 0 else prev_end : hi if hi >= 0 else stop]
    f = {k.strip(): v for k, v in _TQDM_FIELD.findall(region)}
    v: dict[str, float] = {}
    _put(v, "step_time_s", f.get("train_step_timing in s"))
    _put(v, "loss", f.get("reduced_train_loss"))
    if "step_time_s" not in v:
        return None
    gs = number(f["global_step"]) if "global_step" in f else None
    if gs is None or not math.isfinite(gs):
        # No usable global_step in the postfix: fall back to the bar counter (`| n/total`, `n it`).
        bar = _TQDM_BAR.search(line, prev_end, start)
        if bar is None:
            return None
        gs = int(bar.group(1) or bar.group(2)) - 1
    return Record(TQDM, int(gs), v)


def _megatron(
    m: re.Match[str], line: str, start: int, end: int, stop: int, prev_end: int
) -> Record | None:
    f = _fields(line[end - 1 : stop])
    ms = f.get("elapsed time per iteration (ms)")
    if ms is None:
        return None
    v: dict[str, float] = {}
    _put(v, "step_time_s", ms, 1000.0)
    _put(v, "tflops_per_gpu", f.get("throughput per GPU (TFLOP/s/GPU)") or f.get("TFLOPs"))
    # GPT models report `lm loss`; others (DiT, world models) their loss dict's `loss`.
    _put(v, "loss", f.get("lm loss") or f.get("loss"))
    if "loss" not in v:
        old = _LM_LOSS_NO_COLON.search(line, end - 1, stop)
        _put(v, "loss", old.group(1) if old else None)
    _put(v, "grad_norm", f.get("grad norm"))
    _put(v, "nan_iterations", f.get("number of nan iterations"))
    _put(v, "skipped_iterations", f.get("number of skipped iterations"))
    # Megatron numbers iterations from 1 (the count of completed steps).
    return Record(MEGATRON, int(m.group(1)) - 1, v)


def _step_time(
    m: re.Match[str], line: str, start: int, end: int, stop: int, prev_end: int
) -> Record:
    text = line[end:stop]
    v: dict[str, float] = {"step_time_s": float(m.group(2))}
    util = _GPU_UTIL.match(text)
    if util:
        v["tflops_per_gpu"] = float(util.group(1))
    f = _fields(text)
    _put(v, "mem_allocated_gib", f.get("mem-allocated-gigabytes"), _GIB_PER_GB)
    rank = int(m.group(1)) if m.group(1) else None
    return Record(STEP_TIME, None, v, rank=rank)


def _memory(m: re.Match[str], line: str, start: int, end: int, stop: int, prev_end: int) -> Record:
    f = _fields(line[end:stop])
    v: dict[str, float] = {}
    if m.group(3) == "GB":
        _put(v, "mem_allocated_gib", f.get("mem-allocated-gigabytes"), _GIB_PER_GB)
        _put(v, "mem_peak_gib", f.get("mem-max-allocated-gigabytes"), _GIB_PER_GB)
        _put(v, "mem_reserved_gib", f.get("mem-max-reserved-gigabytes"), _GIB_PER_GB)
    else:
        _put(v, "mem_allocated_gib", f.get("allocated"), _GIB_PER_MB)
        _put(v, "mem_peak_gib", f.get("max allocated"), _GIB_PER_MB)
        _put(v, "mem_reserved_gib", f.get("max reserved") or f.get("max cached"), _GIB_PER_MB)
    rank = int(m.group(1)) if m.group(1) else None
    return Record(MEMORY, int(m.group(2)) - 1, v, rank=rank)


def _automodel(
    m: re.Match[str], line: str, start: int, end: int, stop: int, prev_end: int
) -> Record | None:
    if _AM_VAL.search(line, prev_end, start):
        return None  # a validation line (`[val] name "default" | step 9 | ...`), not a step
    text = line[start:stop]
    v: dict[str, float] = {}
    for key, regex in _AUTOMODEL_FIELDS.items():
        fm = regex.search(text)
        if fm is None:
            continue
        if key == "tps":
            v["tokens_per_s"] = float(fm.group(1))
            v["tokens_per_s_per_dp_rank"] = float(fm.group(2))
        else:
            v[key] = float(fm.group(1))
    labels = _AM_LABEL_TOKENS.search(text)
    if labels:
        v["num_label_tokens"] = float(labels.group(1))
    # train_ft's step counter is 0-based (logged before it is incremented).
    return Record(AUTOMODEL, int(m.group(1)), v, time=_log_time(line, prev_end, start))


def _am_iter(m: re.Match[str], line: str, start: int, end: int, stop: int, prev_end: int) -> Record:
    text = line[end:stop]
    v: dict[str, float] = {}
    mem = _AM_MEM.search(text)
    if mem:
        v["mem_peak_gib"] = float(mem.group(1))  # Automodel divides by 1024**3
    loss = _AM_LOSS.search(text)
    if loss:
        v["loss"] = float(loss.group(1))
    return Record(AM_ITER, int(m.group(2)), v, rank=int(m.group(1)))


def _am_time(m: re.Match[str], line: str, start: int, end: int, stop: int, prev_end: int) -> Record:
    return Record(AM_TIME, None, {"step_time_s": float(m.group(1))})


def _am_mfu(m: re.Match[str], line: str, start: int, end: int, stop: int, prev_end: int) -> Record:
    return Record(AM_MFU, None, {"mfu": _fraction(float(m.group(1)))})


def _am_summary(
    m: re.Match[str], line: str, start: int, end: int, stop: int, prev_end: int
) -> Record:
    if m.re is _AM_AVG_MFU:
        return Record(AM_SUMMARY, None, {"average_mfu": _fraction(float(m.group(1)))})
    v = {"average_step_time_s": float(m.group(1))}
    if m.group(2):
        v["warmup_steps"] = float(m.group(2))
    return Record(AM_SUMMARY, None, v)


def _titan(m: re.Match[str], line: str, start: int, end: int, stop: int, prev_end: int) -> Record:
    v: dict[str, float] = {}
    for key, raw in _TITAN_FIELD.findall(line, end, stop):
        x = float(raw.replace(",", ""))
        if x < 0:  # est_tflops / est_mfu are -1 when unknown
            continue
        v[_TITAN_KEYS[key]] = _fraction(x) if key.endswith("mfu") else x
    # TorchTitan's train_state.step is 1-based (incremented before the step runs).
    step = int(m.group(1).replace(",", "")) - 1
    return Record(TITAN, step, v, time=_log_time(line, prev_end, start))


def _fraction(percent: float) -> float:
    """A logged percentage as a fraction, without binary noise (34.37% -> 0.3437)."""
    return round(percent / 100, 10)


def _log_time(line: str, lo: int, hi: int) -> float | None:
    """POSIX seconds of the last `YYYY-MM-DD HH:MM:SS[,mmm]` stamp in line[lo:hi], if any."""
    stamps = list(_LOG_TIME.finditer(line, lo, hi))
    if not stamps:
        return None
    found = stamps[-1]
    # Read as UTC: only differences are used, and they must not move with the local zone.
    base = datetime.fromisoformat(found.group(1).replace("T", " ")).replace(tzinfo=timezone.utc)
    frac = found.group(2)
    return base.timestamp() + (int(frac) / 10 ** len(frac) if frac else 0.0)


_MEGATRON_MARKERS = (b"teration", b"Step Time")
_BENCHMARK_MARKERS = (b"teration", b"Max iter time", b"MFU:")
_MARKERS_OF_KIND.update(
    {
        NEMO2: (b"teration",),
        NEMO_DELTA: (b"train_step_timing",),
        TQDM: (b"train_step_timing",),
        MEGATRON: _MEGATRON_MARKERS,
        STEP_TIME: _MEGATRON_MARKERS,
        MEMORY: _MEGATRON_MARKERS,
        AUTOMODEL: (b"tps",),
        AM_ITER: _BENCHMARK_MARKERS,
        AM_TIME: _BENCHMARK_MARKERS,
        AM_MFU: _BENCHMARK_MARKERS,
        AM_SUMMARY: _BENCHMARK_MARKERS,
        TITAN: (b"tps",),
    }
)

# Each builder gets its anchor match, the line, the anchor's span, where the record's text
# stops (the next anchor or the line end) and where the previous record's anchor ended.
_BUILDERS: dict[str, Callable[[re.Match[str], str, int, int, int, int], Record | None]] = {
    NEMO2: _nemo2,
    NEMO_DELTA: _delta,
    TQDM: _tqdm,
    MEGATRON: _megatron,
    STEP_TIME: _step_time,
    MEMORY: _memory,
    AUTOMODEL: _automodel,
    AM_ITER: _am_iter,
    AM_TIME: _am_time,
    AM_MFU: _am_mfu,
    AM_SUMMARY: _am_summary,
    TITAN: _titan,
}
