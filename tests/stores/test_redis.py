"""Redis-specific behaviour: processes, outages, pools, TTLs, key layout, scripts.

Runs against ``$MEMORYBANK_REDIS_URL`` (default ``redis://127.0.0.1:6379/0``) under
a fresh prefix per session (dropped at the end). TTL tests sleep for real: Redis
expires keys on its own clock, so there is nothing to fake.
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import socket
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from urllib.parse import urlencode

import pytest
import redis
import redis.asyncio
from redis.crc import key_slot

from memorybank import AsyncMemory, Memory
from memorybank.errors import (
    ConfigurationError,
    StoreClosed,
    StoreError,
    StoreUnavailable,
    ThreadForbidden,
)
from memorybank.stores._async.open import open_store
from memorybank.stores.contract._async.store import AsyncStore, Record, VectorItem, Visibility
from memorybank.stores.memory._async.store import AsyncInMemoryStore
from memorybank.stores.redis._async import MIGRATIONS, AsyncRedisStore
from memorybank.stores.redis._sync import RedisStore
from tests.stores.test_contract_redis import REDIS_URL, cluster_safe_store, redis_prefix

__all__ = ["redis_prefix"]

pytestmark = pytest.mark.server


def _id(prefix: str = "t") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def prefix(redis_prefix: str) -> str:
    """A prefix of its own per test, under the session prefix (dropped with it)."""
    return f"{redis_prefix}{uuid.uuid4().hex[:6]}:"


@pytest.fixture
def raw() -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(REDIS_URL)
    yield client
    client.close()


@pytest.fixture
async def amemory(prefix: str) -> AsyncIterator[AsyncMemory]:
    memory = AsyncMemory(_url(prefix))  # owns (and closes) its store
    yield memory
    await memory.close()


def _url(prefix: str, base: str = REDIS_URL, **options: object) -> str:
    """A redis URL carrying memorybank's options (``AsyncMemory(url)`` owns its store)."""
    return f"{base}?{urlencode({'prefix': prefix, **options})}"


def _keys(raw: redis.Redis, pattern: str) -> list[str]:
    return sorted(k.decode() for k in raw.scan_iter(match=pattern, count=1000))


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# -- several processes -------------------------------------------------------------------


def _writer(url: str, prefix: str, thread_id: str, writer: int, count: int) -> None:
    memory = Memory(_url(prefix, base=url))
    try:
        for i in range(count):
            if i % 5 == 4:
                memory.entries.add_many(
                    thread_id,
                    [
                        {"role": "user", "content": f"w{writer}-{i}-a"},
                        {"role": "assistant", "content": f"w{writer}-{i}-b"},
                    ],
                )
            else:
                memory.remember(thread_id, "user", f"w{writer}-{i}")
    finally:
        memory.close()


def test_two_processes_append_to_one_thread(prefix: str) -> None:
    tid = _id()
    with Memory(_url(prefix)) as memory:
        memory.threads.create(thread_id=tid)
        ctx = multiprocessing.get_context("spawn")
        count = 60
        procs = [
            ctx.Process(target=_writer, args=(REDIS_URL, prefix, tid, w, count)) for w in range(2)
        ]
        for p in procs:
            p.start()
        for p in procs:
            p.join(120)
            assert p.exitcode == 0
        entries = memory.entries.list(tid)
        positions = [e.position for e in entries]
        assert positions == list(range(1, len(entries) + 1))  # gap-free, no duplicates
        for w in range(2):
            mine = [e.content for e in entries if (e.content or "").startswith(f"w{w}-")]
            expected: list[str] = []
            for i in range(count):
                if i % 5 == 4:
                    expected += [f"w{w}-{i}-a", f"w{w}-{i}-b"]
                else:
                    expected.append(f"w{w}-{i}")
            assert mine == expected
        # a batch is never interleaved with another writer's entries
        contents = [e.content or "" for e in entries]
        for index, content in enumerate(contents):
            if content.endswith("-a"):
                assert contents[index + 1] == content[:-1] + "b"


# -- outages, pools, recovery ------------------------------------------------------------


