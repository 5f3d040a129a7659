"""--cpu only: the TP=2 run, the measurements and the pair runs in one process per rank.

    python -m gpucheck.runner PLAN.json        (one process per rank: RANK, WORLD_SIZE, .. set)

Importing torch and Megatron-Core costs a process about 5 CPU-seconds, more than a whole CPU
run of the 2-layer model, so --cpu starts its two ranks once. Both ranks run the plan's
multi-rank items (the TP=2 spec); then rank 0 alone, in a world of one on a fresh port, runs
the single-rank items (the measurements, the pair runs) and rank 1 ends. Each item enters as
its own process would: `python -m perfgate.workload SPEC` is dispatch.main([SPEC]), `python -m
gpucheck.measure ..` is measure.main([..]), with file descriptors 1 and 2 sent to the item's
log. Items share the interpreter and its imported modules only: each sets up and tears down
torch.distributed and Megatron-Core's parallel state itself, as in its own process. On a GPU
every run keeps its own process (launch noise is part of what the pairs measure there).

PLAN: {"items": [{"name", "entry", "args", "log", "ranks"}, ..], "report": PATH}; multi-rank
items first; {rank} in a log's path is the rank's number. Each rank writes PATH.rank<N>.json,
[{"name", "exit_code", "wall_s"}, ..], after every item (a killed runner leaves what it
finished).
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from gpucheck.runs import free_port

# The entries an item may name: what `python -m MODULE` runs, as MODULE's main(argv) -> int.
ENTRIES = {
    "perfgate.workload": "perfgate.workload.dispatch",
    "gpucheck.measure": "gpucheck.measure",
}


@contextlib.contextmanager
def output_to(path: Path) -> Iterator[None]:
    """Send this process's stdout and stderr (the descriptors, so C code's too) to a file."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with open(path, "wb") as f:
        os.dup2(f.fileno(), 1)
        os.dup2(f.fileno(), 2)
    try:
        yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        for fd, copy in zip((1, 2), saved, strict=True):
            os.dup2(copy, fd)
            os.close(copy)


def solo_env(port: int) -> dict[str, str]:
    """The variables of a world of one rank, on a rendezvous port of its own."""
    one = {"RANK": "0", "LOCAL_RANK": "0", "WORLD_SIZE": "1", "LOCAL_WORLD_SIZE": "1"}
    return {**one, "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)}


def run_item(item: dict[str, Any]) -> int:
    """One item's entry with its arguments, its output in its log; the exit status."""
    main = importlib.import_module(ENTRIES[item["entry"]]).main
    log = Path(item["log"].format(rank=os.environ.get("RANK", "0")))
    log.parent.mkdir(parents=True, exist_ok=True)
    with output_to(log):
        try:
            return int(main([str(a) for a in item["args"]]) or 0)
        except SystemExit as e:  # argparse's refusals
            return e.code if isinstance(e.code, int) else 1
        except Exception as e:  # the next item still runs; the log keeps the reason
            print(f"gpucheck.runner: {item['name']}: {type(e).__name__}: {e}", file=sys.stderr)
            return 1


def main(argv: list[str] | None = None) -> int:
    """Run the plan's items for this rank; 0 when every item this rank ran exited 0."""
    args = sys.argv[1:] if argv is None else argv
    plan = json.loads(Path(args[0]).read_text())
    rank = int(os.environ.get("RANK", "0"))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    report = Path(f"{plan['report']}.rank{rank}.json")
    done: list[dict[str, Any]] = []
    for item in plan["items"]:
        if item["ranks"] == 1:
            if rank:
                break  # the single-rank items are rank 0's
            os.environ.update(solo_env(free_port()))
        elif item["ranks"] != world:
            raise SystemExit(f"gpucheck.runner: {item['name']} needs {item['ranks']} ranks")
        start = time.monotonic()
        code = run_item(item)
        done.append({"name": item["name"], "exit_code": code, "wall_s": time.monotonic() - start})
        report.write_text(json.dumps(done, indent=1))
    return next((d["exit_code"] for d in done if d["exit_code"]), 0)


if __name__ == "__main__":
    status = main()
    sys.stdout.flush()
    sys.stderr.flush()
    # No interpreter teardown: freeing torch's and Megatron-Core's modules costs a process 1-1.5
    # CPU-seconds, and every item has closed its files and process groups already.
    os._exit(status)
