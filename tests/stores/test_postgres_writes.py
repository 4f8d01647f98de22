"""PostgreSQL store writes: several OS processes appending to one thread and creating
the schema at once, combined appends, idempotency-key races, values PostgreSQL
cannot store.

Uses the server at ``$MEMORYBANK_POSTGRES_URL`` (see ``_postgres.py``): skipped
locally when it is down, failed in CI. Every test works under its own table
prefix, dropped after.
"""

from __future__ import annotations

import asyncio
import multiprocessing
from typing import Any

import pytest

from memorybank.errors import InvalidInput
from memorybank.memory._async.memory import AsyncMemory
from memorybank.memory._sync.memory import Memory
from memorybank.stores.postgres._async import MIGRATIONS, AsyncPostgresStore
from memorybank.stores.postgres._sync import PostgresStore
from tests.stores import _postgres
from tests.stores._postgres import admin
from tests.stores.test_contract_postgres import URL

pytestmark = pytest.mark.server

prefix = _postgres.prefix  # the fixture: a fresh table prefix, dropped afterwards


# -- several OS processes ------------------------------------------------------------


def _append_worker(
    url: str, prefix: str, thread_id: str, writer: int, count: int, batch: int, start: Any
) -> None:
    store = PostgresStore.from_url(url, prefix=prefix, pool_size=2)
    memory = Memory(store)
    try:
        start.wait(30)
        for i in range(0, count, batch):
            memory.entries.add_many(
                thread_id,
                [{"role": "user", "content": f"w{writer}-{j}"} for j in range(i, i + batch)],
            )
    finally:
        memory.close()
        store.close()


def test_two_processes_append_to_one_thread_without_loss_or_reordering(prefix: str) -> None:
    store = PostgresStore.from_url(URL, prefix=prefix, pool_size=2)
    memory = Memory(store)
    tid = memory.threads.create().id
    ctx = multiprocessing.get_context("spawn")
    start = ctx.Event()
    count = 120
    workers = [
        ctx.Process(target=_append_worker, args=(URL, prefix, tid, w, count, batch, start))
        for w, batch in ((0, 1), (1, 4))
    ]
    for process in workers:
        process.start()
    start.set()
    for process in workers:
        process.join(120)
        assert process.exitcode == 0
    entries = memory.entries.list(tid)
    assert len(entries) == 2 * count
    positions = [e.position for e in entries]
    assert positions == list(range(1, 2 * count + 1))  # gap-free, strictly increasing
    for w in range(2):
        mine = [e for e in entries if (e.content or "").startswith(f"w{w}-")]
        assert [e.content for e in mine] == [f"w{w}-{i}" for i in range(count)]
    # batches of writer 1 were never interleaved with writer 0's entries
    ones = [e.position for e in entries if (e.content or "").startswith("w1-")]
    for i in range(0, count, 4):
        assert ones[i : i + 4] == list(range(ones[i], ones[i] + 4))
    memory.close()
    store.close()


def _first_use_worker(url: str, prefix: str, start: Any) -> None:
    store = PostgresStore.from_url(url, prefix=prefix, pool_size=1)
    try:
        start.wait(30)
        store.connect()
        Memory(store).threads.create()
    finally:
        store.close()


def test_concurrent_first_use_from_processes_creates_the_schema_once(prefix: str) -> None:
    ctx = multiprocessing.get_context("spawn")
    start = ctx.Event()
    workers = [ctx.Process(target=_first_use_worker, args=(URL, prefix, start)) for _ in range(3)]
    for process in workers:
        process.start()
    start.set()
    for process in workers:
        process.join(120)
        assert process.exitcode == 0
    assert admin(f"SELECT version FROM {prefix}schema_version") == [(len(MIGRATIONS),)]
    assert admin(f"SELECT count(*) FROM {prefix}threads") == [(3,)]


async def test_concurrent_appends_of_a_tenant_share_statements(prefix: str) -> None:
    """Write combining: appends queued behind a running one go in as one statement
    (one transaction id, one commit) across threads, each in its own place."""
    store = AsyncPostgresStore.from_url(URL, prefix=prefix, pool_size=4)
    memory = AsyncMemory(store)
    tids = [(await memory.threads.create()).id for _ in range(16)]
    entries = await asyncio.gather(
        *(memory.remember(tid, "user", f"{tid}-{i}") for i in range(3) for tid in tids)
    )
    [(transactions,)] = admin(f"SELECT count(DISTINCT xmin::text) FROM {prefix}entries")
    assert transactions < len(entries) // 2
    for tid in tids:
        stored = await memory.entries.list(tid)
        assert [e.position for e in stored] == [1, 2, 3]
        assert sorted(e.content or "" for e in stored) == [f"{tid}-{i}" for i in range(3)]
        assert {e.id: e.position for e in entries if e.thread_id == tid} == {
            e.id: e.position for e in stored
        }
    await store.close()


async def test_values_postgres_cannot_store_raise_invalid_input(prefix: str) -> None:
    store = AsyncPostgresStore.from_url(URL, prefix=prefix, pool_size=1)
    memory = AsyncMemory(store)
    tid = (await memory.threads.create()).id
    with pytest.raises(InvalidInput):
        await memory.remember(tid, "user", "nul \x00 byte")
    with pytest.raises(InvalidInput):
        await memory.remember(tid, "user", "ok", metadata={"k": "nul \x00"})
    assert await memory.entries.count(tid) == 0
    await store.close()


async def test_racing_writers_of_one_idempotency_key_store_it_once(prefix: str) -> None:
    a = AsyncPostgresStore.from_url(URL, prefix=prefix, pool_size=2)
    b = AsyncPostgresStore.from_url(URL, prefix=prefix, pool_size=2)
    ma, mb = AsyncMemory(a), AsyncMemory(b)
    tid = (await ma.threads.create()).id
    for i in range(25):
        message = {"role": "user", "content": f"pay {i}"}
        one, two = await asyncio.gather(
            ma.entries.add(tid, message, idempotency_key=f"k{i}"),
            mb.entries.add(tid, message, idempotency_key=f"k{i}"),
        )
        assert one.id == two.id
    entries = await ma.entries.list(tid)
    assert [e.content for e in entries] == [f"pay {i}" for i in range(25)]
    await a.close()
    await b.close()


async def test_racing_writers_of_one_key_with_other_payloads_store_one(prefix: str) -> None:
    a = AsyncPostgresStore.from_url(URL, prefix=prefix, pool_size=2)
    b = AsyncPostgresStore.from_url(URL, prefix=prefix, pool_size=2)
    ma, mb = AsyncMemory(a), AsyncMemory(b)
    tid = (await ma.threads.create()).id
    for i in range(25):
        outcomes = await asyncio.gather(
            ma.entries.add(tid, {"role": "user", "content": f"a{i}"}, idempotency_key=f"k{i}"),
            mb.entries.add(tid, {"role": "user", "content": f"b{i}"}, idempotency_key=f"k{i}"),
            return_exceptions=True,
        )
        assert sorted(type(o).__name__ for o in outcomes) == ["Conflict", "Entry"]
    entries = await ma.entries.list(tid)
    assert len(entries) == 25
    # the loser wrote nothing, not even a position: the statement rolled back whole
    assert [e.position for e in entries] == list(range(1, 26))
    await a.close()
    await b.close()
