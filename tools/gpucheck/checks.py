"""The chain checked against measurements of the same runs, each with its tolerance.

timers   perfgate's step time (steps.json) vs a second clock of the same steps: the device
         clock at the same boundaries (sidecar), the measure process's unsynchronised loop
         (medians_check) and the parent's wall clock of the steady loop (wall_check): 1%
log      rank 0's log parsed by perfgate.logs vs steps.json: same steps, every time within
         half a unit of the line's print resolution (print_unit: Megatron-LM 0.1 ms, NeMo 2
         four significant digits)
results  results.json's step time, tokens/s and TFLOP/s vs the same numbers recomputed here
         from steps.json (perfgate.stats, perfgate.flops.of_row): within 1e-6
flops    perfgate.flops per step vs torch's FlopCounterMode on one step, the difference
         explained term by term (FLOPS_TOL 0.5%: both sides count the same matmuls, so
         anything above rounding is a term one side lacks); NeMo 2's FLOPs callback vs the
         nemo2 convention (nemo_flops_check)
mfu      TFLOP/s (megatron convention) over the datasheet peak and over the bf16 GEMM peak
         measured here; the megatron count is the least work the step must do, so its rate
         cannot exceed the measured peak (2% slack for the peak's own timing)
phases   Megatron-Core's timer phases (NeMo 2's log) parsed back and within the step
"""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Sequence
from typing import Any

from perfgate import flops, hardware
from perfgate.flops import nemo2
from perfgate.models import ModelArch
from perfgate.stats import summarize_run
from perfgate.stats.run import MIN_SKIP_STEPS
from perfgate.workload.nemo2.models import nemo2_flops_convention

TIMER_TOL = 0.01
EPS = 1e-12  # float noise on a printed value read back
RESULTS_TOL = 1e-6
FLOPS_TOL = 0.005
# torch's FlopCounterMode counts five s x s products in these backwards (the scores are
# recomputed), against four in an unfused one
FUSED_ATTENTION_BACKWARD = re.compile(r"(flash|efficient|cudnn)_attention_backward")
PEAK_SLACK = 0.02
CONVENTIONS = ("megatron", "nemo2")


def rel(a: float, b: float) -> float:
    """|a / b - 1|."""
    return abs(a / b - 1.0)


def status(ok: bool) -> str:
    """'pass' or 'fail'."""
    return "pass" if ok else "fail"


def steady_window(step_times: Sequence[float]) -> tuple[int, int, bool]:
    """(first, last) step indices perfgate's summary uses, and whether the run was steady.

    An unsteady run (noisy CPU) is compared on every step after the skipped warm-up.
    """
    summary = summarize_run(list(step_times))
    if summary.steady:
        return summary.window_start, summary.window_end, True
    return min(MIN_SKIP_STEPS, len(step_times) - 1), len(step_times) - 1, False


def steady_median(host: Sequence[float] | None) -> float | None:
    """The steady median of step times (every step after warm-up when unsteady); None if none."""
    if not host:
        return None
    first, last, _ = steady_window(host)
    return statistics.median(host[first : last + 1])


def timer_check(host: Sequence[float], second: Sequence[float], clock: str | None) -> dict:
    """perfgate's step times vs the second clock's, step by step and as steady medians."""
    if not host or len(host) != len(second):
        why = f"{len(host)} perfgate step times, {len(second)} on the second clock"
        return {"status": "fail", "why": why}
    first, last, steady = steady_window(host)
    per_step = [rel(h, s) for h, s in zip(host, second, strict=True)]
    a = statistics.median(host[first : last + 1])
    b = statistics.median(second[first : last + 1])
    return {
        "status": status(rel(a, b) <= TIMER_TOL),
        "tolerance": TIMER_TOL,
        "second_clock": clock,
        "window": [first, last],
        "steady": steady,
        "perfgate_median_s": a,
        "second_median_s": b,
        "median_rel_diff": rel(a, b),
        # what the second clock sees that perfgate's does not (or the reverse, negative)
        "median_gap_s": statistics.median(
            s - h for h, s in zip(host[first : last + 1], second[first : last + 1], strict=True)
        ),
        "max_step_rel_diff": max(per_step),
        "p95_step_rel_diff": sorted(per_step)[int(0.95 * (len(per_step) - 1))],
    }


