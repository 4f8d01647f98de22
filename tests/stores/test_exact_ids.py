"""Ids are exact on every store: "x", "x " and "X" are three different ids.

Through the public API, on each of the five stores (server stores join through
the contract suites' session fixtures: skipped locally when their server is
absent, failed in CI), for every kind of id: tenant, thread, user (owner), agent,
fact, document, snapshot run id, working-memory run id and key, core-fact user
and key. MySQL/MariaDB once compared ids under a PAD SPACE collation, where
"acme " was "acme"; these tests fail there. A refused append writes nothing, and
every store accepts the same ids: any 255 printable characters (4-byte ones too).
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Iterator
from pathlib import Path
from typing import Any

import pytest

import memorybank.stores
from memorybank import AsyncMemory, Memory
from memorybank.errors import NotFound, ThreadForbidden
from memorybank.memory._async.core_facts import AsyncCoreFacts
from memorybank.stores import AsyncInMemoryStore, AsyncSQLiteStore, InMemoryStore, SQLiteStore
from tests.stores.test_contract_mysql import URL as MYSQL_URL
from tests.stores.test_contract_mysql import mysql_prefix
from tests.stores.test_contract_postgres import URL as POSTGRES_URL
from tests.stores.test_contract_postgres import pg_prefix
from tests.stores.test_contract_redis import REDIS_URL, redis_prefix

__all__ = ["mysql_prefix", "pg_prefix", "redis_prefix"]  # session fixtures, re-exported

STORES = ["memory", "sqlite", "postgres", "redis", "mysql"]
#: 255 characters (the most ``check_id`` accepts), 4-byte ones included, ending in a space.
LONG = ("é😀漢" * 85)[:254] + " "


#: Server store class name, URL and prefix fixture, per store kind.
_SERVERS = {
    "postgres": ("PostgresStore", POSTGRES_URL, "pg_prefix"),
    "redis": ("RedisStore", REDIS_URL, "redis_prefix"),
    "mysql": ("MySQLStore", MYSQL_URL, "mysql_prefix"),
}


def _store(kind: str, request: pytest.FixtureRequest, tmp_path: Path, *, sync: bool) -> Any:
    """A store of ``kind`` (sync or async); server stores on the session's prefix."""
    if kind == "memory":
        return (InMemoryStore if sync else AsyncInMemoryStore)()
    if kind == "sqlite":
        return (SQLiteStore if sync else AsyncSQLiteStore)(tmp_path / f"ids-{sync}.db")
    name, url, prefix = _SERVERS[kind]
    cls = getattr(memorybank.stores, name if sync else f"Async{name}")
    return cls.from_url(url, prefix=request.getfixturevalue(prefix), timeout=10)


