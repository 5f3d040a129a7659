"""What the dashboard shows of each row: plain data that perfgate.report.dashboard builds from
the history and perfgate.report.dashboard_html renders."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ChangeView:
    """One change point of a row, with what changed between the runs either side of it."""

    index: int  # its first run's position in the row's trend (the plot's x)
    date: str
    session_id: int
    image: str | None
    p_value: float
    step: float  # the new segment's mean vs the one before, as a fraction
    changed: dict[str, tuple[str | None, str | None]]  # name -> (before, after): versions, image


@dataclass
class RowView:
    """What the dashboard shows of one row (plain data, built from its stored runs)."""

    row_id: str
    task: str
    model: str
    gpu: str
    backend: str
    page: str  # the file of its page, under rows/
    n_runs: int = 0
    latest_s: float | None = None
    latest_date: str | None = None
    baseline_s: float | None = None
    tolerance: float | None = None
    strip: list[tuple[str, str, int]] = field(default_factory=list)  # (date, verdict, session)
    changes: list[ChangeView] = field(default_factory=list)
    nodes: list[tuple[str, int, bool]] = field(default_factory=list)  # (node, runs, flagged)
    slow_nodes: list[str] = field(default_factory=list)  # flagged nodes of its last night
    runs: list[dict[str, Any]] = field(default_factory=list)  # for its page, then dropped
    trend: list[tuple[int, float]] = field(default_factory=list)  # (x, step time) of its plot

    @property
    def delta(self) -> float | None:
        """Latest step time vs the baseline, as a fraction."""
        if self.latest_s is None or not self.baseline_s:
            return None
        return self.latest_s / self.baseline_s - 1
