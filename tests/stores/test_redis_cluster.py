"""The Redis store on a real three-master Redis Cluster: opening, slots, data moved from one node.

The conformance suite runs on the cluster in ``test_contract_redis.py`` (and the
graph, isolation and concurrency suites through ``StoreSpec("redis-cluster")``);
these are the cluster-specific checks. The cluster is the session's
(``tests.redis_cluster``); without redis-server it skips locally, fails in CI.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator

import pytest
import redis
import redis.asyncio
from redis.crc import key_slot

from memorybank import AsyncMemory, Memory
from memorybank.errors import ConfigurationError
from memorybank.stores.redis._async import AsyncRedisStore
from memorybank.stores.redis._sync import RedisStore
from tests.redis_cluster import raw_client
from tests.stores.test_contract_redis import (
    REDIS_URL,
    drop_prefix,
    redis_cluster_url,
    redis_prefix,
)

__all__ = ["redis_cluster_url", "redis_prefix"]  # session fixtures, re-exported

pytestmark = pytest.mark.server


@pytest.fixture
def prefix(redis_cluster_url: str) -> Iterator[str]:
    name = f"mbtest:{uuid.uuid4().hex[:10]}:"
    yield name
    drop_prefix(redis_cluster_url, name)


@pytest.fixture
def cluster(redis_cluster_url: str) -> Iterator[redis.RedisCluster]:
    client = raw_client(redis_cluster_url)
    assert isinstance(client, redis.RedisCluster)
    yield client
    client.close()


def _node_url(cluster_url: str) -> str:
    return cluster_url.replace("redis+cluster://", "redis://", 1)


def _owner(cluster: redis.RedisCluster, key: str) -> str:
    """The name (host:port) of the master serving ``key``."""
    node = cluster.nodes_manager.get_node_from_slot(key_slot(key.encode()))
    return str(node.name)


async def test_every_way_of_opening_a_cluster_works(redis_cluster_url: str, prefix: str) -> None:
    client = redis.asyncio.RedisCluster.from_url(_node_url(redis_cluster_url))
    stores = [
        AsyncRedisStore.from_url(redis_cluster_url, prefix=prefix),
        AsyncRedisStore.from_url(_node_url(redis_cluster_url), prefix=prefix, cluster=True),
        AsyncRedisStore(client, prefix=prefix),  # a RedisCluster client: cluster mode by itself
    ]
    memory = AsyncMemory(redis_cluster_url + "?" + "prefix=" + prefix)  # open by URL
    try:
        tid = (await memory.threads.create(user_id="u")).id
        await memory.remember(tid, "user", "hello cluster")
        for store in stores:
            assert store._cluster
            seen = AsyncMemory(store)
            assert [m["content"] for m in await seen.history(tid)] == ["hello cluster"]
            assert [t.id for t in await seen.threads.list(user_id="u")] == [tid]
    finally:
        await memory.close()
        for store in stores:
            await store.close()
        await client.aclose()


async def test_a_single_node_url_with_cluster_false_is_not_a_cluster() -> None:
    store = AsyncRedisStore.from_url(REDIS_URL)
    try:
        assert not store._cluster
    finally:
        await store.close()
    with pytest.raises(ConfigurationError):
        AsyncRedisStore.from_url("redis+cluster://127.0.0.1:notaport")


async def test_threads_spread_over_masters_and_each_thread_is_on_one(
    redis_cluster_url: str, prefix: str, cluster: redis.RedisCluster
) -> None:
    store = AsyncRedisStore.from_url(redis_cluster_url, prefix=prefix)
    memory = AsyncMemory(store)
    try:
        tenant = memory.tenant("acme")
        tids = [(await tenant.threads.create(user_id="u")).id for _ in range(24)]
        for tid in tids:
            await tenant.entries.add(tid, {"role": "user", "content": "x"}, idempotency_key="k")
            await tenant.branches.create(tid, "alt")
        masters = set()
        for tid in tids:
            keys = [_s(k) for k in cluster.scan_iter(match=f"{prefix}{{acme:{tid}}}:*")]
            assert len(keys) == 5  # thread hash, and a zset + id hash per branch
            assert len({key_slot(k.encode()) for k in keys}) == 1
            masters.add(_owner(cluster, keys[0]))
        assert len(masters) == 3  # 24 threads: spread over all three masters
        # every tenant index is in the tenant's slot
        index_keys = [_s(k) for k in cluster.scan_iter(match=f"{prefix}{{acme}}:*")]
        assert {key_slot(k.encode()) for k in index_keys} == {key_slot(b"{acme}")}
        listed = await tenant.threads.list(user_id="u")
        assert sorted(t.id for t in listed) == sorted(tids)
    finally:
        await memory.close()
        await store.close()


async def test_run_lists_scan_every_master(
    redis_cluster_url: str, prefix: str, cluster: redis.RedisCluster
) -> None:
    store = AsyncRedisStore.from_url(redis_cluster_url, prefix=prefix)
    try:
        runs = [f"run-{i}" for i in range(30)]
        for run in runs:
            await store.working_set("default", run, "k", "1")
        masters = {_owner(cluster, f"{prefix}{{default:{run}}}:w") for run in runs}
        assert len(masters) == 3
        assert await store.working_runs("default") == sorted(runs)
        assert await store.working_runs("other") == []
    finally:
        await store.close()


async def test_callers_wait_for_a_free_connection(redis_cluster_url: str, prefix: str) -> None:
    store = AsyncRedisStore.from_url(redis_cluster_url, prefix=prefix, max_connections=1)
    memory = AsyncMemory(store)
    try:
        tid = (await memory.threads.create()).id
        await asyncio.gather(*(memory.remember(tid, "user", str(i)) for i in range(40)))
        contents = sorted(int(m["content"]) for m in await memory.history(tid, last=100))
        assert contents == list(range(40))
    finally:
        await memory.close()
        await store.close()


def test_data_written_on_one_node_is_readable_once_moved_into_a_cluster(
    redis_cluster_url: str, redis_prefix: str, cluster: redis.RedisCluster
) -> None:
    """Same key names on one node and on a cluster: DUMP/RESTORE (what a migration
    tool does) every key of a single-node store into the cluster, then read it there."""
    prefix = redis_prefix + f"moved{uuid.uuid4().hex[:6]}:"
    single_store = RedisStore.from_url(REDIS_URL, prefix=prefix)
    single = Memory(single_store)
    tenant = single.tenant("t1")
    tid = tenant.threads.create(user_id="alice").id
    tenant.remember(tid, "user", "the launch code is blue")
    forked = tenant.threads.create(user_id="alice").id
    tenant.remember(forked, "user", "x")
    tenant.branches.create(forked, "alt")
    single.store.working_set("t1", "run1", "step", "3")
    fact = tenant.scoped(user_id="alice").facts.add(content="alice likes tea")
    single.close()
    single_store.close()
    source = redis.Redis.from_url(REDIS_URL)
    try:
        keys = list(source.scan_iter(match=prefix + "*"))
        assert len(keys) > 5
        for key in keys:
            dumped = source.dump(key)
            assert isinstance(dumped, bytes)
            cluster.restore(key, 0, dumped, replace=True)
    finally:
        source.close()
    moved_store = RedisStore.from_url(redis_cluster_url, prefix=prefix)
    moved = Memory(moved_store)
    try:
        tenant = moved.tenant("t1")
        assert [m["content"] for m in tenant.history(tid)] == ["the launch code is blue"]
        assert {t.id for t in tenant.threads.list(user_id="alice")} == {tid, forked}
        assert {b.name for b in tenant.branches.list(forked)} == {"main", "alt"}
        assert moved.store.working_get("t1", "run1", "step") == "3"
        assert tenant.scoped(user_id="alice").facts.get(fact.id) is not None
        hits = tenant.scoped(user_id="alice").search("launch", mode="keyword")
        assert [h.entry.content for h in hits if h.entry] == ["the launch code is blue"]
        tenant.remember(tid, "assistant", "noted")  # and it keeps working there
        assert len(tenant.history(tid)) == 2
    finally:
        moved.close()
        moved_store.close()
        drop_prefix(redis_cluster_url, prefix)


def _s(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


async def test_an_unreachable_cluster_is_store_unavailable() -> None:
    from memorybank.errors import StoreUnavailable
    from tests.reliability.conftest import spare_port

    url = f"redis+cluster://127.0.0.1:{spare_port()}"
    with pytest.raises(StoreUnavailable):
        RedisStore.from_url(url, timeout=1)  # the sync client connects at once
    store = AsyncRedisStore.from_url(url, timeout=1)  # the asyncio one on first use
    try:
        with pytest.raises(StoreUnavailable):
            await store.thread_get("t", "x")
    finally:
        await store.close()
