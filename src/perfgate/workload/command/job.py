"""Backend "command": run any command on every rank and turn rank 0's log into steps.

This is how a site's own training script, or anything no backend knows yet, is benchmarked:
the command prints its usual log lines, perfgate.logs reads them. Imports no NeMo.
"""

from __future__ import annotations

import os

from perfgate.errors import ConfigError
from perfgate.workload.child import run_argv
from perfgate.workload.env import merge_env
from perfgate.workload.runtime import RankInfo, Recorder
from perfgate.workload.spec import WorkloadSpec


def command_argv(spec: WorkloadSpec) -> list[str]:
    """The argv of the command, checked to be a non-empty list of strings."""
    argv = spec.command
    if not argv or not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
        raise ConfigError(
            f"spec field 'command' is {argv!r}; backend 'command' needs a non-empty list of "
            "strings (the argv run on every rank)"
        )
    return list(argv)


def command_env(spec: WorkloadSpec, rank: RankInfo, inherited: dict[str, str]) -> dict[str, str]:
    """The command's environment: inherited < row env < user env < rank and PERFGATE_*."""
    fixed = {
        **rank.env(),
        "PERFGATE_ROW_ID": spec.row.id,
        "PERFGATE_STEPS": str(spec.steps),
        "PERFGATE_OUTPUT_DIR": str(spec.output_dir),
    }
    # NVIDIA's NeMo tuning variables are not applied: they belong to NeMo, not to any command.
    return merge_env(inherited, None, spec.row.env, spec.env, fixed)


def run(spec: WorkloadSpec, rank: RankInfo, recorder: Recorder | None) -> None:
    """Run the command on this rank; rank 0 tees its output to a log and records its steps."""
    run_argv(spec, command_argv(spec), command_env(spec, rank, dict(os.environ)), recorder)
