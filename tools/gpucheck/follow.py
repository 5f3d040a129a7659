"""The parent's clock of a launch: when each of rank 0's step lines appeared in its log.

A clock perfgate's step code does not take: this process (gpu-check, not the rank) follows
the rank's log file as the run writes it and stamps every step line (Megatron-LM's
`iteration N/M`, NeMo 2's `Training epoch E, iteration N/M`) with its own monotonic clock on
arrival. The time from one step's line to another's is the wall time of the steps between,
as the training framework printed them; checks.wall_check sets it against the sum of the
same steps in steps.json. Its resolution is the poll interval (POLL_S) plus the time the line
spends between the rank's flush and the read, which a loaded CPU can stretch (so on CPU the
check is plumbing only).
"""

from __future__ import annotations

import glob
import re
import threading
import time
from pathlib import Path
from typing import BinaryIO

POLL_S = 0.002
SEARCH_S = 0.05  # while the file does not exist yet (a recursive glob costs more than a read)
STEP_LINE = re.compile(rb"iteration\s+\d+\s*/")


class LogFollower(threading.Thread):
    """Follows the first file a glob pattern matches; arrivals: one time per step line."""

    def __init__(self, pattern: str | Path, poll_s: float = POLL_S) -> None:
        super().__init__(daemon=True)
        self.pattern = str(pattern)
        self.poll_s = poll_s
        self.arrivals: list[float] = []  # seconds of time.monotonic(), in file order
        self.path: str | None = None
        self._done = threading.Event()
        self._file: BinaryIO | None = None
        self._partial = b""

    def _open(self) -> bool:
        found = sorted(glob.glob(self.pattern, recursive=True))
        if not found:
            return False
        self.path = found[0]
        self._file = open(self.path, "rb")  # noqa: SIM115 (closed in stop)
        return True

    def _read(self) -> None:
        if self._file is None and not self._open():
            return
        assert self._file is not None
        chunk = self._file.read()
        if not chunk:
            return
        now = time.monotonic()
        *lines, self._partial = (self._partial + chunk).split(b"\n")
        self.arrivals += [now for line in lines if STEP_LINE.search(line)]

    def run(self) -> None:
        """Poll until stopped: the glob every SEARCH_S until the file exists, then the file."""
        while not self._done.is_set():
            self._read()
            self._done.wait(self.poll_s if self._file is not None else SEARCH_S)

    def stop(self) -> list[float]:
        """Stop following; the arrival times of the complete lines (a final read first)."""
        self._done.set()
        if self.is_alive():
            self.join()
        self._read()
        if self._file is not None:
            self._file.close()
        return self.arrivals
