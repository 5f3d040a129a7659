"""The command backend on a login node: its argv from the `command` override, nothing else.

The command has no recipe: any other override would be silently ignored, so it is refused.
"""

from __future__ import annotations

import json
import shlex

from perfgate.catalog.rows import Row
from perfgate.errors import ConfigError
from perfgate.workload.backend import Backend, CommandLine, Overrides


def check_overrides(
    row: Row, overrides: Overrides, mock_data: bool = False, use_framework: bool | None = None
) -> str:
    """Refuse every override but `command` (the argv the backend runs)."""
    keys = [*row.overrides, *overrides]
    extra = list(dict.fromkeys(k for k in keys if k != "command"))
    if extra:
        raise ConfigError(
            f"row {row.id!r}: backend 'command' runs a command, it has no recipe to "
            f"override ({', '.join(extra)})"
        )
    return "no recipe overrides (command backend)"


def describe(row: Row, steps: int, overrides: Overrides, use_framework: bool | None = None) -> str:
    """The overrides as given: the command's own settings are not known here."""
    body = json.dumps({"overrides": {**row.overrides, **overrides}}, indent=1)
    return f"backend {row.backend}: recipe text is not rendered on the login node\n{body}\n"


def command_line(row: Row, overrides: Overrides) -> CommandLine:
    """(argv, the other overrides): the `command` override, a list or a shell-quoted string."""
    merged = {**row.overrides, **overrides}
    command = merged.pop("command", None)
    if isinstance(command, str):
        command = shlex.split(command)
    if not command or not all(isinstance(a, str) for a in command):
        raise ConfigError(
            f"row {row.id}: backend 'command' needs overrides.command (argv list or string), "
            f"got {command!r}"
        )
    return tuple(command), merged


BACKEND = Backend(
    name="command",
    job="perfgate.workload.command.job",
    check_overrides=check_overrides,
    describe=describe,
    command_line=command_line,
)
