"""A stand-in training script for the command backend's tests: prints real NeMo 2 log lines.

Step times come from a real series (one value per line of a reference CSV); lines are
formatted as NeMo 2's MegatronProgressBar does (0-based iteration, 4 significant digits).
Behaviour is steered by environment variables so one script covers every case.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path


def main() -> int:
    times = [
        float(line.split(",")[1])
        for line in Path(os.environ["FAKE_SERIES"]).read_text().splitlines()
        if line and line[0].isdigit()
    ]
    steps = int(os.environ.get("PERFGATE_STEPS", len(times)))
    sleep_s = float(os.environ.get("FAKE_SLEEP_S", "0"))
    fail_at = int(os.environ.get("FAKE_FAIL_AT", "-1"))
    rank = os.environ.get("RANK", "?")
    print(f"[NeMo I 2025-10-02 13:23:36 utils:662] rank {rank} of {os.environ['WORLD_SIZE']}")
    print("NCCL INFO banner with a stray byte:", flush=True)
    sys.stdout.buffer.write(b"\xff\xfe NCCL INFO Channel 00/32\n")
    sys.stdout.flush()
    if os.environ.get("RANK") != "0":
        return 0
    samples = 0
    for i in range(steps):
        if i == fail_at:
            print("torch.OutOfMemoryError: CUDA out of memory.", file=sys.stderr, flush=True)
            return 3
        samples += 128
        t = times[i]
        print(
            f"Training epoch 0, iteration {i}/{steps - 1} | lr: 6.897e-06 | global_batch_size: 128"
            f" | global_step: {i} | max_memory_reserved: 127785762816 | max_memory_allocated: "
            f"115792977920 | reduced_train_loss: 11.96 | train_step_timing in s: {t:.4} | "
            f"consumed_samples: {samples}",
            flush=True,
        )
        print(f"step {i} done", file=sys.stderr, flush=True)
        time.sleep(sleep_s)
    return 0


if __name__ == "__main__":
    sys.exit(main())
