"""The measurements beside the product run, in their own process (one rank, one GPU).

    python -m gpucheck.measure SPEC.json OUT.json [--b-overrides JSON] [--sweep] [--interleave N]

1. The bf16 GEMM peak of this device: torch.matmul on random bf16 matrices, timed with CUDA
   events (the median of 10 after 3 warm-ups); --sweep adds a larger square and the row's two
   largest GEMM shapes (the MLP's first projection, the logits); the peak is the best of them.
2. The row's model as the megatron_core backend builds it (same Trainer), two warm-up steps,
   then FlopCounterMode over one step's forward and backward (all micro-batches, no update)
   and over its forward alone, then the same with B's overrides (activation recompute) set on
   the live TransformerConfig: Megatron-Core reads the recompute fields at each forward, so the
   weights, data and allocator are the same and only the recompute differs.
3. --interleave N: B's cost in time, without launch noise: blocks of N steps, A B A B, on the
   same model in this process; the first step of each block is left out (the switch).
4. --clock-steps N: two loops of N steps on the same model. The first is timed by perfgate's
   own StepClock (host, synced). The second by nothing the step code takes: device marks
   queued at each step's start and read after the loop (no host sync anywhere), and, for the
   negative control, the host's perf_counter at the start of each step's last micro-batch,
   read without a sync (gpucheck.controls).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

SQUARE = 8192
CPU_SQUARE = 512


def gemm_shapes(settings: Any, cuda: bool, sweep: bool) -> list[tuple[int, int, int]]:
    """(m, n, k) shapes to time: a square one, and with sweep a larger one and the row's own."""
    if not cuda:
        return [(CPU_SQUARE,) * 3] + ([(2 * CPU_SQUARE,) * 3] if sweep else [])
    shapes = [(SQUARE,) * 3]
    if sweep:
        a, tokens = settings.arch, settings.mbs * settings.seq_len
        fc1 = 2 * a.ffn_hidden_size if a.gated_linear_unit else a.ffn_hidden_size
        shapes += [(2 * SQUARE,) * 3, (tokens, fc1 // settings.tp, a.hidden_size)]
        shapes.append((tokens, settings.padded_vocab // settings.tp, a.hidden_size))
    return shapes


def gemm_tflops(torch: Any, m: int, n: int, k: int, cuda: bool) -> float:
    """Achieved TFLOP/s of one bf16 (m x k) @ (k x n) product on random data."""
    device = "cuda" if cuda else "cpu"
    a = torch.randn(m, k, device=device, dtype=torch.bfloat16)
    b = torch.randn(k, n, device=device, dtype=torch.bfloat16)
    times = []
    for i in range(13 if cuda else 5):
        if cuda:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            torch.matmul(a, b)
            end.record()
            torch.cuda.synchronize()
            seconds = start.elapsed_time(end) / 1000.0
        else:
            t0 = time.perf_counter()
            torch.matmul(a, b)
            seconds = time.perf_counter() - t0
        if i >= 3:  # warm-up: cuBLAS heuristics, clocks ramping
            times.append(seconds)
    return 2.0 * m * n * k / statistics.median(times) / 1e12


def count(torch: Any, trainer: Any, forward_only: bool) -> dict[str, Any]:
    """FLOPs torch's FlopCounterMode counts over one step's micro-batches, total and by op."""
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as counter:
        trainer.forward_backward(forward_only=forward_only)
    if trainer.cuda:
        torch.cuda.synchronize()
    by_op = {str(op): int(n) for op, n in counter.get_flop_counts().get("Global", {}).items()}
    return {"total": int(counter.get_total_flops()), "by_op": by_op}


def set_fields(config: Any, fields: dict[str, Any]) -> dict[str, Any]:
    """Set TransformerConfig fields; return their previous values."""
    before = {name: getattr(config, name) for name in fields}
    for name, value in fields.items():
        setattr(config, name, value)
    return before


def interleave(torch: Any, trainer: Any, b_fields: dict[str, Any], n: int) -> dict[str, Any]:
    """Step times of A and B in alternating blocks of n steps on the same model."""
    from perfgate.workload.megatron_core.clock import StepClock

    clock = StepClock(torch)
    times: dict[str, list[float]] = {"A": [], "B": []}
    a_fields = {name: getattr(trainer.config, name) for name in b_fields}
    clock.start()
    for label in ("A", "B", "A", "B"):
        set_fields(trainer.config, b_fields if label == "B" else a_fields)
        for j in range(n):
            trainer.step()
            seconds = clock.lap()
            if j:  # the first step after a switch is left out
                times[label].append(seconds)
    set_fields(trainer.config, a_fields)
    a, b = statistics.median(times["A"]), statistics.median(times["B"])
    return {"steps_per_block": n, "a_step_s": a, "b_step_s": b, "cost": b / a - 1.0, **times}


class LastMicrobatchMark:
    """Wraps the trainer's forward step: the host time (no sync) its last micro-batch starts."""

    def __init__(self, trainer: Any) -> None:
        self.trainer, self.calls, self.at = trainer, 0, float("nan")
        self.inner = trainer._forward_step
        trainer._forward_step = self

    def __call__(self, data_iterator: Any, model: Any) -> Any:
        self.calls += 1
        if self.calls % self.trainer.settings.num_microbatches == 0:
            self.at = time.perf_counter()
        return self.inner(data_iterator, model)

    def remove(self) -> None:
        """Put the trainer's own forward step back."""
        self.trainer._forward_step = self.inner


def clock_loops(torch: Any, trainer: Any, steps: int) -> dict[str, Any]:
    """perfgate's synced clock on one loop; device marks and the control on another."""
    from perfgate.workload.deviceclock import DeviceClock
    from perfgate.workload.megatron_core.clock import StepClock

    clock = StepClock(torch)
    clock.start()
    for _ in range(steps):
        trainer.step()
        clock.lap()
    device = DeviceClock(torch)
    mark = LastMicrobatchMark(trainer)
    control = []
    try:
        for _ in range(steps):
            device.mark()
            start = time.perf_counter()
            trainer.step()
            control.append(mark.at - start)
        device.mark()
    finally:
        mark.remove()
    return {
        "perfgate_s": clock.host_s,
        "device_s": device.intervals(),
        "device_clock": device.name,
        "control_s": control,
        "num_microbatches": trainer.settings.num_microbatches,
    }


def measure(args: argparse.Namespace) -> dict[str, Any]:
    """Everything the module docstring lists, as one JSON-ready dict."""
    import torch

    from perfgate.workload.megatron_core.plan import settings_for
    from perfgate.workload.megatron_core.trainer import Trainer, init_distributed, shutdown
    from perfgate.workload.runtime import rank_info
    from perfgate.workload.spec import WorkloadSpec
    from perfgate.workload.versions import driver_version

    spec = WorkloadSpec.read(args.spec)
    s = settings_for(spec.row, spec.overrides, 1)
    cuda = s.device == "cuda"
    b_fields = {k.removeprefix("model."): v for k, v in json.loads(args.b_overrides).items()}
    out: dict[str, Any] = {"row_id": s.row_id, "device": s.device, "torch": torch.__version__}
    init_distributed(s, rank_info())
    try:
        if cuda:
            out.update(gpu_name=torch.cuda.get_device_name(), driver=driver_version())
        shapes = gemm_shapes(s, cuda, args.sweep)
        gemms = [{"mnk": list(mnk), "tflops": gemm_tflops(torch, *mnk, cuda)} for mnk in shapes]
        out["gemm"] = {"shapes": gemms, "peak_tflops": max(g["tflops"] for g in gemms)}
        trainer = Trainer(s)
        for _ in range(2):  # warm-up: allocator, cuBLAS and SDPA kernel selection
            trainer.step()
        out["flops_a"] = {
            "step": count(torch, trainer, False),
            "forward": count(torch, trainer, True),
        }
        before = set_fields(trainer.config, b_fields)
        out["flops_b"] = {"step": count(torch, trainer, False), "fields": b_fields}
        set_fields(trainer.config, before)
        if args.interleave:
            out["b_cost"] = interleave(torch, trainer, b_fields, args.interleave)
        if args.clock_steps:
            out["clocks"] = clock_loops(torch, trainer, args.clock_steps)
    finally:
        shutdown()
    return out


def main(argv: list[str] | None = None) -> int:
    """Run the measurements and write them to OUT.json."""
    parser = argparse.ArgumentParser(prog="python -m gpucheck.measure")
    parser.add_argument("spec")
    parser.add_argument("out")
    parser.add_argument("--b-overrides", default="{}", help="B's model.* overrides (JSON)")
    parser.add_argument("--sweep", action="store_true", help="time more GEMM shapes")
    parser.add_argument("--interleave", type=int, default=0, help="steps per A/B block")
    parser.add_argument("--clock-steps", type=int, default=0, help="steps of each clock loop")
    args = parser.parse_args(argv)
    start = time.monotonic()
    result = measure(args)
    result["wall_s"] = time.monotonic() - start
    Path(args.out).write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
