"""A stand-in for nemo_automodel.recipes.llm.benchmark in the automodel backend's tests.

It checks it was started the way perfgate starts the real recipe (--config FILE, torchrun's
variables) and prints the real recipe's log lines (its f-strings behind Automodel's log
format) with step times from a real series, so perfgate.logs reads them as it would.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

P = "2025-11-03 10:00:00 | INFO | nemo_automodel.recipes.llm.benchmark | "


def main() -> int:
    argv = sys.argv[1:]
    assert argv[0] == "--config", argv
    text = Path(argv[1]).read_text()
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        assert os.environ.get(name), f"{name} not set"

    # The YAML perfgate writes has one "key": value per line: enough to read a few back.
    def value(key: str) -> str:
        return re.search(rf'^\s*"{key}": (.+)$', text, re.M).group(1)

    steps, warmup = int(value("max_steps")), int(value("warmup_steps"))
    Path(os.environ["FAKE_SEEN"]).write_text(
        json.dumps({"argv": argv, "text": text, "env": {k: os.environ[k] for k in os.environ}})
    )
    if os.environ["RANK"] != "0":
        return 0
    times = [
        float(line.split(",")[1])
        for line in Path(os.environ["FAKE_SERIES"]).read_text().splitlines()
        if line and line[0].isdigit()
    ]
    print(f"cfg-path: {argv[1]}")
    print(P + f"Running {steps} iterations with {warmup} warmup steps", flush=True)
    for i in range(steps):
        print(P + f"Rank 0 | Iteration {i}")
        print(
            P + f"Rank 0 | Iteration {i} | num_label_tokens=524288 | "
            f"Max Memory Allocated: 61.2{i % 10} GB | loss=11.98{i % 10}"
        )
        print(P + f"Max iter time: {times[i]:.6f} seconds")
        print(P + f"MFU: {47.5:.6f}% | FLOPs scope: model", flush=True)
    if int(os.environ.get("FAKE_EXIT", "0")):
        return int(os.environ["FAKE_EXIT"])
    avg = sum(times[warmup:steps]) / (steps - warmup)
    print(
        P
        + f"Average iteration time: {avg:.3f} seconds (excluding first {warmup} warmup iterations)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