def print_unit(fmt: str, value: float) -> float:
    """Seconds of one unit of the last printed digit of a step time in this log format."""
    if fmt == "nemo2":  # ProgressPrinter: f"{value:.4}", four significant digits
        return 10.0 ** (math.floor(math.log10(abs(value))) - 3) if value else 1e-4
    return 1e-4  # Megatron-LM: milliseconds with one decimal


def log_check(
    steps: Sequence[int], host: Sequence[float], log_steps, log_s, fmt: str | None
) -> dict:
    """The parsed log vs steps.json: the same steps, each time within half a printed unit."""
    if not steps or list(steps) != list(log_steps):
        why = f"steps.json has steps {list(steps)[:3]}.., the log {list(log_steps)[:3]}.."
        return {"status": "fail", "why": why}
    units = [print_unit(fmt or "megatron", p) for p in log_s]
    diffs = [abs(a - b) for a, b in zip(host, log_s, strict=True)]
    over = [d / (u / 2) for d, u in zip(diffs, units, strict=True)]
    worst = max(range(len(over)), key=over.__getitem__)
    return {
        "status": status(all(d <= u / 2 + EPS for d, u in zip(diffs, units, strict=True))),
        "format": fmt,
        "steps": len(steps),
        "max_abs_diff_s": diffs[worst],
        "half_unit_s": units[worst] / 2,
        "max_diff_in_half_units": over[worst],
    }


def medians_check(perfgate_s: Sequence[float], other_s: Sequence[float], what: str) -> dict:
    """Two loops of the same model (perfgate's clock vs another): steady medians within 1%.

    The first two steps of each are left out (the model is warm; the loops just switched).
    """
    a, b = list(perfgate_s[2:]), list(other_s[2:])
    if not a or not b:
        return {"status": "fail", "why": f"{len(perfgate_s)} and {len(other_s)} steps: too few"}
    ma, mb = statistics.median(a), statistics.median(b)
    return {
        "status": status(rel(ma, mb) <= TIMER_TOL),
        "tolerance": TIMER_TOL,
        "what": what,
        "perfgate_median_s": ma,
        "other_median_s": mb,
        "median_rel_diff": rel(ma, mb),
        "steps": [len(a), len(b)],
    }


def wall_check(host: Sequence[float], arrivals: Sequence[float], poll_s: float) -> dict:
    """The sum of perfgate's steady steps vs the parent's wall clock over the same steps.

    arrivals[k] is when the parent saw rank 0's k-th step line (its own monotonic clock); the
    steps a..b took arrivals[b] - arrivals[a - 1]. The tolerance adds the follower's poll
    interval at both ends to the timers' 1%.
    """
    if len(arrivals) < len(host) or len(host) < 3:
        why = f"{len(arrivals)} step lines seen for {len(host)} steps"
        return {"status": "fail", "why": why}
    first, last, steady = steady_window(host)
    first = max(first, 1)
    total = math.fsum(host[first : last + 1])
    wall = arrivals[last] - arrivals[first - 1]
    tol = TIMER_TOL + 2 * poll_s / total
    return {
        "status": status(rel(total, wall) <= tol),
        "tolerance": tol,
        "window": [first, last],
        "steady": steady,
        "sum_of_steps_s": total,
        "wall_s": wall,
        "rel_diff": rel(total, wall),
    }


def phases_check(phases: dict[str, float] | None, step_s: float) -> dict:
    """Megatron-Core's timer phases (steady medians) parsed and inside the step."""
    if not phases:
        return {"status": "fail", "why": "no timer phases parsed from the log"}
    fb, opt = phases.get("forward-backward"), phases.get("optimizer")
    if fb is None:
        return {"status": "fail", "why": f"no forward-backward phase in {sorted(phases)}"}
    inside = fb + (opt or 0.0)
    ok = inside <= step_s * (1 + TIMER_TOL) and max(phases.values()) <= step_s * (1 + TIMER_TOL)
    return {
        "status": status(ok),
        "step_median_s": step_s,
        "phases_median_s": phases,
        "forward_backward_plus_optimizer_s": inside,
        "share_of_step": inside / step_s,
    }


