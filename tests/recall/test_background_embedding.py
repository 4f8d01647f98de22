"""Memory(embed="background"): writes return once stored, a worker adds the vectors.

Each test runs on the in-memory store, SQLite and PostgreSQL (``tests.all_stores``).
The worker's embedder is held by a gate where a test needs vectors to be pending:
it blocks only the worker's thread, so the test's own searches go on.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest

from memorybank import AsyncMemory, ConfigurationError, Hit, Memory
from memorybank.core._async.embedding import EMBED_JOB, JOURNAL_TENANT
from memorybank.embeddings import EmbeddingStatus
from memorybank.stores import Store
from tests.all_stores import open_store

from .conftest import HashEmbedder

KINDS = ["memory", "sqlite", "postgres"]


class GatedEmbedder(HashEmbedder):
    """``HashEmbedder`` whose calls from the background worker wait for ``gate``."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()
        self.worker_calls = 0

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if threading.current_thread().name.startswith("memorybank-embed"):
            self.worker_calls += 1
            assert self.gate.wait(120), "the test never opened the gate"
        return super().embed(texts)


@pytest.fixture(params=KINDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    with open_store(str(request.param), tmp_path) as opened:
        yield opened


def _messages(n: int, word: str = "zebra") -> list[dict[str, str]]:
    return [
        {"role": "user", "content": f"the {word} number {i} crossed the road"} for i in range(n)
    ]


def _missing(memory: Memory, ids: list[str]) -> set[str]:
    model = memory.embedder.model_id if memory.embedder else ""
    have = memory.store.vector_get(memory.tenant_id, "entry", ids, model_id=model)
    return set(ids) - set(have)


def _wait_for(ready: Callable[[], bool], within: float = 60.0) -> None:
    deadline = time.monotonic() + within
    while not ready():
        assert time.monotonic() < deadline, "the background worker never started"
        time.sleep(0.01)


def test_write_returns_before_vectors_and_flush_waits_for_them(store: Store) -> None:
    embedder = GatedEmbedder()
    with Memory(store, embedder=embedder, embed="background") as memory:
        thread = memory.threads.create()
        entries = memory.entries.add_many(thread.id, _messages(200))
        ids = [e.id for e in entries]  # one job (under EMBED_BATCH): one embedder call
        assert memory.embedding.mode == "background"
        # the worker has read what lacks a vector and waits in the embedder: the hybrid
        # search below embeds its own missing candidates, which the worker stores again
        _wait_for(lambda: embedder.worker_calls >= 1)
        status = memory.embedding.status()
        assert status.pending == 200 and status.embedded == 0
        assert _missing(memory, ids) == set(ids)  # stored, no vector yet
        # searchable by keyword at once; a hybrid search answers too, without error
        assert len(memory.search("zebra road", mode="keyword", k=5)) == 5
        hybrid = memory.search("zebra number 7", k=5)
        assert hybrid and all("zebra" in (h.entry.content or "") for h in hybrid if h.entry)
        embedder.gate.set()
        assert memory.embedding.flush() is True
        assert _missing(memory, ids) == set()
        status = memory.embedding.status()
        assert (status.pending, status.embedded, status.failed) == (0, 200, 0)
        assert store.record_list(JOURNAL_TENANT, EMBED_JOB) == []
        assert memory.embed_pending() == 0  # nothing left for the catch-up scan


def test_a_full_queue_makes_the_write_wait(store: Store) -> None:
    embedder = GatedEmbedder()
    with Memory(store, embedder=embedder, embed="background", embed_queue=4) as memory:
        thread = memory.threads.create()
        memory.entries.add_many(thread.id, _messages(4))  # fills the queue: the worker waits
        done = threading.Event()

        def write() -> None:
            memory.entries.add_many(thread.id, _messages(2, "lion"))
            done.set()

        writer = threading.Thread(target=write)
        writer.start()
        assert not done.wait(1.0)  # back-pressure: the write waits for room
        assert memory.embedding.status().pending == 6  # stored, none embedded
        # stored before it waited: keyword search already finds it
        assert len(memory.search("lion", mode="keyword", k=10)) == 2
        embedder.gate.set()
        writer.join(60)
        assert done.is_set()
        assert memory.embedding.flush() is True
        assert memory.embedding.status().embedded == 6


def test_documents_embed_in_the_background(store: Store) -> None:
    embedder = GatedEmbedder()
    with Memory(store, embedder=embedder, embed="background") as memory:
        doc = memory.documents.add("a note about automobiles and their engines")
        model = embedder.model_id
        assert memory.store.vector_get(memory.tenant_id, "document", [doc.id], model_id=model) == {}
        assert [h.id for h in memory.search("engines", mode="keyword")] == [doc.id]
        embedder.gate.set()
        memory.embedding.flush()
        got = memory.store.vector_get(memory.tenant_id, "document", [doc.id], model_id=model)
        assert list(got) == [doc.id]
        # semantic recall through the synonym ("car" shares a dimension with "automobiles")
        hits = memory.search("car", mode="semantic", kinds=["documents"], k=1)
        assert [h.id for h in hits] == [doc.id]


def test_an_entry_deleted_before_the_worker_gets_no_vector(store: Store) -> None:
    embedder = GatedEmbedder()
    with Memory(store, embedder=embedder, embed="background") as memory:
        thread = memory.threads.create(user_id="gone")
        entries = memory.entries.add_many(thread.id, _messages(3))
        kept = memory.threads.create()
        other = memory.entries.add(kept.id, {"role": "user", "content": "a zebra stays"})
        assert memory.forget_user("gone") > 0
        embedder.gate.set()
        memory.embedding.flush()
        assert _missing(memory, [e.id for e in entries]) == {e.id for e in entries}
        assert _missing(memory, [other.id]) == set()


def test_search_results_are_the_same_inline_and_background_after_flush(
    store: Store, tmp_path: Path
) -> None:
    queries = ["zebra number 7", "the car", "road crossing", "automobile engines"]
    texts = [m["content"] for m in _messages(40)] + [
        "my car broke down",
        "an automobile show",
        "happy holidays",
        "the vehicle was red",
    ]
    results: dict[str, list[list[tuple[str | None, float]]]] = {}

    def content(hit: Hit) -> str | None:
        return hit.entry.content if hit.entry else hit.document.content if hit.document else None

    with open_store("sqlite", tmp_path / "inline") as inline_store:
        for mode, target in (("inline", inline_store), ("background", store)):
            with Memory(target, embedder=HashEmbedder(), embed=mode) as memory:  # type: ignore[arg-type]
                thread = memory.threads.create()
                memory.entries.add_many(thread.id, [{"role": "user", "content": t} for t in texts])
                memory.documents.add("a guide to automobile engines")
                assert memory.embedding.flush() is True
                results[mode] = [
                    [
                        (content(h), round(h.score, 6))
                        for h in memory.search(q, mode=search_mode, k=10)
                    ]
                    for q in queries
                    for search_mode in ("hybrid", "semantic")
                ]
    assert results["inline"] == results["background"]
    assert all(results["inline"])  # every query found something


def test_inline_is_the_library_default() -> None:
    with Memory("memory://", embedder=HashEmbedder()) as memory:
        thread = memory.threads.create()
        entry = memory.entries.add(thread.id, {"role": "user", "content": "a zebra"})
        assert _missing(memory, [entry.id]) == set()  # embedded in the write
        assert memory.embedding.status() == EmbeddingStatus(
            "inline", HashEmbedder().model_id, 0, 0, 0, 0, False, None
        )
        assert memory.embedding.flush() is True


def test_bad_embed_options_are_refused() -> None:
    with pytest.raises(ConfigurationError, match="embed must be"):
        Memory("memory://", embed="later")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="embed_queue"):
        Memory("memory://", embed="background", embed_queue=0)
    for lease in (0, -1.5, float("nan"), float("inf"), "30", True):
        with pytest.raises(ConfigurationError, match="embed_lease"):
            Memory("memory://", embed="background", embed_lease=lease)  # type: ignore[arg-type]


