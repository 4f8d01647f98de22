"""The few Redis pieces whose sync and async forms differ (hand-written pair).

``memorybank/_async/stores/redis.py`` is the single source of the Redis store;
``scripts/gen_sync.py`` renames ``AsyncRedisClient`` -> ``RedisClient`` and
``aconnect_redis`` -> ``connect_redis`` (and the cluster pair
``AsyncRedisClusterClient`` / ``aconnect_redis_cluster``) to build the sync
twin. The single-node factories build a client the store owns: a blocking pool
(waits at most ``timeout`` for a free connection, then fails), socket timeouts
of ``timeout`` seconds, and no automatic command retry (a retried ``EVALSHA``
whose reply was lost could apply a non-idempotent append twice; dead pooled
connections are detected and reopened when they are checked out instead).

The cluster factories take ``redis+cluster://host:port`` (or
``rediss+cluster://``): one seed node, the client discovers the others from
``CLUSTER SLOTS``. Same timeouts and no command retry; ``MOVED``/``ASK``
redirections (a command that did not run) are still followed. The pool is per
node: the sync client's waits at most ``timeout`` for a free connection, the
asyncio client's fails at once when a node already has ``max_connections``
(redis-py's asyncio cluster has no blocking pool).
"""

from __future__ import annotations

from typing import Any

import redis
import redis.asyncio
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


def _node_url(url: str) -> str:
    """``redis+cluster://...`` as the ``redis://...`` redis-py parses."""
    scheme, sep, rest = url.partition("://")
    return CLUSTER_SCHEMES.get(scheme.lower(), scheme) + sep + rest


def _cluster_options(timeout: float, max_connections: int) -> dict[str, Any]:
    return {
        "socket_timeout": timeout,
        "socket_connect_timeout": timeout,
        "max_connections": max_connections,
        "decode_responses": False,
        "protocol": 2,  # as above
    }


def aconnect_redis_cluster(
    url: str, *, timeout: float, max_connections: int
) -> redis.asyncio.RedisCluster:
    """An asyncio Redis Cluster client (finds the nodes on first use)."""
    return redis.asyncio.RedisCluster.from_url(
        _node_url(url),
        retry=redis.asyncio.retry.Retry(redis.backoff.NoBackoff(), 0),
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
