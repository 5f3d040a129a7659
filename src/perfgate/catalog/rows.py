"""Rows and baselines: the schema of baselines/<gpu>.json, load, validate, select, save.

A row is one model x GPU x precision x scale configuration: everything needed to launch it
and to judge it. Files are plain JSON lists of rows, one file per GPU type. The JSON form
lives in catalog_schema, the rules in catalog_validate, locked atomic writes in catalog_store;
this module is the API the others call.

Row overrides are dotted paths: for NeMo rows the recipe paths as seed 002 names them
("recipe.model.config.enable_cuda_graph"); for Automodel rows "config" names the benchmark
YAML (a path in the Automodel repository) and other keys are YAML paths in it
("step_scheduler.local_batch_size"). time_limit_min is left null in the seed rows: the
launcher's default applies.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from perfgate import hardware
from perfgate.errors import ConfigError

TASKS = ("pretrain", "sft", "lora")
BACKENDS = ("nemo2", "megatron_bridge", "automodel", "command")
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
FLOPS_CONVENTIONS = ("nemo2", "megatron", "llmb", "automodel")


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
class Baseline:
    """The stored reference of a row: steady step time and what derives from it.

    step_time_spread_s is the standard deviation of the steady step time across the
    baseline's runs (None when only one run or a published number is known); n_runs is the
    number of independent jobs behind step_time_s.
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
    backend: str = "nemo2"
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
    if row.backend != "nemo2":
        parts.append(row.backend)
    if row.variant:
        parts.append(row.variant)
    return "-".join(parts)


# --- the file format (perfgate.catalog.schema) ---------------------------------------------


def row_from_dict(data: object, origin: str = "<row>", *, index: int | None = None) -> Row:
    """Build and validate one row from its JSON object.

    origin names the file in error messages; index is the row's position, used when the row
    has no usable id.
    """
    from perfgate.catalog import schema

    return schema.row_from_dict(data, origin, index=index)


def row_to_dict(row: Row) -> dict[str, Any]:
    """The row as its JSON object: stable key order, defaults omitted."""
    from perfgate.catalog import schema

    return schema.row_to_dict(row)


def dump_rows(rows: Iterable[Row]) -> str:
    """The text of a baselines file holding these rows (what update_baselines writes)."""
    return json.dumps([row_to_dict(r) for r in rows], indent=2, ensure_ascii=False) + "\n"


# --- loading --------------------------------------------------------------------------------


def _read_json(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise ConfigError(f"{path}: cannot read baselines file ({e.strerror})") from None
    except UnicodeDecodeError as e:
        raise ConfigError(f"{path}: not UTF-8 text (byte {e.start})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise ConfigError(
            f"{path}: not valid JSON: line {e.lineno} column {e.colno}: {e.msg}"
        ) from None


def load_file(path: str | Path) -> list[Row]:
    """Read and validate one baselines/<gpu>.json file: its rows in file order."""
    path = Path(path)
    data = _read_json(path)
    if not isinstance(data, list):
        raise ConfigError(f"{path}: a baselines file must hold a JSON list of rows")
    rows: list[Row] = []
    seen: set[str] = set()
    for index, item in enumerate(data):
        row = row_from_dict(item, str(path), index=index)
        if row.gpu != path.stem:
            raise ConfigError(
                f"{path}: row {row.id}: field 'gpu': a {row.gpu!r} row belongs in "
                f"{row.gpu}.json, not {path.name}"
            )
        if row.id in seen:
            raise ConfigError(f"{path}: row {row.id}: field 'id': duplicate id in this file")
        seen.add(row.id)
        rows.append(row)
    return rows


def _file_order(path: Path) -> tuple[int, str]:
    names = list(hardware.GPUS)
    return (names.index(path.stem) if path.stem in names else len(names), path.name)


@dataclass(frozen=True)
class Catalog:
    """Every row of a baselines folder: rows in file order (files in GPU order), by id."""

    rows: tuple[Row, ...]
    by_id: dict[str, Row]
    files: dict[str, Path]

    def file_of(self, row_id: str) -> Path:
        """The file that holds this row."""
        try:
            return self.files[row_id]
        except KeyError:
            raise ConfigError(f"unknown row id {row_id!r}") from None

    def get(self, row_id: str) -> Row:
        """The row with this id; a clear error when there is none."""
        try:
            return self.by_id[row_id]
        except KeyError:
            raise ConfigError(f"unknown row id {row_id!r}") from None

    def select(
        self,
        *,
        gpu: str | None = None,
        num_gpus: str | Callable[[int], bool] | None = None,
        task: str | None = None,
        model: str | None = None,
        backend: str | None = None,
    ) -> tuple[Row, ...]:
        """Rows matching every given filter; num_gpus takes a spec like "8,32-64"."""
        counts = parse_gpu_counts(num_gpus) if isinstance(num_gpus, str) else num_gpus
        return tuple(
            r
            for r in self.rows
            if (gpu is None or r.gpu == gpu)
            and (counts is None or counts(r.num_gpus))
            and (task is None or r.task == task)
            and (model is None or r.model == model)
            and (backend is None or r.backend == backend)
        )


def load_catalog(directory: str | Path = "baselines") -> Catalog:
    """Load every <gpu>.json of a folder; ids must be unique across files."""
    directory = Path(directory)
    if not directory.is_dir():
        raise ConfigError(f"{directory}: baselines folder not found")
    rows: list[Row] = []
    files: dict[str, Path] = {}
    for path in sorted(directory.glob("*.json"), key=_file_order):
        if path.stem not in hardware.GPUS:
            known = ", ".join(f"{g}.json" for g in hardware.GPUS)
            raise ConfigError(f"{path}: not a baselines file name; expected one of {known}")
        for row in load_file(path):
            if row.id in files:
                raise ConfigError(
                    f"{path}: row {row.id}: field 'id': duplicate of a row in {files[row.id]}"
                )
            files[row.id] = path
            rows.append(row)
    return Catalog(rows=tuple(rows), by_id={r.id: r for r in rows}, files=files)


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
    ranges: list[tuple[int, int]] = []
    for part in spec.split(","):
        match = _COUNT_PART.match(part)
        if not match:
            raise ConfigError(
                f"bad GPU count spec {spec!r}: {part.strip()!r} is not N or N-M "
                "(expected e.g. 64, 8,16 or 8-64)"
            )
        lo = int(match.group(1))
        hi = int(match.group(2)) if match.group(2) else lo
        if lo < 1 or hi < lo:
            raise ConfigError(f"bad GPU count spec {spec!r}: range {part.strip()!r} is empty")
        ranges.append((lo, hi))
    return GpuCounts(spec=spec.strip(), ranges=tuple(ranges))


# --- saving ---------------------------------------------------------------------------------


def update_baselines(directory: str | Path, updates: Mapping[str, Baseline]) -> str:
    """Store new baselines for these row ids, atomically and under a lock per file.

    Each file is re-read under its lock so concurrent writers (pytest-xdist workers) lose no
    change; returns the unified diff of what changed (empty when nothing did).
    """
    from perfgate.catalog import store

    return store.update_baselines(Path(directory), updates)


__all__ = [
    "BACKENDS",
    "FLOPS_CONVENTIONS",
    "FP8_RECIPES",
    "PRECISIONS",
    "TASKS",
    "Baseline",
    "Catalog",
    "GpuCounts",
    "Provenance",
    "Row",
    "canonical_id",
    "dump_rows",
    "load_catalog",
    "load_file",
    "parse_gpu_counts",
    "row_from_dict",
    "row_to_dict",
    "update_baselines",
]
