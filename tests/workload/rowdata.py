"""Rows for the workload tests: the workload reads a Row, the tests write their rows as dicts.

A module with a unique name (several conftest.py exist); the contract suites, which run in
their own venvs from their own folders, put this folder on sys.path to import it.
"""

from __future__ import annotations

from typing import Any

from perfgate.catalog import Row, row_from_dict

# Required fields a test's dict may leave out: none of them shapes what the test checks.
NEUTRAL = {
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


def as_row(data: dict[str, Any]) -> Row:
    """The Row of a test's dict, checked for form only, as the workload reads a spec's row."""
    return row_from_dict({**NEUTRAL, **data}, "<test row>", rules=False)
