"""Check a row's overrides before anything is submitted, on a login node with or without NeMo.

Each backend checks its own (its face's check_overrides, backends.py): nemo2 builds the
recipe where NeMo is importable and else checks the paths against the snapshot of the pinned
NeMo; megatron_bridge checks the recipe mapping and the sections; automodel builds its
config; megatron_core checks its settings (and config field names where Megatron-Core is
importable); command refuses any override but its argv.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from perfgate.catalog.rows import Row
from perfgate.workload import backends


def check_overrides(
    row: Row,
    overrides: Mapping[str, Any] | None = None,
    mock_data: bool = False,
    use_nemo: bool | None = None,
) -> str:
    """Raise a one-line ConfigError for a bad override; return how the check was made.

    use_nemo: build with the row's framework (True), check without it (False), or whichever
    this interpreter allows (None); only nemo2 builds on a login node.
    """
    face = backends.get(row.backend)
    return face.check_overrides(row, overrides or {}, mock_data, use_nemo)