def test_a_failing_embedder_keeps_the_journal_for_the_next_start(store: Store) -> None:
    class Failing(HashEmbedder):
        def embed(self, texts: Sequence[str]) -> list[list[float]]:
            raise RuntimeError("model unavailable")

    with Memory(store, embedder=Failing(), embed="background") as memory:
        thread = memory.threads.create()
        entries = memory.entries.add_many(thread.id, _messages(5))
        assert memory.embedding.flush() is True  # done, as failed
        status = memory.embedding.status()
        assert (status.failed, status.embedded) == (5, 0)
        assert status.last_error == "RuntimeError: model unavailable"
    assert len(store.record_list(JOURNAL_TENANT, EMBED_JOB)) == 1
    with Memory(store, embedder=HashEmbedder(), embed="background") as memory:
        assert memory.embedding.flush() is True  # resumed
        assert _missing(memory, [e.id for e in entries]) == set()
        assert memory.embedding.status().embedded == 5
    assert store.record_list(JOURNAL_TENANT, EMBED_JOB) == []


async def test_async_memory_embeds_in_the_background(tmp_path: Path) -> None:
    embedder = HashEmbedder()
    url = f"sqlite:///{tmp_path / 'a.db'}"
    async with AsyncMemory(url, embedder=embedder, embed="background", embed_queue=100) as memory:
        thread = await memory.threads.create()
        entries = await memory.entries.add_many(thread.id, _messages(450))
        assert memory.embedding.status().pending <= 450
        assert await memory.embedding.flush() is True
        model = embedder.model_id
        have = await memory.store.vector_get(
            memory.tenant_id, "entry", [e.id for e in entries], model_id=model
        )
        assert len(have) == 450
        status = memory.tenant("other").embedding.status()  # per tenant
        assert (status.pending, status.embedded) == (0, 0)
        assert memory.embedding.status().embedded == 450
        # batches of at most 256 texts, never one call per message
        assert max(embedder.calls) <= 256 and len(embedder.calls) <= 4


def test_an_http_store_refuses_background() -> None:
    with pytest.raises(ConfigurationError, match="background"):
        Memory("http://127.0.0.1:9", api_key="mb_x", embed="background")
