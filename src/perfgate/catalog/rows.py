"""Rows and baselines: one model x GPU x precision x scale configuration, and the value lists.

A row is everything needed to launch one configuration and to judge it. The JSON form lives in
catalog.schema, the rules in catalog.validate, reading and locked atomic writes in
catalog.store; each name a row may take is listed here once (TASKS, BACKENDS, GPUS, ...).

Row overrides are dotted paths: for NeMo rows the recipe paths as seed 002 names them
("recipe.model.config.enable_cuda_graph"); for Automodel rows "config" names the benchmark
YAML (a path in the Automodel repository) and other keys are YAML paths in it
("step_scheduler.local_batch_size"). time_limit_min is left null in the seed rows: the
launcher's default applies.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from perfgate import charset, hardware, limits
from perfgate.errors import ConfigError

TASKS = ("pretrain", "sft", "lora")


@dataclass(frozen=True)
class BackendTraits:
    """What the catalog's rules know of a workload backend (perfgate.workload runs it)."""

    # TP > 1 turns sequence parallelism on, which splits the sequence over the TP ranks
    sequence_parallel_with_tp: bool = False


# A row's `backend` -> its traits; perfgate.workload's table has each one's face.
BACKEND_TRAITS: dict[str, BackendTraits] = {
    "nemo2": BackendTraits(sequence_parallel_with_tp=True),
    "megatron_bridge": BackendTraits(sequence_parallel_with_tp=True),
    "automodel": BackendTraits(),
    # Sequence parallelism with TP only on CUDA (device=cpu runs without it): the catalog
    # leaves seq_len unchecked, as when the backend came (issue #20).
    "megatron_core": BackendTraits(),
    "command": BackendTraits(),
}
BACKENDS = tuple(BACKEND_TRAITS)
DEFAULT_BACKEND = "nemo2"  # of a row that names none; its id carries no backend part
PRECISIONS = ("bf16", "fp8", "mxfp8", "nvfp4")
FP8_RECIPES = ("delayed", "current_scaling")
# Short precision token used in row ids and reports.
PRECISION_TOKENS = {
    ("bf16", None): "bf16",
    ("fp8", "delayed"): "fp8ds",
    ("fp8", "current_scaling"): "fp8cs",
    ("mxfp8", None): "mxfp8",
    ("nvfp4", None): "nvfp4",
}
FLOPS_CONVENTIONS = ("nemo2", "nemo2_2509", "megatron", "megatron_bridge", "llmb", "automodel")
# GPU types, in the order of hardware.GPUS (their specs): row markers, file names, replay.
GPUS = tuple(hardware.GPUS)
# How a launch gets its image (--container-runtime, perfgate.launch.runtimes); the executors
# (--executor) are perfgate.launch.executors.EXECUTORS.
RUNTIMES = ("pyxis", "podman", "command", "none")


@dataclass(frozen=True)
class Provenance:
    """Where a baseline number came from."""

    source: str
    container: str | None = None
    framework_version: str | None = None
    date: str | None = None
    job_ids: tuple[str, ...] = ()
    versions: dict[str, str] = field(default_factory=dict)
    notes: str | None = None


@dataclass(frozen=True)
class BaselineRun:
    """One run behind a baseline (`--update-baselines --repeat K` stores each of the K)."""

    step_time_s: float  # steady median
    rel_se: float | None = None  # within-run relative SE of that median
    job_id: str | None = None
    date: str | None = None  # ISO 8601, UTC
    container: str | None = None
    digest: str | None = None  # sha256 of the squashfs file, where known


@dataclass(frozen=True)
class Baseline:
    """The stored reference of a row: steady step time and what derives from it.

    step_time_spread_s is the standard deviation of the steady step time across the
    baseline's runs (None when only one run or a published number is known); n_runs is the
    number of independent runs behind step_time_s; runs, when stored, is each of them (then
    step_time_s is their geometric mean and the spread theirs).
    """

    step_time_s: float
    provenance: Provenance
    step_time_spread_s: float | None = None
    n_runs: int = 1
    tokens_per_s_per_gpu: float | None = None
    tflops_per_gpu: float | None = None
    flops_convention: str | None = None
    mfu: float | None = None
    peak_memory_gib: float | None = None
    tolerance: float | None = None
    runs: tuple[BaselineRun, ...] = ()
    # Seconds per iteration in each timed phase (Megatron timers), the stored runs' medians:
    # a one-run verdict shows its phases against these (perfgate.verdicts.phases).
    phases_s: dict[str, float] = field(default_factory=dict, hash=False)

    @property
    def measured_here(self) -> bool:
        """True when perfgate measured it (on this site), not a published or imported number."""
        return self.provenance.source.startswith("perfgate")


