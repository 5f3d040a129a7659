"""A run faster than the hardware can be: INFRA "IMPOSSIBLE", never a measurement.

A step time whose MFU is above 1 against the GPU's dense peak for the row's precision under
every FLOPs convention (the conventions differ by up to ~20%, so one of them alone proves
nothing) did not run the row's workload as the row describes it: the log belongs to another
row, the run's tokens per step are not the row's gbs x seq_len, or the model (and so its
FLOPs) is not the row's. Judging it against a baseline would compare the wrong things.
"""

from __future__ import annotations

from perfgate import flops, hardware
from perfgate.catalog import Row

CAUSE = "IMPOSSIBLE"


def mfu_by_convention(row: Row, step_time_s: float) -> dict[str, float]:
    """MFU of a step time under each FLOPs convention that covers the row's model."""
    out: dict[str, float] = {}
    for conv in flops.CONVENTIONS:
        t = flops.of_row(row, step_time_s, conv)
        if t is not None:  # a published convention may not cover this model family
            out[conv] = t.mfu
    return out


def impossible(row: Row, step_time_s: float) -> str | None:
    """Why this step time cannot be the row's (MFU > 1 under every convention), else None."""
    mfu = mfu_by_convention(row, step_time_s)
    if not mfu or min(mfu.values()) <= 1.0:
        return None
    peak = hardware.peak_tflops(row.gpu, row.precision)  # known: every MFU above used it
    each = ", ".join(f"{conv} {value:.2f}" for conv, value in mfu.items())
    tokens = row.gbs * row.seq_len
    return (
        f"step time {step_time_s:.4g} s is faster than the hardware can run: MFU {each} of "
        f"the {row.gpu.upper()}'s dense {row.precision.upper()} peak ({peak:g} TFLOP/s per "
        f"GPU, {row.num_gpus} GPUs). Likely: the log is another row's (check which run "
        f"--replay matched, or what the row's command runs), the run's tokens per step are "
        f"not the row's (gbs {row.gbs} x seq_len {row.seq_len} = {tokens}), or it trains a "
        f"smaller model than the row's {row.model} (no FLOPs convention counts so few FLOPs)"
    )
