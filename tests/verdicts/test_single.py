"""A run against its stored baseline (perfgate.verdicts.single): what it measured."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pytest
from rowfactory import make_row

from perfgate import catalog, logs, verdicts
from perfgate.catalog.provenance import SHIPPED_DIR
from perfgate.logs import StepSeries
from perfgate.runs import RunRecord, RunResult
from perfgate.verdicts.single import measure

LOGS = Path(__file__).resolve().parents[1] / "data" / "logs"


def test_torchtitan_memory_reaches_the_measured_peak():
    # TorchTitan logs only its reserved peak (`memory: 49.66GiB(52.28%)`); the report's peak
    # memory must show it rather than nothing. 20 steps, each the first real line's record.
    st = logs.parse_files([LOGS / "torchtitan_gc_profiler.log"]).steps[0]
    steps = tuple(logs.renumber([st], k - st.step)[0] for k in range(20))
    series = StepSeries("torchtitan", steps)
    row = make_row(model="llama3_8b", num_gpus=8, gbs=8, mbs=1, seq_len=8192, tp=1)
    measured, why = measure(row, series, (5, 19))
    assert measured is not None, why
    assert measured.peak_memory_gib == 49.66
    assert measured.step_time_s == st.step_time_s


def test_times_from_whole_second_stamps_keep_their_se_floor_in_the_verdict():
    """#21 item 1: a window mean of whole-second stamps is equal step times, whose batch-means
    SE is 0; the verdict's SE is the stamps' own precision instead."""
    row = catalog.load_catalog(SHIPPED_DIR).by_id["lora-llama3_8b-h100-bf16-1gpu-tp1fsdp-automodel"]
    row = replace(row, gbs=8)  # 8 x 4096 tokens in 2 s: a step one H100 can run
    stamps = "\n".join(
        f"2026-05-17 04:{40 + (2 * k) // 60:02d}:{(2 * k) % 60:02d} | INFO | root | step {k} | "
        f"epoch 0 | loss 0.5 | grad_norm 0.5 | lr 1.00e-05 | mem 20.00 GiB | tps 7000.00"
        "(7000.00/gpu) | num_label_tokens 324"
        for k in range(40)
    )
    series = logs.parse_text(stamps)
    assert series.min_rel_se == pytest.approx(1 / math.sqrt(6) / 78)
    measured, why = measure(row, series, "auto")
    assert measured is not None, why
    assert measured.se_s == pytest.approx(2.0 * series.min_rel_se)
    run = RunRecord(image=None, label="baseline", series=series)
    result = RunResult(row_id=row.id, job_id=None, state="LOCAL", runs=(run,))
    base = replace(row.baseline, step_time_s=2.0, n_runs=1, runs=())
    ev = verdicts.evaluate(replace(row, baseline=base), result, source="replay")
    assert ev.measured.se_s == measured.se_s and ev.comparison.se > series.min_rel_se / 2
