"""A real 8-GPU B200 series (Megatron-Bridge, NeMo 26.02) and a row whose baseline perfgate
stored from 3 runs of it: the one-run verdict tests' launches are this series scaled."""

from __future__ import annotations

import csv

import pytest
from rowfactory import make_row

from perfgate.catalog import Baseline, BaselineRun, Provenance, Row
from perfgate.stats import summarize_run

SERIES = "third_party_logs/together_b200_llama3.1_8b_bf16_gbs128_nemo2602.csv"


@pytest.fixture(scope="module")
def steps(reference) -> list[float]:
    with open(reference / SERIES) as f:
        rows = [r for r in csv.DictReader(line for line in f if not line.startswith("#"))]
    return [float(r["iteration_time_s"]) for r in rows]


@pytest.fixture(scope="module")
def row(steps) -> Row:
    median = summarize_run(steps).median_s
    base = Baseline(
        median,
        Provenance("perfgate run", date="2026-03-01"),
        n_runs=3,
        runs=tuple(BaselineRun(median * f, 0.001, job_id=f"b{i}") for i, f in
                   enumerate((0.997, 1.0, 1.003))),
        tolerance=0.05,
    )  # fmt: skip
    return make_row(
        model="llama3_8b", gpu="b200", num_gpus=8, gbs=128, mbs=2, seq_len=8192, tp=1, baseline=base
    )
