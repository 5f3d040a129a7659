"""A tiny pure-Python training loop: the workload of perfgate's test container images.

`scripts/containers` builds two images holding this same file; they differ only in
/opt/train/VERSION and /opt/train/slowdown (the candidate is deliberately slower). The loop
fits a linear model by SGD for real (the loss goes down) and stands in for the GPU's share
of a step with a fixed wait scaled by the slowdown knob, so the A/B difference between the
images is known. Rank 0 prints NeMo 2.x progress lines (what perfgate.logs parses); every
rank records what it saw of the container in $PERFGATE_OUTPUT_DIR/ranks/rank-R.json.

The bisect series (images/series/nightly-N.sqsh) adds /series/knobs.json to the baseline
image: a name, version lines rank 0 prints first (in the shapes of NCCL's, PyTorch's banner
and Transformer Engine's debug line: synthetic values), and a slowdown of one phase. With
--timing-log-level 1 the last rank prints what Megatron-LM's last rank prints: its iteration
line and the level-1 timer block (format-synthetic, from megatron/core/timers.py), the wait
split forward-backward 60%, all-grads-sync 20%, optimizer 20%, the slow phase longer.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import socket
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SERIES = Path("/series/knobs.json")  # present in the bisect series' images only
FEATURES = 16
BATCH = 32
PHASES = {"forward-backward": 0.6, "all-grads-sync": 0.2, "optimizer": 0.2}


def knobs() -> dict:
    """The series image's knobs: name, version lines, the slow phase and by how much."""
    return json.loads(SERIES.read_text()) if SERIES.is_file() else {}


def timer_block(step_s: float, slowdown: float, slow_phase: str | None, extra_s: float) -> str:
    """The step's phases as Megatron-Core's timers print them (ms, min and max across ranks)."""
    out = "(min, max) time across ranks (ms):"
    for name, share in PHASES.items():
        ms = step_s * share * (1 + slowdown) * 1000
        if name == slow_phase:
            ms += extra_s * 1000
        out += "\n    {}: ({:.2f}, {:.2f})".format((name + " ").ljust(48, "."), ms * 0.98, ms)
    return out


def iteration_line(i: int, steps: int, dt: float, world: int) -> str:
    """Megatron-LM's iteration line (1-based), as its last rank prints it."""
    stamp = time.strftime("%Y-%m-%d %H:%M:%S")
    return (
        f" [{stamp}] iteration {i + 1:8d}/{steps:8d} | consumed samples: "
        f"{BATCH * world * (i + 1):12d} | elapsed time per iteration (ms): {dt * 1000:.1f} | "
        "learning rate: 5.000000E-02 | global batch size: "
        f"{BATCH * world:5d} | number of skipped iterations:   0 | number of nan iterations:   0 |"
    )


