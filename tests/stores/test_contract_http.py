"""The conformance suite, unchanged, on the remote store against a live server.

Each test class starts ``memorybank serve``'s app (``create_app`` plus the
store router) on a free loopback port, backed by SQLite (a fresh file) or by
PostgreSQL (a fresh table prefix, dropped after), makes an API key of a fresh
tenant, and runs the suite through ``AsyncHTTPStore``/``HTTPStore``: every
contract call crosses HTTP, JSON and the server's tenant mapping.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from memorybank.stores.http._async.store import AsyncHTTPStore
from memorybank.stores.http._sync.store import HTTPStore
from memorybank.stores.postgres._async import AsyncPostgresStore
from memorybank.stores.sqlite._async import AsyncSQLiteStore
from memorybank.testing import AsyncContract, SyncContract
from tests.stores.http_server import LiveServer, live_server
from tests.stores.test_contract_postgres import URL as POSTGRES_URL
from tests.stores.test_contract_postgres import drop_tables, require_postgres


@pytest.fixture(scope="class")
def sqlite_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    path: Path = tmp_path_factory.mktemp("http") / "server.db"
    with live_server(lambda: AsyncSQLiteStore(path)) as server:
        assert server.memory is not None
        server.run(server.memory.events.enable(timedelta(days=1)))  # the change feed
        yield server


@pytest.fixture(scope="class")
def postgres_server() -> Iterator[LiveServer]:
    require_postgres()
    prefix = f"h{uuid.uuid4().hex[:10]}_"
    try:
        with live_server(
            lambda: AsyncPostgresStore.from_url(POSTGRES_URL, prefix=prefix, pool_size=4, timeout=5)
        ) as server:
            assert server.memory is not None
            server.run(server.memory.events.enable(timedelta(days=1)))
            yield server
    finally:
        drop_tables(POSTGRES_URL, prefix)


def _async_store(server: LiveServer) -> AsyncHTTPStore:
    return AsyncHTTPStore(server.url, api_key=server.keys[server.tenants[0]], timeout=30)


def _sync_store(server: LiveServer) -> HTTPStore:
    return HTTPStore(server.url, api_key=server.keys[server.tenants[0]], timeout=30)


class TestHTTPOnSQLiteAsync(AsyncContract):
    @pytest.fixture
    async def store(self, sqlite_server: LiveServer) -> AsyncIterator[AsyncHTTPStore]:
        store = _async_store(sqlite_server)
        yield store
        await store.close()


class TestHTTPOnSQLiteSync(SyncContract):
    @pytest.fixture
    def store(self, sqlite_server: LiveServer) -> Iterator[HTTPStore]:
        store = _sync_store(sqlite_server)
        yield store
        store.close()


@pytest.mark.server
class TestHTTPOnPostgresAsync(AsyncContract):
    @pytest.fixture
    async def store(self, postgres_server: LiveServer) -> AsyncIterator[AsyncHTTPStore]:
        store = _async_store(postgres_server)
        yield store
        await store.close()


@pytest.mark.server
class TestHTTPOnPostgresSync(SyncContract):
    @pytest.fixture
    def store(self, postgres_server: LiveServer) -> Iterator[HTTPStore]:
        store = _sync_store(postgres_server)
        yield store
        store.close()
