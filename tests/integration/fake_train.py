"""A CPU stand-in for a NeMo 2 training run, for the real-Slurm integration tests (test code).

Rank 0 prints NeMo 2.x progress lines (0-based `iteration i/N-1`, 4 significant digits), the
format perfgate.logs parses from real jobs. Every rank records what it saw of its identity
and environment in OUTPUT_DIR/ranks/rank-R.json, so tests can check the task layout. Options
make it slow (or crash) under one "image" (A/B), on one node (a slow node) or in one launch label
(a first run but not its confirmation), crash, run out of CUDA memory, hang, or diverge.

Each step sleeps its step time; the log reports the sleep as measured, or with --modeled the
step time it models (a fixed +-0.5% pattern around it; --modeled-cv: Gaussian noise of that
CV): a loaded test machine stretches sleeps unevenly (a 30 ms step drifted 5.1% between the
halves of a window once, and its PASS row became INFRA), which is no part of what a test of
the plugin means to check. --load-drift F stretches step i's sleep by F*i, as such a load does.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import socket
import subprocess
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


def job_nodes(here: str) -> list[str]:
    """Every node of the job (a slow node slows a synchronous job on all its nodes)."""
    listed = os.environ.get("SLURM_JOB_NODELIST")
    if not listed:
        return [here]
    try:
        out = subprocess.run(
            ["scontrol", "show", "hostnames", listed], capture_output=True, text=True, timeout=30
        ).stdout.split()
    except (OSError, subprocess.SubprocessError):
        out = []
    return out or [here]


PHASES = {"forward-backward": 0.6, "all-grads-sync": 0.2, "optimizer": 0.2}


def timer_block(step_s: float, args: argparse.Namespace, slowdown: float) -> str:
    """The step's phases as Megatron-Core's timers print them (timers.py format strings): the
    slowdown (a fraction of the step) all in --slow-phase, else spread over every phase."""
    base = step_s / (1 + slowdown)
    out = "(min, max) time across ranks (ms):"
    for name, share in PHASES.items():
        ms = base * share * 1000
        if args.slow_phase is None:
            ms *= 1 + slowdown
        elif name == args.slow_phase:
            ms += base * slowdown * 1000
        out += "\n    {}: ({:.2f}, {:.2f})".format((name + " ").ljust(48, "."), ms * 0.98, ms)
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--step-s", type=float, default=0.05)
    ap.add_argument("--first-step-s", type=float, default=0.3)
    ap.add_argument("--slow-image", default=None, help="PERFGATE_IMAGE under which to slow down")
    ap.add_argument(
        "--slow-images", default="", help="comma-separated PERFGATE_IMAGEs to slow down under"
    )
    ap.add_argument(
        "--timers",
        action="store_true",
        help="rank 0 prints a Megatron timer block after each progress line (format-synthetic, "
        "as perfgate's NeMo 2 callback prints them): forward-backward 60%%, all-grads-sync "
        "20%%, optimizer 20%% of the step",
    )
    ap.add_argument("--slow-phase", default=None, help="the phase the slowdown lands in")
    ap.add_argument(
        "--nccl",
        default=None,
        metavar="VER[,SLOW_VER]",
        help="print `NCCL version VER+cuda12.9` first (SLOW_VER under a slow image)",
    )
    ap.add_argument("--slowdown", type=float, default=0.0, help="e.g. 0.05 for 5%% slower")
    ap.add_argument("--slow-node", default=None, help="slow down on this node (a slow node)")
    ap.add_argument("--slow-label", default=None, help="slow down in launches of this label")
    ap.add_argument(
        "--straggler-rank",
        type=int,
        default=None,
        help="rank 0 also prints Megatron-Core's straggler report naming this rank the slowest "
        "(with --slow-node: only on a launch that holds the slow node; elsewhere the slowest "
        "rank changes from report to report, as on healthy nodes)",
    )
    ap.add_argument(
        "--modeled-cv",
        type=float,
        default=None,
        help="log modeled step times (the nominal time x slowdown x a normal noise of this CV) "
        "instead of the measured sleeps: a test's verdict then does not depend on the machine's "
        "load",
    )
    ap.add_argument("--crash-at", type=int, default=None)
    ap.add_argument("--crash-image", default=None, help="crash only under this PERFGATE_IMAGE")
    ap.add_argument("--crash-label", default=None, help="crash only in launches of this label")
    ap.add_argument(
        "--crash-once",
        default=None,
        metavar="FILE",
        help="crash only while FILE does not exist, and create it (the first such launch fails)",
    )
    ap.add_argument("--oom-at", type=int, default=None)
    ap.add_argument("--nan-at", type=int, default=None)
    ap.add_argument("--hang-at", type=int, default=None)
    ap.add_argument("--fail-rank", type=int, default=0)
    ap.add_argument("--env", action="append", default=[], help="names to record")
    ap.add_argument("--hash-env", action="append", default=[], help="names to record hashed")
    ap.add_argument("--modeled", action="store_true", help="log modeled, not measured, times")
    ap.add_argument("--load-drift", type=float, default=0.0, help="sleep i*F longer at step i")
    args = ap.parse_args()

    rank = int(os.environ.get("RANK", "0"))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    steps = int(os.environ.get("PERFGATE_STEPS", "20"))
    out = Path(os.environ.get("PERFGATE_OUTPUT_DIR", "."))
    seen = {k: os.environ.get(k) for k in (*WATCH, *args.env, *args.hash_env)}
    for k in (*args.env, *args.hash_env):  # a secret's value is never written down, only
        if ("TOKEN" in k or k in args.hash_env) and seen[k] is not None:  # that it arrived
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
    if args.crash_label and os.environ.get("PERFGATE_RUN_LABEL") != args.crash_label:
        args.crash_at = None
    if args.crash_at is not None and args.crash_once and rank == args.fail_rank:
        marker = Path(args.crash_once)
        if marker.exists():
            args.crash_at = None
        else:
            marker.touch()
    slow = 1.0
    node = seen["SLURMD_NODENAME"] or seen["hostname"]
    image = os.environ.get("PERFGATE_IMAGE")
    slow_image = image is not None and image in [x for x in args.slow_images.split(",") if x]
    if args.nccl and rank == 0:
        versions = args.nccl.split(",")
        print(f"NCCL version {versions[-1] if slow_image else versions[0]}+cuda12.9", flush=True)
    if (
        slow_image
        or (args.slow_image and os.environ.get("PERFGATE_IMAGE") == args.slow_image)
        or (args.slow_node and args.slow_node in job_nodes(node))
        or (args.slow_label and os.environ.get("PERFGATE_RUN_LABEL") == args.slow_label)
    ):
        slow += args.slowdown
    noise = random.Random(os.getpid())
    progress = out / "ranks" / "progress-0"  # rank 0's last logged step
    for i in range(steps):
        t0 = time.perf_counter()
        nominal = (args.first_step_s if i == 0 else args.step_s) * slow
        time.sleep(nominal * (1 + args.load_drift * i))
        dt = time.perf_counter() - t0
        if args.modeled_cv is not None:
            dt = nominal * (1 + noise.gauss(0.0, args.modeled_cv))
        elif args.modeled:  # deterministic: -0.5% .. +0.5% in a fixed pattern
            dt = nominal * (1 + 0.0025 * ((i * 7) % 5 - 2))
        me = rank == args.fail_rank
        if me and args.crash_at == i:
            # Deterministic at any machine speed: the crash waits until rank 0 has logged this
            # step, and the other ranks stall after it until srun kills them, so a crash at
            # step N always leaves rank 0's steps 0..N in the log.
            if rank != 0:
                _wait_for(progress, i, timeout_s=120)
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
            if args.straggler_rank is not None:  # StragglerDetector's report line (its f-string)
                on_slow = not args.slow_node or args.slow_node in job_nodes(node)
                straggler = args.straggler_rank if on_slow else i % 8
                print(
                    f"INFO:megatron.core.utils:[2026-01-01 00:00:00] | MnRtt/Rnk: "
                    f"{1000 * nominal:.2f}ms/0 | MxRtt/Rnk: {1100 * nominal:.2f}ms/"
                    f"{straggler} | MnEtpt/Rnk: 100.00TF/{straggler} | "
                    "MxEtpt/Rnk: 110.00TF/0",
                    flush=True,
                )
            if args.timers:
                print(timer_block(dt, args, slow - 1.0), flush=True)
            if args.nan_at is not None and i >= args.nan_at:
                print(
                    f" [2026-01-01 00:00:00] iteration {i + 1}/{steps} | grad norm: nan |",
                    flush=True,
                )
            progress.write_text(str(i))
        if args.crash_at == i and not me:
            time.sleep(120)  # another rank fails here: wait for srun to end this one
    return 0


def _wait_for(progress: Path, step: int, timeout_s: float) -> None:
    """Until rank 0 has logged `step` (its progress file), or the timeout."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if int(progress.read_text() or -1) >= step:
                return
        except (OSError, ValueError):
            pass
        time.sleep(0.02)


if __name__ == "__main__":
    sys.exit(main())