def image_facts() -> dict[str, object]:
    """What this rank sees of its container: image files, mounts, environment."""
    os_release = Path("/etc/os-release")
    pretty = next(
        (
            line.split("=", 1)[1].strip('"')
            for line in os_release.read_text().splitlines()
            if line.startswith("PRETTY_NAME=")
        ),
        None,
    )
    try:
        import perfgate

        perfgate_file = perfgate.__file__
    except ImportError:
        perfgate_file = None
    return {
        "version": (HERE / "VERSION").read_text().strip(),
        "slowdown": (HERE / "slowdown").read_text().strip(),
        "os": pretty,
        "python": sys.executable,
        "perfgate": perfgate_file,
        # access(2) reports EROFS on a read-only mount without writing anything
        "perfgate_src_writable": os.access("/opt/perfgate/src", os.W_OK),
        "cwd": os.getcwd(),
        "hostname": socket.gethostname(),
    }


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--step-s", type=float, default=0.05, help="the stand-in device time")
    ap.add_argument("--first-step-s", type=float, default=0.2)
    ap.add_argument("--env", action="append", default=[], help="names to record")
    ap.add_argument("--file", action="append", default=[], help="files whose text to record")
    ap.add_argument(
        "--ignore-slowdown", action="store_true", help="a model the image's change does not slow"
    )
    ap.add_argument("--timing-log-level", type=int, default=0, help="as Megatron-LM's flag")
    ap.add_argument(
        "--modeled-cv",
        type=float,
        default=None,
        help="log modeled times (nominal x a normal noise of this CV), not the measured ones: "
        "a verdict then does not depend on the load of the machine running the test",
    )
    args = ap.parse_args()

    rank = int(os.environ.get("RANK", "0"))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    steps = int(os.environ.get("PERFGATE_STEPS", "20"))
    out = Path(os.environ.get("PERFGATE_OUTPUT_DIR", "."))
    slowdown = 0.0 if args.ignore_slowdown else float((HERE / "slowdown").read_text())
    series = knobs()
    slow_phase = None if args.ignore_slowdown else series.get("slow_phase")
    extra_s = args.step_s * float(series.get("phase_slowdown", 0.0)) if slow_phase else 0.0
    if rank == 0:
        for line in series.get("lines", []):
            print(line, flush=True)
    noise = random.Random(os.getpid())
    seen = {**image_facts(), "rank": rank, "world_size": world, "series": series.get("name")}
    seen["env"] = {k: os.environ.get(k) for k in args.env}
    for k, v in seen["env"].items():  # a secret is never written down, only that it arrived
        if v is not None and any(m in k for m in ("TOKEN", "KEY", "SECRET", "PASSWORD")):
            seen["env"][k] = "sha256:" + hashlib.sha256(v.encode()).hexdigest()[:16]
    seen["files"] = {f: Path(f).read_text() if Path(f).is_file() else None for f in args.file}
    (out / "ranks").mkdir(parents=True, exist_ok=True)
    (out / "ranks" / f"rank-{rank}.json").write_text(json.dumps(seen, indent=1))

    rng = random.Random(1234 + rank)
    true_w = [rng.uniform(-1, 1) for _ in range(FEATURES)]
    data = []
    for _ in range(BATCH * 8):
        x = [rng.gauss(0, 1) for _ in range(FEATURES)]
        data.append((x, sum(a * b for a, b in zip(true_w, x, strict=True))))
    w = [0.0] * FEATURES
    lr = 0.05
    for i in range(steps):
        t0 = time.perf_counter()
        batch = data[(i * BATCH) % len(data) :][:BATCH]
        grad = [0.0] * FEATURES
        loss = 0.0
        for x, y in batch:
            err = sum(a * b for a, b in zip(w, x, strict=True)) - y
            loss += err * err / len(batch)
            for j in range(FEATURES):
                grad[j] += 2 * err * x[j] / len(batch)
        w = [a - lr * g for a, g in zip(w, grad, strict=True)]
        nominal = (args.first_step_s if i == 0 else args.step_s) * (1 + slowdown) + extra_s
        time.sleep(max(0.0, nominal - (time.perf_counter() - t0)))
        dt = time.perf_counter() - t0
        if args.modeled_cv is not None:
            dt = nominal * (1 + noise.gauss(0.0, args.modeled_cv))
        if args.timing_log_level >= 1 and rank == world - 1:
            share = dt / nominal  # the phases carry the step's own noise
            block = timer_block(args.step_s * share, slowdown, slow_phase, extra_s * share)
            print(iteration_line(i, steps, dt, world), flush=True)
            print(block, flush=True)
        if rank == 0:
            print(
                f"Training epoch 0, iteration {i}/{steps - 1} | lr: {lr:.4g} | "
                f"global_batch_size: {BATCH * world} | global_step: {i} | "
                f"reduced_train_loss: {loss:.4g} | train_step_timing in s: {dt:.4g} | "
                f"consumed_samples: {BATCH * world * (i + 1)}",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