async def test_server_down_raises_store_unavailable_quickly(prefix: str) -> None:
    store = AsyncRedisStore.from_url(
        f"redis://127.0.0.1:{_closed_port()}/0", prefix=prefix, timeout=1
    )
    start = time.monotonic()
    with pytest.raises(StoreUnavailable) as info:
        await AsyncMemory(store).threads.get("t1")
    assert time.monotonic() - start < 2
    assert isinstance(info.value.__cause__, redis.RedisError | OSError)
    await store.close()


def test_server_down_sync(prefix: str) -> None:
    store = RedisStore.from_url(f"redis://127.0.0.1:{_closed_port()}/0", prefix=prefix, timeout=1)
    start = time.monotonic()
    with pytest.raises(StoreUnavailable):
        store.thread_get("default", "t1")
    assert time.monotonic() - start < 2
    with pytest.raises(StoreUnavailable):
        Memory(store).remember("t1", "user", "hi")
    store.close()


async def test_unresponsive_server_times_out(prefix: str) -> None:
    """A server that accepts but never answers: the command timeout bounds the wait."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        port = listener.getsockname()[1]
        store = AsyncRedisStore.from_url(f"redis://127.0.0.1:{port}/0", prefix=prefix, timeout=0.5)
        start = time.monotonic()
        with pytest.raises(StoreUnavailable):
            await store.thread_get("default", "t1")
        assert time.monotonic() - start < 2
        await store.close()


async def test_pool_exhaustion_raises_store_unavailable(prefix: str) -> None:
    pool = redis.asyncio.BlockingConnectionPool.from_url(REDIS_URL, max_connections=1, timeout=0.3)
    client = redis.asyncio.Redis(connection_pool=pool)
    store = AsyncRedisStore(client, prefix=prefix)
    memory = AsyncMemory(store)
    tid = (await memory.threads.create()).id
    await memory.remember(tid, "user", "before")
    held = await pool.get_connection()  # type: ignore[no-untyped-call]
    start = time.monotonic()
    with pytest.raises(StoreUnavailable):
        await memory.remember(tid, "user", "blocked")
    assert time.monotonic() - start < 1.5
    await pool.release(held)
    await memory.remember(tid, "user", "after")
    assert await memory.entries.count(tid) == 2
    await memory.close()
    await store.close()
    assert await client.ping()  # caller-owned: close() left it open
    await client.aclose()
    await pool.disconnect()


def _kill_clients(raw: redis.Redis, name: str) -> int:
    killed = 0
    for info in raw.client_list():
        if info.get("name") == name:
            raw.client_kill_filter(_id=info["id"])
            killed += 1
    return killed


async def test_pool_recovers_after_its_connections_are_killed(
    prefix: str, raw: redis.Redis
) -> None:
    name = _id("mbkill")
    memory = AsyncMemory(_url(prefix, client_name=name))
    tid = (await memory.threads.create()).id
    await memory.remember(tid, "user", "before")
    assert _kill_clients(raw, name) >= 1
    await asyncio.sleep(0.05)  # let the event loop see the server's FIN
    await memory.remember(tid, "user", "after")  # the dead connection is replaced
    assert [m["content"] for m in await memory.history(tid)] == ["before", "after"]
    await memory.close()


def test_sync_pool_recovers_after_its_connections_are_killed(prefix: str, raw: redis.Redis) -> None:
    name = _id("mbkill")
    with Memory(_url(prefix, client_name=name)) as memory:
        tid = memory.threads.create().id
        memory.remember(tid, "user", "before")
        assert _kill_clients(raw, name) >= 1
        memory.remember(tid, "user", "after")
        assert [m["content"] for m in memory.history(tid)] == ["before", "after"]


async def test_closed_store_and_caller_owned_client(prefix: str) -> None:
    client = redis.asyncio.Redis.from_url(REDIS_URL)
    store = AsyncRedisStore(client, prefix=prefix)
    await store.close()
    await store.close()  # idempotent
    with pytest.raises(StoreClosed):
        await store.thread_get("default", "x")
    assert await client.ping()
    await client.aclose()


# -- TTL (real expiry) -----------------------------------------------------------------


async def test_thread_ttl_expires_everything_and_list_forgets_it(
    prefix: str, raw: redis.Redis
) -> None:
    memory = AsyncMemory(_url(prefix, ttl=1))
    user = _id("u")
    tid = (await memory.threads.create(user_id=user)).id
    await memory.entries.add(tid, {"role": "user", "content": "x"}, idempotency_key="k1")
    await memory.branches.create(tid, "alt")
    thread_keys = _keys(raw, f"{prefix}{{default:{tid}}}*")
    assert len(thread_keys) == 5  # t, z:main, h:main, z:alt, h:alt
    assert all(0 < raw.pttl(k) <= 1000 for k in thread_keys)
    assert [t.id for t in await memory.threads.list(user_id=user)] == [tid]
    await asyncio.sleep(1.3)
    assert await memory.threads.get(tid) is None
    assert _keys(raw, f"{prefix}{{default:{tid}}}*") == []
    assert await memory.threads.list(user_id=user) == []
    assert await memory.threads.list() == []
    # lazy cleanup removed the index members
    assert raw.zcard(f"{prefix}{{default}}:threads") == 0
    assert raw.zcard(f"{prefix}{{default}}:u:{user}") == 0
    # the id is free again, with no leftover entries or idempotency keys
    await memory.threads.create(thread_id=tid)
    again = await memory.entries.add(tid, {"role": "user", "content": "y"}, idempotency_key="k1")
    assert again.content == "y" and await memory.entries.count(tid) == 1
    await memory.close()


def test_every_write_refreshes_the_thread_ttl(prefix: str, raw: redis.Redis) -> None:
    with Memory(_url(prefix, ttl=2)) as memory:
        tid = memory.threads.create().id
        memory.remember(tid, "user", "one")
        time.sleep(1.2)
        memory.remember(tid, "user", "two")  # refreshes every key of the thread
        time.sleep(1.2)
        assert memory.entries.count(tid) == 2
        assert [m["content"] for m in memory.history(tid)] == ["one", "two"]
        time.sleep(2.2)
        assert memory.threads.get(tid) is None


async def test_no_ttl_keeps_data(prefix: str, raw: redis.Redis) -> None:
    memory = AsyncMemory(_url(prefix))
    tid = (await memory.threads.create()).id
    await memory.remember(tid, "user", "x")
    assert all(raw.pttl(k) == -1 for k in _keys(raw, f"{prefix}*"))
    await memory.close()


async def test_working_and_snapshot_ttls(prefix: str) -> None:
    memory = AsyncMemory(_url(prefix, working_ttl=1, snapshot_ttl=1))
    run = _id("run")
    wm = memory.working(run)
    await wm.set("a", 1)
    await memory.snapshots.save(run, {"step": 1})
    await asyncio.sleep(0.6)
    await wm.set("b", 2)  # refreshes the working memory's deadline
    await asyncio.sleep(0.6)
    assert await wm.items() == {"a": 1, "b": 2}
    assert await memory.snapshots.load(run) is None
    await asyncio.sleep(1.1)
    assert await wm.items() == {}
    await memory.close()


# -- key layout, scripts, schema, errors ---------------------------------------------------


async def test_every_key_of_a_thread_is_in_one_cluster_slot(
    amemory: AsyncMemory, prefix: str, raw: redis.Redis
) -> None:
    tenant = amemory.tenant("acme:{eu}%")
    tid = (await tenant.threads.create(thread_id="a:{b}%c", user_id="u:1")).id
    await tenant.entries.add(tid, {"role": "user", "content": "x"}, idempotency_key="k")
    await tenant.branches.create(tid, "br:{x}")
    keys = _keys(raw, f"{prefix}{{acme*")
    thread_keys = [k for k in keys if ":a%3A%7Bb" in k]
    assert len(thread_keys) == 5
    assert len({key_slot(k.encode()) for k in thread_keys}) == 1
    base = f"{prefix}{{acme%3A%7Beu%7D%25:a%3A%7Bb%7D%25c}}:"
    assert all(k.startswith(base) for k in thread_keys)
    assert f"{prefix}{{acme%3A%7Beu%7D%25}}:threads" in keys
    assert f"{prefix}{{acme%3A%7Beu%7D%25}}:u:u%3A1" in keys


async def test_ids_with_separators_never_collide(amemory: AsyncMemory) -> None:
    one = amemory.tenant("a:b")
    two = amemory.tenant("a")
    await one.threads.create(thread_id="c")
    await two.threads.create(thread_id="b:c")
    await one.remember("c", "user", "one")
    await two.remember("b:c", "user", "two")
    assert [m["content"] for m in await one.history("c")] == ["one"]
    assert [m["content"] for m in await two.history("b:c")] == ["two"]
    assert await amemory.tenant("a").threads.get("c") is None


async def test_scripts_reload_after_script_flush(amemory: AsyncMemory, raw: redis.Redis) -> None:
    tid = (await amemory.threads.create()).id
    await amemory.remember(tid, "user", "before")
    raw.script_flush()
    await amemory.remember(tid, "user", "after")
    assert len(await amemory.history(tid)) == 2


async def test_schema_version_is_recorded_and_newer_data_is_refused(
    prefix: str, raw: redis.Redis
) -> None:
    store = AsyncRedisStore.from_url(REDIS_URL, prefix=prefix)
    await store.thread_get("default", "x")
    assert raw.get(prefix + "schema_version") == str(len(MIGRATIONS)).encode()
    await store.close()
    raw.set(prefix + "schema_version", len(MIGRATIONS) + 1)
    newer = AsyncRedisStore.from_url(REDIS_URL, prefix=prefix)
    with pytest.raises(ConfigurationError):
        await newer.thread_get("default", "x")
    await newer.close()


async def test_driver_errors_are_translated(
    amemory: AsyncMemory, prefix: str, raw: redis.Redis
) -> None:
    tid = (await amemory.threads.create()).id
    raw.delete(f"{prefix}{{default:{tid}}}:t")
    raw.set(f"{prefix}{{default:{tid}}}:t", "not a hash")
    with pytest.raises(StoreError) as info:
        await amemory.threads.get(tid)
    assert isinstance(info.value.__cause__, redis.ResponseError)
    assert not isinstance(info.value, StoreUnavailable)


async def test_open_store_reads_options_from_the_url(prefix: str, raw: redis.Redis) -> None:
    store = open_store(_url(prefix, ttl=30, timeout=2))
    assert isinstance(store, AsyncRedisStore)
    assert store.capabilities == frozenset(
        {
            "atomic",
            "ttl",
            "durable",
            "multi_process",
            "text_search",
            "vector_search",
        }  # no "events": a store whose threads expire keeps no change feed (docs/redis.md)
    )
    await store.close()
    memory = AsyncMemory(_url(prefix, ttl=30, timeout=2))
    tid = (await memory.threads.create()).id
    await memory.remember(tid, "user", "x")
    key = f"{prefix}{{default:{tid}}}:t"
    assert 0 < raw.pttl(key) <= 30_000
    await memory.close()


def test_bad_options_raise_configuration_error() -> None:
    with pytest.raises(ConfigurationError):
        RedisStore.from_url(REDIS_URL, prefix="bad{tag}")
    with pytest.raises(ConfigurationError):
        RedisStore.from_url(REDIS_URL, ttl=0)
    with pytest.raises(ConfigurationError):
        RedisStore.from_url(f"{REDIS_URL}?ttl=soon")


async def test_forget_user_counts_threads_entries_snapshots_summaries(
    amemory: AsyncMemory, prefix: str, raw: redis.Redis
) -> None:
    user = _id("u")
    tid = (await amemory.threads.create(user_id=user)).id
    await amemory.entries.add_many(tid, [{"role": "user", "content": "a"}] * 3)
    await amemory.branches.create(tid, "alt")  # copies 3 entries
    await amemory.snapshots.save(_id("run"), {"x": 1}, user_id=user)
    await amemory.summaries.add(agent_id="bot", user_id=user, content="s")
    await amemory.summaries.add(agent_id="bot", content="shared")
    assert await amemory.forget_user(user) == 1 + 6 + 1 + 1
    assert [s.content for s in await amemory.summaries.list(agent_id="bot")] == ["shared"]
    leftovers = [k for k in _keys(raw, f"{prefix}*") if user in k or tid in k]
    assert leftovers == []


async def test_created_at_filters_match_the_reference_store(prefix: str) -> None:
    """``before``/``after`` pages (scanned inside the script) equal the in-memory store's."""
    redis_store = AsyncRedisStore.from_url(REDIS_URL, prefix=prefix)
    stores: list[AsyncStore] = [redis_store, AsyncInMemoryStore()]
    base = datetime(2024, 1, 1, tzinfo=UTC)
    when = [base + timedelta(hours=(i * 7919) % 600) for i in range(600)]
    for store in stores:
        memory = AsyncMemory(store)  # does not own the store: closed below
        await memory.threads.create(thread_id="filtered")
        for i, created in enumerate(when):
            await memory.entries.add(
                "filtered", {"role": "user", "content": f"m{i}"}, created_at=created
            )
    cases = [
        {"after": base + timedelta(hours=300)},
        {"before": base + timedelta(hours=100), "limit": 7},
        {"after": base + timedelta(hours=10), "before": base + timedelta(hours=20)},
        {"after": base + timedelta(hours=50), "limit": 5, "offset": 300},
        {"before": base + timedelta(hours=599), "offset": 590},
        {"after": base + timedelta(hours=700)},
    ]
    for case in cases:
        for newest_first in (False, True):
            got = []
            for store in stores:
                _, page = await store.entry_list(
                    "default",
                    "filtered",
                    newest_first=newest_first,
                    **case,  # type: ignore[arg-type]
                )
                got.append([(e.content, e.position) for e in page])
            assert got[0] == got[1], case
    await redis_store.close()


