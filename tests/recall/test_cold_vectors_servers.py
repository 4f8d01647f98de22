"""PostgreSQL (no pgvector), MySQL/MariaDB and Redis: a narrowed search of a key whose
vectors are not in process memory yet is answered by the store's scoped exact search
while the key's slot loads in the background (``CachedVectors._cold``, in chunks);
the next search adopts the loaded slot and catches it up with what was written
meanwhile, as after another process's writes.

The async stores load in a task (most tests); the sync ones, generated from the same
code, on a thread (``test_the_sync_stores_load_on_a_thread``).
"""

from __future__ import annotations

import asyncio
import logging
import zlib
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memorybank.records import Thread
from memorybank.stores.contract import Capability
from memorybank.stores.contract._async.store import AsyncStore, VectorItem, Visibility
from memorybank.stores.vectors._async import cache as async_cache
from memorybank.stores.vectors._sync import cache as sync_cache
from tests.reliability._harness import StoreSpec, provide

MODEL = "test:m"
KEY = ("t", MODEL, "entry")
ALICE = Visibility(None, "alice")
KINDS = ("postgres", "mysql", "redis")
THREADS = [f"{user}-{t}" for user in ("alice", "bob", None) for t in range(3)]


def _vec(seed: int, dim: int = 16) -> list[float]:
    return [float(x) for x in np.random.default_rng(seed).standard_normal(dim)]


def _eid_vec(eid: str) -> list[float]:
    return _vec(zlib.crc32(eid.encode()))


def _thread(tid: str) -> Thread:
    user = tid.rsplit("-", 1)[0]
    now = datetime.now(UTC)
    return Thread(tid, "t", None if user == "None" else user, None, None, {}, "active", now, now)


