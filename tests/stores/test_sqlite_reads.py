"""SQLite reads of an async store on its read connections (beside the writer)."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from pathlib import Path
from typing import Any, cast

import pytest

from memorybank import AsyncMemory
from memorybank.stores.sqlite._async._base import READ_CONNECTIONS


async def _reads_see_every_acknowledged_write(path: Path) -> None:
    async with AsyncMemory(f"sqlite:///{path}") as memory:
        thread = await memory.threads.create(user_id="ann")

        async def writer_then_reader(n: int) -> None:
            for i in range(12):
                word = f"zebra{n}x{i}"
                await memory.remember(thread.id, "user", f"a {word} here")
                # each read after the write it follows sees it: the list, the id
                # lookup, and the keyword search (not indexed yet: caught up first)
                listed = await memory.entries.list(thread.id)
                assert f"a {word} here" in [e.content for e in listed]
                hits = await memory.store.text_search(
                    memory.tenant_id, word, kinds=["entry"], k=5, thread_id=thread.id
                )
                assert len(hits) == 1
                got = await memory.store.entry_get(memory.tenant_id, thread.id, hits[0].id)
                assert got is not None and got.content == f"a {word} here"

        await asyncio.gather(*(writer_then_reader(n) for n in range(8)))
        assert len(await memory.entries.list(thread.id)) == 8 * 12
        opened = len(cast(Any, memory.store)._readers.connections)
        assert 1 <= opened <= READ_CONNECTIONS


def test_reads_on_the_read_connections_see_every_acknowledged_write(tmp_path: Path) -> None:
    asyncio.run(_reads_see_every_acknowledged_write(tmp_path / "reads.db"))


async def _vector_searches_see_every_acknowledged_write(path: Path) -> tuple[int, int]:
    from datetime import UTC, datetime

    import numpy as np

    from memorybank.records import Thread
    from memorybank.stores import AsyncSQLiteStore
    from memorybank.stores.contract._async.store import VectorItem, Visibility

    model = "test:m"
    store = AsyncSQLiteStore(path)
    try:
        now = datetime.now(UTC)
        await store.thread_create(Thread("th", "t", "ann", None, None, {}, "active", now, now))
        ann = Visibility(None, "ann")

        async def scores(vector: list[float]) -> dict[str, float]:
            hits = await store.vector_search(
                "t", vector, model_id=model, kinds=["entry"], k=100, visible_to=ann
            )
            return {h.id: h.score for h in hits}

        async def writer_then_searcher(n: int) -> None:
            rng = np.random.default_rng(n)
            for i in range(10):
                vid, vector = f"v{n}x{i}", rng.standard_normal(16).tolist()
                await store.vector_put("t", [VectorItem("entry", vid, model, vector, "th")])
                # the search that follows the write sees it, on whichever read connection
                assert (await scores(vector))[vid] > 0.999
                # a replaced vector is searched as it is now
                opposite = [-x for x in vector]
                await store.vector_put("t", [VectorItem("entry", vid, model, opposite, "th")])
                assert (await scores(vector))[vid] < -0.999
                assert (await scores(opposite))[vid] > 0.999

        await asyncio.gather(*(writer_then_searcher(n) for n in range(8)))
        found = len(await scores([1.0] * 16))
        await store.thread_delete("t", "th")
        gone = len(await scores([1.0] * 16))
        assert 1 <= len(cast(Any, store)._readers.connections) <= READ_CONNECTIONS
        return found, gone
    finally:
        await store.close()


def test_vector_searches_on_the_read_connections_see_every_acknowledged_write(
    tmp_path: Path,
) -> None:
    assert asyncio.run(_vector_searches_see_every_acknowledged_write(tmp_path / "v.db")) == (80, 0)


async def _closed_store_closes_its_readers(path: Path) -> list[sqlite3.Connection]:
    memory = AsyncMemory(f"sqlite:///{path}")
    thread = await memory.threads.create()
    await memory.remember(thread.id, "user", "hello there")
    assert await memory.entries.list(thread.id)
    readers = list(cast(Any, memory.store)._readers.connections)
    await memory.close()
    import threading

    left = [t.name for t in threading.enumerate() if t.name.startswith("memorybank-sqlite")]
    assert left == []  # the writer's and the readers' threads ended with the store
    return readers


def test_close_closes_the_read_connections(tmp_path: Path) -> None:
    readers = asyncio.run(_closed_store_closes_its_readers(tmp_path / "close.db"))
    assert readers
    for conn in readers:
        try:
            conn.execute("SELECT 1")
        except sqlite3.ProgrammingError:
            continue
        raise AssertionError("a read connection is still open after close")


async def _read_only_async(path: Path) -> tuple[int, str]:
    async with AsyncMemory(f"sqlite:///{path}") as memory:
        hits = await memory.store.text_search("default", "walrus", kinds=["entry"], k=10)
        after = await memory.store.text_search("default", "after", kinds=["entry"], k=10)
        return len(hits), after[0].id


def test_an_async_reader_of_a_read_only_file_finds_entries_not_indexed(tmp_path: Path) -> None:
    from memorybank import Memory
    from tests.reliability.test_sqlite_faults import _read_only

    path = tmp_path / "ro.db"
    with Memory(f"sqlite:///{path}") as memory:
        thread = memory.threads.create()
        memory.remember(thread.id, "user", "the walrus in the index")
    with contextlib.closing(sqlite3.connect(path)) as conn:  # as a crashed writer leaves it
        conn.execute(
            "INSERT INTO memorybank_entries (tenant_id, thread_id, branch, position, id, role,"
            " content, metadata, state, token_count, created_at) VALUES ('default', ?, 'main',"
            " 2, 'late', 'user', 'a walrus after the mark', '{}', '{}', 5, 0)",
            (thread.id,),
        )
        conn.commit()
    with _read_only(path):
        assert asyncio.run(_read_only_async(path)) == (2, "late")


async def _snapshot_vector_search(path: Path) -> tuple[list[str], list[str]]:
    from datetime import UTC, datetime

    from memorybank.records import Thread
    from memorybank.stores import AsyncSQLiteStore
    from memorybank.stores.contract._async.store import VectorItem

    store = AsyncSQLiteStore(path)
    try:
        now = datetime.now(UTC)
        await store.thread_create(Thread("th", "t", "ann", None, None, {}, "active", now, now))
        await store.vector_put("t", [VectorItem("entry", "before", "m", [1.0, 0.0, 0.1], "th")])

        async def ids(reader: Any) -> list[str]:
            hits = await reader.vector_search(
                "t", [1.0, 0.0, 0.0], model_id="m", kinds=["entry"], k=5
            )
            return sorted(h.id for h in hits)

        async with store.snapshot("t") as view:
            await store.vector_put("t", [VectorItem("entry", "after", "m", [1.0, 0.1, 0.0], "th")])
            # the view's connection is inside its read transaction: searched as of then
            return await ids(view), await ids(store)
    finally:
        await store.close()


def test_a_snapshot_view_searches_vectors_as_of_its_point_in_time(tmp_path: Path) -> None:
    seen = asyncio.run(_snapshot_vector_search(tmp_path / "snap.db"))
    assert seen == (["before"], ["after", "before"])


async def _concurrent_users_see_their_writes_and_nobody_elses(path: Path) -> int:
    from memorybank.stores.contract._async.store import Visibility
    from memorybank.testing._embedder import SynonymEmbedder

    embedder = SynonymEmbedder()
    users = [f"u{n}" for n in range(6)]
    checked = 0
    async with AsyncMemory(f"sqlite:///{path}", embedder=embedder) as memory:
        store, tenant = memory.store, memory.tenant_id
        threads = {u: await memory.threads.create(user_id=u, agent_id="bot") for u in users}
        for u in users:  # every user's history holds the same words as everyone else's
            await memory.entries.add_many(
                threads[u].id,
                [{"role": "user", "content": f"the car and the tea {i}"} for i in range(40)],
            )

        async def user_loop(u: str) -> None:
            nonlocal checked
            mine, seen = threads[u].id, Visibility("bot", u)
            for i in range(8):
                text = f"my automobile is zz{u}x{i}"
                entry = await memory.remember(mine, "user", text)
                # the reads issued after the write returned find it (on any read
                # connection: the keyword index and the vectors caught up) ...
                words = await store.text_search(
                    tenant, f"zz{u}x{i}", kinds=["entry"], k=5, visible_to=seen
                )
                assert [h.id for h in words] == [entry.id]
                (vector,) = embedder.embed([text])
                near = await store.vector_search(
                    tenant,
                    vector,
                    model_id=embedder.model_id,
                    kinds=["entry"],
                    k=60,
                    visible_to=seen,
                )
                assert entry.id in [h.id for h in near if h.score > 0.999]
                # ... and only her own entries, in the store and through the memory
                assert {h.thread_id for h in [*words, *near]} == {mine}
                hits = await memory.search(f"vehicle zz{u}x{i}", user_id=u, agent_id="bot")
                assert hits and {h.entry.thread_id for h in hits if h.entry} == {mine}
                checked += 1

        await asyncio.gather(*(user_loop(u) for u in users))
        assert len(cast(Any, memory.store)._readers.connections) > 1  # reads ran in parallel
    return checked


@pytest.mark.parametrize("share", [False, True], ids=["own vectors", "shared vectors"])
def test_concurrent_users_on_the_read_connections_see_their_writes_and_no_one_elses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, share: bool
) -> None:
    from memorybank.stores.vectors import exact as _vectors
    from memorybank.stores.vectors import files as _vector_files

    if share:  # the vectors mapped from the files every process maps
        monkeypatch.setattr(_vectors, "SHARE_MIN_ROWS", 100)
    path = tmp_path / "users.db"
    assert asyncio.run(_concurrent_users_see_their_writes_and_nobody_elses(path)) == 6 * 8
    assert any(_vector_files.directory(str(path)).glob("*.f32")) == share
