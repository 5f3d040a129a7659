"""Contract tests of the megatron_core backend against the real Megatron-Core 0.19 on torch CPU.

Run with the .venv-bridge interpreter by tests/workload/test_megatron_core_venv.py (alone,
--confcutdir: the root conftest loads the suite's plugin, which needs submitit). Where torch
or Megatron-Core is missing (the main venv) nothing here is collected.
"""

from __future__ import annotations

import os
import socket
import warnings
from collections.abc import Iterator

import pytest

try:
    import megatron.core  # noqa: F401
    import torch  # noqa: F401
except ImportError:
    collect_ignore_glob = ["test_*.py"]

warnings.filterwarnings("ignore")  # Megatron-Core warns at import about Apex, TE, deprecations


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def one_rank(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A world of one rank on this host (the backend's init_distributed starts it)."""
    from perfgate.workload.megatron_core.trainer import shutdown

    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    monkeypatch.setenv("MASTER_PORT", str(_free_port()))
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK"):
        monkeypatch.delenv(name, raising=False)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    yield
    shutdown()
