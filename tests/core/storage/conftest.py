"""A real PostgreSQL server on 127.0.0.1 for the shared-cache tests: one per session, a fresh database per test."""

from __future__ import annotations

import importlib.util
import itertools

import pytest

from tests.conftest import require_tool

_databases = itertools.count()


@pytest.fixture(scope="session")
def postgres_server():
    from tests.support.postgres import PostgresServer

    require_tool(
        importlib.util.find_spec("psycopg2") is not None, "psycopg2, the PostgreSQL driver (pip install -e '.[test]')"
    )
    server = PostgresServer(database="chunkbench")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def cache_url(postgres_server) -> str:
    """The URL of an empty database of its own (with a password, which the server ignores: trust on 127.0.0.1)."""
    url = postgres_server.create_database(f"cache_{next(_databases)}")
    return url.replace("postgresql://postgres@", "postgresql://postgres:Hunter2-s3cret@")
