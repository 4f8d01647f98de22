"""memorybank.integrations.langgraph against LangGraph itself (no mocks).

The checkpointers run LangGraph's own conformance package
(``langgraph-checkpoint-conformance``) on SQLite and PostgreSQL, every
capability they implement, and drive a real compiled graph over several
steps, resumed from a stored checkpoint.
"""

from __future__ import annotations

import asyncio
import math
import operator
import os
import random
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import AsyncIterator, Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest

pytest.importorskip("langgraph.checkpoint.conformance")

from langchain_core.embeddings import Embeddings
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.capabilities import ALL_CAPABILITIES
from langgraph.graph import END, START, StateGraph
from langgraph.store.base import GetOp, IndexConfig, Item, ListNamespacesOp, PutOp, SearchOp

from memorybank import AsyncMemory, Memory
from memorybank.integrations.langgraph import (
    AsyncMemorybankSaver,
    AsyncMemorybankStore,
    MemorybankSaver,
    MemorybankStore,
)
from tests.all_stores import STORE_KINDS, open_store
from tests.stores.test_contract_postgres import URL as PG_URL
from tests.stores.test_contract_postgres import drop_tables

SERVER_URL = os.environ.get("MEMORYBANK_POSTGRES_URL", PG_URL)


@pytest.fixture
def pg_prefix() -> Iterator[str]:
    """A fresh table prefix on the shared PostgreSQL, dropped afterwards."""
    from tests.stores.test_contract_postgres import require_postgres

    require_postgres()
    prefix = f"lg{uuid.uuid4().hex[:10]}_"
    yield prefix
    drop_tables(SERVER_URL, prefix)


async def _conformance(memory: Any, saver_type: Callable[[Any], BaseCheckpointSaver[Any]]) -> None:
    async def factory() -> AsyncIterator[BaseCheckpointSaver[Any]]:
        # every capability suite gets its own tenant: a fresh, empty checkpointer
        yield saver_type(memory.tenant(f"t{uuid.uuid4().hex[:12]}"))

    registered = checkpointer_test(name=getattr(saver_type, "__name__", "saver"))(factory)
    report = await validate(registered)
    failures = {
        name: result.failures for name, result in report.results.items() if not result.passed
    }
    assert not failures, failures
    assert set(report.results) == {c.value for c in ALL_CAPABILITIES}


async def test_conformance_sqlite(tmp_path: Path) -> None:
    async with AsyncMemory(f"sqlite:///{tmp_path / 'lg.db'}") as memory:
        await _conformance(memory, AsyncMemorybankSaver)


@pytest.mark.server
async def test_conformance_postgres(pg_prefix: str) -> None:
    from memorybank.stores.postgres._async import AsyncPostgresStore

    store = AsyncPostgresStore.from_url(SERVER_URL, prefix=pg_prefix, pool_size=2, timeout=5)
    try:
        await _conformance(AsyncMemory(store), AsyncMemorybankSaver)
    finally:
        await store.close()


class _SyncUnderTest(MemorybankSaver):
    """The sync saver seen through the async methods the conformance package calls
    (each one a direct call of the sync method: the sync code does all the work)."""

    async def aget_tuple(self, config: Any) -> Any:
        return self.get_tuple(config)

    async def alist(self, config: Any, **kwargs: Any) -> AsyncIterator[Any]:
        for item in self.list(config, **kwargs):
            yield item

    async def aput(self, *args: Any, **kwargs: Any) -> Any:
        return self.put(*args, **kwargs)

    async def aput_writes(self, *args: Any, **kwargs: Any) -> None:
        self.put_writes(*args, **kwargs)

    async def adelete_thread(self, thread_id: str) -> None:
        self.delete_thread(thread_id)

    async def adelete_for_runs(self, run_ids: Any) -> None:
        self.delete_for_runs(run_ids)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        self.copy_thread(source_thread_id, target_thread_id)

    async def aprune(self, thread_ids: Any, *, strategy: str = "keep_latest") -> None:
        self.prune(thread_ids, strategy=strategy)


@pytest.mark.parametrize("kind", STORE_KINDS)
async def test_conformance_sync_every_store(kind: str, tmp_path: Path) -> None:
    with open_store(kind, tmp_path) as store, Memory(store) as memory:
        await _conformance(memory, _SyncUnderTest)