# -- records, vectors, search (layout v2) -----------------------------------------------


@pytest.mark.parametrize("cluster", [False, True])
async def test_entry_vectors_live_expire_and_die_with_their_thread(
    prefix: str, raw: redis.Redis, cluster: bool
) -> None:
    store = (
        cluster_safe_store(prefix, ttl=30)
        if cluster
        else AsyncRedisStore.from_url(REDIS_URL, prefix=prefix, ttl=30)
    )
    memory = AsyncMemory(store)
    tid = (await memory.threads.create(thread_id="a:{b}", user_id="u")).id
    entry = await memory.remember(tid, "user", "hello")
    await store.vector_put("default", [VectorItem("entry", entry.id, "m:1", [1.0, 0.0], tid)])
    thread_key = f"{prefix}{{default:a%3A%7Bb%7D}}:t"
    vector_key = f"{prefix}{{default:a%3A%7Bb%7D}}:v:m%3A1"
    assert key_slot(vector_key.encode()) == key_slot(thread_key.encode())
    assert 0 < raw.pttl(vector_key) <= 30_000
    got = await store.vector_get("default", "entry", [entry.id], model_id="m:1")
    assert got == {entry.id: pytest.approx([1.0, 0.0])}
    assert await store.thread_delete("default", tid)
    assert not raw.exists(vector_key)
    assert raw.hlen(f"{prefix}{{default}}:ev:m%3A1") == 0
    assert await store.vector_get("default", "entry", [entry.id], model_id="m:1") == {}
    await memory.close()
    await store.close()


