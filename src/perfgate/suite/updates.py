"""--update-baselines: the measured values of cleanly run rows become their new baselines.

REGRESSION rows and replayed example logs are stored only with --accept-regressions; INFRA
rows never (nothing was measured); nor, without --accept-regressions, a baseline whose runs
disagree beyond what the noise rule allows (stats.noise.runs_disagree: 2.0, 2.0 and 4.0 s is
a bad node or a broken run, not a level to gate against). The outcome (the diff written, an
error, the rows refused and why) is what the terminal summary shows; an incomplete one fails
the session (exit 1). A write that fails (a read-only folder) is one line in that summary:
the session still ends with its summary and a finished results.json.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from perfgate import catalog, verdicts
from perfgate.errors import PerfgateError
from perfgate.report import results
from perfgate.rowrecord import RowRecord
from perfgate.stats.noise import runs_disagree
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
        new = results.baseline_from_record(rec, row, s.window)
        times = [r.step_time_s for r in new.runs]
        prior = s.noise.prior_for(new)
        bad = None if s.accept_regressions else runs_disagree(times, prior, s.noise.alpha)
        if bad is not None:
            spread, p = bad
            shown = ", ".join(f"{t:.4g}" for t in times)
            out.refused.append(
                f"{rec['row_id']}: its runs disagree ({shown} s: spread {spread:.1%} of the step, "
                f"p {p:.2g} under the {prior.name} noise prior of {prior.sigma:.2%} per run); "
                "rerun it, or store it anyway with --accept-regressions"
            )
            continue
        updates[rec["row_id"]] = new
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
