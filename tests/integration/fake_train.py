"""A CPU stand-in for a NeMo 2 training run, for the real-Slurm integration tests (test code).

Rank 0 prints NeMo 2.x progress lines (0-based `iteration i/N-1`, 4 significant digits), the
format perfgate.logs parses from real jobs. Every rank records what it saw of its identity
and environment in OUTPUT_DIR/ranks/rank-R.json, so tests can check the task layout. Options
make it slow (or crash) under one "image" (A/B), crash, run out of CUDA memory, hang, or diverge.

Each step sleeps its step time; the log reports the sleep as measured, or with --modeled the
step time it models (a fixed +-0.5% pattern around it): a loaded test machine stretches
sleeps unevenly (a 30 ms step drifted 5.1% between the halves of a window once, and its
PASS row became INFRA), which is no part of what a test of the plugin means to check.
--load-drift F stretches step i's sleep by F*i, as such a load does.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import socket
import sys
import time
from pathlib import Path

WATCH = (
    "RANK",
    "WORLD_SIZE",
    "LOCAL_RANK",
    "SLURM_PROCID",
    "SLURM_NTASKS",
    "SLURM_LOCALID",
    "SLURM_NODEID",
    "SLURMD_NODENAME",
    "SLURM_JOB_ID",
    "MASTER_ADDR",
    "MASTER_PORT",
    "CUDA_VISIBLE_DEVICES",
    "PERFGATE_IMAGE",
    "PERFGATE_RUN_LABEL",
    "SLURM_RESTART_COUNT",
)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--step-s", type=float, default=0.05)
    ap.add_argument("--first-step-s", type=float, default=0.3)
    ap.add_argument("--slow-image", default=None, help="PERFGATE_IMAGE under which to slow down")
    ap.add_argument("--slowdown", type=float, default=0.0, help="e.g. 0.05 for 5%% slower")
    ap.add_argument("--crash-at", type=int, default=None)
    ap.add_argument("--crash-image", default=None, help="crash only under this PERFGATE_IMAGE")
    ap.add_argument("--oom-at", type=int, default=None)
    ap.add_argument("--nan-at", type=int, default=None)
    ap.add_argument("--hang-at", type=int, default=None)
    ap.add_argument("--fail-rank", type=int, default=0)
    ap.add_argument("--env", action="append", default=[], help="names to record")
    ap.add_argument("--modeled", action="store_true", help="log modeled, not measured, times")
    ap.add_argument("--load-drift", type=float, default=0.0, help="sleep i*F longer at step i")
    args = ap.parse_args()

    rank = int(os.environ.get("RANK", "0"))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    steps = int(os.environ.get("PERFGATE_STEPS", "20"))
    out = Path(os.environ.get("PERFGATE_OUTPUT_DIR", "."))
    seen = {k: os.environ.get(k) for k in (*WATCH, *args.env)}
    for k in args.env:  # a secret's value is never written down, only that it arrived intact
        if "TOKEN" in k and seen[k] is not None:
            seen[k] = "sha256:" + hashlib.sha256(seen[k].encode()).hexdigest()[:16]
    seen["hostname"] = socket.gethostname()
    (out / "ranks").mkdir(parents=True, exist_ok=True)
    (out / "ranks" / f"rank-{rank}.json").write_text(json.dumps(seen, indent=1))
    print(
        f"fake_train: rank {rank}/{world} on {seen['SLURMD_NODENAME'] or seen['hostname']}",
        flush=True,
    )

    if args.crash_image and os.environ.get("PERFGATE_IMAGE") != args.crash_image:
        args.crash_at = None
    slow = 1.0
    if args.slow_image and os.environ.get("PERFGATE_IMAGE") == args.slow_image:
        slow += args.slowdown
    for i in range(steps):
        t0 = time.perf_counter()
        model = (args.first_step_s if i == 0 else args.step_s) * slow
        time.sleep(model * (1 + args.load_drift * i))
        dt = time.perf_counter() - t0
        if args.modeled:  # deterministic: -0.5% .. +0.5% in a fixed pattern
            dt = model * (1 + 0.0025 * ((i * 7) % 5 - 2))
        me = rank == args.fail_rank
        if me and args.crash_at == i:
            raise RuntimeError(f"fake_train: simulated failure at step {i}")
        if me and args.oom_at == i:
            print("Traceback (most recent call last):", file=sys.stderr)
            print('  File "fake_train.py", line 1, in <module>', file=sys.stderr)
            print(
                "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 "
                "has a total capacity of 79.11 GiB of which 1.23 GiB is free.",
                file=sys.stderr,
                flush=True,
            )
            return 1
        if args.hang_at == i:
            time.sleep(10_000)
        if rank == 0:
            loss = (
                "nan" if args.nan_at is not None and i >= args.nan_at else f"{11.96 - i * 0.01:.4g}"
            )
            print(
                f"Training epoch 0, iteration {i}/{steps - 1} | lr: 6.897e-06 | "
                f"global_batch_size: 128 | global_step: {i} | reduced_train_loss: {loss} | "
                f"train_step_timing in s: {dt:.4g} | consumed_samples: {128 * (i + 1)}",
                flush=True,
            )
            if args.nan_at is not None and i >= args.nan_at:
                print(
                    f" [2026-01-01 00:00:00] iteration {i + 1}/{steps} | grad norm: nan |",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
