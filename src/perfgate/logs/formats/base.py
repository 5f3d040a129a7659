"""The log formats perfgate reads: their record kinds, the marker strings that find them,
and the Record one line's step yields.

Pure stdlib (the workload imports it inside the container). Each record keeps the logger's own
step numbering converted to 0-based and its values converted to perfgate units (seconds, GiB,
fractions). One physical line -> its records: perfgate.logs.lines (the line shapes) and
perfgate.logs.fields (each format's fields). Turning records into one series (ranks, restarts,
pairing) is perfgate.logs' job. Verbatim examples of every line shape:
tests/data/reference/log_formats.md.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

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
_MEGATRON_MARKERS = (b"teration", b"Step Time")
_BENCHMARK_MARKERS = (b"teration", b"Max iter time", b"MFU:")
_MARKERS_OF_KIND: dict[str, tuple[bytes, ...]] = {
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


def markers_for(kinds: set[str]) -> tuple[bytes, ...]:
    """The marker strings needed to find every record of the given kinds."""
    wanted = {m for k in kinds for m in _MARKERS_OF_KIND.get(k, MARKERS)}
    return tuple(m for m in MARKERS if m in wanted)


# A logged number: `1.249e+03`, `2e+3`, `.5`, `nan`, `inf`.
NUM = r"[-+]?(?:\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|nan|NaN|inf|-inf)"
NUM_RE = re.compile(NUM)


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
    m = NUM_RE.match(text.strip().replace(",", ""))
    return float(m.group(0)) if m else None


# No training run logs a step number this large: a line that says so is corrupt, not a record
# (a 400-digit number would overflow the float arithmetic on step numbers downstream).
MAX_STEP = 10**9