@pytest.fixture(params=STORES)
async def root(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[AsyncMemory]:
    """An ``AsyncMemory`` on each store (server stores share the session's prefix)."""
    store = _store(str(request.param), request, tmp_path, sync=False)
    yield AsyncMemory(store)
    await store.close()


@pytest.fixture
def memory(root: AsyncMemory) -> AsyncMemory:
    """A fresh tenant of ``root``: every test starts empty, whatever the store holds."""
    return root.tenant(_fresh("tenant"))


def _fresh(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def _spellings(base: str) -> list[str]:
    """``base``, with a trailing space, in upper case: three different ids."""
    return [base, base + " ", base.upper()]


async def _hidden(call: Awaitable[Any]) -> bool:
    """Whether a by-id read shows nothing: ``None``, empty, or refused as not visible."""
    try:
        result = await call
    except (ThreadForbidden, NotFound):
        return True
    return result is None or result == [] or result == {}


async def test_tenants(root: AsyncMemory) -> None:
    spellings = _spellings(_fresh("acme"))
    for count, tenant in enumerate(spellings, 1):
        memory = root.tenant(tenant)
        # The same thread id in each tenant: no Conflict, each its own thread.
        await memory.threads.create(thread_id="t1", user_id="alice", agent_id="bot")
        for n in range(count):
            await memory.entries.add("t1", {"role": "user", "content": f"{tenant}|{n}"})
        await memory.facts.add(agent_id=None, content=f"fact of {tenant!r}")
        await memory.documents.add(f"document of {tenant!r}")
        await memory.snapshots.save("run", {"tenant": tenant})
        await memory.working("run").set("k", tenant)
    for count, tenant in enumerate(spellings, 1):
        memory = root.tenant(tenant)
        assert [t.id for t in await memory.threads.list()] == ["t1"]
        entries = await memory.entries.list("t1")
        assert [e.content for e in entries] == [f"{tenant}|{n}" for n in range(count)]
        assert [f.content for f in await memory.facts.list()] == [f"fact of {tenant!r}"]
        assert [d.content for d in await memory.documents.list()] == [f"document of {tenant!r}"]
        assert await memory.snapshots.load("run") == {"tenant": tenant}
        assert await memory.working("run").items() == {"k": tenant}
    # Erasing in one tenant leaves the look-alikes whole.
    doomed = root.tenant(spellings[1])
    assert await doomed.forget_user("alice") > 0
    await doomed.working("run").clear()
    assert await doomed.threads.get("t1") is None
    for tenant in (spellings[0], spellings[2]):
        memory = root.tenant(tenant)
        assert await memory.threads.get("t1") is not None
        assert await memory.working("run").items() == {"k": tenant}


async def test_threads(memory: AsyncMemory) -> None:
    first, spaced, upper = _spellings(_fresh("thread"))
    await memory.threads.create(thread_id=first)
    await memory.entries.add(first, {"role": "user", "content": "one"})
    for other in (spaced, upper):
        assert await memory.threads.get(other) is None
        with pytest.raises(NotFound):
            await memory.entries.add(other, {"role": "user", "content": "stray"})
        with pytest.raises(NotFound):
            await memory.entries.list(other)
        assert not await memory.threads.delete(other)
    for count, other in enumerate((spaced, upper), 2):
        await memory.threads.create(thread_id=other)  # no Conflict with ``first``
        await memory.entries.add_many(
            other, [{"role": "user", "content": other}] * count, idempotency_key="k"
        )
    assert [await memory.entries.count(t) for t in (first, spaced, upper)] == [1, 2, 3]
    assert await memory.threads.delete(spaced)
    assert [await memory.entries.count(t) for t in (first, upper)] == [1, 3]


async def test_owner_look_alikes_are_refused_and_write_nothing(memory: AsyncMemory) -> None:
    thread = await memory.threads.create(user_id="alice")
    await memory.entries.add(thread.id, {"role": "user", "content": "mine"}, user_id="alice")
    before = await memory.threads.get(thread.id)
    message = {"role": "user", "content": "intruder"}
    for other in ("alice ", "Alice", " alice"):
        with pytest.raises(ThreadForbidden):
            await memory.entries.add(thread.id, message, user_id=other)
        with pytest.raises(ThreadForbidden):  # two round trips on MySQL: keys are read first
            await memory.entries.add(thread.id, message, user_id=other, idempotency_key="i")
        with pytest.raises(ThreadForbidden):  # bigger than MySQL's one-round-trip batch
            await memory.entries.add_many(thread.id, [message] * 20, user_id=other)
        with pytest.raises(ThreadForbidden):
            await memory.entries.list(thread.id, user_id=other)
        assert await memory.threads.list(user_id=other) == []
        assert await memory.forget_user(other) == 0
    assert await memory.entries.count(thread.id) == 1
    assert await memory.threads.get(thread.id) == before  # updated_at untouched
    assert [t.id for t in await memory.threads.list(user_id="alice")] == [thread.id]


async def test_users_and_agents_of_records(memory: AsyncMemory) -> None:
    alice, alice_spaced, alice_upper = _spellings("alice")
    bot, bot_spaced, bot_upper = _spellings("bot")
    fact = await memory.facts.add(agent_id=bot, user_id=alice, content="alice likes tea")
    doc = await memory.documents.add("alice's notes", agent_id=bot, user_id=alice)
    summary = await memory.summaries.add(agent_id=bot, user_id=alice, content="a summary")
    await memory.threads.create(thread_id=_fresh("t"), user_id=alice, agent_id=bot)
    assert [f.id for f in await memory.facts.list(agent_id=bot, user_id=alice)] == [fact.id]
    assert [d.id for d in await memory.documents.list(agent_id=bot, user_id=alice)] == [doc.id]
    assert [s.id for s in await memory.summaries.list(agent_id=bot, user_id=alice)] == [summary.id]
    assert len(await memory.threads.list(agent_id=bot)) == 1
    for agent, user in [(bot, alice_spaced), (bot, alice_upper), (bot_spaced, alice)]:
        assert await memory.facts.list(agent_id=agent, user_id=user) == []
        assert await memory.documents.list(agent_id=agent, user_id=user) == []
        assert await _hidden(memory.documents.get(doc.id, agent_id=agent, user_id=user))
    assert await memory.summaries.list(agent_id=bot, user_id=alice_spaced) == []
    for agent in (bot_spaced, bot_upper):
        assert await memory.summaries.list(agent_id=agent, user_id=alice) == []
        assert await memory.threads.list(agent_id=agent) == []
    # The store's own scoped queries (keyword search) tell them apart too.
    hits = await memory.documents.search("notes", mode="keyword", agent_id=bot, user_id=alice)
    assert [h.document.id for h in hits if h.document] == [doc.id]
    for agent, user in [(bot, alice_spaced), (bot_upper, alice)]:
        assert (
            await memory.documents.search("notes", mode="keyword", agent_id=agent, user_id=user)
            == []
        )
    assert await memory.forget_user(alice_spaced) == 0
    assert await memory.facts.get(fact.id) is not None


async def test_fact_and_document_ids(memory: AsyncMemory) -> None:
    fact = await memory.facts.add(agent_id=None, content="the sky is blue")
    doc = await memory.documents.add("a document")
    for other in (fact.id + " ", fact.id.lower()):
        assert await memory.facts.get(other) is None
        assert not await memory.facts.delete(other)
    for other in (doc.id + " ", doc.id.lower()):
        assert await memory.documents.get(other) is None
        assert not await memory.documents.delete(other)
    assert (await memory.facts.get(fact.id)) == fact
    assert (await memory.documents.get(doc.id)) == doc


async def test_snapshot_run_ids(memory: AsyncMemory) -> None:
    first, spaced, upper = _spellings(_fresh("run"))
    await memory.snapshots.save(first, {"v": 1})
    for other in (spaced, upper):
        assert await memory.snapshots.load(other) is None
        assert not await memory.snapshots.delete(other)
    await memory.snapshots.save(spaced, {"v": 2})
    await memory.snapshots.save(upper, {"v": 3})
    assert [await memory.snapshots.load(r) for r in (first, spaced, upper)] == [
        {"v": 1},
        {"v": 2},
        {"v": 3},
    ]
    # An owner's look-alike is another user: it cannot read or replace the snapshot.
    owned = _fresh("owned")
    await memory.snapshots.save(owned, {"v": "alice"}, user_id="alice")
    assert await _hidden(memory.snapshots.load(owned, user_id="alice "))
    with pytest.raises(ThreadForbidden):
        await memory.snapshots.save(owned, {"v": "intruder"}, user_id="Alice")
    assert await memory.snapshots.load(owned, user_id="alice") == {"v": "alice"}


async def test_working_memory_run_ids_and_keys(memory: AsyncMemory) -> None:
    first, spaced, upper = _spellings(_fresh("run"))
    await memory.working(first).set("k", 1)
    await memory.working(first).set("k ", 2)
    await memory.working(first).set("K", 3)
    assert await memory.working(first).items() == {"K": 3, "k": 1, "k ": 2}
    assert await memory.working(spaced).get("k") is None
    assert await memory.working(upper).get("k") is None
    await memory.working(spaced).set("k", "spaced")
    assert await memory.working(first).delete("k ")
    assert await memory.working(first).items() == {"K": 3, "k": 1}
    await memory.working(upper).clear()
    assert await memory.working(spaced).items() == {"k": "spaced"}
    assert await memory.working(first).get("k") == 1


async def test_core_fact_users_and_keys(memory: AsyncMemory) -> None:
    users = [AsyncCoreFacts(memory=memory, user_id=u) for u in _spellings("alice")]
    for n, facts in enumerate(users):
        await facts.set("k", f"user {n}")
    await users[0].set("k ", "spaced key")
    await users[0].set("K", "upper key")
    assert await users[0].all() == {"K": "upper key", "k": "user 0", "k ": "spaced key"}
    assert [await f.get("k") for f in users] == ["user 0", "user 1", "user 2"]
    assert [await f.all() for f in users[1:]] == [{"k": "user 1"}, {"k": "user 2"}]
    assert await users[0].delete("k ")
    assert [v for v, _ in await users[0].history("k ")] == ["spaced key"]
    assert [v for v, _ in await users[0].history("k")] == ["user 0"]
    assert await users[0].get("k") == "user 0"


async def test_every_store_accepts_the_longest_ids(memory: AsyncMemory) -> None:
    """255-character ids (4-byte characters, a trailing space) fit everywhere.

    Core facts and fact-source links derive their record ids from two such ids.
    """
    assert len(LONG) == 255
    long = memory.tenant(LONG)
    await long.threads.create(thread_id=LONG, user_id=LONG, agent_id=LONG)
    added = await long.entries.add(
        LONG, {"role": "user", "content": "hi"}, user_id=LONG, idempotency_key=LONG
    )
    again = await long.entries.add(
        LONG, {"role": "user", "content": "hi"}, user_id=LONG, idempotency_key=LONG
    )
    assert again.id == added.id
    batch = [{"role": "user", "content": "b"}] * 3
    key = LONG[:-5]  # the keys derived from it ("<key>:<n>") are ids too
    first = await long.entries.add_many(LONG, batch, user_id=LONG, idempotency_key=key)
    second = await long.entries.add_many(LONG, batch, user_id=LONG, idempotency_key=key)
    assert [e.id for e in first] == [e.id for e in second]
    assert await long.entries.count(LONG) == 4
    fact = await long.facts.add(agent_id=LONG, user_id=LONG, content="x", source_entries=[LONG])
    assert await long.facts.get(fact.id) == fact
    updated = await long.facts.update(fact.id, source_entries=[LONG[:-1]])  # relinks
    assert updated.source_entries == (LONG[:-1],)
    doc = await long.documents.add("d", agent_id=LONG, user_id=LONG)
    assert [d.id for d in await long.documents.list(agent_id=LONG, user_id=LONG)] == [doc.id]
    await long.summaries.add(agent_id=LONG, user_id=LONG, content="s")
    await long.snapshots.save(LONG, {"v": 1}, user_id=LONG)
    assert await long.snapshots.load(LONG, user_id=LONG) == {"v": 1}
    await long.working(LONG).set(LONG, 1)
    assert await long.working(LONG).items() == {LONG: 1}
    core = AsyncCoreFacts(memory=long, user_id=LONG)
    await core.set(LONG, "v1")
    await core.set(LONG, "v2")
    await core.set(LONG[:-1], "other key")
    assert await core.all() == {LONG[:-1]: "other key", LONG: "v2"}
    assert [v for v, _ in await core.history(LONG)] == ["v1", "v2"]
    assert await core.delete(LONG)
    assert await long.forget_user(LONG) > 0
    assert await long.threads.get(LONG) is None


@pytest.fixture(params=STORES)
def sync_memory(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Memory]:
    store = _store(str(request.param), request, tmp_path, sync=True)
    yield Memory(store).tenant(_fresh("tenant"))
    store.close()


def test_sync_owner_look_alike_is_refused_and_writes_nothing(sync_memory: Memory) -> None:
    thread = sync_memory.threads.create(user_id="alice")
    for other in ("alice ", "ALICE"):
        with pytest.raises(ThreadForbidden):
            sync_memory.entries.add(thread.id, {"role": "user", "content": "x"}, user_id=other)
    assert sync_memory.entries.count(thread.id) == 0
    sync_memory.tenant(sync_memory.tenant_id + " ").threads.create(thread_id=thread.id)
    assert sync_memory.threads.get(thread.id) == thread
