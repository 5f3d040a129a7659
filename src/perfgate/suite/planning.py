"""Plan: each row as it will run, checked, costed and agreed before anything is submitted.

The session's first room for a row: --steps applied (effective), the row's and --override's
recipe paths checked by its backend, the live session's GPU-hours shown and agreed
(perfgate.suite.preflight), and a dry run's plan of one row (sbatch script, srun line, spec,
GPU-hours) as its evaluation. Plain functions of the settings: the session (perfgate.suite.state)
turns their ConfigErrors into pytest usage errors.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from perfgate import launch
from perfgate.catalog import Row
from perfgate.launch.avoid import Avoid
from perfgate.launch.types import LaunchOptions
from perfgate.report import dryrun
from perfgate.suite import avoiding, preflight
from perfgate.suite.settings import Settings
from perfgate.verdicts import Evaluation
from perfgate.workload import validate
from perfgate.workload.describe import describe

DRY_RUN = "DRY_RUN"


def effective(row: Row, steps: int | None) -> Row:
    """The row as it runs: --steps, when given, replaces the row's own step count."""
    return row if steps is None or row.steps == steps else replace(row, steps=steps)


def check_overrides(row: Row, options: LaunchOptions, overrides: Any = None) -> str:
    """Check the row's and --override's recipe paths before anything runs; say how."""
    overrides = options.overrides if overrides is None else overrides
    return validate.check_overrides(row, overrides, mock_data=options.mock_finetune_data)


def check_session_overrides(rows: list[Row], settings: Settings, markexpr: str) -> None:
    """Every selected row against --override: one ConfigError for the session."""
    preflight.check_session_overrides(
        rows,
        settings.launch.overrides,
        lambda row, overrides: check_overrides(row, settings.launch, overrides),
        markexpr=markexpr,
    )


def agree_cost(
    rows: Sequence[Row],
    settings: Settings,
    avoided_by_first_runs: Callable[[], Avoid | None],
    selected: bool,
    say: Callable[[str], None],
) -> str:
    """Plan every row, say the cost (and what the first runs keep off), get consent: why
    the session may submit, or a ConfigError saying why not. avoided_by_first_runs() is
    what the first runs keep off (it reads the history: asked once the cost is said)."""
    s = settings
    plans = (launch.plan(effective(r, s.steps), s.launch) for r in rows)
    cost = preflight.Cost.of(plans, s.confirm)
    say(cost.line())
    avoided = avoiding.plan_line(avoided_by_first_runs())  # read after the cost is said
    if avoided:
        say(avoided)
    warning = preflight.container_warning(
        s.launch.executor, s.launch.container_runtime, s.launch.container_image
    )
    if warning:
        say(warning)
    return preflight.consent(
        cost,
        selected=selected,
        all_rows=s.all_rows,
        yes=s.yes,
        max_gpu_hours=s.max_gpu_hours,
        ask=preflight.ask_terminal,
    )


def dry_run(
    row: Row, settings: Settings, options_of: Callable[[], LaunchOptions], info: dict[str, Any]
) -> Evaluation:
    """A dry run's evaluation of one row; info (the test's stash) gets its job plan and the
    description the report shows (the recipe as the backend describes it, and how the
    overrides were checked). options_of(): the first runs' options, asked once the row's
    overrides are checked."""
    s = settings
    checked = check_overrides(row, s.launch)
    plan = launch.plan(row, options_of())
    info["plan"] = plan
    # the steps the job runs: the row's own (or --steps, applied by effective()), else 50
    text = describe(row, s.launch.overrides, steps=row.steps or s.launch.steps)
    info["description"] = f"{text}overrides: {checked}\n"
    mode = "paired" if plan.max_pairs else "stored"
    msg = dryrun.row_message(row, plan)
    return Evaluation(row=row, verdict=DRY_RUN, message=msg, source="dry-run", mode=mode)
