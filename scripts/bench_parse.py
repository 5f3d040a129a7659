#!/usr/bin/env python3
"""Benchmark perfgate.logs.parse_files on a synthetic all-rank log of a 1000-GPU job.

Scenario 1 imitates `srun -l` output of a Megatron-Bridge run with NCCL_DEBUG=INFO: every
line carries its rank label, NCCL INFO lines (real line shapes) are well over 90% of the
bytes, banners carry invalid UTF-8, rank 0 prints `Step Time` lines and the last rank the
iteration lines, and dp-rank-0 ranks print memory reports. Scenario 2 is the worst case for
candidate lines: every rank prints its own step line (TorchTitan, torchrun `[rankN]:`
labels). Scenario 0 is a dense log of one long pretraining run: one NeMo 2 or Megatron line per
step and nothing else (--dense-steps of them): step lines per second of CPU time, the bytes
per step the parsed columns hold and the process's peak RSS. Each log is written to a temp
dir, parsed, and the steps found are checked against the ones written.

    python scripts/bench_parse.py [--size-mb 400] [--ranks 1000] [--steps 200] [--repeat 3]
                                  [--dense-steps 1000000] [--dense-format nemo2|megatron]
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import sys
import tempfile
import time
from pathlib import Path

from perfgate import logs
from perfgate.logs.formats import MARKERS
from perfgate.logs.scan import LineScanner

NCCL_SHAPES = (
    "{host}:{pid}:{pid} [{lr}] NCCL INFO Channel {c:02d}/0 : {r}[{lr}] -> {n}[{nl}] via P2P/IPC",
    "{host}:{pid}:{pid} [{lr}] NCCL INFO Channel {c:02d}/1 : {r}[{lr}] -> {n}[{nl}] [send] via "
    "NET/IB/0/GDRDMA",
    "{host}:{pid}:{pid} [{lr}] NCCL INFO Connected all rings, use ring PXN 0 GDR 1",
    "{host}:{pid}:{pid} [{lr}] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB/SHARP [1]mlx5_1:1/IB/SHARP"
    " [2]mlx5_4:1/IB/SHARP [3]mlx5_5:1/IB/SHARP [RO]; OOB eth0:10.240.179.204<0>",
    "{host}:{pid}:{pid} [{lr}] NCCL INFO comm 0x{c:x}a1f0 rank {r} nRanks {world} nNodes "
    "{nodes} localRanks 8 localRank {lr} MNNVL 0",
    "{host}:{pid}:{pid} [{lr}] NCCL INFO Trees [0] {n}/-1/-1->{r}->{p} [1] {n}/-1/-1->{r}->{p}",
)
ITERATION = (
    " [2026-03-27 23:{mm:02d}:{ss:02d}] iteration {it:8d}/{total:8d} | consumed samples: "
    "{cs:12d} | elapsed time per iteration (ms): {ms:.1f} | learning rate: 3.000000E-05 | "
    "global batch size:  2048 | lm loss: {loss:.6E} | loss scale: 1.0 | grad norm: 0.352 | "
    "number of skipped iterations:   0 | number of nan iterations:   0 |"
)
STEP_TIME = "Step Time : {s:.2f}s GPU utilization: 1190.8MODEL_TFLOP/s/GPU"
TITAN = (
    "[titan] 2026-02-24 {hh:02d}:{mm:02d}:{ss:02d},{ms:03d} - root - INFO - step: {step:2}  "
    "loss:  7.62585  grad_norm: 26.6250  memory: {mem:5.2f}GiB(37.51%)  tps: {tps:,}  "
    "tflops: 314.71  mfu: 13.99%"
)
MEMORY = (
    "[Rank {r}] (after 1 iterations) memory (GB) | mem-allocated-gigabytes: 50.804 | "
    "mem-max-allocated-gigabytes: 116.45 | mem-max-reserved-gigabytes: 127.05 | "
    "mem-alloc-retires: 0 | mem-allocated-count: 594"
)


NEMO2 = (
    "Training epoch 0, iteration {i}/{n} | lr: 6.897e-06 | global_batch_size: 128 | "
    "global_step: {i} | max_memory_reserved: 127785762816 | max_memory_allocated: 115792977920 | "
    "reduced_train_loss: 11.96 | train_step_timing in s: {t:.4f} | TFLOPS_per_GPU: 1.249e+03 | "
    "consumed_samples: {cs}\n"
)
MEGATRON = (
    " [2024-04-06 02:59:36] iteration {it:8d}/{n:8d} | consumed samples: {cs:12d} | elapsed "
    "time per iteration (ms): {ms:.1f} | throughput per GPU (TFLOP/s/GPU): 239.8 | learning "
    "rate: 8.600000E-06 | global batch size:   128 | lm loss: 1.825991E+00 | loss scale: 1.0 | "
    "grad norm: 1.426 | number of skipped iterations:   0 | number of nan iterations:   0 |\n"
)


def write_dense(path: Path, steps: int, fmt: str, seed: int = 0) -> list[float]:
    """One line per step, nothing else; return the step times (s) written."""
    rng = random.Random(seed)
    times = []
    with path.open("w") as f:
        for i in range(steps):
            t = 6.0 + rng.gauss(0, 0.03)
            if fmt == "nemo2":
                t = float(f"{t:.4f}")
                f.write(NEMO2.format(i=i, n=steps, t=t, cs=128 * (i + 1)))
            else:
                ms = float(f"{t * 1000:.1f}")
                t = float(f"{ms:.1f}e-3")
                f.write(MEGATRON.format(it=i + 1, n=steps, cs=128 * (i + 1), ms=ms))
            times.append(t)
    return times


def held_bytes(series: logs.StepSeries) -> int:
    """Bytes of the arrays a parsed series holds (its columns)."""
    table = series.steps
    arrays = [table.numbers, table.times, table.ranks]  # type: ignore[attr-defined]
    for col in table.fields.values():  # type: ignore[attr-defined]
        arrays.append(col.values)
        if col.mask is not None:
            arrays.append(col.mask)
    return sum(len(a) * getattr(a, "itemsize", 1) for a in arrays)


def bench_dense(tmp: str, steps: int, fmt: str) -> None:
    """Scenario 0: parse a dense log; print step lines/s, bytes per step and peak RSS."""
    path = Path(tmp) / f"dense-{fmt}.log"
    t0 = time.perf_counter()
    expected = write_dense(path, steps, fmt)
    size = path.stat().st_size
    print(
        f"wrote {size / 1e6:.0f} MB ({steps} {fmt} step lines) in {time.perf_counter() - t0:.1f} s"
    )
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    cpu, wall = time.process_time(), time.perf_counter()
    series = logs.parse_files([path])
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss0) * 1024
    assert series.step_times == expected, "dense step times differ from the ones written"
    assert series.step_numbers == list(range(steps))
    print(
        f"dense {fmt} log: {steps / cpu:,.0f} step lines/s of CPU ({cpu:.2f} s; "
        f"wall {wall:.2f} s), "
        f"{held_bytes(series) / steps:.0f} bytes per step held, peak RSS {peak_mib:.0f} MiB "
        f"({grown / steps:.0f} bytes per step over the start)"
    )
    path.unlink()


def flood_block(ranks: int, rng: random.Random, target_bytes: int) -> bytes:
    """NCCL INFO lines from random ranks, srun-labeled, with a non-UTF-8 banner now and then."""
    lines = []
    size = 0
    while size < target_bytes:
        r = rng.randrange(ranks)
        lr = r % 8
        shape = rng.choice(NCCL_SHAPES)
        line = f"{r}: " + shape.format(
            host=f"pool0-{r // 8:04d}",
            pid=1000 + lr,
            lr=lr,
            r=r,
            n=(r + 1) % ranks,
            nl=(lr + 1) % 8,
            p=(r - 1) % ranks,
            c=rng.randrange(32),
            world=ranks,
            nodes=ranks // 8,
        )
        data = line.encode() + b"\n"
        if rng.random() < 0.001:
            data += f"{r}: ".encode() + b"\x1b[1;32m\xff\xfe DeepEP \x80\x81 banner\x1b[0m\n"
        lines.append(data)
        size += len(data)
    return b"".join(lines)


def write_log(path: Path, size_mb: int, ranks: int, steps: int, seed: int = 0) -> list[float]:
    """Write the synthetic log; return the step times (s) it holds, in step order."""
    rng = random.Random(seed)
    per_step = max(1, size_mb * (1 << 20) // (steps + 1))
    blocks = [flood_block(ranks, rng, per_step) for _ in range(4)]
    last = ranks - 1
    times = []
    with path.open("wb") as f:
        f.write(blocks[0])
        for k in range(steps):
            ms = round(5650.0 + rng.gauss(0, 25) + (38000.0 if k == 0 else 0.0), 1)
            times.append(float(f"{ms:.1f}e-3"))  # the iteration line's ms value, in s
            f.write(f"0: {STEP_TIME.format(s=ms / 1000)}\n".encode())
            f.write(blocks[(k + 1) % 4])
            line = ITERATION.format(
                mm=(k // 60) % 60,
                ss=k % 60,
                it=k + 1,
                total=steps,
                cs=2048 * (k + 1),
                ms=ms,
                loss=12.0 / (k + 1),
            )
            f.write(f"{last}: {line}\n".encode())
            if k == 0:
                for r in range(0, ranks, max(1, ranks // 8)):
                    f.write(f"{r}: {MEMORY.format(r=r)}\n".encode())
    return times


def write_titan_log(path: Path, ranks: int, steps: int, seed: int = 0) -> list[float]:
    """Every rank prints every step (log_freq 1); return the step times rank 0's stamps give."""
    rng = random.Random(seed)
    flood = flood_block(ranks, rng, 64 << 10).replace(b": ", b"]:", 1)
    t_ms = 0
    times = []
    with path.open("wb") as f:
        for step in range(1, steps + 1):
            dt = 2000 + rng.randrange(50) if step > 1 else 30000
            t_ms += dt
            if step > 1:
                times.append(dt / 1000)
            hh, rest = divmod(t_ms // 1000, 3600)
            f.write(flood)
            for r in range(ranks):
                line = TITAN.format(
                    hh=hh % 24,
                    mm=rest // 60,
                    ss=rest % 60,
                    ms=t_ms % 1000,
                    step=step,
                    mem=60 + r % 7,
                    tps=10050 + r % 13,
                )
                f.write(f"[rank{r}]:{line}\n".encode())
    return times


def main(argv: list[str] | None = None) -> int:
    """Generate, parse, check, and print MB/s."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size-mb", type=int, default=400)
    ap.add_argument("--ranks", type=int, default=1000)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=3, help="parse this many times; best is kept")
    ap.add_argument("--dir", default=None, help="where to write the log (default: a temp dir)")
    ap.add_argument("--dense-steps", type=int, default=1_000_000, help="0: skip scenario 0")
    ap.add_argument("--dense-format", choices=("nemo2", "megatron"), default="nemo2")
    ap.add_argument("--only-dense", action="store_true", help="scenario 0 alone")
    args = ap.parse_args(argv)

    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        if args.dense_steps:  # first: the peak RSS is the process's, scenario 1 would set it
            bench_dense(tmp, args.dense_steps, args.dense_format)
        if args.only_dense:
            return 0
        path = Path(tmp) / "slurm-allranks.out"
        t0 = time.perf_counter()
        expected = write_log(path, args.size_mb, args.ranks, args.steps)
        size = path.stat().st_size
        print(
            f"wrote {size / 1e6:.0f} MB ({args.ranks} ranks, {args.steps} steps) "
            f"in {time.perf_counter() - t0:.1f} s: {path}"
        )
        best = float("inf")
        series = None
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            series = logs.parse_files([path])
            best = min(best, time.perf_counter() - t0)
        assert series is not None
        found = series.step_times
        assert len(found) == args.steps, f"found {len(found)} of {args.steps} steps"
        assert found == expected, "step times differ from the ones written"
        assert [s.step for s in series.steps] == list(range(args.steps))
        assert series.steps[0].mem_peak_gib is not None
        print(
            f"parse_files: {best:.2f} s best of {args.repeat}, {size / 1e6 / best:.0f} MB/s "
            f"(page cache warm), {len(found)} steps found, format {series.format}, "
            f"cpu {os.cpu_count()}, python {sys.version.split()[0]}"
        )
        # Until the first step record the format is unknown and every marker is searched:
        # the speed over an init-time NCCL flood that precedes the first step.
        best_scan = float("inf")
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            with path.open("rb") as f:
                n = sum(1 for _ in LineScanner(f))
            best_scan = min(best_scan, time.perf_counter() - t0)
        print(
            f"scan before the format is known (all {len(MARKERS)} markers): "
            f"{size / 1e6 / best_scan:.0f} MB/s, {n} candidate lines"
        )
        path.unlink()

        path = Path(tmp) / "torchtitan-allranks.out"
        expected = write_titan_log(path, args.ranks, args.steps)
        size = path.stat().st_size
        t0 = time.perf_counter()
        series = logs.parse_files([path])
        took = time.perf_counter() - t0
        assert series.step_times == expected, "TorchTitan step times differ from the stamps"
        lines = args.ranks * args.steps
        print(
            f"every rank logs every step (TorchTitan, {args.ranks} ranks x {args.steps} steps, "
            f"{size / 1e6:.0f} MB): {took:.2f} s, {lines / took:,.0f} step lines/s, "
            f"{len(series.steps)} steps found"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