async def test_vectors_of_an_expired_thread_are_gone_and_unindexed(
    prefix: str, raw: redis.Redis
) -> None:
    store = AsyncRedisStore.from_url(REDIS_URL, prefix=prefix, ttl=0.3)
    memory = AsyncMemory(store)
    tid = (await memory.threads.create()).id
    entry = await memory.remember(tid, "user", "short-lived words")
    await store.vector_put("default", [VectorItem("entry", entry.id, "m", [1.0, 0.0], tid)])
    await asyncio.sleep(0.6)
    assert _keys(raw, f"{prefix}{{default:{tid}}}*") == []
    assert await store.vector_get("default", "entry", [entry.id], model_id="m") == {}
    assert raw.hlen(f"{prefix}{{default}}:ev:m") == 0  # cleaned by the read
    assert await store.text_search("default", "words", kinds=["entry"], k=5) == []
    assert raw.scard(f"{prefix}{{default}}:u0") == 0  # cleaned by the search
    await memory.close()
    await store.close()


async def test_records_live_in_the_tenant_slot_and_forget_user_erases_them(
    prefix: str, raw: redis.Redis
) -> None:
    store = AsyncRedisStore.from_url(REDIS_URL, prefix=prefix)
    when = datetime(2026, 1, 1, tzinfo=UTC)
    mine = Record("fact", "f:1", "bot", "u:1", "likes tea", {}, when, when)
    shared = Record("doc", "d:1", None, None, "manual", {"n": [1, 2.5]}, when, when)
    await store.record_put("acme", [mine, shared])
    await store.vector_put(
        "acme",
        [VectorItem("fact", "f:1", "m", [1.0, 0.0]), VectorItem("doc", "d:1", "m", [0.0, 1.0])],
    )
    keys = _keys(raw, f"{prefix}*")
    assert len({key_slot(k.encode()) for k in keys if "{acme}" in k}) == 1
    moved = Record("fact", "f:1", "bot", "u:2", "likes tea", {}, when, when)
    await store.record_put("acme", [moved])  # changes owner: leaves u:1's index
    assert await store.forget_user("acme", "u:1") == 0
    await store.record_put("acme", [mine])
    assert await store.forget_user("acme", "u:1") == 1
    assert [k for k in _keys(raw, f"{prefix}*") if "u%3A1" in k] == []
    assert await store.vector_get("acme", "fact", ["f:1"], model_id="m") == {}
    assert await store.record_get("acme", "doc", "d:1") == shared
    hits = await store.vector_search("acme", [0.0, 1.0], model_id="m", kinds=["doc"], k=3)
    assert [(h.id, round(h.score, 5)) for h in hits] == [("d:1", 1.0)]
    await store.close()


