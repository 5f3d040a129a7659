"""The bisection itself, without jobs: which image to probe next, and what the probes so far say.

Images are indexed 0..n-1 in the user's order; image 0 is known good (its A/B against itself
is the gate's baseline), image n-1 known bad (the gate's REGRESSION). The first bad image is
in (good, bad]; each probe of the midpoint halves that range, so n images need at most
ceil(log2(n - 1)) probes. A probe's outcome is "bad" (some row is a REGRESSION against the
good end), "good" (every row PASS or IMPROVEMENT), or "undecided" (INCONCLUSIVE after every
pair the probe may run, or a failed job): then the search stops and says the range it has,
never a guess.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

BAD, GOOD, UNDECIDED = "bad", "good", "undecided"


def outcome(verdicts: Iterable[str]) -> str:
    """A probe's outcome from its rows' verdicts (the gate's words)."""
    found = list(verdicts)
    if any(v == "REGRESSION" for v in found):
        return BAD
    if found and all(v in ("PASS", "IMPROVEMENT") for v in found):
        return GOOD
    return UNDECIDED


def probes_needed(n_images: int) -> int:
    """The most probes a bisection of n images takes: ceil(log2(candidates)), candidates n-1."""
    return max(0, math.ceil(math.log2(n_images - 1))) if n_images > 1 else 0


@dataclass(frozen=True)
class Search:
    """Where the first bad image can still be: in (good, bad], or stopped at `stopped`."""

    n: int
    good: int = 0
    bad: int = -1
    stopped: int | None = None  # the index whose probe was undecided

    @classmethod
    def start(cls, n: int) -> Search:
        """Image 0 good, image n-1 bad."""
        return cls(n=n, good=0, bad=n - 1)

    @property
    def done(self) -> bool:
        """No probe left to run: the first bad image is found, or a probe was undecided."""
        return self.stopped is not None or self.bad - self.good <= 1

    @property
    def found(self) -> int | None:
        """The index of the first bad image, once the range has narrowed to it."""
        return self.bad if self.stopped is None and self.bad - self.good <= 1 else None

    def next(self) -> int:
        """The image to probe next: the midpoint of (good, bad)."""
        if self.done:
            raise ValueError("the bisection is over")
        return (self.good + self.bad) // 2

    def after(self, index: int, result: str) -> Search:
        """The search once image `index` probed `result` (bad, good or undecided)."""
        if not self.good < index < self.bad:
            raise ValueError(f"image {index} is outside ({self.good}, {self.bad})")
        if result == BAD:
            return Search(self.n, self.good, index)
        if result == GOOD:
            return Search(self.n, index, self.bad)
        return Search(self.n, self.good, self.bad, stopped=index)

    @property
    def left(self) -> int:
        """The most probes still to run."""
        return 0 if self.done else probes_needed(self.bad - self.good + 1)


def replay(n: int, probes: Sequence[Mapping[str, object]]) -> Search:
    """The search after the finished probes of a state file, in order."""
    search = Search.start(n)
    for p in probes:
        if p.get("outcome") in (BAD, GOOD, UNDECIDED):
            search = search.after(int(p["index"]), str(p["outcome"]))  # type: ignore[arg-type]
    return search
