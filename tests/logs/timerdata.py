"""Format-synthetic Megatron timer blocks (test code): no public log shows a complete level-1
block verbatim (tests/data/logs/README.md), so these are built from Megatron-Core's own format
strings (megatron/core/timers.py @ d98e8a64, lines 338-376) and its iteration line
(megatron/training/training.py). Real excerpts are in tests/data/logs/megatron_*timers*.log.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence


def minmax_block(times_ms: Mapping[str, tuple[float, float]], prefix: str = "") -> str:
    """`(min, max) time across ranks (ms):` and one `    name ....: (min, max)` line each."""
    out = prefix + "(min, max) time across ranks (ms):"
    for name, (lo, hi) in times_ms.items():
        out += "\n    {}: ({:.2f}, {:.2f})".format((name + " ").ljust(48, "."), lo, hi)
    return out + "\n"


def max_block(times_ms: Mapping[str, float]) -> str:
    """`max time across ranks (ms):` and one `    name ....: max` line each."""
    out = "max time across ranks (ms):"
    for name, hi in times_ms.items():
        out += "\n    {}: {:.2f}".format((name + " ").ljust(48, "."), hi)
    return out + "\n"


def all_block(times_ms: Mapping[str, Sequence[float]]) -> str:
    """`times across ranks (ms):`, then per timer `  name:` and `     rank {:2d}: {:.2f}` lines."""
    out = "times across ranks (ms):"
    for name, per_rank in times_ms.items():
        out += f"\n  {name}:"
        for rank, ms in enumerate(per_rank):
            out += f"\n     rank {rank:2d}: {ms:.2f}"
    return out + "\n"


def iteration_line(n: int, total: int, ms: float) -> str:
    """Megatron-LM's 2024 iteration line (1-based n), as log_formats.md section 1 shows it."""
    return (
        f" [2024-04-06 03:02:{n % 60:02d}] iteration {n:8d}/{total:8d} | consumed samples: "
        f"{n * 128:12d} | elapsed time per iteration (ms): {ms:.1f} | learning rate: "
        "1.420000E-05 | global batch size:   128 | lm loss: 1.818812E+00 | loss scale: 1.0 | "
        "grad norm: 1.300 | number of skipped iterations:   0 | number of nan iterations:   0 |\n"
    )
