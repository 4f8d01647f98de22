"""The few Redis pieces whose sync and async forms differ (hand-written pair).

``scripts/gen_sync.py`` renames the async names to their sync twins. Pools, timeouts,
no command retry and the asyncio cluster's waiting: ``docs/redis.md`` (Clients).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from contextvars import ContextVar
from typing import Any

import redis
import redis.asyncio
import redis.asyncio.cluster
import redis.asyncio.retry
import redis.backoff
import redis.retry

__all__ = [
    "CLUSTER_SCHEMES",
    "AsyncRedisClient",
    "AsyncRedisClusterClient",
    "RedisClient",
    "RedisClusterClient",
    "aconnect_redis",
    "aconnect_redis_cluster",
    "connect_redis",
    "connect_redis_cluster",
]

AsyncRedisClusterClient = redis.asyncio.RedisCluster
RedisClusterClient = redis.RedisCluster
AsyncRedisClient = redis.asyncio.Redis | redis.asyncio.RedisCluster
RedisClient = redis.Redis | redis.RedisCluster

#: URL schemes of a Redis Cluster, and the plain scheme each stands for.
CLUSTER_SCHEMES = {"redis+cluster": "redis", "rediss+cluster": "rediss"}


def _cluster_options(timeout: float, max_connections: int) -> dict[str, Any]:
    return {
        "socket_timeout": timeout,
        "socket_connect_timeout": timeout,
        "max_connections": max_connections,
        "decode_responses": False,
        # RESP2: with RESP3, redis-py enables maintenance notifications and then
        # skips its check of pooled connections on checkout, so a connection the
        # server closed (restart, CLIENT KILL, idle timeout) fails one command.
        "protocol": 2,
    }


def _options(timeout: float, max_connections: int) -> dict[str, Any]:
    # BlockingConnectionPool's ``timeout``: the wait for a free connection
    return {**_cluster_options(timeout, max_connections), "timeout": timeout}


def aconnect_redis(url: str, *, timeout: float, max_connections: int) -> redis.asyncio.Redis:
    """An asyncio client on its own blocking pool (connects lazily)."""
    pool = redis.asyncio.BlockingConnectionPool.from_url(
        url,
        retry=redis.asyncio.retry.Retry(redis.backoff.NoBackoff(), 0),
        **_options(timeout, max_connections),
    )
    return redis.asyncio.Redis.from_pool(pool)


def connect_redis(url: str, *, timeout: float, max_connections: int) -> redis.Redis:
    """A blocking client on its own blocking pool (connects lazily)."""
    pool = redis.BlockingConnectionPool.from_url(
        url,
        retry=redis.retry.Retry(redis.backoff.NoBackoff(), 0),
        **_options(timeout, max_connections),
    )
    return redis.Redis.from_pool(pool)


def _node_url(url: str) -> str:
    """``redis+cluster://...`` as the ``redis://...`` redis-py parses."""
    scheme, sep, rest = url.partition("://")
    return CLUSTER_SCHEMES.get(scheme.lower(), scheme) + sep + rest


#: Set while a task holds a turn of a ``_WaitingCluster`` (a pipeline re-sending a
#: redirected command through the client must not wait for a second turn).
_HOLDING: ContextVar[bool] = ContextVar("memorybank_redis_cluster_turn", default=False)


class _WaitingCluster(redis.asyncio.RedisCluster):
    """An asyncio cluster client whose callers wait for a free connection (see above)."""

    def __init__(self, *args: Any, wait: float, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._mb_turns = asyncio.Semaphore(int(kwargs["max_connections"]))
        self._mb_wait = wait

    @asynccontextmanager
    async def _mb_turn(self) -> AsyncIterator[None]:
        if _HOLDING.get():
            yield
            return
        try:
            async with asyncio.timeout(self._mb_wait):
                await self._mb_turns.acquire()
        except TimeoutError:
            raise redis.exceptions.ConnectionError(
                f"no free redis connection within {self._mb_wait} s"
            ) from None
        token = _HOLDING.set(True)
        try:
            yield
        finally:
            _HOLDING.reset(token)
            self._mb_turns.release()

    async def execute_command(self, *args: Any, **kwargs: Any) -> Any:
        async with self._mb_turn():
            return await super().execute_command(*args, **kwargs)

    def pipeline(
        self, transaction: Any | None = None, shard_hint: Any | None = None
    ) -> redis.asyncio.cluster.ClusterPipeline:
        if shard_hint:
            return super().pipeline(transaction, shard_hint)  # refused there
        return _WaitingPipeline(self, transaction)  # type: ignore[abstract]


class _WaitingPipeline(redis.asyncio.cluster.ClusterPipeline):
    """A pipeline of ``_WaitingCluster``: runs in one turn of its client."""

    async def execute(self, raise_on_error: bool = True, allow_redirections: bool = True) -> Any:
        client = self.cluster_client
        assert isinstance(client, _WaitingCluster)
        async with client._mb_turn():
            return await super().execute(raise_on_error, allow_redirections)


def aconnect_redis_cluster(
    url: str, *, timeout: float, max_connections: int
) -> redis.asyncio.RedisCluster:
    """An asyncio Redis Cluster client (finds the nodes on first use)."""
    return _WaitingCluster.from_url(
        _node_url(url),
        retry=redis.asyncio.retry.Retry(redis.backoff.NoBackoff(), 0),
        wait=timeout,
        **_cluster_options(timeout, max_connections),
    )


def connect_redis_cluster(url: str, *, timeout: float, max_connections: int) -> redis.RedisCluster:
    """A blocking Redis Cluster client, a blocking pool per node (connects at once)."""
    return redis.RedisCluster.from_url(
        _node_url(url),
        retry=redis.retry.Retry(redis.backoff.NoBackoff(), 0),
        connection_pool_class=redis.BlockingConnectionPool,
        timeout=timeout,
        **_cluster_options(timeout, max_connections),
    )