def per_step_flops(arch: ModelArch, seq_len: int, gbs: int, tp: int) -> dict[str, float]:
    """perfgate.flops of one step (gbs samples) in the conventions compared here."""
    return {
        c: flops.flops_per_sample(arch, seq_len, "pretrain", c, tp=tp) * gbs for c in CONVENTIONS
    }


def results_check(record: dict | None, host: Sequence[float], row: Any) -> dict:
    """results.json's measured figures vs the same computed here from steps.json."""
    measured = (record or {}).get("measured")
    if not measured:
        why = f"results.json has no measured values (verdict {(record or {}).get('verdict')})"
        return {"status": "fail", "why": why}
    step = summarize_run(list(host)).median_s
    expected = {
        "step_time_s": step,
        "tokens_per_s_per_gpu": row.gbs * row.seq_len / step / row.num_gpus,
    }
    for c in CONVENTIONS:  # the architecture the row trains (catalog.arch), as the suite counts
        expected[f"tflops_per_gpu.{c}"] = flops.of_row(row, step, c).tflops_per_gpu
    got = {
        "step_time_s": measured["step_time_s"],
        "tokens_per_s_per_gpu": measured["tokens_per_s_per_gpu"],
        **{f"tflops_per_gpu.{c}": measured["tflops_per_gpu"][c] for c in CONVENTIONS},
    }
    worst = max(rel(got[k], expected[k]) for k in expected)
    return {"status": status(worst <= RESULTS_TOL), "results_json": got, "recomputed": expected}


def nemo_flops_check(
    tflops: Sequence[float | None],
    host: Sequence[float],
    row: Any,
    arch: ModelArch,
    nemo_version: str | None,
) -> dict:
    """NeMo's FLOPsMeasurementCallback TFLOP/s per step vs perfgate's count of that NeMo.

    Both divide the step's FLOPs by the same step time (TimingCallback's), so their ratio is
    the ratio of the two FLOP counts: exact where perfgate reproduces NeMo's formula. The
    convention is the installed NeMo's (nemo2 up to 2.5.0rc0, nemo2_2509 from r2.5.0: the
    causal halving); the other is reported beside it.
    """
    convention = nemo2_flops_convention(nemo_version or "")
    pairs = [(t, h) for t, h in zip(tflops, host, strict=False) if t is not None and h > 0]
    if not pairs:
        return {"status": "fail", "why": "no step carries NeMo's TFLOP/s"}
    nemo_step = [t * 1e12 * h * row.num_gpus for t, h in pairs]
    out: dict[str, Any] = {"nemo_version": nemo_version, "convention": convention}
    for c in ("nemo2", "nemo2_2509"):
        ours = flops.flops_per_sample(arch, row.seq_len, row.task, c) * row.gbs
        out[f"max_rel_diff.{c}"] = max(rel(n, ours) for n in nemo_step)
        out[f"perfgate_step_flops.{c}"] = ours
    return {
        "status": status(out[f"max_rel_diff.{convention}"] <= FLOPS_TOL),
        "tolerance": FLOPS_TOL,
        "steps": len(pairs),
        "nemo_step_flops_first": nemo_step[0],
        "max_rel_diff": out[f"max_rel_diff.{convention}"],
        **out,
    }


def layer_forward_flops(arch: ModelArch, seq_len: int) -> float:
    """One decoder layer's forward matmul FLOPs for one sample, attention not causal-halved."""
    h, q = arch.hidden_size, arch.head_dim * arch.num_attention_heads
    kv = arch.head_dim * arch.num_query_groups
    mlp = (3 if arch.gated_linear_unit else 2) * h * arch.ffn_hidden_size
    return 2.0 * seq_len * (h * (q + 2 * kv) + q * h + mlp) + 4.0 * seq_len**2 * q


def nemo2_vocab(arch: ModelArch) -> int:
    """The vocab NeMo 2's formula counts: fixed for llama (128256), else the model's own."""
    return nemo2.VOCAB["llama3"] if arch.family == "llama" else arch.vocab_size