@pytest.fixture(params=KINDS)
def spec(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[StoreSpec]:
    """A fresh prefix of 3 users' threads and a shared one's (9 threads, 90 vectors in
    9 writes: 9 ``seq`` values), loaded in the background from 50 vectors, in chunks
    of 16 rows (so 2 writes, 20 rows, a chunk: whole ``seq`` groups)."""
    for module in (async_cache, sync_cache):
        monkeypatch.setattr(module, "BACKGROUND_LOAD_ROWS", 50)
        monkeypatch.setattr(module, "LOAD_CHUNK_ROWS", 16)
    for found in provide(request.param, tmp_path):
        writer = found.open()
        try:
            writer.thread_get("t", "probe")  # creates the schema; pgvector known after it
            if Capability.PGVECTOR in getattr(writer, "capabilities", ()):
                pytest.skip("store claims Capability.PGVECTOR: the cache is not used")
            for tid in THREADS:
                writer.thread_create(_thread(tid))
                eids = [f"{tid}-{i}" for i in range(10)]
                writer.vector_put(
                    "t", [VectorItem("entry", eid, MODEL, _eid_vec(eid), tid) for eid in eids]
                )
        finally:
            writer.close()
        yield found


@pytest.fixture
async def store(spec: StoreSpec) -> AsyncIterator[AsyncStore]:
    opened = spec.open_async()
    try:
        yield opened
    finally:
        await opened.close()


async def _hits(store: AsyncStore, seed: int, **scope: Any) -> list[tuple[str, float]]:
    hits = await store.vector_search("t", _vec(seed), model_id=MODEL, kinds=["entry"], k=8, **scope)
    return [(h.id, round(h.score, 5)) for h in hits]


async def _reference(spec: StoreSpec, seed: int, **scope: Any) -> list[tuple[str, float]]:
    """The same search answered by a slot loaded inline (an unnarrowed search first)."""
    store = spec.open_async()
    try:
        await store.vector_search("t", _vec(0), model_id=MODEL, kinds=["entry"], k=1)
        cache = store.__dict__["_cached_vectors"]
        assert KEY in cache.cache.slots and not cache._loads
        return await _hits(store, seed, **scope)
    finally:
        await store.close()


def _cache(store: Any) -> Any:
    return store.__dict__["_cached_vectors"]


async def test_first_narrowed_search_reads_its_scope_while_the_key_loads(
    spec: StoreSpec, store: AsyncStore
) -> None:
    expected = {seed: await _reference(spec, seed, visible_to=ALICE) for seed in range(5)}
    in_thread = await _reference(spec, 3, thread_id="bob-1")
    assert await _hits(store, 0, visible_to=ALICE) == expected[0]
    cache = _cache(store)
    assert KEY not in cache.cache.slots  # not loaded by the search
    load = cache._loads[KEY]
    slot = await load.call.wait()
    assert slot is not None and slot.n == 90 and int(slot.visible.sum()) == 90
    assert await _hits(store, 3, thread_id="bob-1") == in_thread  # adopts the loaded slot
    assert cache.cache.slots[KEY] is slot and not cache._loads
    for seed in range(1, 5):
        assert await _hits(store, seed, visible_to=ALICE) == expected[seed]
    # alice never sees bob's entries, before or after the slot
    assert all(not hit.startswith("bob") for seed in range(5) for hit, _ in expected[seed])


async def test_writes_replacements_and_deletes_during_the_load_are_caught_up(
    spec: StoreSpec, store: AsyncStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    reading, release = asyncio.Event(), asyncio.Event()
    kind = type(store)
    rows = kind._vc_rows  # type: ignore[attr-defined]
    chunks: list[int] = []

    async def held(self: Any, *args: Any) -> Any:
        if len(args) == 6 and args[5] is not None:  # a background chunk
            chunks.append(args[4])
            if len(chunks) == 2:  # the first chunk (alice-0, alice-1) is read: hold
                reading.set()
                await release.wait()
        return await rows(self, *args)

    monkeypatch.setattr(kind, "_vc_rows", held)
    other = spec.open_async()
    try:
        await _hits(store, 1, visible_to=ALICE)  # starts the load
        await asyncio.wait_for(reading.wait(), 30)
        await store.vector_put("t", [VectorItem("entry", "new", MODEL, _vec(500), "alice-2")])
        await other.vector_put("t", [VectorItem("entry", "far", MODEL, _vec(501), "alice-2")])
        # alice-0-3 was read by the first chunk: replaced, its old copy must go
        await store.vector_put("t", [VectorItem("entry", "alice-0-3", MODEL, _vec(502), "alice-0")])
        await other.thread_delete("t", "alice-1")  # read by the first chunk: must go too
        while_loading = await _hits(store, 500, visible_to=ALICE)
        assert while_loading[0][0] == "new"  # read from the store
        release.set()
        slot = await _cache(store)._loads[KEY].call.wait()
        assert slot.n >= 90 and KEY not in _cache(store).cache.slots
        # after the load read its last chunk, before a search adopts it
        await other.vector_put("t", [VectorItem("entry", "alice-0-5", MODEL, _vec(503), "alice-0")])
        await other.thread_delete("t", "None-0")
        after = await _hits(store, 500, visible_to=ALICE)  # adopts the slot, catches it up
        assert _cache(store).cache.slots[KEY] is slot
        # 90 + new + far - alice-1 - None-0; the replaced vectors' old copies hidden
        assert int(slot.visible.sum()) == 72
        kept = [hit for hit in while_loading if not hit[0].startswith("None-0")]
        assert after[: len(kept)] == kept
        assert (await _hits(store, 503, visible_to=ALICE))[0] == ("alice-0-5", 1.0)
        assert (await _hits(store, 501, visible_to=ALICE))[0][0] == "far"
        assert (await _hits(store, 502, visible_to=ALICE))[0][0] == "alice-0-3"  # new vector
        old = await _hits(store, zlib.crc32(b"alice-0-3"), visible_to=ALICE)
        seen = {hit for seed in (500, 501, 502, 7) for hit, _ in await _hits(store, seed)}
    finally:
        await other.close()
    monkeypatch.undo()
    assert not any(hit.startswith(("alice-1", "None-0")) for hit in seen)  # thread deleted
    assert old == await _reference(spec, zlib.crc32(b"alice-0-3"), visible_to=ALICE)
    assert ("alice-0-3", 1.0) not in old  # its old vector is gone
    assert after == await _reference(spec, 500, visible_to=ALICE)
    for seed in range(3):
        assert await _hits(store, seed) == await _reference(spec, seed)
    assert chunks[:2] == [-1, chunks[1]] and chunks[1] > 0  # chunked by seq


async def test_a_failed_load_is_logged_and_done_inline(
    spec: StoreSpec,
    store: AsyncStore,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    kind = type(store)
    rows = kind._vc_rows  # type: ignore[attr-defined]
    failed: list[int] = []

    async def failing(self: Any, *args: Any) -> Any:
        if len(args) == 6 and args[5] is not None and not failed:
            failed.append(1)
            raise OSError("connection gone")
        return await rows(self, *args)

    monkeypatch.setattr(kind, "_vc_rows", failing)
    expected = await _reference(spec, 4, visible_to=ALICE)
    with caplog.at_level(logging.WARNING, logger="memorybank"):
        assert await _hits(store, 4, visible_to=ALICE) == expected
        load = _cache(store)._loads[KEY]
        assert await load.call.wait() is None
    assert failed and any("loading cached vectors" in r.getMessage() for r in caplog.records)
    assert await _hits(store, 4, visible_to=ALICE) == expected  # loaded inline now
    assert KEY in _cache(store).cache.slots and not _cache(store)._loads
    assert _cache(store).cache.slots[KEY].n == 90


async def test_a_tenant_wide_search_during_the_load_waits_for_it_and_reads_once(
    spec: StoreSpec, store: AsyncStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = await _reference(spec, 2)
    reading, release = asyncio.Event(), asyncio.Event()
    kind = type(store)
    rows = kind._vc_rows  # type: ignore[attr-defined]
    reads: list[tuple[int, int | None, int]] = []  # after, limit, rows read

    async def counted(self: Any, *args: Any) -> Any:
        limit = args[5] if len(args) == 6 else None
        if limit is not None and not reading.is_set():
            reading.set()
            await release.wait()
        found = await rows(self, *args)
        reads.append((args[4], limit, len(found.rowids)))
        return found

    monkeypatch.setattr(kind, "_vc_rows", counted)
    await _hits(store, 1, visible_to=ALICE)  # starts the load
    await asyncio.wait_for(reading.wait(), 30)
    wide = asyncio.ensure_future(_hits(store, 2))  # tenant-wide: needs every row
    for _ in range(20):
        await asyncio.sleep(0)
    assert not wide.done()  # it waits for the load (held), it does not read the key itself
    release.set()
    assert await wide == expected
    assert sum(n for _, _, n in reads) == 90  # every row read once, by the load's chunks
    assert all(limit is not None for _, limit, _ in reads)
    assert len(reads) >= 5  # 90 rows in chunks of 20
    assert _cache(store).cache.slots[KEY].n == 90 and not _cache(store)._loads


async def test_small_keys_and_unnarrowed_searches_load_inline(
    spec: StoreSpec, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = spec.open_async()
    try:
        await store.vector_search("t", _vec(1), model_id=MODEL, kinds=["entry"], k=3)
        assert KEY in _cache(store).cache.slots and not _cache(store)._loads
    finally:
        await store.close()
    monkeypatch.setattr(async_cache, "BACKGROUND_LOAD_ROWS", 91)  # the key holds 90
    store = spec.open_async()
    try:
        await _hits(store, 1, visible_to=ALICE)
        assert KEY in _cache(store).cache.slots and not _cache(store)._loads
    finally:
        await store.close()


def test_the_sync_stores_load_on_a_thread(spec: StoreSpec) -> None:
    reference = spec.open()
    try:
        reference.vector_search("t", _vec(0), model_id=MODEL, kinds=["entry"], k=1)
        expected = reference.vector_search(
            "t", _vec(3), model_id=MODEL, kinds=["entry"], k=8, visible_to=ALICE
        )
    finally:
        reference.close()
    store = spec.open()
    try:
        first = store.vector_search(
            "t", _vec(3), model_id=MODEL, kinds=["entry"], k=8, visible_to=ALICE
        )
        assert [(h.id, round(h.score, 5)) for h in first] == [
            (h.id, round(h.score, 5)) for h in expected
        ]
        cache = _cache(store)
        slot = cache._loads[KEY].call.wait()  # the loader thread's slot
        assert KEY not in cache.cache.slots or cache.cache.slots[KEY] is slot
        assert slot is not None and slot.n == 90
        again = store.vector_search("t", _vec(4), model_id=MODEL, kinds=["entry"], k=8)
        assert cache.cache.slots[KEY] is slot and not cache._loads
        assert len(again) == 8
    finally:
        store.close()
