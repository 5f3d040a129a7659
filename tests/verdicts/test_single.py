"""A run against its stored baseline (perfgate.verdicts.single): what it measured."""

from __future__ import annotations

from pathlib import Path

from perfgate import logs
from perfgate.catalog import Row
from perfgate.logs import StepSeries
from perfgate.verdicts.single import measure

LOGS = Path(__file__).resolve().parents[1] / "data" / "logs"


def test_torchtitan_memory_reaches_the_measured_peak():
    # TorchTitan logs only its reserved peak (`memory: 49.66GiB(52.28%)`); the report's peak
    # memory must show it rather than nothing. 20 steps, each the first real line's record.
    st = logs.parse_files([LOGS / "torchtitan_gc_profiler.log"]).steps[0]
    steps = tuple(logs.renumber([st], k - st.step)[0] for k in range(20))
    series = StepSeries("torchtitan", steps)
    row = Row(
        id="pretrain-llama3_8b-h100-bf16-8gpu",
        task="pretrain",
        model="llama3_8b",
        gpu="h100",
        precision="bf16",
        num_gpus=8,
        gpus_per_node=8,
        gbs=8,
        mbs=1,
        seq_len=8192,
    )
    measured, why = measure(row, series, (5, 19))
    assert measured is not None, why
    assert measured.peak_memory_gib == 49.66
    assert measured.step_time_s == st.step_time_s
