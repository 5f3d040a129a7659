"""What a real cluster can mean: bounds on every count, size and time perfgate is given, and
caps on the sizes of the files, names and text it reads or echoes.

Each bound is named in its one-line error with the reason it is where it is, so a typo
(`--time-limit 99999999999999`, gbs 1e29) is refused at once instead of becoming a plan of
133 billion GPU-hours or a 200 kB error line. The bounds are generous: an order of magnitude
or more above the largest real configuration, never a policy.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

from perfgate.errors import ConfigError


class Bound(NamedTuple):
    """The largest value a number may take, and why (said in the error)."""

    value: float
    why: str


# Counts and sizes of a training run (the largest clusters have about 10^5 GPUs).
GPUS = Bound(1_000_000, "no cluster has more GPUs")
GPUS_PER_NODE = Bound(128, "no node has more GPUs")
NODES = Bound(200_000, "no cluster has more nodes")
BATCH = Bound(1 << 24, "no training run has a larger batch")
SEQ_LEN = Bound(1 << 24, "no training run has longer sequences")
VP = Bound(1024, "no pipeline has more virtual stages")
STEPS = Bound(1_000_000, "a performance run measures far fewer steps")
TIME_LIMIT_MIN = Bound(30 * 24 * 60, "30 days; Slurm sites cap jobs at days")
STEP_TIME_S = Bound(86_400, "a day per step")
RUNS = Bound(1000, "launches of one row")
JOBS = Bound(100_000, "jobs at once")
POLL_S = Bound(3600, "an hour between polls")
GPU_HOURS = Bound(1e9, "a century of the largest cluster")

# Caps on what is read and echoed.
MAX_NAME_CHARS = 256  # ids, variants, env names, override paths, marker values
MAX_TEXT_CHARS = 65_536  # one free-text value: a note, a source, an env or override value
MAX_BASELINES_BYTES = 16 << 20  # one baselines/<gpu>.json (the largest real one: 62 kB)
MAX_SMALL_FILE_BYTES = 1 << 20  # --env-file, noise-prior.json, a workload spec
MAX_RESULTS_BYTES = 1 << 30  # a results.json read back by `perfgate report` / `list`


def at_most(what: str, value: float, bound: Bound) -> None:
    """A one-line ConfigError when value is above the bound: "<what> <value>: at most
    <bound> (<why>)"; the value is cut to 40 characters."""
    if value <= bound.value:
        return
    text = str(value)
    shown = text if len(text) <= 40 else text[:39] + "…"
    raise ConfigError(f"{what} {shown}: at most {int(bound.value):,} ({bound.why})")


# The numbers `perfgate flops` / `mfu` take, by option (--num-gpus ...).
RUN_SHAPE = {
    "num_gpus": GPUS,
    "gbs": BATCH,
    "seq_len": SEQ_LEN,
    "tp": GPUS,
    "step_time": STEP_TIME_S,
}


def check_options(options: object, bounds: Mapping[str, Bound]) -> None:
    """at_most for each option attribute that is set: `--num-gpus 1e11` is one line."""
    for name, bound in bounds.items():
        value = getattr(options, name, None)
        if value is not None:
            at_most(f"--{name.replace('_', '-')}", value, bound)


def size(num_bytes: float) -> str:
    """A byte count for people: 16 MiB, 512 kiB, 300 bytes."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("kiB", 1 << 10)):
        if num_bytes >= scale:
            value = num_bytes / scale
            return f"{value:.0f} {unit}" if value.is_integer() else f"{value:.1f} {unit}"
    return f"{num_bytes:.0f} bytes"
