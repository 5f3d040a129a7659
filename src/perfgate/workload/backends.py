"""The one table of workload backends: a row's `backend` -> its face (backend.Backend).

Faces are imported by name on first use, so the job imports only the backend it runs and a
login node only the faces of its rows; a face is pure Python (its framework loads inside the
functions that build with it), so a login node never needs NeMo or Megatron-Bridge.
"""

from __future__ import annotations

import importlib

from perfgate.errors import ConfigError
from perfgate.workload.backend import Backend

# catalog.BACKENDS name -> the module defining its BACKEND, in catalog order
FACES: dict[str, str] = {
    "nemo2": "perfgate.workload.nemo2.face",
    "megatron_bridge": "perfgate.workload.bridge.face",
    "automodel": "perfgate.workload.automodel.face",
    "megatron_core": "perfgate.workload.megatron_core.face",
    "command": "perfgate.workload.command.face",
}


def get(name: str) -> Backend:
    """The face of the backend a row names; a ConfigError where this perfgate has none."""
    if name not in FACES:
        raise ConfigError(f"backend {name!r} is not implemented in this perfgate")
    face: Backend = importlib.import_module(FACES[name]).BACKEND
    return face