async def test_v1_data_is_migrated_shared_threads_get_indexed(
    prefix: str, raw: redis.Redis
) -> None:
    store = AsyncRedisStore.from_url(REDIS_URL, prefix=prefix)
    memory = AsyncMemory(store)
    shared = (await memory.threads.create(agent_id="bot")).id
    owned = (await memory.threads.create(user_id="bob")).id
    await memory.remember(shared, "user", "the lighthouse keeper")
    await memory.remember(owned, "user", "the lighthouse is bob's")
    await memory.close()
    await store.close()
    raw.delete(f"{prefix}{{default}}:u0")  # as a v1 store left it
    raw.set(prefix + "schema_version", 1)
    upgraded = AsyncRedisStore.from_url(REDIS_URL, prefix=prefix)
    hits = await upgraded.text_search(
        "default", "lighthouse", kinds=["entry"], k=5, visible_to=Visibility("bot", "alice")
    )
    assert [h.thread_id for h in hits] == [shared]
    assert raw.get(prefix + "schema_version") == str(len(MIGRATIONS)).encode() == b"5"
    assert raw.smembers(f"{prefix}{{default}}:u0") == {shared.encode()}
    await upgraded.close()


async def test_update_entries_keeps_members_readable_and_compaction_keeps_order(
    amemory: AsyncMemory,
) -> None:
    store = amemory.store
    tid = (await amemory.threads.create()).id
    ids = [(await amemory.remember(tid, "user", f"m{i}")).id for i in range(4)]
    changed = await store.entry_update(
        "default",
        tid,
        branch="main",
        changes=[(ids[1], None, {"o": [1, {}]}, 0), (_id(), "x", {}, 1)],
    )
    assert changed == 1
    _, page = await store.entry_list("default", tid, limit=3)
    assert (page[0].id, page[0].content, page[0].state) == (ids[1], None, {"o": [1, {}]})
    assert [e.position for e in page] == [2, 3, 4]


