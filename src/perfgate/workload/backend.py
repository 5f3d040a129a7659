"""The face every workload backend shows the rest of perfgate, and the defaults most share.

A backend is a package under perfgate/workload/ (nemo2/, bridge/, automodel/, megatron_core/,
command/) whose face module defines BACKEND: the module the job runs (imported only inside
the container) and what a login node asks before submitting: check the overrides, describe
the row for the dry run, the environment defaults, the command line. backends.py is the
table of faces.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from perfgate.catalog.rows import Row
from perfgate.workload.runtime import RankInfo, Recorder
from perfgate.workload.spec import WorkloadSpec

Overrides = Mapping[str, Any]  # {dotted path: value}, the user's (a row's own are on the row)
CommandLine = tuple[tuple[str, ...] | None, dict[str, Any]]  # (argv or None, the overrides)


def no_env(row: Row, overrides: Overrides) -> dict[str, str]:
    """No defaults: the job's environment is the site's, the row's and the user's only."""
    return {}


def no_command(row: Row, overrides: Overrides) -> CommandLine:
    """No argv: the row's then the user's overrides travel in the spec, as written."""
    merged = {**row.overrides, **overrides}
    # `command` is the command backend's argv; a session's --override command=... is meant
    # for its command rows, and the other rows' own checks refuse it in a row.
    merged.pop("command", None)
    return None, merged


@dataclass(frozen=True)
class Backend:
    """One workload backend: what runs in the job, and what a login node may ask of it.

    use_framework (check_overrides, describe): build with the backend's framework installed
    here (True), without it (False), or whichever this interpreter allows (None); a backend
    that never builds on a login node ignores it.
    """

    name: str  # what a row's `backend` says (catalog.BACKENDS)
    job: str  # the module with run(spec, rank, recorder); imported only inside the job
    # (row, the user's overrides, mock_data, use_framework) -> how they were checked;
    # a bad override is a one-line ConfigError naming the row
    check_overrides: Callable[[Row, Overrides, bool, bool | None], str]
    # (row, steps, the user's overrides, use_framework) -> the dry run's text below its head
    describe: Callable[[Row, int, Overrides, bool | None], str]
    # (row, the user's overrides) -> the variables the job sets before the row's and user's
    env_defaults: Callable[[Row, Overrides], dict[str, str]] = no_env
    # (row, the user's overrides) -> (argv each rank runs, or None; the spec's overrides)
    command_line: Callable[[Row, Overrides], CommandLine] = no_command

    def run(self, spec: WorkloadSpec, rank: RankInfo, recorder: Recorder | None) -> None:
        """Run the spec's row on this rank of the job; only now is the job module imported."""
        importlib.import_module(self.job).run(spec, rank, recorder)