# -- a real graph --------------------------------------------------------------


class _State(TypedDict):
    steps: Annotated[list[int], operator.add]
    note: str


def _graph(checkpointer: BaseCheckpointSaver[Any], *, limit: int) -> Any:
    def work(state: _State) -> dict[str, Any]:
        return {"steps": [len(state["steps"]) + 1]}

    def review(state: _State) -> dict[str, Any]:
        return {"note": f"reviewed {len(state['steps'])}"}

    def route(state: _State) -> str:
        return "review" if len(state["steps"]) >= limit else "work"

    builder = StateGraph(_State)
    builder.add_node("work", work)
    builder.add_node("review", review)
    builder.add_edge(START, "work")
    builder.add_conditional_edges("work", route, ["work", "review"])
    builder.add_edge("review", END)
    return builder.compile(checkpointer=checkpointer, interrupt_before=["review"])


def test_graph_runs_and_resumes_sync(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'graph.db'}"
    config: Any = {"configurable": {"thread_id": "chat-1"}}
    with Memory(url) as memory:
        graph = _graph(MemorybankSaver(memory.scoped(user_id="u1")), limit=5)
        paused = graph.invoke({"steps": [], "note": ""}, config)
        assert paused["steps"] == [1, 2, 3, 4, 5]
        assert graph.get_state(config).next == ("review",)
        history = list(graph.get_state_history(config))
        assert len(history) == 7  # input, 5 work steps... newest first
        # another user of the same store sees none of it
        other = _graph(MemorybankSaver(memory.scoped(user_id="u2")), limit=5)
        assert other.get_state(config).values == {}
    with Memory(url) as memory:  # a new process: resume from the stored checkpoint
        graph = _graph(MemorybankSaver(memory.scoped(user_id="u1")), limit=5)
        done = graph.invoke(None, config)
        assert done == {"steps": [1, 2, 3, 4, 5], "note": "reviewed 5"}
        # time travel: replay from the checkpoint after the second work step
        second = next(s for s in graph.get_state_history(config) if s.values.get("steps") == [1, 2])
        replayed = graph.invoke(None, second.config)
        assert replayed["steps"] == [1, 2, 3, 4, 5]
        assert graph.get_state(config).next == ("review",)


async def test_graph_runs_and_resumes_async(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'graph.db'}"
    config: Any = {"configurable": {"thread_id": "chat-1"}}
    async with AsyncMemory(url) as memory:
        graph = _graph(AsyncMemorybankSaver(memory), limit=3)
        paused = await graph.ainvoke({"steps": [], "note": ""}, config)
        assert paused["steps"] == [1, 2, 3]
    async with AsyncMemory(url) as memory:
        saver = AsyncMemorybankSaver(memory)
        graph = _graph(saver, limit=3)
        assert await graph.ainvoke(None, config) == {"steps": [1, 2, 3], "note": "reviewed 3"}
        await saver.acopy_thread("chat-1", "chat-2")
        copied = await graph.aget_state({"configurable": {"thread_id": "chat-2"}})
        assert copied.values == {"steps": [1, 2, 3], "note": "reviewed 3"}
        await saver.aprune(["chat-1"])
        assert len([s async for s in graph.aget_state_history(config)]) == 1
        assert (await graph.aget_state(config)).values["note"] == "reviewed 3"


# -- the store: LangGraph's own store tests (langgraph's test_store.py /
# test_ttl.py for SqliteStore), ported to MemorybankStore ------------------------


