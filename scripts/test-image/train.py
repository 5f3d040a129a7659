"""A tiny pure-Python training loop: the workload of perfgate's test container images.

`scripts/containers` builds two images holding this same file; they differ only in
/opt/train/VERSION and /opt/train/slowdown (the candidate is deliberately slower). The loop
fits a linear model by SGD for real (the loss goes down) and stands in for the GPU's share
of a step with a fixed wait scaled by the slowdown knob, so the A/B difference between the
images is known. Rank 0 prints NeMo 2.x progress lines (what perfgate.logs parses); every
rank records what it saw of the container in $PERFGATE_OUTPUT_DIR/ranks/rank-R.json.
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
FEATURES = 16
BATCH = 32


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
    args = ap.parse_args()

    rank = int(os.environ.get("RANK", "0"))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    steps = int(os.environ.get("PERFGATE_STEPS", "20"))
    out = Path(os.environ.get("PERFGATE_OUTPUT_DIR", "."))
    slowdown = 0.0 if args.ignore_slowdown else float((HERE / "slowdown").read_text())
    seen = {**image_facts(), "rank": rank, "world_size": world}
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
        wait = (args.first_step_s if i == 0 else args.step_s) * (1 + slowdown)
        time.sleep(max(0.0, wait - (time.perf_counter() - t0)))
        dt = time.perf_counter() - t0
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
