"""The graph conformance suite on all five stores, async and sync.

Each class gets a fresh store (its own SQLite file, table prefix or key prefix,
dropped at the end) from the reliability suite's ``StoreSpec``; server stores
skip locally when their server is down and fail in CI. The suite also runs once
through the remote store against a live server (on SQLite): the graph needs
nothing of a store beyond the record contract.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from memorybank.stores import AsyncInMemoryStore, AsyncStore, InMemoryStore, Store
from memorybank.stores.http._async.store import AsyncHTTPStore
from memorybank.stores.sqlite._async import AsyncSQLiteStore
from memorybank.testing import AsyncGraphContract, SyncGraphContract
from tests.reliability._harness import StoreSpec, provide
from tests.stores.http_server import LiveServer, live_server


def _spec(name: str, factory: pytest.TempPathFactory) -> Iterator[StoreSpec]:
    yield from provide(name, factory.mktemp(name))


@pytest.fixture(scope="class")
def sqlite_spec(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StoreSpec]:
    yield from _spec("sqlite-full", tmp_path_factory)


@pytest.fixture(scope="class")
def postgres_spec(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StoreSpec]:
    yield from _spec("postgres", tmp_path_factory)


@pytest.fixture(scope="class")
def mysql_spec(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StoreSpec]:
    yield from _spec("mysql", tmp_path_factory)


@pytest.fixture(scope="class")
def redis_spec(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StoreSpec]:
    yield from _spec("redis", tmp_path_factory)


class TestInMemoryAsync(AsyncGraphContract):
    @pytest.fixture
    async def store(self) -> AsyncIterator[AsyncStore]:
        store = AsyncInMemoryStore()
        yield store
        await store.close()


class TestInMemorySync(SyncGraphContract):
    @pytest.fixture
    def store(self) -> Iterator[Store]:
        store = InMemoryStore()
        yield store
        store.close()


class TestSQLiteAsync(AsyncGraphContract):
    @pytest.fixture
    async def store(self, sqlite_spec: StoreSpec) -> AsyncIterator[AsyncStore]:
        store = sqlite_spec.open_async()
        yield store
        await store.close()


class TestSQLiteSync(SyncGraphContract):
    @pytest.fixture
    def store(self, sqlite_spec: StoreSpec) -> Iterator[Store]:
        store = sqlite_spec.open()
        yield store
        store.close()


@pytest.mark.server
class TestPostgresAsync(AsyncGraphContract):
    @pytest.fixture
    async def store(self, postgres_spec: StoreSpec) -> AsyncIterator[AsyncStore]:
        store = postgres_spec.open_async()
        yield store
        await store.close()


@pytest.mark.server
class TestPostgresSync(SyncGraphContract):
    @pytest.fixture
    def store(self, postgres_spec: StoreSpec) -> Iterator[Store]:
        store = postgres_spec.open()
        yield store
        store.close()


@pytest.mark.server
class TestMySQLAsync(AsyncGraphContract):
    @pytest.fixture
    async def store(self, mysql_spec: StoreSpec) -> AsyncIterator[AsyncStore]:
        store = mysql_spec.open_async()
        yield store
        await store.close()


@pytest.mark.server
class TestMySQLSync(SyncGraphContract):
    @pytest.fixture
    def store(self, mysql_spec: StoreSpec) -> Iterator[Store]:
        store = mysql_spec.open()
        yield store
        store.close()


@pytest.mark.server
class TestRedisAsync(AsyncGraphContract):
    @pytest.fixture
    async def store(self, redis_spec: StoreSpec) -> AsyncIterator[AsyncStore]:
        store = redis_spec.open_async()
        yield store
        await store.close()


@pytest.mark.server
class TestRedisSync(SyncGraphContract):
    @pytest.fixture
    def store(self, redis_spec: StoreSpec) -> Iterator[Store]:
        store = redis_spec.open()
        yield store
        store.close()


@pytest.fixture(scope="class")
def redis_cluster_spec(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StoreSpec]:
    yield from _spec("redis-cluster", tmp_path_factory)


@pytest.mark.server
class TestRedisClusterAsync(AsyncGraphContract):
    """On a real three-master Redis Cluster (started by the tests)."""

    @pytest.fixture
    async def store(self, redis_cluster_spec: StoreSpec) -> AsyncIterator[AsyncStore]:
        store = redis_cluster_spec.open_async()
        yield store
        await store.close()


@pytest.mark.server
class TestRedisClusterSync(SyncGraphContract):
    @pytest.fixture
    def store(self, redis_cluster_spec: StoreSpec) -> Iterator[Store]:
        store = redis_cluster_spec.open()
        yield store
        store.close()


@pytest.fixture(scope="class")
def http_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    path = tmp_path_factory.mktemp("http") / "server.db"
    with live_server(lambda: AsyncSQLiteStore(path)) as server:
        yield server


class TestHTTPOnSQLiteAsync(AsyncGraphContract):
    @pytest.fixture
    async def store(self, http_server: LiveServer) -> AsyncIterator[AsyncStore]:
        key = http_server.keys[http_server.tenants[0]]
        store = AsyncHTTPStore(http_server.url, api_key=key, timeout=30)
        yield store
        await store.close()
