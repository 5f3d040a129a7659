"""The executors a session can submit rows with (--executor), by name, on the login node.

Each is an Executor (perfgate.launch.executors.base); the code it runs inside the allocation
is apart, in perfgate.launch.allocation, under the same name.
"""

from __future__ import annotations

from collections.abc import Callable

from perfgate.errors import ConfigError
from perfgate.launch.executors.base import Executor, Refused
from perfgate.launch.executors.local import LocalExecutor
from perfgate.launch.executors.slurm import SlurmExecutor

REGISTRY: dict[str, Callable[[], Executor]] = {
    "slurm": SlurmExecutor,
    "local": LocalExecutor,
}
EXECUTORS = tuple(REGISTRY)  # --executor's choices; the default (slurm) is named in the option


def executor_for(name: str) -> Executor:
    """A fresh executor of this name; a one-line ConfigError for a name not registered."""
    if name not in REGISTRY:
        raise ConfigError(f"--executor {name!r}: expected one of {', '.join(EXECUTORS)}")
    return REGISTRY[name]()


__all__ = ["EXECUTORS", "REGISTRY", "Executor", "Refused", "executor_for"]
