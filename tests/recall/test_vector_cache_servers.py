"""The server stores' in-process vector cache stays exact across store instances.

PostgreSQL without pgvector (the system test server has none), MySQL/MariaDB and
Redis rank vectors kept in process (``memorybank.stores.vectors._async.cache``).
Two store objects on one prefix stand for two processes: each has its own cache,
so what one writes or deletes must show in the other's next search, deleted and
forgotten vectors must never come back, and scope is re-checked by the store.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memorybank.records import Thread
from memorybank.stores.contract import Capability
from memorybank.stores.contract._sync.store import Store, VectorItem, Visibility
from memorybank.stores.contract.types import Record
from memorybank.stores.vectors.exact import VectorScope
from tests.reliability._harness import provide

MODEL = "test:m"
KINDS = ("postgres", "mysql", "redis")


@pytest.fixture(params=KINDS)
def pair(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Store, Store]]:
    """Two store objects (two caches) on one fresh prefix."""
    for spec in provide(request.param, tmp_path):
        a, b = spec.open(), spec.open()
        try:
            a.thread_get("t", "probe")  # creates the schema; pgvector known after it
            if Capability.PGVECTOR in getattr(a, "capabilities", ()):
                pytest.skip("store claims Capability.PGVECTOR: the cache is not used")
            yield a, b
        finally:
            a.close()
            b.close()


def _vec(seed: int, dim: int = 16) -> list[float]:
    rng = np.random.default_rng(seed)
    return [float(x) for x in rng.standard_normal(dim)]


def _thread(store: Store, tid: str, user: str | None = None) -> None:
    now = datetime.now(UTC)
    store.thread_create(Thread(tid, "t", user, None, None, {}, "active", now, now))


def _entries(store: Store, vec: list[float], k: int = 5, **kw: object) -> list[str]:
    hits = store.vector_search("t", vec, model_id=MODEL, kinds=["entry"], k=k, **kw)  # type: ignore[arg-type]
    return [h.id for h in hits]


def _docs(store: Store, vec: list[float], k: int = 5, **kw: object) -> list[str]:
    hits = store.vector_search("t", vec, model_id=MODEL, kinds=["document"], k=k, **kw)  # type: ignore[arg-type]
    return [h.id for h in hits]


def _doc(rid: str, user: str | None = None) -> Record:
    now = datetime.now(UTC)
    return Record("document", rid, None, user, f"doc {rid}", {}, now, now)


def test_entry_vectors_written_replaced_and_deleted_elsewhere(pair: tuple[Store, Store]) -> None:
    a, b = pair
    _thread(a, "th1")
    a.vector_put("t", [VectorItem("entry", f"e{i}", MODEL, _vec(i), "th1") for i in range(10)])
    assert _entries(b, _vec(3))[0] == "e3"  # b builds its cache
    slots = b.__dict__["_cached_vectors"].cache.slots
    assert [slot.n for slot in slots.values()] == [10]  # searched in process
    a.vector_put("t", [VectorItem("entry", "new", MODEL, _vec(100), "th1")])
    assert _entries(b, _vec(100))[0] == "new"  # rows added by another instance are read
    a.vector_put("t", [VectorItem("entry", "e3", MODEL, _vec(200), "th1")])
    assert _entries(b, _vec(200))[0] == "e3"  # a replaced vector is re-read
    assert _entries(b, _vec(3), k=1) != ["e3"]  # and its old value is gone
    assert _entries(b, _vec(200), k=20).count("e3") == 1
    assert _entries(b, _vec(4), thread_id="th1")[0] == "e4"
    a.thread_delete("t", "th1")
    assert _entries(b, _vec(100), k=20) == []  # deleted with its thread
    # the delete hid the rows (read as (id, seq) pairs), it did not reload them
    assert [int(slot.visible.sum()) for slot in slots.values()] == [0]
    assert _entries(b, _vec(100), k=20, thread_id="th1") == []
    _thread(a, "th1")
    a.vector_put("t", [VectorItem("entry", "again", MODEL, _vec(100), "th1")])
    assert _entries(b, _vec(100), k=20) == ["again"]


def test_record_vectors_deleted_and_forgotten_elsewhere_never_come_back(
    pair: tuple[Store, Store],
) -> None:
    a, b = pair
    a.record_put("t", [_doc(f"d{i}", "alice" if i % 2 else None) for i in range(6)])
    a.vector_put("t", [VectorItem("document", f"d{i}", MODEL, _vec(i)) for i in range(6)])
    assert _docs(b, _vec(2), k=1) == ["d2"]
    assert _docs(b, _vec(3), k=1) == ["d3"]
    a.record_delete("t", "document", ["d2"])
    assert "d2" not in _docs(b, _vec(2), k=10)
    a.forget_user("t", "alice")
    assert set(_docs(b, _vec(3), k=10)) == {"d0", "d4"}
    # the writer's own cache saw it too
    assert set(_docs(a, _vec(3), k=10)) == {"d0", "d4"}
    a.record_put("t", [_doc("d2")])
    a.vector_put("t", [VectorItem("document", "d2", MODEL, _vec(2))])
    assert _docs(b, _vec(2), k=1) == ["d2"]  # re-added under the same id


def test_vectors_of_another_size_and_unusual_ids_are_read_right(
    pair: tuple[Store, Store],
) -> None:
    """Rows of another dimension under one model are skipped and not read again; ids
    and threads of any text come back as written (PostgreSQL reads them in binary)."""
    a, b = pair
    ids = ["d-ü✓", "d\ttab", "d'quote", "d" + "x" * 200]
    _thread(a, "thread-é")
    a.record_put("t", [_doc(rid) for rid in ids])
    a.vector_put("t", [VectorItem("document", rid, MODEL, _vec(i)) for i, rid in enumerate(ids)])
    a.vector_put("t", [VectorItem("entry", "e-ñ", MODEL, _vec(9), "thread-é")])
    a.record_put("t", [_doc("small")])
    a.vector_put("t", [VectorItem("document", "small", MODEL, _vec(7, dim=8))])  # written last
    for i, rid in enumerate(ids):
        assert _docs(b, _vec(i), k=1) == [rid]
    hits = b.vector_search("t", _vec(9), model_id=MODEL, kinds=["entry"], k=1)
    assert [(h.id, h.thread_id) for h in hits] == [("e-ñ", "thread-é")]
    slot = b.__dict__["_cached_vectors"]._cached("t", MODEL, "document")
    assert slot is not None and slot.dim == 16 and slot.n == len(ids)  # no 8-d row mixed in
    stamps, _ = b._vc_check(VectorScope("t", MODEL), ["document"], {}, 16)  # type: ignore[attr-defined]
    assert slot.current(16, stamps["document"])  # the 8-d row counted as read
    assert _docs(b, _vec(7, dim=8), k=5) == ["small"]  # an 8-d query: the 8-d rows


def test_scope_is_checked_by_the_store_not_the_cache(pair: tuple[Store, Store]) -> None:
    a, b = pair
    _thread(a, "mine", user="alice")
    _thread(a, "theirs", user="bob")
    a.vector_put(
        "t",
        [
            VectorItem("entry", "ea", MODEL, _vec(1), "mine"),
            VectorItem("entry", "eb", MODEL, _vec(1), "theirs"),
        ],
    )
    a.record_put("t", [_doc("d")])
    a.vector_put("t", [VectorItem("document", "d", MODEL, _vec(5))])
    alice, bob = Visibility(None, "alice"), Visibility(None, "bob")
    assert _entries(b, _vec(1), visible_to=alice) == ["ea"]
    assert _entries(b, _vec(1), visible_to=bob) == ["eb"]
    assert _docs(b, _vec(5), visible_to=bob) == ["d"]  # shared, cached as shared
    # the owner changes without touching the vector: b's cache still says "shared"
    a.record_put("t", [_doc("d", "alice")])
    assert _docs(b, _vec(5), visible_to=bob) == []
    assert _docs(b, _vec(5), visible_to=alice) == ["d"]
    # a thread deleted without another search in between: never returned
    a.thread_delete("t", "mine")
    assert _entries(b, _vec(1), visible_to=alice) == []
    assert _entries(b, _vec(1)) == ["eb"]


def test_a_best_hit_out_of_scope_gives_way_to_the_next(pair: tuple[Store, Store]) -> None:
    """The best k of the shortlist are confirmed first; when one fails, the rest are."""
    a, b = pair
    a.record_put("t", [_doc(f"d{i}") for i in range(8)])
    a.vector_put("t", [VectorItem("document", f"d{i}", MODEL, _vec(i)) for i in range(8)])
    bob = Visibility(None, "bob")
    query = [x + 0.3 * y for x, y in zip(_vec(3), _vec(5), strict=True)]
    first = _docs(b, query, k=2, visible_to=bob)
    assert first[:2] == ["d3", "d5"]
    every = _docs(b, query, k=8, visible_to=bob)
    a.record_put("t", [_doc("d3", "alice")])  # b's cache still says "shared"
    assert _docs(b, query, k=2, visible_to=bob) == [d for d in every if d != "d3"][:2]
    assert _docs(b, query, k=7, visible_to=bob) == [d for d in every if d != "d3"]


def test_many_writers_keep_every_vector(pair: tuple[Store, Store]) -> None:
    """Interleaved writes from two instances, searched by both: nothing is missed."""
    a, b = pair
    _thread(a, "th")
    for i in range(30):
        writer = a if i % 2 else b
        writer.vector_put("t", [VectorItem("entry", f"e{i}", MODEL, _vec(i), "th")])
        reader = b if i % 2 else a
        assert _entries(reader, _vec(i), k=1) == [f"e{i}"]
    for i in range(30):
        assert _entries(a, _vec(i), k=1) == [f"e{i}"]
        assert _entries(b, _vec(i), k=1) == [f"e{i}"]


def test_the_hnsw_index_answers_over_batched_writes(
    pair: tuple[Store, Store], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rows written in one batch share a ``seq``: the index is keyed by row, not ``seq``,
    finds what the exact search finds, and never a replaced vector's old value."""
    from memorybank.stores.vectors import exact as _vectors

    if not _vectors.ann_available():
        pytest.skip("usearch is not installed")
    monkeypatch.setattr(_vectors, "ANN_THRESHOLD", 40)
    monkeypatch.setattr(_vectors, "EXACT_LIMIT", 20)
    monkeypatch.setattr(_vectors, "SCOPED_EXACT_LIMIT", 20)  # scoped searches too
    monkeypatch.setattr(_vectors, "BACKGROUND_BUILD", False)
    a, b = pair
    _thread(a, "th")
    a.vector_put("t", [VectorItem("entry", f"e{i}", MODEL, _vec(i), "th") for i in range(60)])
    a.vector_put("t", [VectorItem("entry", f"f{i}", MODEL, _vec(100 + i), "th") for i in range(20)])
    for i in (0, 7, 59):
        assert _entries(b, _vec(i), k=3)[0] == f"e{i}"
    assert _entries(b, _vec(105), k=1) == ["f5"]
    slot = next(iter(b.__dict__["_cached_vectors"].cache.slots.values()))
    assert slot.has_ann()  # answered by the index
    a.vector_put("t", [VectorItem("entry", "e7", MODEL, _vec(300), "th")])
    assert _entries(b, _vec(300), k=1) == ["e7"]
    assert "e7" not in _entries(b, _vec(7), k=5)


