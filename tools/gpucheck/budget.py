"""The check's clock of its own budget, and its progress log."""

from __future__ import annotations

import resource
import time
from pathlib import Path

RESERVE_S = 20.0  # kept for the checks, the JSON and the summary


class Log:
    """Progress lines to stdout and to gpu-check.log in --out."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        path.write_text("")

    def __call__(self, line: str) -> None:
        """Print and keep one line."""
        print(f"gpu-check: {line}", flush=True)
        with open(self.path, "a") as f:
            f.write(line + "\n")


class Budget:
    """Seconds left of --budget-min, and whether a stage of a given cost still fits."""

    def __init__(self, minutes: float) -> None:
        self.total = 60.0 * minutes
        self.start = time.monotonic()

    def used(self) -> float:
        """Seconds since the start."""
        return time.monotonic() - self.start

    def left(self) -> float:
        """Seconds left before the reserve."""
        return self.total - self.used() - RESERVE_S

    def fits(self, seconds: float) -> bool:
        """Whether a stage of this estimated cost ends inside the budget."""
        return self.left() >= seconds

    @staticmethod
    def cpu() -> float:
        """CPU seconds (user + system) of this process and of its children that have ended."""
        own = resource.getrusage(resource.RUSAGE_SELF)
        kids = resource.getrusage(resource.RUSAGE_CHILDREN)
        return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime
