"""What --dry-run shows for a row: the environment the job sets, then its backend's account.

The head is common: the variables the job sets (the backend's defaults, then the row's). The
body is the backend's (its face's describe, backends.py): nemo2's recipe YAML and its diff to
NeMo's defaults (or, without NeMo, the settings perfgate applies), Megatron-Bridge's recipe
and settings, Automodel's YAML, Megatron-Core's model, layout and config arguments, or a
command's overrides.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from perfgate.catalog.rows import Row
from perfgate.secrets import recorded
from perfgate.workload import backends


def describe(
    row: Row,
    overrides: Mapping[str, Any] | None = None,
    steps: int = 50,
    use_nemo: bool | None = None,
) -> str:
    """The text --dry-run prints for a row's workload (use_nemo as in validate)."""
    overrides = overrides or {}
    face = backends.get(row.backend)
    env = face.env_defaults(row, overrides)
    # The row's variables that are not performance knobs are shown masked (perfgate.secrets).
    shown = {**env, **recorded(row.env)}
    env_text = "\n".join(f"  {k}={v}" for k, v in sorted(shown.items()))
    head = f"workload {row.id} (backend {row.backend})\nenvironment set in the job:\n{env_text}\n"
    return head + face.describe(row, steps, overrides, use_nemo)
