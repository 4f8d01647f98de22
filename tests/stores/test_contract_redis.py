"""The conformance suite on the Redis store (async + sync, plus cluster-safe index mode),
and on a real three-master Redis Cluster.

Needs a Redis 7 at ``$MEMORYBANK_REDIS_URL`` (default ``redis://127.0.0.1:6379/0``):
skipped locally when absent, failed in CI. The cluster is started by the tests
(``tests.redis_cluster``: ``redis-server`` / ``redis-cli`` on spare ports);
without the binaries it skips locally and fails in CI. Every session writes under a fresh
random prefix and deletes its keys at the end.
"""

from __future__ import annotations

import os
import subprocess
import uuid
from collections.abc import AsyncIterator, Iterator
from datetime import timedelta
from typing import Any

import pytest
import redis

from memorybank.stores.redis._async import AsyncRedisStore
from memorybank.stores.redis._sync import RedisStore
from memorybank.stores.redis.compat import aconnect_redis
from memorybank.testing import AsyncContract, SyncContract
from tests.conftest import require_server
from tests.redis_cluster import raw_client, shared_cluster

REDIS_URL = os.environ.get("MEMORYBANK_REDIS_URL", "redis://127.0.0.1:6379/0")

pytestmark = pytest.mark.server


def drop_prefix(url: str, prefix: str) -> None:
    """Delete every key under ``prefix`` (SCAN + DEL; on every master of a cluster,
    each through a plain client of its own: redis-py's cluster ``DEL`` of keys in
    many slots leaves a socket open)."""
    client = raw_client(url)
    try:
        if isinstance(client, redis.RedisCluster):
            primaries = client.get_primaries()  # type: ignore[no-untyped-call]
            nodes = [redis.Redis(host=n.host, port=n.port) for n in primaries]
        else:
            nodes = [client]
        for node in nodes:
            try:
                keys = list(node.scan_iter(match=prefix + "*", count=1000))
                for start in range(0, len(keys), 500):
                    with node.pipeline(transaction=False) as pipe:
                        for key in keys[start : start + 500]:
                            pipe.delete(key)  # one key per command: no cross-slot DEL
                        pipe.execute()
            finally:
                if node is not client:
                    node.close()
    finally:
        client.close()


def require_redis() -> None:
    """Skip (locally) or fail (CI) unless the test Redis answers."""
    client = redis.Redis.from_url(REDIS_URL, socket_connect_timeout=2)
    try:
        client.ping()
    except redis.RedisError as error:
        require_server("redis", error)
    finally:
        client.close()


@pytest.fixture(scope="session")
def redis_prefix() -> Iterator[str]:
    """A fresh key prefix for this test session; its keys are dropped at the end."""
    require_redis()
    prefix = f"mbtest:{uuid.uuid4().hex[:10]}:"
    yield prefix
    drop_prefix(REDIS_URL, prefix)


@pytest.fixture(scope="session")
def redis_cluster_url() -> str:
    """The URL of the session's three-master Redis Cluster (``tests.redis_cluster``)."""
    try:
        return shared_cluster().url
    except (OSError, subprocess.SubprocessError, RuntimeError) as error:
        require_server("redis cluster", error)
        raise  # unreachable: require_server skips or fails


@pytest.fixture(scope="session")
def redis_cluster_prefix(redis_cluster_url: str) -> Iterator[str]:
    """A fresh key prefix on the cluster; its keys are dropped at the end."""
    prefix = f"mbtest:{uuid.uuid4().hex[:10]}:"
    yield prefix
    drop_prefix(redis_cluster_url, prefix)


def cluster_safe_store(prefix: str, **options: Any) -> AsyncRedisStore:
    """A store on the single-node server in the cluster-safe layout (``cluster=True``
    with a plain client: every script touches one slot, the indexes are apart)."""
    client = aconnect_redis(REDIS_URL, timeout=5, max_connections=50)
    return AsyncRedisStore(client, prefix=prefix, cluster=True, _owns_client=True, **options)


class TestRedisAsync(AsyncContract):
    @pytest.fixture
    async def store(self, redis_prefix: str) -> AsyncIterator[AsyncRedisStore]:
        store = AsyncRedisStore.from_url(REDIS_URL, prefix=redis_prefix, timeout=5)
        yield store
        await store.close()


class TestRedisFeedOnAsync(AsyncContract):
    """The whole suite with the change feed on from the start: every write path records
    its events in its script (a script that failed on an event would fail its case)."""

    @pytest.fixture
    async def store(self, redis_prefix: str) -> AsyncIterator[AsyncRedisStore]:
        store = AsyncRedisStore.from_url(REDIS_URL, prefix=redis_prefix + "feed:", timeout=5)
        await store.events_enable(keep=timedelta(days=1))
        yield store
        await store.close()


class TestRedisSync(SyncContract):
    @pytest.fixture
    def store(self, redis_prefix: str) -> Iterator[RedisStore]:
        # A prefix of its own: the default tenant's searches must not see the async class's data.
        store = RedisStore.from_url(REDIS_URL, prefix=redis_prefix + "sync:", timeout=5)
        yield store
        store.close()


class TestRedisClusterModeAsync(AsyncContract):
    """Indexes maintained outside the thread scripts, as on a Redis Cluster (one node)."""

    @pytest.fixture
    async def store(self, redis_prefix: str) -> AsyncIterator[AsyncRedisStore]:
        store = cluster_safe_store(redis_prefix + "c:")
        yield store
        await store.close()


class TestRedisTTLAsync(AsyncContract):
    """The whole suite with a (long) thread TTL: refreshing deadlines changes nothing."""

    @pytest.fixture
    async def store(self, redis_prefix: str) -> AsyncIterator[AsyncRedisStore]:
        store = AsyncRedisStore.from_url(
            REDIS_URL,
            prefix=redis_prefix + "ttl:",
            timeout=5,
            ttl=600,
            working_ttl=600,
            snapshot_ttl=600,
        )
        yield store
        await store.close()


class TestRedisClusterAsync(AsyncContract):
    """The whole suite on a real three-master Redis Cluster (``redis+cluster://``)."""

    @pytest.fixture
    async def store(
        self, redis_cluster_url: str, redis_cluster_prefix: str
    ) -> AsyncIterator[AsyncRedisStore]:
        store = AsyncRedisStore.from_url(redis_cluster_url, prefix=redis_cluster_prefix, timeout=5)
        yield store
        await store.close()


class TestRedisClusterSync(SyncContract):
    """The sync store on the same cluster (a prefix of its own)."""

    @pytest.fixture
    def store(self, redis_cluster_url: str, redis_cluster_prefix: str) -> Iterator[RedisStore]:
        store = RedisStore.from_url(
            redis_cluster_url, prefix=redis_cluster_prefix + "sync:", timeout=5
        )
        yield store
        store.close()


class TestRedisClusterTTLAsync(AsyncContract):
    """The cluster with thread, working-memory and snapshot TTLs."""

    @pytest.fixture
    async def store(
        self, redis_cluster_url: str, redis_cluster_prefix: str
    ) -> AsyncIterator[AsyncRedisStore]:
        store = AsyncRedisStore.from_url(
            redis_cluster_url,
            prefix=redis_cluster_prefix + "ttl:",
            timeout=5,
            ttl=600,
            working_ttl=600,
            snapshot_ttl=600,
        )
        yield store
        await store.close()