@dataclass(frozen=True)
class Row:
    """One configuration to run and judge. Parallel sizes are as NVIDIA's scripts name them."""

    id: str
    task: str
    model: str
    gpu: str
    precision: str
    num_gpus: int
    gpus_per_node: int
    gbs: int
    mbs: int
    seq_len: int
    backend: str = DEFAULT_BACKEND
    fp8_recipe: str | None = None
    tp: int = 1
    pp: int = 1
    cp: int = 1
    vp: int | None = None
    ep: int = 1
    etp: int | None = None
    fsdp: bool = False
    overrides: dict[str, Any] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    variant: str | None = None
    steps: int | None = None
    time_limit_min: int | None = None
    source: str | None = None
    notes: tuple[str, ...] = ()
    baseline: Baseline | None = None

    @property
    def nodes(self) -> int:
        """Nodes of the allocation."""
        return self.num_gpus // self.gpus_per_node if self.num_gpus >= self.gpus_per_node else 1

    @property
    def tasks_per_node(self) -> int:
        """Ranks (one per GPU) on each node; rows smaller than a node use part of it."""
        return min(self.num_gpus, self.gpus_per_node)

    @property
    def dp(self) -> int:
        """Data-parallel size of the dense part (EP folds into DP, as in Megatron-Core)."""
        return self.num_gpus // (self.tp * self.pp * self.cp)

    @property
    def ga(self) -> int:
        """Gradient-accumulation steps (micro-batches per DP rank per step)."""
        return self.gbs // (self.dp * self.mbs)

    @property
    def precision_token(self) -> str:
        """bf16, fp8ds, fp8cs, mxfp8 or nvfp4: the precision as ids and reports show it."""
        return PRECISION_TOKENS.get((self.precision, self.fp8_recipe), self.precision)

    @property
    def parallelism(self) -> str:
        """Compact parallel layout, e.g. tp2pp4cp2vp5, tp1ep8, tp1fsdp."""
        return parallelism_token(self.tp, self.pp, self.cp, self.vp, self.ep, self.etp, self.fsdp)


def parallelism_token(
    tp: int, pp: int, cp: int, vp: int | None, ep: int, etp: int | None, fsdp: bool
) -> str:
    """tp always, then pp/cp/ep above 1, vp and etp when set, and fsdp when on."""
    out = f"tp{tp}"
    if pp > 1:
        out += f"pp{pp}"
    if cp > 1:
        out += f"cp{cp}"
    if vp is not None:
        out += f"vp{vp}"
    if ep > 1:
        out += f"ep{ep}"
    if etp is not None:
        out += f"etp{etp}"
    if fsdp:
        out += "fsdp"
    return out


def canonical_id(row: Row) -> str:
    """The id a row must carry: task-model-gpu-precision-Ngpu-layout[-backend][-variant]."""
    parts = [
        row.task,
        row.model,
        row.gpu,
        row.precision_token,
        f"{row.num_gpus}gpu",
        row.parallelism,
    ]
    if row.backend != DEFAULT_BACKEND:
        parts.append(row.backend)
    if row.variant:
        parts.append(row.variant)
    return "-".join(parts)


# --- GPU-count filters ----------------------------------------------------------------------

_COUNT_PART = re.compile(r"^\s*(\d+)\s*(?:-\s*(\d+)\s*)?$")


@dataclass(frozen=True)
class GpuCounts:
    """A set of GPU counts from a spec like "64", "8,16", "8-64" or "8,32-64"."""

    spec: str
    ranges: tuple[tuple[int, int], ...]

    def __call__(self, num_gpus: int) -> bool:
        return any(lo <= num_gpus <= hi for lo, hi in self.ranges)

    def __str__(self) -> str:
        return self.spec


def parse_gpu_counts(spec: str) -> Callable[[int], bool]:
    """A predicate over GPU counts; a bad spec is a ConfigError naming it."""
    if not isinstance(spec, str) or not spec.strip():
        raise ConfigError(f"bad GPU count spec {spec!r}: expected e.g. 64, 8,16 or 8-64")
    shown = charset.shown(spec.strip())
    ranges: list[tuple[int, int]] = []
    for part in spec.split(","):
        match = _COUNT_PART.match(part)
        if not match:
            raise ConfigError(
                f"bad GPU count spec {shown}: {charset.shown(part.strip())} is not N or N-M "
                "(expected e.g. 64, 8,16 or 8-64)"
            )
        for text in filter(None, match.groups()):
            if len(text) > 9 or int(text) > limits.GPUS.value:  # len first: int() of 10^5 digits
                cut = text if len(text) <= 20 else text[:19] + "…"
                raise ConfigError(
                    f"--gpus {shown}: GPU count {cut}: at most {limits.GPUS.value:,} "
                    f"({limits.GPUS.why})"
                )
        lo = int(match.group(1))
        hi = int(match.group(2)) if match.group(2) else lo
        if lo < 1 or hi < lo:
            raise ConfigError(f"bad GPU count spec {shown}: range {part.strip()!r} is empty")
        ranges.append((lo, hi))
    return GpuCounts(spec=spec.strip(), ranges=tuple(ranges))