class CharacterEmbeddings(Embeddings):
    """LangGraph's test embedder: character frequencies through random projections."""

    def __init__(self, dims: int = 50, seed: int = 42) -> None:
        rng = random.Random(seed)
        self.dims = dims
        self._projections: dict[str, list[float]] = defaultdict(
            lambda: [rng.gauss(0, 1 / math.sqrt(dims)) for _ in range(dims)]
        )

    def _one(self, text: str) -> list[float]:
        counts = Counter(text)
        total = sum(counts.values())
        vector = [0.0] * self.dims
        for char, count in counts.items():
            for i, p in enumerate(self._projections[char]):
                vector[i] += count / max(total, 1) * p
        norm = math.sqrt(sum(x * x for x in vector))
        return [x / norm for x in vector] if norm else vector

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._one(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._one(text)


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    with Memory(f"sqlite:///{tmp_path / 'store.db'}") as m:
        yield m


@pytest.fixture
def store(memory: Memory) -> MemorybankStore:
    return MemorybankStore(memory)


def _vector_store(memory: Memory, fields: list[str] | None = None) -> MemorybankStore:
    embeddings = CharacterEmbeddings(dims=500)
    index: IndexConfig = {"dims": 500, "embed": embeddings}
    if fields is not None:
        index["fields"] = fields
    return MemorybankStore(memory, index=index)


def test_batch_order(store: MemorybankStore) -> None:
    store.put(("test", "foo"), "key1", {"data": "value1"})
    store.put(("test", "bar"), "key2", {"data": "value2"})
    results = store.batch(
        [
            GetOp(namespace=("test", "foo"), key="key1"),
            PutOp(namespace=("test", "bar"), key="key2", value={"data": "value2"}),
            SearchOp(namespace_prefix=("test",), filter={"data": "value1"}, limit=10, offset=0),
            ListNamespacesOp(match_conditions=None, max_depth=None, limit=10, offset=0),
            GetOp(namespace=("test",), key="key3"),
        ]
    )
    first = results[0]
    assert isinstance(first, Item)
    assert (first.namespace, first.key, first.value) == (
        ("test", "foo"),
        "key1",
        {"data": "value1"},
    )
    assert results[1] is None
    assert [i.key for i in results[2]] == ["key1"]  # type: ignore[union-attr]
    assert results[3] == [("test", "bar"), ("test", "foo")]
    assert results[4] is None


def test_batch_put_and_delete(store: MemorybankStore) -> None:
    results = store.batch(
        [
            PutOp(namespace=("test",), key="key1", value={"data": "value1"}),
            PutOp(namespace=("test",), key="key2", value={"data": "value2"}),
            PutOp(namespace=("test",), key="key3", value=None),
        ]
    )
    assert results == [None, None, None]
    assert store.get(("test",), "key2").value == {"data": "value2"}  # type: ignore[union-attr]
    assert store.get(("test",), "key3") is None
    store.delete(("test",), "key1")
    assert store.get(("test",), "key1") is None


def test_update_keeps_created_at(store: MemorybankStore) -> None:
    store.put(("docs",), "d", {"v": 1})
    first = store.get(("docs",), "d")
    time.sleep(0.01)
    store.put(("docs",), "d", {"v": 2})
    second = store.get(("docs",), "d")
    assert first is not None and second is not None
    assert second.value == {"v": 2}
    assert second.created_at == first.created_at
    assert second.updated_at > first.updated_at
    assert store.get(("docs", "other"), "d") is None


def test_list_namespaces(store: MemorybankStore) -> None:
    spaces = [
        ("test", "documents", "public"),
        ("test", "documents", "private"),
        ("test", "images", "public"),
        ("test", "images", "private"),
        ("prod", "documents", "public"),
        ("prod", "documents", "private"),
    ]
    for ns in spaces:
        store.put(ns, "dummy", {"content": "dummy"})
    assert store.list_namespaces() == sorted(spaces)
    assert len(store.list_namespaces(prefix=("test",))) == 4
    public = store.list_namespaces(suffix=("public",))
    assert len(public) == 3 and all(ns[-1] == "public" for ns in public)
    assert store.list_namespaces(prefix=("*", "documents")) == sorted(
        ns for ns in spaces if ns[1] == "documents"
    )
    assert store.list_namespaces(max_depth=2) == [
        ("prod", "documents"),
        ("test", "documents"),
        ("test", "images"),
    ]
    assert len(store.list_namespaces(limit=3)) == 3
    assert store.list_namespaces(limit=3, offset=4) == sorted(spaces)[4:]
    for ns in spaces:
        store.delete(ns, "dummy")
    assert store.list_namespaces() == []


def test_search_filters_and_pages(store: MemorybankStore) -> None:
    data = [
        (("test", "docs"), "doc1", {"title": "First", "author": "Alice", "score": 4.5}),
        (("test", "docs"), "doc2", {"title": "Second", "author": "Bob", "score": 3.0}),
        (("test", "images"), "img1", {"title": "Image", "author": "Alice", "score": 4.0}),
        (("other",), "x", {"title": "Elsewhere", "author": "Alice", "score": 5.0}),
    ]
    for ns, key, value in data:
        store.put(ns, key, value)
    assert len(store.search(("test",))) == 3
    assert {i.key for i in store.search(("test", "docs"))} == {"doc1", "doc2"}
    assert {i.key for i in store.search(("test",), filter={"author": "Alice"})} == {
        "doc1",
        "img1",
    }
    assert {i.key for i in store.search(("test",), filter={"score": {"$gt": 3.5}})} == {
        "doc1",
        "img1",
    }
    assert {i.key for i in store.search((), filter={"score": {"$gte": 4.5}})} == {"doc1", "x"}
    assert [i.key for i in store.search(("test",), filter={"author": {"$ne": "Alice"}})] == ["doc2"]
    assert len(store.search(("test",), limit=2)) == 2
    assert len(store.search(("test",), offset=2)) == 1
    # newest first
    assert [i.key for i in store.search(("test",))] == ["img1", "doc2", "doc1"]


def test_vector_search_ranks_and_updates(memory: Memory) -> None:
    store = _vector_store(memory)
    store.put(("test",), "doc1", {"text": "zany zebra Xerxes"})
    store.put(("test",), "doc2", {"text": "something about dogs"})
    store.put(("test",), "doc3", {"text": "text about birds"})
    initial = store.search(("test",), query="Zany Xerxes")
    assert initial[0].key == "doc1"
    assert initial[0].score is not None
    store.put(("test",), "doc1", {"text": "new text about dogs"})
    after = store.search(("test",), query="Zany Xerxes")
    doc1 = next(r.score for r in after if r.key == "doc1")
    assert doc1 is not None and doc1 < initial[0].score
    store.put(("test",), "doc4", {"text": "new text about dogs"}, index=False)
    top = store.search(("test",), query="new text about dogs", limit=3)
    assert "doc4" not in [r.key for r in top]
    assert [r.key for r in store.search(("test",), query="new text about dogs")][-1] == "doc4"


def test_vector_search_with_filters(memory: Memory) -> None:
    store = _vector_store(memory)
    for key, value in [
        ("doc1", {"text": "red apple", "color": "red", "score": 4.5}),
        ("doc2", {"text": "red car", "color": "red", "score": 3.0}),
        ("doc3", {"text": "green apple", "color": "green", "score": 4.0}),
        ("doc4", {"text": "blue car", "color": "blue", "score": 3.5}),
    ]:
        store.put(("test",), key, value)
    results = store.search(("test",), query="apple", filter={"color": "red"})
    assert [r.key for r in results][:1] == ["doc1"] and len(results) == 2
    assert store.search(("test",), query="car", filter={"color": "red"})[0].key == "doc2"
    results = store.search(("test",), query="bbbbluuu", filter={"score": {"$gt": 3.2}})
    assert len(results) == 3 and results[0].key == "doc4"
    results = store.search(
        ("test",), query="apple", filter={"score": {"$gte": 4.0}, "color": "green"}
    )
    assert [r.key for r in results] == ["doc3"]


def test_vector_search_pagination(memory: Memory) -> None:
    store = _vector_store(memory)
    for i in range(5):
        store.put(("test",), f"doc{i}", {"text": f"test document number {i}"})
    page1 = store.search(("test",), query="test", limit=2)
    page2 = store.search(("test",), query="test", limit=2, offset=2)
    assert not {r.key for r in page1} & {r.key for r in page2}
    everything = store.search(("test",), query="test", limit=10)
    scores = [r.score or 0.0 for r in everything]
    assert len(everything) == 5 and scores == sorted(scores, reverse=True)
    assert [r.key for r in everything[:4]] == [r.key for r in page1 + page2]


def test_embed_with_paths(memory: Memory) -> None:
    store = _vector_store(memory, fields=["key0", "key1", "key3"])
    store.put(("test",), "doc1", {"key1": "xxx", "key2": "yyy", "key3": "zzz"})
    store.put(("test",), "doc2", {"key0": "uuu", "key1": "vvv", "key2": "www", "key3": "xxx"})
    results = store.search(("test",), query="xxx")
    assert len(results) == 2 and all((r.score or 0) > 0.9 for r in results)
    assert store.search(("test",), query="uuu")[0].key == "doc2"
    assert store.search(("test",), query="zzz")[0].key == "doc1"
    assert all((r.score or 1) < 0.9 for r in store.search(("test",), query="www"))
    # per-operation fields
    store.put(("ops",), "doc3", {"key0": "aaa", "key1": "bbb", "key2": "ccc"}, index=["key0"])
    store.put(("ops",), "doc4", {"key0": "eee", "key1": "ggg"}, index=["key1"])
    assert store.search(("ops",), query="aaa")[0].key == "doc3"
    assert store.search(("ops",), query="ggg")[0].key == "doc4"
    assert all((r.score or 1) < 0.9 for r in store.search(("ops",), query="ccc"))


@pytest.mark.parametrize("query", ["aaa", "abcd", "poisson"])
def test_scores_are_cosine(memory: Memory, query: str) -> None:
    embeddings = CharacterEmbeddings(dims=500)
    store = MemorybankStore(memory, index={"dims": 500, "embed": embeddings, "fields": ["key0"]})
    store.put(("test",), "doc", {"key0": "aaa"})
    (result,) = store.search((), query=query)
    a, b = embeddings.embed_query("aaa"), embeddings.embed_query(query)
    assert result.score == pytest.approx(sum(x * y for x, y in zip(a, b, strict=True)), abs=1e-3)


def test_index_through_the_memory_embedder(tmp_path: Path) -> None:
    embeddings = CharacterEmbeddings(dims=64)

    class Embedder:
        model_id = "test:chars@64"
        dimensions = 64

        def embed(self, texts: Any) -> list[list[float]]:
            return embeddings.embed_documents(list(texts))

        async def aembed(self, texts: Any) -> list[list[float]]:
            return self.embed(texts)

    with Memory(f"sqlite:///{tmp_path / 'e.db'}", embedder=Embedder()) as memory:
        store = MemorybankStore(memory, index={"dims": 64, "fields": ["text"]})
        store.put(("n",), "a", {"text": "quiet lake"})
        store.put(("n",), "b", {"text": "zzz buzz"})
        assert store.search(("n",), query="quiet lakes")[0].key == "a"


class _ManualClock:
    """A clock the test moves by hand: TTLs expire by the memory's clock, not by sleeps."""

    def __init__(self) -> None:
        self.at = datetime(2026, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.at

    def advance(self, seconds: float) -> None:
        self.at += timedelta(seconds=seconds)


def test_ttl_expiry_refresh_and_sweep(tmp_path: Path) -> None:
    clock = _ManualClock()
    with Memory(f"sqlite:///{tmp_path / 'ttl.db'}", clock=clock) as memory:
        # minutes: 0.002 min = 120 ms of the memory's clock
        store = MemorybankStore(
            memory, ttl={"default_ttl": 0.002, "refresh_on_read": True, "omit_expired": True}
        )
        store.put(("ttl",), "refreshed", {"v": 1})
        store.put(("ttl",), "left", {"v": 2})
        store.put(("ttl",), "forever", {"v": 3}, ttl=None)
        for _ in range(3):
            clock.advance(0.06)
            assert store.get(("ttl",), "refreshed") is not None  # each read restarts the clock
        assert store.get(("ttl",), "left") is None  # expired: omitted before any sweep
        assert {i.key for i in store.search(("ttl",))} == {"refreshed", "forever"}
        clock.advance(0.119)
        assert store.get(("ttl",), "refreshed", refresh_ttl=False) is not None  # 1 ms left
        clock.advance(0.002)
        assert store.get(("ttl",), "refreshed", refresh_ttl=False) is None
        assert store.sweep_ttl() == 2
        assert [i.key for i in store.search(("ttl",))] == ["forever"]
        # without omit_expired an expired item stays visible until swept
        keep = MemorybankStore(memory, ttl={"default_ttl": 0.001})
        keep.put(("ttl2",), "k", {"v": 1})
        clock.advance(0.1)
        assert keep.get(("ttl2",), "k", refresh_ttl=False) is not None
        assert keep.sweep_ttl() == 1


def test_store_scope_comes_from_the_handle(memory: Memory) -> None:
    alice = MemorybankStore(memory.scoped(user_id="alice"))
    bob = MemorybankStore(memory.scoped(user_id="bob"))
    alice.put(("prefs",), "theme", {"v": "dark"})
    assert bob.get(("prefs",), "theme") is None
    assert bob.search(("prefs",)) == [] and bob.list_namespaces() == []
    assert alice.get(("prefs",), "theme").value == {"v": "dark"}  # type: ignore[union-attr]


async def _async_store_roundtrip(memory: AsyncMemory) -> None:
    store = AsyncMemorybankStore(
        memory, index={"dims": 500, "embed": CharacterEmbeddings(dims=500), "fields": ["text"]}
    )
    await store.aput(("a", "b"), "k1", {"text": "red apple", "n": 1})
    await store.aput(("a", "c"), "k2", {"text": "blue car", "n": 2})
    assert (await store.aget(("a", "b"), "k1")).value == {"text": "red apple", "n": 1}  # type: ignore[union-attr]
    hits = await store.asearch(("a",), query="apple")
    assert [h.key for h in hits] == ["k1", "k2"]
    assert [h.key for h in await store.asearch(("a",), filter={"n": {"$lt": 2}})] == ["k1"]
    assert await store.alist_namespaces(prefix=("a",)) == [("a", "b"), ("a", "c")]
    await store.adelete(("a", "b"), "k1")
    assert await store.aget(("a", "b"), "k1") is None
    # a sync node of an async graph calls the sync methods from a worker thread
    assert (await asyncio.to_thread(store.get, ("a", "c"), "k2")) is not None
    with pytest.raises(RuntimeError):
        store.get(("a", "c"), "k2")  # on the loop's own thread: use aget


async def test_async_store_sqlite(tmp_path: Path) -> None:
    async with AsyncMemory(f"sqlite:///{tmp_path / 's.db'}") as memory:
        await _async_store_roundtrip(memory)


@pytest.mark.server
async def test_async_store_postgres(pg_prefix: str) -> None:
    from memorybank.stores.postgres._async import AsyncPostgresStore

    store = AsyncPostgresStore.from_url(SERVER_URL, prefix=pg_prefix, pool_size=2, timeout=5)
    try:
        await _async_store_roundtrip(AsyncMemory(store))
    finally:
        await store.close()


@pytest.mark.parametrize("kind", STORE_KINDS)
def test_store_every_store(kind: str, tmp_path: Path) -> None:
    with open_store(kind, tmp_path) as backend, Memory(backend) as memory:
        store = _vector_store(memory, fields=["text"])
        store.put(("a", "b"), "k1", {"text": "red apple", "n": 1})
        store.put(("a", "c"), "k2", {"text": "blue car", "n": 2}, ttl=60)
        assert store.get(("a", "b"), "k1").value == {"text": "red apple", "n": 1}  # type: ignore[union-attr]
        assert [h.key for h in store.search(("a",), query="apple")] == ["k1", "k2"]
        assert [h.key for h in store.search(("a",), filter={"n": {"$gt": 1}})] == ["k2"]
        assert store.list_namespaces(prefix=("a",)) == [("a", "b"), ("a", "c")]
        store.delete(("a", "b"), "k1")
        assert store.get(("a", "b"), "k1") is None
        assert store.sweep_ttl() == 0


async def test_concurrent_puts_leave_the_newest_head(tmp_path: Path) -> None:
    from langgraph.checkpoint.base import empty_checkpoint

    async with AsyncMemory(f"sqlite:///{tmp_path / 'c.db'}") as memory:
        saver = AsyncMemorybankSaver(memory)
        config: Any = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
        checkpoints = []
        for _ in range(12):
            checkpoint = empty_checkpoint()  # ids grow (uuid6)
            checkpoints.append(checkpoint)
        order = random.Random(7).sample(checkpoints, len(checkpoints))
        await asyncio.gather(*(saver.aput(config, c, {}, {}) for c in order))
        latest = await saver.aget_tuple(config)
        assert latest is not None
        assert latest.config["configurable"]["checkpoint_id"] == max(c["id"] for c in checkpoints)
