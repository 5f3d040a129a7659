"""Fixtures shared by the suite's own tests."""

from __future__ import annotations

import importlib.util
import os
import uuid
from collections.abc import Iterator
from pathlib import Path

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
