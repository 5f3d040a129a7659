"""Rows and options shared by the launch unit tests."""

from __future__ import annotations

import pytest
from rowfactory import make_row

from perfgate.catalog import Row


@pytest.fixture
def row16() -> Row:
    """A 2-node H100 row (16 GPUs, 8 per node) with a plain and a secret env var."""
    return make_row(
        model="llama3_8b",
        num_gpus=16,
        gbs=128,
        mbs=1,
        seq_len=8192,
        tp=1,
        env={"NVTE_FUSED_ATTN": "1"},
    )


@pytest.fixture
def command_row() -> Row:
    """A 1-GPU row of backend "command" (the integration tests' kind of row)."""
    return make_row(
        model="fake",
        num_gpus=1,
        gbs=8,
        mbs=1,
        seq_len=128,
        tp=1,
        backend="command",
        overrides={"command": "python fake_train.py --step-s 0.01", "train.max_steps": 5},
        steps=5,
        time_limit_min=2,
    )
