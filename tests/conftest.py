"""Fixtures shared by the suite's own tests."""

from __future__ import annotations

import importlib.util
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pgserver import PASSWORD, PgServer, find_bin
from refdata import REFERENCE, SEEDS
from testutil import require


@pytest.fixture(scope="session")
def reference() -> Path:
    """tests/data/reference: real step-time series and verbatim log lines, with sources."""
    return REFERENCE


@pytest.fixture(scope="session")
def seeds() -> Path:
    """tests/data/reference/seeds: the excerpts of the seed documents the tests read."""
    return SEEDS


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    """A throwaway PostgreSQL server for the session (tests/pgserver.py); PGPASSWORD set."""
    bindir = find_bin()
    require(
        bindir is not None and importlib.util.find_spec("psycopg") is not None,
        "PostgreSQL (apt-get install postgresql: scripts/install --full) and psycopg",
    )
    assert bindir is not None
    server = PgServer(bindir)
    old = os.environ.get("PGPASSWORD")
    try:
        server.start()
        os.environ["PGPASSWORD"] = PASSWORD
        yield server
    finally:
        if old is None:
            os.environ.pop("PGPASSWORD", None)
        else:
            os.environ["PGPASSWORD"] = old
        server.close()


@pytest.fixture
def pg_url(pg_server: PgServer) -> str:
    """A fresh, empty database of the session's server: its URL (no password in it)."""
    return pg_server.create_db(f"t_{uuid.uuid4().hex[:12]}")


@pytest.fixture(autouse=True)
def _sessions_run_as_a_users_would(monkeypatch: pytest.MonkeyPatch) -> None:
    """Under -n, xdist's worker variables would leak into the pytest sessions tests start
    (pytester, subprocesses) and make them act as xdist workers (pytest-benchmark then turns
    itself off): each test's own sessions must run as a user's plain session does."""
    for name in ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID"):
        monkeypatch.delenv(name, raising=False)


# --- parallel runs (pytest tests -n auto) -----------------------------------------------------
# Tests share costly things with the rest of their module (a module-scoped fixture: one A/B
# session, one sweep on the cluster) and with their kind (the local Slurm cluster, a contract
# venv: one per worker that runs such a module). So a module runs whole on one worker, modules
# handed out as workers free up (xdist's loadfile), unless the user names another --dist.
# (xdist_group/loadgroup would be finer, but xdist 3.8 tags the group onto Item._nodeid,
# which pytest 9.2 no longer reports: its groups are silently ignored.)


# Modules whose tests need these (a cluster, a venv, a server) are the long ones: they are
# collected first, so under -n they start first and the short modules fill in around them.
LONG_MARKS = {"slurm", "nemo", "automodel", "bridge", "postgres", "long"}


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Long modules first (a stable sort: each module keeps its own order)."""
    long = {
        i.nodeid.split("::")[0]
        for i in items
        if any(m.name in LONG_MARKS for m in i.iter_markers())
    }
    items.sort(key=lambda i: i.nodeid.split("::")[0] not in long)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """-n without --dist: whole modules per worker."""
    if any(a.startswith("--dist") for a in config.invocation_params.args):
        return None
    from xdist.scheduler import LoadFileScheduling

    return LoadFileScheduling(config, log)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """-n auto: one worker per core plus one (many tests wait on subprocesses), at least 2."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return int(os.environ["PYTEST_XDIST_AUTO_NUM_WORKERS"])
    return max(2, len(os.sched_getaffinity(0)) + 1)
