"""Small Row objects for the plugin's unit tests (ids as catalog.canonical_id makes them)."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

from perfgate.catalog import Baseline, Provenance, Row, canonical_id


def make_row(**kw) -> Row:
    """A row with sensible defaults; its id is the canonical one."""
    fields = dict(
        id="",
        task="pretrain",
        model="nemotron4_15b",
        gpu="h100",
        precision="bf16",
        num_gpus=64,
        gpus_per_node=8,
        gbs=256,
        mbs=2,
        seq_len=4096,
        tp=2,
    )
    fields.update(kw)
    row = Row(**fields)
    return replace(row, id=canonical_id(row))


def with_baseline(row: Row, step_time_s: float, tolerance: float | None = None) -> Row:
    """The row with a one-run published baseline."""
    base = Baseline(
        step_time_s=step_time_s, provenance=Provenance(source="test"), tolerance=tolerance
    )
    return replace(row, baseline=base)


FAKE_TRAIN = Path(__file__).resolve().parents[1] / "integration" / "fake_train.py"


def command_row(variant: str, *args: str, **kw) -> Row:
    """A 2-GPU row of backend "command" running the CPU stand-in trainer (fake_train.py).

    For pytester runs of the plugin with --executor local, or on the local Slurm cluster
    (then pass num_gpus/gpus_per_node matching its nodes). The model only sets FLOPs.
    """
    cmd = [sys.executable, str(FAKE_TRAIN), "--step-s", "0.03", "--first-step-s", "0.3", *args]
    fields = dict(
        model="llama3_8b",
        num_gpus=2,
        gpus_per_node=8,
        gbs=8,
        mbs=1,
        seq_len=128,
        tp=1,
        backend="command",
        variant=variant,
        overrides={"command": cmd},
        steps=20,
        time_limit_min=5,
    )
    fields.update(kw)
    return make_row(**fields)
