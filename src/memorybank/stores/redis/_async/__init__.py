"""AsyncRedisStore: threads, entries, branches, records and search in plain Redis 7
(working memory, snapshots and summaries are records: the contract's defaults).

Key layout, atomicity, cluster mode, search costs and TTLs: ``docs/redis.md``. Each
sibling module is a mixin of ``AsyncRedisStore``; the I/O-free parts (Lua scripts,
encoding) are shared with the generated sync twin.
"""

from __future__ import annotations

from memorybank.stores.contract.capabilities import Capability
from memorybank.stores.redis._async._atomic import RedisAtomic
from memorybank.stores.redis._async._base import MIGRATIONS
from memorybank.stores.redis._async._entries import RedisEntries
from memorybank.stores.redis._async._events import RedisEvents
from memorybank.stores.redis._async._records import RedisRecords
from memorybank.stores.redis._async._search import RedisSearch
from memorybank.stores.redis._async._threads import RedisThreads

__all__ = ["MIGRATIONS", "AsyncRedisStore"]


class AsyncRedisStore(
    RedisThreads,
    RedisEntries,
    RedisRecords,
    RedisSearch,
    RedisEvents,
    RedisAtomic,
):
    """Memory in Redis 7: one Lua script per thread operation, TTLs per thread.

    ``AsyncRedisStore(client)`` uses a ``redis.asyncio.Redis`` or
    ``redis.asyncio.RedisCluster`` the caller owns (``close()`` leaves it open);
    ``AsyncRedisStore.from_url(url)`` owns its client. A Redis Cluster is
    ``redis+cluster://host:port`` (any one node; ``rediss+cluster://`` with TLS),
    ``from_url(url, cluster=True)`` or a ``RedisCluster`` client. ``cluster=True``
    with a plain client keeps the cluster-safe layout on a single node (each
    script touches one hash slot; the tenant indexes are updated apart).
    """

    capabilities = frozenset(
        {
            Capability.ATOMIC,
            Capability.TTL,
            Capability.DURABLE,
            Capability.MULTI_PROCESS,
            Capability.TEXT_SEARCH,
            Capability.VECTOR_SEARCH,
            Capability.EVENTS,  # not with cluster=True (``_events``)
        }
    )