@pytest.mark.parametrize("cluster", [False, True])
async def test_v4_run_state_is_migrated_to_records(
    prefix: str, raw: redis.Redis, cluster: bool
) -> None:
    """Working memory, snapshots and summaries as layout 4 kept them (keys of their own)
    read back through the API after the migration to layout 5 (records), old keys gone;
    layout-4 records are found by key and agent (the sets v5 builds)."""
    at = 1_790_000_000_000_000  # µs
    tenant, run = f"{prefix}{{acme%3Aeu:run%3A1}}:", f"{prefix}{{acme%3Aeu}}:"
    raw.hset(tenant + "w", mapping={"plan": '{"a": [1]}', "k:ü": '"x"'})
    raw.hset(tenant + "s", mapping={"v": '{"step": 3}', "o": "ann", "at": at})
    raw.hset(f"{prefix}{{acme%3Aeu:open}}:s", mapping={"v": "1", "at": at})
    raw.sadd(run + "su:ann", "run:1")
    raw.rpush(
        run + "sum:bot%3A1",
        json.dumps(["s1", "ann", "Ann plans a trip", at]),
        json.dumps(["s2", None, "shared", at + 1]),
    )
    raw.sadd(run + "sumu:ann", "bot%3A1")
    raw.hset(run + "r:core", "c1", '[null, null, "na:me", "Ann", {}, 0, 0, null, 0]')
    raw.sadd(run + "rn:core", "c1")  # a record with a key: v5 indexes it (``rq:``)
    raw.hset(run + "r:note", "n1", '["bot:1", null, null, "hi", {}, 0, 0, null, 0]')
    raw.sadd(run + "rn:note", "n1")  # a record with an agent: v5 indexes it (``ra:``)
    raw.set(prefix + "schema_version", 4)
    store = (
        cluster_safe_store(prefix)
        if cluster
        else AsyncRedisStore.from_url(REDIS_URL, prefix=prefix)
    )
    memory = AsyncMemory(store)
    m = memory.tenant("acme:eu")
    assert await m.working("run:1").items() == {"plan": {"a": [1]}, "k:ü": "x"}
    assert await m.snapshots.load("run:1", user_id="ann") == {"step": 3}
    with pytest.raises(ThreadForbidden):
        await m.snapshots.load("run:1", user_id="bob")
    assert await m.snapshots.load("open", user_id="bob") == 1
    summaries = await m.summaries.list(agent_id="bot:1", user_id="ann")
    assert [(s.id, s.user_id, s.content) for s in summaries] == [
        ("s1", "ann", "Ann plans a trip"),
        ("s2", None, "shared"),
    ]
    assert summaries[0].created_at == datetime.fromtimestamp(at / 1e6, UTC)
    assert raw.get(prefix + "schema_version") == b"5"
    assert [k for k in _keys(raw, f"{prefix}*") if k.endswith((":w", ":s"))] == []
    assert not raw.exists(run + "su:ann", run + "sum:bot%3A1", run + "sumu:ann")
    by_key = await store.record_list_keys("acme:eu", "core", ["na:me"])
    assert [r.id for r in by_key] == ["c1"]
    assert [r.id for r in await store.record_list("acme:eu", "core", key="na:me")] == ["c1"]
    assert [r.id for r in await store.record_list("acme:eu", "note", agent_id="bot:1")] == ["n1"]
    assert await store.forget_user("acme:eu", "ann") == 2  # the snapshot, a summary
    assert await m.snapshots.load("run:1", user_id="ann") is None
    assert [s.id for s in await m.summaries.list(agent_id="bot:1", user_id="ann")] == ["s2"]
    await memory.close()
    await store.close()


def test_a_record_stored_without_a_revision_reads_as_revision_0(
    prefix: str, raw: redis.Redis
) -> None:
    """Records written before revisions existed (8-item JSON) can be guarded from 0."""
    raw.hset(f"{prefix}{{default}}:r:fact", "f1", '[null, null, null, "old", {}, 0, 0, null]')
    raw.sadd(f"{prefix}{{default}}:rn:fact", "f1")
    store = RedisStore.from_url(REDIS_URL, prefix=prefix)
    try:
        record = store.record_get("default", "fact", "f1")
        assert record is not None and record.revision == 0
        memory = Memory(store)
        assert memory.facts.supersede("f1", "new").version == 2
        assert [f.content for f in memory.facts.history("f1")] == ["old", "new"]
    finally:
        store.close()
