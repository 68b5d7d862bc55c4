"""The shared store's tests run against a real PostgreSQL (tests/store/pg_server.py), one server
per test process, started on first use and stopped at the end of the session. Without Debian's
``postgresql`` package (or psycopg) they skip, saying why; under CI (``CI`` set) they fail
instead, since ``.ci/run`` installs it."""

from __future__ import annotations

import itertools
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.store.pg_server import PostgresServer, find_bin  # noqa: E402

_databases = itertools.count()


def _missing(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"{reason}; CI must have it (.ci/run installs Debian's postgresql package)", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def postgres():
    """A running PostgreSQL server (``PostgresServer``)."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        _missing("psycopg is not installed (pip install -e '.[test]' or '.[postgres]')")
    if find_bin() is None:
        _missing("PostgreSQL is not installed (Debian: apt-get install postgresql)")
    server = PostgresServer().start()
    yield server
    server.stop()


@pytest.fixture
def pg_url(postgres: PostgresServer) -> str:
    """The URL of a fresh, empty database on the session's server."""
    return postgres.create_database(f"t{os.getpid()}_{next(_databases)}")
