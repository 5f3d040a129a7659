"""The one place tests make catalog Rows (tests/test_layering.py keeps it the only one).

make_row      a Row from keyword fields over neutral defaults, its id the canonical one
as_row        a Row from a dict as a job spec holds it, checked for form only (workload tests)
with_baseline the row with a one-run published baseline
command_row   a row of backend "command" running the CPU stand-in trainer (fake_train.py)

A module with a unique name at the top of tests/: the contract suites, which run in their own
venvs from their own folders, put tests/ on sys.path to import it.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from perfgate.catalog import Baseline, Provenance, Row, canonical_id, row_from_dict

FAKE_TRAIN = Path(__file__).resolve().parent / "integration" / "fake_train.py"

# Fields a test may leave out: none of them shapes what a test that omits them checks.
DEFAULTS: dict[str, Any] = {
    "task": "pretrain",
    "model": "nemotron4_15b",
    "gpu": "h100",
    "precision": "bf16",
    "num_gpus": 64,
    "gpus_per_node": 8,
    "gbs": 256,
    "mbs": 2,
    "seq_len": 4096,
    "tp": 2,
}

# The dict form's neutral fields (a spec's row; as_row): one 8-GPU Llama 3 8B node.
NEUTRAL: dict[str, Any] = {
    "id": "pretrain-llama3_8b-h100-bf16-8gpu-tp1",
    "task": "pretrain",
    "model": "llama3_8b",
    "gpu": "h100",
    "precision": "bf16",
    "num_gpus": 8,
    "gbs": 8,
    "mbs": 1,
    "seq_len": 4096,
}


def make_row(**fields: Any) -> Row:
    """A Row of DEFAULTS updated by fields; its id is canonical_id's unless fields give one."""
    row = Row(**{"id": "", **DEFAULTS, **fields})
    return row if row.id else replace(row, id=canonical_id(row))


def as_row(data: dict[str, Any]) -> Row:
    """The Row of a test's dict, checked for form only, as the workload reads a spec's row."""
    return row_from_dict({**NEUTRAL, **data}, "<test row>", rules=False)


def with_baseline(row: Row, step_time_s: float, tolerance: float | None = None) -> Row:
    """The row with a one-run published baseline."""
    base = Baseline(
        step_time_s=step_time_s, provenance=Provenance(source="test"), tolerance=tolerance
    )
    return replace(row, baseline=base)


def command_row(
    variant: str | None,
    *args: str,
    step_s: float = 0.03,
    first_step_s: float = 0.3,
    program: tuple[str, ...] | None = None,
    measured: bool = False,
    **fields: Any,
) -> Row:
    """A 2-GPU row of backend "command" running fake_train.py with args (or `program`).

    For pytester runs of the plugin with --executor local, or on the local Slurm cluster
    (then pass num_gpus/gpus_per_node matching its nodes). The model only sets FLOPs.
    fake_train logs the step times it models (--modeled, unless args choose --modeled-cv),
    not its measured sleeps: a verdict must not depend on how loaded the test machine is.
    `measured=True` logs the sleeps, for a test of what real timing does.
    """
    if program is None:
        timing = ("--step-s", str(step_s), "--first-step-s", str(first_step_s))
        program = (sys.executable, str(FAKE_TRAIN), *timing)
    modeled = any(a.startswith("--modeled") for a in args)
    if not measured and not modeled and str(FAKE_TRAIN) in program:
        args = (*args, "--modeled")
    row: dict[str, Any] = {
        "model": "llama3_8b",
        "num_gpus": 2,
        "gbs": 8,
        "mbs": 1,
        "seq_len": 128,
        "tp": 1,
        "backend": "command",
        "variant": variant,
        "overrides": {"command": [*program, *args]},
        "steps": 20,
        "time_limit_min": 5,
    }
    return make_row(**{**row, **fields})


def core_row(gpu: str = "h100", **fields: Any) -> Row:
    """The 1-GPU megatron_core row scripts/gpu-check runs (Llama-3.2-1B shape, seq 4096, gbs 4)."""
    shape = {"num_gpus": 1, "gpus_per_node": 1, "gbs": 4, "mbs": 1, "seq_len": 4096, "tp": 1}
    return make_row(model="llama32_1b", gpu=gpu, backend="megatron_core", **{**shape, **fields})
