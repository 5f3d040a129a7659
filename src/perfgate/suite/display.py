"""How waiting jobs are shown: one block redrawn in place on a terminal, sparse lines elsewhere.

A line per row per poll floods a log: 50 rows of 30-minute jobs polled every 5 s would print
about 18,000 lines. On a terminal the rows still waiting are one block, redrawn in place
(ANSI: cursor up to the block's first line, clear to the end of the screen). Elsewhere (CI
logs, pipes, pytest's capture) a row gets a line when its state changes (submitted, a new
pending reason, running, requeued, the next run of an A/B job, done) and at most one progress
line per PROGRESS_EVERY_S while it runs.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Sequence

from perfgate.charset import for_terminal
from perfgate.runs import JobStatus

PROGRESS_EVERY_S = 300.0
MAX_BLOCK_ROWS = 30  # rows listed in the terminal block; the rest are counted
_UP_AND_CLEAR = "\x1b[{n}F\x1b[J"  # cursor to the start of the line n up; clear below


class SparseLines:
    """Which status lines to print for a poll: changes, and progress at most every N s."""

    def __init__(
        self,
        progress_every_s: float = PROGRESS_EVERY_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.progress_every_s = progress_every_s
        self.clock = clock
        self._key: dict[str, tuple] = {}
        self._shown_at: dict[str, float] = {}
        self._step: dict[str, int | None] = {}

    def lines(self, statuses: Sequence[JobStatus]) -> list[str]:
        """The lines this poll adds (each one JobStatus.line())."""
        now = self.clock()
        out = []
        for st in statuses:
            rid = st.row_id
            key = (st.job_id, st.state, st.reason, st.run, st.attempt, st.requeues, st.done)
            # The first step of a run is news too (it started stepping); later steps are not.
            first_step = st.step is not None and self._step.get(rid) is None
            changed = self._key.get(rid) != key or first_step
            progressed = st.step != self._step.get(rid)
            if changed or (progressed and now - self._shown_at[rid] >= self.progress_every_s):
                self._key[rid], self._shown_at[rid], self._step[rid] = key, now, st.step
                out.append(f"perfgate: {for_terminal(st.line())}")
        return out


def block(statuses: Sequence[JobStatus], width: int, max_rows: int = MAX_BLOCK_ROWS) -> list[str]:
    """The terminal block: a count by state, then one line per row still waiting."""
    waiting = [st for st in statuses if not st.done]
    counts = Counter(st.state for st in waiting)
    done = len(statuses) - len(waiting)
    summary = ", ".join(f"{n} {state}" for state, n in sorted(counts.items()))
    head = f"perfgate: {len(statuses)} row(s): {summary + ', ' if summary else ''}{done} done"
    lines = [head] + [f"  {for_terminal(st.line())}" for st in waiting[:max_rows]]
    if len(waiting) > max_rows:
        lines.append(f"  ... and {len(waiting) - max_rows} more")
    return [line if len(line) <= width else line[: max(width - 3, 0)] + "..." for line in lines]


class SparseDisplay:
    """Not a terminal: lines on changes only (see SparseLines)."""

    def __init__(self, announce: Callable[[str], None], lines: SparseLines | None = None) -> None:
        self.announce = announce
        self.sparse = lines or SparseLines()

    def update(self, statuses: Sequence[JobStatus]) -> None:
        """Print what changed since the last poll."""
        for line in self.sparse.lines(statuses):
            self.announce(line)

    def say(self, line: str) -> None:
        """Print a line of its own (e.g. a re-attached job)."""
        self.announce(line)

    def pause(self) -> None:
        """Nothing drawn in place: nothing to take back."""


class BlockDisplay:
    """A terminal: one block of the waiting rows, redrawn in place on every poll."""

    def __init__(self, write: Callable[[str], None], width: Callable[[], int]) -> None:
        self.write = write  # raw text to the terminal, flushed
        self.width = width
        self.drawn = 0  # lines of the block on the screen now

    def update(self, statuses: Sequence[JobStatus]) -> None:
        """Redraw the block over the previous one."""
        lines = block(statuses, self.width())
        self.write(self._erase() + "".join(line + "\n" for line in lines))
        self.drawn = len(lines)

    def say(self, line: str) -> None:
        """A line that stays: printed where the block was (the next poll redraws it below)."""
        self.write(self._erase() + for_terminal(line) + "\n")

    def pause(self) -> None:
        """Take the block off the screen (pytest prints the test's outcome next)."""
        if self.drawn:
            self.write(self._erase())

    def _erase(self) -> str:
        n, self.drawn = self.drawn, 0
        return _UP_AND_CLEAR.format(n=n) if n else ""
