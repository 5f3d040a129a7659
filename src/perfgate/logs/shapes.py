"""Each log format's line shapes: the anchor that starts a record, the fields after it, and
the builder that turns them into a Record in perfgate units (perfgate.logs.formats).

Which anchors a line is searched for, and in what order records are built: perfgate.logs.lines.
Verbatim examples of every shape: tests/data/reference/log_formats.md.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from datetime import datetime, timezone
from decimal import Decimal

from perfgate.logs.formats import (
    AM_ITER,
    AM_MFU,
    AM_SUMMARY,
    AM_TIME,
    AUTOMODEL,
    MEGATRON,
    MEMORY,
    NEMO2,
    NEMO_DELTA,
    NUM,
    NUM_RE,
    STEP_TIME,
    TITAN,
    TQDM,
    Record,
    number,
)

# The anchor of each record kind (AM_SUMMARY has two).
RE_NEMO2 = re.compile(r"Training epoch (\d+), iteration (\d+)/(\d+)")
RE_DELTA = re.compile(r"Step (\d+): train_step_timing in s=(" + NUM + ")")
RE_TQDM = re.compile(r"train_step_timing in s=")
RE_MEGATRON = re.compile(r"iteration\s+(\d+)/\s*(\d+)\s*\|")
RE_STEP_TIME = re.compile(r"(?:\[Rank (\d+)\]\s*)?Step Time\s*:\s*(" + NUM + r")\s*s")
# 2020 Megatron-LM printed `after 100 iterations memory (MB) | ... | max cached: ...`.
RE_MEMORY = re.compile(r"(?:\[Rank (\d+)\]\s*)?\(?after (\d+) iterations\)? memory \((GB|MB)\)")
RE_AUTOMODEL = re.compile(r"\bstep (\d+) \| epoch (\d+) \|")
RE_AM_ITER = re.compile(r"Rank (\d+) \| Iteration (\d+)\b")
RE_AM_TIME = re.compile(r"Max iter time: (" + NUM + ") seconds")
RE_AM_MFU = re.compile(r"(?<!Average )MFU: (" + NUM + ")%")
RE_AM_AVG = re.compile(
    r"Average iteration time: (" + NUM + r") seconds"
    r"(?: \(excluding first (\d+) warmup iterations\))?"
)
RE_AM_AVG_MFU = re.compile(r"Average MFU: (" + NUM + ")%")
# The lookahead leaves `loss:` to the field search (it is the first field).
RE_TITAN = re.compile(r"\bstep:\s*([\d,]+)\s+(?=loss:)")

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
    "loss": re.compile(r"\| loss (" + NUM + ")"),
    "grad_norm": re.compile(r"\| grad_norm (" + NUM + ")"),
    "mem_peak_gib": re.compile(r"\| mem (" + NUM + ") GiB"),
    "tps": re.compile(r"\| tps (" + NUM + r")\((" + NUM + r")/gpu\)"),
}
_GPU_UTIL = re.compile(r"\s*GPU utilization:\s*(" + NUM + r")\s*(?:MODEL_)?TFLOP/s/GPU")
_TQDM_BAR = re.compile(r"\|\s*(\d+)/\d+\s*\[|(\d+)it\s*\[")  # `| 7/15 [` or `1it [`
# Megatron-LM 2019-2020 (pretrain_gpt2.py): `| learning rate 1.210E-04 | lm loss 1.112287E-01 |`.
_LM_LOSS_NO_COLON = re.compile(r"\|\s*lm loss (" + NUM + r")\s*\|")
# Automodel's validation line: `[val] name "default" | step 9 | epoch 0 | loss ...`.
_AM_VAL = re.compile(r"\[val\](?: name \"[^\"]*\")? \|\s*$")
_AM_LABEL_TOKENS = re.compile(r"\| num_label_tokens (\d+)")
_AM_MEM = re.compile(r"Max Memory Allocated: (" + NUM + ") GB")
_AM_LOSS = re.compile(r"\bloss=(" + NUM + ")")
_LOG_TIME = re.compile(r"(\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d)(?:[,.](\d{1,6}))?")

GIB = float(1 << 30)
_GB = 1e9  # Megatron "memory (GB)" and mem-*-gigabytes are bytes / 1e9
_MB = float(1 << 20)  # Megatron's older "memory (MB)" is bytes / 2**20
_GIB_PER_GB = GIB / _GB  # divide a GB figure by this to get GiB
_GIB_PER_MB = GIB / _MB


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
        m = NUM_RE.match(raw.strip())
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
    if m.re is RE_AM_AVG_MFU:
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


# Each builder gets its anchor match, the line, the anchor's span, where the record's text
# stops (the next anchor or the line end) and where the previous record's anchor ended.
BUILDERS: dict[str, Callable[[re.Match[str], str, int, int, int, int], Record | None]] = {
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
