"""--update-baselines: the measured values of cleanly run rows become their new baselines.

REGRESSION rows and replayed example logs are stored only with --accept-regressions; INFRA
rows never (nothing was measured). The outcome (the diff written, an error, the rows refused
and why) is what the terminal summary shows; an incomplete one fails the session (exit 1).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from perfgate import catalog, verdicts
from perfgate.errors import PerfgateError
from perfgate.report import results
from perfgate.rowrecord import RowRecord
from perfgate.suite.recording import is_example_replay
from perfgate.suite.settings import Settings

CLEAN = tuple(v for v in verdicts.VERDICTS if v != verdicts.INFRA)  # a measurement to store


@dataclass
class Update:
    """What --update-baselines did: the diff ("" when nothing changed), or why it failed."""

    diff: str = ""
    error: str | None = None
    refused: list[str] = field(default_factory=list)  # rows not stored, and why

    @property
    def incomplete(self) -> bool:
        """True when a requested update was not stored: the write failed or rows were refused."""
        return self.error is not None or bool(self.refused)


def update_baselines(records: list[RowRecord], settings: Settings, cat: catalog.Catalog) -> Update:
    """Write measured values of cleanly run rows into baselines/*.json; say what changed."""
    s = settings
    out = Update()
    updates: dict[str, catalog.Baseline] = {}
    example = s.mode == "replay" and is_example_replay(s.replay)
    for rec in records:
        verdict = rec.get("verdict")
        if verdict not in CLEAN or not rec.get("measured"):
            continue
        why = None
        if verdict == verdicts.REGRESSION and not s.accept_regressions:
            why = "REGRESSION (store it anyway with --accept-regressions)"
        elif example and not s.accept_regressions:
            why = "replayed example logs (examples/replay) are not measurements"
        if why:
            out.refused.append(f"{rec['row_id']}: {why}")
            continue
        row = cat.by_id[rec["row_id"]]
        updates[rec["row_id"]] = results.baseline_from_record(rec, row, s.window)
    if not updates:
        return out
    try:
        changed = catalog.update_baselines(s.baselines_dir, updates)
    except PerfgateError as e:
        out.error = str(e)
        return out
    if changed:
        out.diff = "\n".join(
            results.baseline_change(rid, cat.by_id[rid].baseline, new)
            for rid, new in updates.items()
        )
    return out


def write_summary(tr: Any, update: Update, baselines_dir: Any) -> None:
    """The baselines part of the terminal summary (tr: pytest's terminal reporter)."""
    if update.error:
        tr.write_line(f"baselines NOT updated: {update.error}", red=True)
    elif update.diff:
        tr.write_sep("-", f"baselines updated in {baselines_dir}")
        tr.write_line(update.diff.rstrip("\n"))
    else:
        tr.write_line("baselines: nothing to update (no row ran cleanly)")
    for line in update.refused:
        tr.write_line(f"baseline NOT stored: {line}", yellow=True)
