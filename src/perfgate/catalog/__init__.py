"""The catalog: the rows of baselines/<gpu>.json and their baselines (the API others call).

rows: Row, Baseline, Provenance and the value lists a row may take; schema: JSON <-> Row;
validate: what a row's values must mean together; store: read the files, write them
atomically under a lock.
"""

from perfgate.catalog.rows import (
    BACKEND_TRAITS,
    BACKENDS,
    DEFAULT_BACKEND,
    FLOPS_CONVENTIONS,
    FP8_RECIPES,
    GPUS,
    PRECISION_TOKENS,
    PRECISIONS,
    RUNTIMES,
    TASKS,
    Baseline,
    BaselineRun,
    GpuCounts,
    Provenance,
    Row,
    canonical_id,
    parallelism_token,
    parse_gpu_counts,
)
from perfgate.catalog.schema import baseline_from_dict, dump_rows, row_from_dict, row_to_dict
from perfgate.catalog.store import Catalog, load_catalog, load_file, update_baselines

__all__ = [
    "BACKENDS",
    "BACKEND_TRAITS",
    "DEFAULT_BACKEND",
    "FLOPS_CONVENTIONS",
    "FP8_RECIPES",
    "GPUS",
    "PRECISIONS",
    "PRECISION_TOKENS",
    "RUNTIMES",
    "TASKS",
    "Baseline",
    "BaselineRun",
    "Catalog",
    "GpuCounts",
    "Provenance",
    "Row",
    "baseline_from_dict",
    "canonical_id",
    "dump_rows",
    "load_catalog",
    "load_file",
    "parallelism_token",
    "parse_gpu_counts",
    "row_from_dict",
    "row_to_dict",
    "update_baselines",
]
