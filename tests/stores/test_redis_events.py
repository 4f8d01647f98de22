"""The Redis store's change feed beyond the conformance cases: every write path records
what the reference (in-memory) store records, a rolled-back ``atomic`` block never lets a
number come again, the feed costs no key while off, and the cluster layout has none.

Runs against ``$MEMORYBANK_REDIS_URL`` under the session's fresh prefix (dropped at the end).
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import redis

from memorybank import AsyncMemory
from memorybank.errors import ConfigurationError, CursorExpired
from memorybank.events.types import Event
from memorybank.stores.contract.capabilities import Capability
from memorybank.stores.memory._async.store import AsyncInMemoryStore
from memorybank.stores.redis._async import AsyncRedisStore
from memorybank.testing._async.contract._base import _new_entry
from tests.stores.test_contract_redis import REDIS_URL, cluster_safe_store, redis_prefix

__all__ = ["redis_prefix"]

pytestmark = pytest.mark.server


@pytest.fixture
async def store(redis_prefix: str) -> AsyncIterator[AsyncRedisStore]:
    store = AsyncRedisStore.from_url(REDIS_URL, prefix=f"{redis_prefix}{uuid.uuid4().hex[:6]}:")
    yield store
    await store.close()


async def _every_write_path(m: AsyncMemory) -> None:
    """One call of each write path the feed records, on a fresh tenant of ``m``."""
    store, tenant = m.store, m.tenant_id
    await m.threads.create(thread_id="t1", user_id="u1", agent_id="a1")
    e1 = await m.entries.add("t1", {"role": "user", "content": "one"})
    e2 = await m.entries.add("t1", {"role": "assistant", "content": "two"})
    await m.entries.add_many("t1", [{"role": "user", "content": c} for c in ("3", "4")])
    await m.branches.create("t1", "alt", from_entry=e2.id)  # a fork: its copies are added
    await m.branches.create("t1", "alt2")
    await m.branches.delete("t1", "alt2")
    await m.branches.rewind("t1", e1.id)
    e4 = await m.entries.add("t1", {"role": "user", "content": "five"})
    await store.entry_update(tenant, "t1", branch="main", changes=[(e4.id, "5", {}, 1)])
    await store.entry_compact(
        tenant, "t1", branch="main", through_position=e4.position, expected_ids=[e1.id, e4.id],
        summary=_new_entry("summary-1", "summary"), updated_at=datetime.now(UTC),
    )  # fmt: skip
    await m.entries.delete("t1", "summary-1")
    await m.entries.add("t1", {"role": "user", "content": "six"})
    await m.threads.update("t1", title="renamed")
    await m.threads.update("t1", title="renamed")  # no change: no event
    await m.entries.clear("t1")
    paris = await m.graph.add_entity("Paris", type="city", user_id="u1")
    france = await m.graph.add_entity("France", type="country", user_id="u1")
    await m.graph.add_relation(paris.id, "in", france.id, user_id="u1")
    await m.graph.update_entity(paris.id, observations=["capital"], user_id="u1")
    await m.graph.delete_entity(paris.id, user_id="u1")
    fact = await m.facts.add(content="likes tea", user_id="u1", agent_id="a1")
    await m.facts.supersede(fact.id, "likes coffee")
    await m.facts.delete(fact.id)
    doc = await m.documents.add("a document", user_id="u1")
    await m.documents.delete(doc.id)
    await m.threads.delete("t1")
    wm = m.working("r1")  # run state: records of the contract's derived kinds
    await wm.set("k", 1)
    await wm.delete("k")
    await m.snapshots.save("r1", {"step": 1}, user_id="u1")
    await m.snapshots.delete("r1", user_id="u1")
    await m.snapshots.save("r2", {"step": 2}, user_id="u1")
    await m.summaries.add(content="a summary", agent_id="a1", user_id="u1")
    await m.threads.create(thread_id="t2", user_id="u2")
    await m.entries.add("t2", {"role": "user", "content": "stays"})
    await m.threads.create(thread_id="t3", user_id="u1")
    await m.entries.add("t3", {"role": "user", "content": "goes"})


def _shape(events: list[Event]) -> list[tuple[Any, ...]]:
    """The events without what differs between stores (generated ids: numbered by their
    first appearance; times; cursors)."""
    names: dict[str, str] = {}

    def name(value: str | None) -> str | None:
        return None if value is None else names.setdefault(value, f"#{len(names)}")

    shaped = []
    for e in events:
        data = dict(e.data or {})
        if "version" in data:
            data["version"] = name(str(data["version"]))
        shaped.append(
            (e.kind, e.user_id, e.agent_id, e.thread_id, name(e.item_id), sorted(data.items()))
        )
    return shaped


async def _events(m: AsyncMemory) -> list[Event]:
    found: list[Event] = []
    after = None
    while page := await m.events.list(after=after, limit=7):
        found += page
        after = page[-1].cursor
    return found


async def test_every_write_path_records_what_the_reference_store_records(
    store: AsyncRedisStore,
) -> None:
    tenant = f"paths-{uuid.uuid4().hex[:8]}"
    shapes = []
    for backend in (AsyncInMemoryStore(), store):
        memory = AsyncMemory(backend)
        await memory.events.enable()
        m = memory.tenant(tenant)
        await _every_write_path(m)
        before = await _events(m)
        await m.forget_user("u1")
        shapes.append((_shape(before), _shape(await _events(m))))
    (reference, reference_after), (redis_events, redis_after) = shapes
    assert redis_events == reference
    kinds = {shape[0] for shape in redis_events}
    assert kinds >= {
        "thread.created", "thread.updated", "thread.deleted", "entry.added", "entry.updated",
        "entry.deleted", "graph.changed", "fact.added", "fact.superseded", "fact.deleted",
        "document.added", "document.deleted",
    }  # fmt: skip
    assert redis_after == reference_after
    assert [s[0] for s in redis_after] == ["thread.created", "entry.added", "user.forgotten"]


async def test_a_rolled_back_block_never_lets_a_number_come_again(store: AsyncRedisStore) -> None:
    memory = AsyncMemory(store)
    await memory.events.enable()
    m = memory.tenant(f"atomic-{uuid.uuid4().hex[:8]}")
    await m.threads.create(thread_id="kept")
    (kept,) = await m.events.list()
    drawn: list[Event] = []
    with pytest.raises(RuntimeError):
        async with store.atomic(m.tenant_id) as view:
            inner = AsyncMemory(view).tenant(m.tenant_id)
            await inner.threads.create(thread_id="undone")
            drawn = await m.events.list(after=kept.cursor)  # seen while the block ran
            raise RuntimeError("roll back")
    assert [e.kind for e in drawn] == ["thread.created"]
    assert await m.events.list() == [kept]
    await m.threads.create(thread_id="after")
    (after,) = await m.events.list(after=kept.cursor)
    assert int(after.cursor) > int(drawn[0].cursor)
    # a block on a tenant whose feed did not exist before it: the stream is made again
    fresh = memory.tenant(f"atomic-{uuid.uuid4().hex[:8]}")
    with pytest.raises(RuntimeError):
        async with store.atomic(fresh.tenant_id) as view:
            await AsyncMemory(view).tenant(fresh.tenant_id).threads.create(thread_id="x")
            drawn = await fresh.events.list()
            raise RuntimeError("roll back")
    assert await fresh.events.list() == []
    await fresh.threads.create(thread_id="y")
    (first,) = await fresh.events.list()
    assert int(first.cursor) > int(drawn[0].cursor)


async def test_off_writes_no_feed_key_and_on_again_expires_cursors(
    store: AsyncRedisStore, redis_prefix: str
) -> None:
    memory = AsyncMemory(store)
    m = memory.tenant(f"off-{uuid.uuid4().hex[:8]}")
    await memory.events.disable()
    await m.threads.create(thread_id="t")
    await m.entries.add("t", {"role": "user", "content": "x"})
    await m.facts.add(content="f", user_id="u")
    raw = redis.Redis.from_url(REDIS_URL)
    try:
        assert list(raw.scan_iter(match=store._idx(m.tenant_id) + "f*")) == []
    finally:
        raw.close()
    assert await m.events.list() == []
    await memory.events.enable(keep=timedelta(hours=1))
    await m.entries.add("t", {"role": "user", "content": "y"})
    (added,) = await m.events.list()
    await memory.events.disable()
    await memory.events.enable(keep=timedelta(hours=1))
    with pytest.raises(CursorExpired):
        await m.events.list(after=added.cursor)
    assert await m.events.list() == [added]


async def test_the_cluster_layout_has_no_feed(redis_prefix: str) -> None:
    store = cluster_safe_store(redis_prefix + f"c{uuid.uuid4().hex[:6]}:")
    try:
        assert Capability.EVENTS not in store.capabilities
        assert Capability.EVENTS in AsyncRedisStore.capabilities
        with pytest.raises(ConfigurationError):
            await store.events_enable(keep=timedelta(days=1))
        with pytest.raises(ConfigurationError):
            await AsyncMemory(store).events.enable()
        assert await store.events_keep() is None
    finally:
        await store.close()


async def test_a_store_whose_threads_expire_has_no_feed(redis_prefix: str) -> None:
    """Redis expires a ``ttl=`` thread's keys itself: no script could record the
    deletion, so the store claims no feed rather than follow with a silent gap."""
    prefix = f"{redis_prefix}x{uuid.uuid4().hex[:6]}:"
    store = AsyncRedisStore.from_url(REDIS_URL, prefix=prefix, ttl=600)
    try:
        assert Capability.EVENTS not in store.capabilities
        with pytest.raises(ConfigurationError, match="ttl"):
            await store.events_enable(keep=timedelta(days=1))
        with pytest.raises(ConfigurationError):
            await AsyncMemory(store).events.enable()
        assert await store.events_keep() is None
    finally:
        await store.close()
    # working memory and snapshot TTLs record no events: the feed stays possible
    kept = AsyncRedisStore.from_url(REDIS_URL, prefix=prefix, working_ttl=60, snapshot_ttl=60)
    try:
        assert Capability.EVENTS in kept.capabilities
    finally:
        await kept.close()