def test_background_build_answers_exactly_meanwhile_and_ends_with_the_store(
    pair: tuple[Store, Store], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The index is built by a background thread: searches never wait for it (exact
    meanwhile, the slot's lock held by the test keeps the build from finishing), it
    is used once built, and closing the store stops its builder."""
    import threading

    from memorybank.stores.vectors import exact as _vectors

    if not _vectors.ann_available():
        pytest.skip("usearch is not installed")
    monkeypatch.setattr(_vectors, "ANN_THRESHOLD", 40)
    monkeypatch.setattr(_vectors, "EXACT_LIMIT", 20)
    monkeypatch.setattr(_vectors, "SCOPED_EXACT_LIMIT", 20)  # scoped searches too
    monkeypatch.setattr(_vectors, "BUILD_BATCH", 8)
    a, b = pair
    _thread(a, "th", "alice")
    _thread(a, "other", "bob")
    a.vector_put("t", [VectorItem("entry", f"e{i}", MODEL, _vec(i), "th") for i in range(60)])
    a.vector_put("t", [VectorItem("entry", f"o{i}", MODEL, _vec(i), "other") for i in range(30)])
    assert _entries(b, _vec(0), thread_id="nobody") == []  # the slot is read, no build
    slot = next(iter(b.__dict__["_cached_vectors"].cache.slots.values()))
    alice = Visibility(None, "alice")
    with slot._lock:
        for i in (0, 7, 59):
            assert _entries(b, _vec(i), k=1, visible_to=alice) == [f"e{i}"]
        assert slot.building() and not slot.has_ann()
    assert slot.wait_ann(60) and slot.has_ann()
    for i in (3, 41):
        assert _entries(b, _vec(i), k=1, visible_to=alice) == [f"e{i}"]
    a.vector_put("t", [VectorItem("entry", "late", MODEL, _vec(999), "th")])
    assert _entries(b, _vec(999), k=1) == ["late"]  # after the index: searched exactly
    b.close()
    assert not [t for t in threading.enumerate() if t.name == "memorybank-ann-build"]


@pytest.mark.parametrize("kind", ["postgres", "mysql", "redis"])
def test_vectors_written_before_the_upgrade_are_cached_and_deletable(
    kind: str, tmp_path: Path
) -> None:
    """A schema/layout from before the cache's counters upgrades in place: its vectors
    are found, new ones are added after them, and deletes still reach every cache."""
    for spec in provide(kind, tmp_path):
        old = spec.open()
        try:
            _thread(old, "th")
            old.vector_put(
                "t", [VectorItem("entry", f"e{i}", MODEL, _vec(i), "th") for i in range(5)]
            )
            old.record_put("t", [_doc("d1")])
            old.vector_put("t", [VectorItem("document", "d1", MODEL, _vec(50))])
        finally:
            old.close()
        _downgrade(spec)
        a, b = spec.open(), spec.open()
        try:
            assert _entries(a, _vec(3), k=1) == ["e3"]  # migrated, then cached
            assert _docs(a, _vec(50), k=1) == ["d1"]
            b.vector_put("t", [VectorItem("entry", "e9", MODEL, _vec(9), "th")])
            assert _entries(a, _vec(9), k=1) == ["e9"]
            b.record_delete("t", "document", ["d1"])
            assert _docs(a, _vec(50)) == []
            b.thread_delete("t", "th")
            assert _entries(a, _vec(3)) == []
        finally:
            a.close()
            b.close()


def _downgrade(spec: Any) -> None:
    """Undo the cache counters' migration (as if written by the version before)."""
    p = spec.prefix
    if spec.kind == "postgres":
        import psycopg

        with psycopg.connect(spec.target, autocommit=True) as pg:
            # (and the later one: the branches' entry counts, migration 8)
            pg.execute(f"ALTER TABLE {p}branches DROP COLUMN entry_count")
            pg.execute(f"DROP TABLE {p}vector_stamps")
            pg.execute(f"ALTER TABLE {p}vectors DROP COLUMN seq")
            pg.execute(f"UPDATE {p}schema_version SET version = 6")
    elif spec.kind == "mysql":
        from tests.stores.test_contract_mysql import connect

        conn = connect(spec.target)
        try:
            with conn.cursor() as cur:
                # (and the later one: the branches' entry counts, migration 7)
                cur.execute(f"ALTER TABLE `{p}branches` DROP COLUMN entry_count")
                cur.execute(f"DROP TABLE `{p}vector_stamps`")
                cur.execute(f"ALTER TABLE `{p}vectors` DROP KEY `{p}vectors_seq`, DROP COLUMN seq")
                cur.execute(f"UPDATE `{p}schema_version` SET version = 5")
            conn.commit()
        finally:
            conn.close()
    else:
        import redis

        client = redis.Redis.from_url(spec.target)
        try:
            for key in client.scan_iter(match=p + "*"):
                name = key.decode()
                if ":vs:" in name or ":vl:" in name:
                    client.delete(key)
            client.set(p + "schema_version", 2)
        finally:
            client.close()


def test_a_delete_elsewhere_hides_rows_without_reloading_the_cache(
    pair: tuple[Store, Store],
) -> None:
    """Deleting entries (and so their vectors) bumps the generation; the cache reads the
    stored (id, seq) pairs and hides the gone rows instead of reading every vector again."""
    a, b = pair
    _thread(a, "th1")
    now = datetime.now(UTC)
    from memorybank.stores.contract._sync.store import NewEntry

    ids = [f"e{i}" for i in range(12)]
    a.entry_append(
        "t",
        "th1",
        [NewEntry(i, "user", f"m {i}", None, (), None, {}, {}, 1, now, None) for i in ids],
        updated_at=now,
    )
    a.vector_put("t", [VectorItem("entry", i, MODEL, _vec(n), "th1") for n, i in enumerate(ids)])
    assert _entries(b, _vec(4))[0] == "e4"
    slot = b.__dict__["_cached_vectors"].cache.slots[("t", MODEL, "entry")]
    assert a.entry_delete("t", "th1", ["e4", "e5"]) == 2
    assert a.vector_get("t", "entry", ["e4", "e5", "e6"], model_id=MODEL).keys() == {"e6"}
    assert "e4" not in _entries(b, _vec(4), k=12)
    assert _entries(b, _vec(6))[0] == "e6"
    assert b.__dict__["_cached_vectors"].cache.slots[("t", MODEL, "entry")] is slot
    assert int((~slot.visible).sum()) == 2 and slot.n == 12
    a.vector_put("t", [VectorItem("entry", "e6", MODEL, _vec(600), "th1")])  # replaced
    assert _entries(b, _vec(600))[0] == "e6"
    assert a.entry_delete("t", "th1", ["e7"]) == 1
    assert "e7" not in _entries(b, _vec(7), k=12)
    assert "e6" not in _entries(b, _vec(6), k=1)
    assert b.__dict__["_cached_vectors"].cache.slots[("t", MODEL, "entry")] is slot


def _unit(vec: list[float]) -> list[float]:
    array = np.asarray(vec, dtype=np.float32)
    return [float(x) for x in array / np.linalg.norm(array)]


def test_vector_get_from_the_cache_follows_writes_and_deletes_elsewhere(
    pair: tuple[Store, Store],
) -> None:
    """``vector_get`` answers from a current cache (one counters read), and reads what
    it does not hold: another instance's replaced, added, deleted and other-size vectors."""
    a, b = pair
    _thread(a, "th1")
    a.vector_put("t", [VectorItem("entry", f"e{i}", MODEL, _vec(i), "th1") for i in range(6)])
    assert _entries(b, _vec(1))[0] == "e1"  # b caches the entries' vectors
    cache = b.__dict__["_cached_vectors"]
    assert cache._cached("t", MODEL, "entry") is not None
    got = b.vector_get("t", "entry", ["e1", "e2", "nope"], model_id=MODEL)
    assert list(got) == ["e1", "e2"]
    assert np.allclose(got["e1"], _unit(_vec(1)), atol=1e-6)
    # written elsewhere: replaced, added, deleted; b's cache has not seen any of it
    a.vector_put("t", [VectorItem("entry", "e1", MODEL, _vec(50), "th1")])
    a.vector_put("t", [VectorItem("entry", "e9", MODEL, _vec(9), "th1")])
    a.vector_put("t", [VectorItem("entry", "odd", MODEL, _vec(7, dim=8), "th1")])
    got = b.vector_get("t", "entry", ["e9", "e1", "odd", "e2"], model_id=MODEL)
    assert list(got) == ["e9", "e1", "odd", "e2"]  # in the order asked
    assert np.allclose(got["e1"], _unit(_vec(50)), atol=1e-6)
    assert np.allclose(got["e9"], _unit(_vec(9)), atol=1e-6)
    assert len(got["odd"]) == 8  # another size: not cached, read from the table
    arrays = b.vector_get_arrays("t", "entry", ["e9", "e1", "odd", "e2"], model_id=MODEL)
    assert list(arrays) == list(got)  # the cache's rows and the table's, as float32
    assert all(arrays[i].dtype == np.float32 and arrays[i].tolist() == got[i] for i in got)
    a.thread_delete("t", "th1")
    assert b.vector_get("t", "entry", ["e1", "e9", "odd"], model_id=MODEL) == {}
    # the same answers as a store object that caches nothing
    _thread(a, "th2")
    a.vector_put("t", [VectorItem("entry", f"f{i}", MODEL, _vec(i), "th2") for i in range(3)])
    ids = ["f2", "f0", "x"]
    assert b.vector_get("t", "entry", ids, model_id=MODEL) == a.vector_get(
        "t", "entry", ids, model_id=MODEL
    )


@pytest.mark.parametrize("kind", KINDS)
def test_async_searches_ranked_on_worker_threads_find_each_write(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A shortlist over ``OFFLOAD_ROWS`` cached rows or more is ranked on a worker thread
    (here every one): a search after each write finds it, and concurrent searches
    each find their own vector."""
    import asyncio

    from memorybank.stores.vectors._async import cache as _cache

    monkeypatch.setattr(_cache, "OFFLOAD_ROWS", 0)

    async def run(store: Any) -> None:
        try:
            now = datetime.now(UTC)
            await store.thread_create(Thread("th", "t", "ann", None, None, {}, "active", now, now))

            async def best(vector: list[float], **scope: Any) -> list[str]:
                hits = await store.vector_search(
                    "t", vector, model_id=MODEL, kinds=["entry"], k=1, **scope
                )
                return [h.id for h in hits]

            for i in range(12):
                await store.vector_put("t", [VectorItem("entry", f"e{i}", MODEL, _vec(i), "th")])
                assert await best(_vec(i)) == [f"e{i}"]
            ann = Visibility(None, "ann")
            found = await asyncio.gather(
                *(
                    best(_vec(i), thread_id="th" if i % 2 else None, visible_to=ann)
                    for i in range(12)
                )
            )
            assert found == [[f"e{i}"] for i in range(12)]
        finally:
            await store.close()

    for spec in provide(kind, tmp_path):
        asyncio.run(run(spec.open_async()))


@pytest.mark.parametrize("offload", [False, True], ids=["on-loop", "on-threads"])
@pytest.mark.parametrize("kind", KINDS)
def test_concurrent_async_writers_each_find_their_own_write(
    kind: str, offload: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Read-your-writes across pooled connections: concurrent tasks each write a vector
    and then search for it; every search finds the write it followed, whatever the
    other tasks' writes and cache refreshes do meanwhile (ranked on the event loop, or
    on worker threads: more points where tasks interleave). Several rounds: the race
    (another task caught the shared slot up while this one awaited the counters)
    failed the first round nearly always."""
    import asyncio

    from memorybank.stores.vectors._async import cache as _cache

    if offload:
        monkeypatch.setattr(_cache, "OFFLOAD_ROWS", 0)

    async def run(store: Any, round_: int) -> int:
        try:
            now = datetime.now(UTC)
            await store.thread_create(Thread("th", "t", "ann", None, None, {}, "active", now, now))

            async def writer_then_searcher(n: int) -> None:
                for i in range(5):
                    vid, vector = f"e{n}x{i}", _vec(1000 * round_ + 10 * n + i)
                    await store.vector_put("t", [VectorItem("entry", vid, MODEL, vector, "th")])
                    hits = await store.vector_search(
                        "t", vector, model_id=MODEL, kinds=["entry"], k=1
                    )
                    assert [h.id for h in hits] == [vid], (round_, n, i)

            await asyncio.gather(*(writer_then_searcher(n) for n in range(6)))
            every = await store.vector_search(
                "t", _vec(0), model_id=MODEL, kinds=["entry"], k=100, thread_id="th"
            )
            return len(every)
        finally:
            await store.close()

    for round_ in range(5):
        for spec in provide(kind, tmp_path / str(round_)):
            assert asyncio.run(run(spec.open_async(), round_)) == 30
