"""The few Redis pieces whose sync and async forms differ (hand-written pair).

``memorybank/_async/stores/redis.py`` is the single source of the Redis store;
``scripts/gen_sync.py`` renames ``AsyncRedisClient`` -> ``RedisClient`` and
``aconnect_redis`` -> ``connect_redis`` to build the sync twin. Both factories
build a client the store owns: a blocking pool (waits at most ``timeout`` for a
free connection, then fails), socket timeouts of ``timeout`` seconds, and no
automatic command retry (a retried ``EVALSHA`` whose reply was lost could apply
a non-idempotent append twice; dead pooled connections are detected and
reopened when they are checked out instead).
"""

from __future__ import annotations

from typing import Any

import redis
import redis.asyncio
import redis.asyncio.retry
import redis.backoff
import redis.retry

__all__ = ["AsyncRedisClient", "RedisClient", "aconnect_redis", "connect_redis"]

AsyncRedisClient = redis.asyncio.Redis
RedisClient = redis.Redis


def _options(timeout: float, max_connections: int) -> dict[str, Any]:
    return {
        "socket_timeout": timeout,
        "socket_connect_timeout": timeout,
        "max_connections": max_connections,
        "timeout": timeout,  # BlockingConnectionPool: wait for a free connection
        "decode_responses": False,
        # RESP2: with RESP3, redis-py enables maintenance notifications and then
        # skips its check of pooled connections on checkout, so a connection the
        # server closed (restart, CLIENT KILL, idle timeout) fails one command.
        "protocol": 2,
    }


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