def flops_check(
    arch: ModelArch,
    seq_len: int,
    gbs: int,
    padded_vocab: int,
    measured: dict,
    b_layers: int,
    ours: dict[str, float] | None = None,
) -> dict:
    """perfgate.flops vs FlopCounterMode on one step, each difference explained (TP 1).

    FlopCounterMode counts every matmul (2 FLOPs per multiply-add; a backward matmul pair is
    twice the forward one), both s x s attention products in full (it ignores the causal
    mask), the output layer over the padded vocab, and neither embeddings, norms, softmax nor
    the loss. "megatron" counts the same matmuls with the attention term halved (causal);
    NeMo 2's llama formula ("nemo2") counts attention in full and the logits over its fixed
    vocab of 128256. A fused attention kernel (flash, memory-efficient, cuDNN) recomputes the
    s x s scores in its backward, and FlopCounterMode counts that product too: one sixth of
    the full attention term, predicted here from the shapes and added only when the counter
    saw such a backward (an H200 run without it was 3.0% unexplained, exactly this term).
    """
    counted = measured["flops_a"]["step"]["total"]
    forward = measured["flops_a"]["forward"]["total"]
    counted_b = measured["flops_b"]["step"]["total"]
    ours = ours or per_step_flops(arch, seq_len, gbs, 1)  # a negative control passes its own
    q = arch.head_dim * arch.num_attention_heads
    attention_full = 12.0 * seq_len**2 * q * arch.num_layers * gbs
    vocab_diff = 6.0 * seq_len * arch.hidden_size * (padded_vocab - nemo2_vocab(arch)) * gbs
    recompute = b_layers * layer_forward_flops(arch, seq_len) * gbs
    by_op = measured["flops_a"]["step"].get("by_op") or {}
    fused = sorted(op for op in by_op if FUSED_ATTENTION_BACKWARD.search(op))
    scores_recompute = attention_full / 6 if fused else 0.0
    diffs = {
        "counter_vs_megatron_plus_half_attention": rel(
            counted, ours["megatron"] + attention_full / 2 + scores_recompute
        ),
        "backward_is_twice_forward": rel(counted - forward, 2 * forward + scores_recompute),
        "b_adds_its_recomputed_forwards": rel(counted_b - counted, recompute),
    }
    if arch.family == "llama":
        diffs["counter_vs_nemo2_plus_vocab_difference"] = rel(
            counted, ours["nemo2"] + vocab_diff + scores_recompute
        )
    return {
        "status": status(max(diffs.values()) <= FLOPS_TOL),
        "tolerance": FLOPS_TOL,
        "counter_step": counted,
        "counter_forward": forward,
        "perfgate_step": ours,
        "attention_full_step": attention_full,
        "fused_attention_backward": fused,
        "scores_recompute_step": scores_recompute,
        "nemo2_vocab_difference_step": vocab_diff,
        "megatron_over_counter": ours["megatron"] / counted,
        "nemo2_over_counter": ours["nemo2"] / counted,
        "b_counter_step": counted_b,
        "b_extra_flops_fraction": counted_b / counted - 1.0,
        "rel_diffs": diffs,
        "counted_by_op": measured["flops_a"]["step"]["by_op"],
    }


def mfu_check(
    step_time_s: float, step_flops: dict[str, float], num_gpus: int, gpu: str, gemm_peak: float
) -> dict:
    """TFLOP/s and MFU per convention against the datasheet and the measured GEMM peak."""
    tflops = {c: f / step_time_s / num_gpus / 1e12 for c, f in step_flops.items()}
    datasheet = hardware.peak_tflops(gpu, "bf16")
    return {
        "status": status(tflops["megatron"] <= gemm_peak * (1 + PEAK_SLACK)),
        "step_time_s": step_time_s,
        "tflops_per_gpu": tflops,
        "datasheet_peak_tflops": datasheet,
        "measured_gemm_peak_tflops": gemm_peak,
        "mfu_datasheet": {c: t / datasheet for c, t in tflops.items()},
        "mfu_measured_peak": {c: t / gemm_peak for c, t in tflops.items()},
        "measured_peak_over_datasheet": gemm_peak / datasheet,
    }
