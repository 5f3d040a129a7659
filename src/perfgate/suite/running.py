"""Run: where a row's runs come from, the replay folder or the jobs of a live session.

replay: the folder is indexed once for the session's rows (perfgate.suite.replay), each row's
launches read back as one RunResult, its confirm-<n> folders handed on for the confirmation
room; live: one LiveRunner submits every row and waits per test (perfgate.suite.live).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from perfgate.catalog import Row
from perfgate.launch.types import LaunchOptions
from perfgate.runs import RunResult
from perfgate.suite import replay
from perfgate.suite.live import Display, LiveRunner
from perfgate.suite.settings import Settings
from perfgate.verdicts.pairs_rule import PairsRule


@dataclass(frozen=True)
class Replayed:
    """A row read back from the replay folder: its result, or why it is skipped (skip) or
    fails (mismatch: its launches are not --repeat's K); its confirm-<n> files in order."""

    result: RunResult | None = None
    confirmations: tuple[tuple[Path, ...], ...] = ()
    skip: str | None = None
    mismatch: str | None = None


def repeat_mismatches(
    index: replay.ReplayIndex, rows: Sequence[Row], wanted: int | None, root: Path | None
) -> list[str]:
    """--repeat K with --replay: why each row's launches are not K (none: all agree)."""
    return [w for r in rows if (w := replay.repeat_mismatch(r, index.match(r), wanted, root))]


def replayed(
    index: replay.ReplayIndex, row: Row, wanted: Callable[[], int | None], root: Path | None
) -> Replayed:
    """The row's launches read back as one RunResult, once its match and --repeat agree."""
    m = index.match(row)
    if m.skip_reason:
        return Replayed(skip=m.skip_reason)
    why = replay.repeat_mismatch(row, m, wanted(), root)
    if why:
        return Replayed(mismatch=why)
    return Replayed(replay.load_launches(row, m.launches), m.confirmations)


def live_runner(
    options: LaunchOptions,
    settings: Settings,
    announce: Callable[[str], None],
    display: Display,
    more_pairs_for: Callable[[Row], PairsRule] | None,
    on_done: Callable[[Row, RunResult], None] | None,
) -> LiveRunner:
    """The live session's runner: its jobs run with the first runs' options."""
    s = settings
    return LiveRunner(
        options,
        s.results_dir,
        resume=s.resume,
        announce=announce,
        display=display,
        poll_s=s.launch.poll_interval_s,
        more_pairs_for=more_pairs_for,
        on_done=on_done,
    )
