"""The conformance suite on the PostgreSQL store, async and sync.

Needs a server at ``$MEMORYBANK_POSTGRES_URL`` (default
``postgresql://postgres@127.0.0.1:5432/test``); skipped locally when it is not
reachable, failed in CI. Tables get a fresh prefix per session, dropped at the end.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Iterator

import pytest

from memorybank._async.stores.postgres import TABLES, AsyncPostgresStore
from memorybank._sync.stores.postgres import PostgresStore
from memorybank.testing import AsyncContract, SyncContract
from tests.conftest import require_server

pytestmark = pytest.mark.server

URL = os.environ.get("MEMORYBANK_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")


def drop_tables(url: str, prefix: str) -> None:
    """Drop every table of ``prefix`` (used by the PostgreSQL tests at the end)."""
    import psycopg

    with psycopg.connect(url, autocommit=True, connect_timeout=5) as conn:
        for table in TABLES:
            conn.execute(f"DROP TABLE IF EXISTS {prefix}{table}")


@pytest.fixture(scope="session")
def pg_prefix() -> Iterator[str]:
    """A fresh table prefix for this session; its tables are dropped at the end."""
    import psycopg

    try:
        with psycopg.connect(URL, connect_timeout=3):
            pass
    except psycopg.Error as error:
        require_server("PostgreSQL", error)
    prefix = f"t{uuid.uuid4().hex[:10]}_"
    yield prefix
    drop_tables(URL, prefix)


class TestPostgresAsync(AsyncContract):
    @pytest.fixture
    async def store(self, pg_prefix: str) -> AsyncIterator[AsyncPostgresStore]:
        store = AsyncPostgresStore.from_url(URL, prefix=pg_prefix, pool_size=4, timeout=5)
        yield store
        await store.close()


class TestPostgresSync(SyncContract):
    @pytest.fixture
    def store(self, pg_prefix: str) -> Iterator[PostgresStore]:
        store = PostgresStore.from_url(URL, prefix=pg_prefix, pool_size=4, timeout=5)
        yield store
        store.close()


class TestPostgresOneConnectionAsync(AsyncContract):
    """A single caller-owned connection, not in autocommit (the store switches it per call)."""

    @pytest.fixture
    async def store(self, pg_prefix: str) -> AsyncIterator[AsyncPostgresStore]:
        import psycopg

        conn = await psycopg.AsyncConnection.connect(URL)
        store = AsyncPostgresStore(conn, prefix=pg_prefix, timeout=5)
        yield store
        await store.close()
        assert not conn.closed
        await conn.close()


class TestPostgresOneConnectionSync(SyncContract):
    @pytest.fixture
    def store(self, pg_prefix: str) -> Iterator[PostgresStore]:
        import psycopg

        conn = psycopg.Connection.connect(URL)
        store = PostgresStore(conn, prefix=pg_prefix, timeout=5)
        yield store
        store.close()
        assert not conn.closed
        conn.close()
