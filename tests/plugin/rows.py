"""Small Row objects for the plugin's unit tests (ids as catalog.canonical_id makes them)."""

from __future__ import annotations

from dataclasses import replace

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
