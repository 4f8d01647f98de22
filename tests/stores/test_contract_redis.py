"""The conformance suite on the Redis store (async + sync, plus cluster-safe index mode).

Needs a Redis 7 at ``$MEMORYBANK_REDIS_URL`` (default ``redis://127.0.0.1:6379/0``):
skipped locally when absent, failed in CI. Every session writes under a fresh
random prefix and deletes its keys at the end.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Iterator

import pytest
import redis

from memorybank._async.stores.redis import AsyncRedisStore
from memorybank._sync.stores.redis import RedisStore
from memorybank.testing import AsyncContract, SyncContract
from tests.conftest import require_server

REDIS_URL = os.environ.get("MEMORYBANK_REDIS_URL", "redis://127.0.0.1:6379/0")

pytestmark = pytest.mark.server


def drop_prefix(url: str, prefix: str) -> None:
    """Delete every key under ``prefix`` (SCAN + DEL)."""
    client = redis.Redis.from_url(url)
    try:
        batch = []
        for key in client.scan_iter(match=prefix + "*", count=1000):
            batch.append(key)
            if len(batch) >= 500:
                client.delete(*batch)
                batch.clear()
        if batch:
            client.delete(*batch)
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


class TestRedisAsync(AsyncContract):
    @pytest.fixture
    async def store(self, redis_prefix: str) -> AsyncIterator[AsyncRedisStore]:
        store = AsyncRedisStore.from_url(REDIS_URL, prefix=redis_prefix, timeout=5)
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
    """Indexes maintained outside the thread scripts, as on a Redis Cluster."""

    @pytest.fixture
    async def store(self, redis_prefix: str) -> AsyncIterator[AsyncRedisStore]:
        store = AsyncRedisStore.from_url(
            REDIS_URL, prefix=redis_prefix + "c:", timeout=5, cluster=True
        )
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
