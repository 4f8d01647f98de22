"""Background embedding loses nothing when the process is SIGKILLed with vectors pending.

A child writes 600 messages and a document with ``embed="background"`` and an
embedder that never returns, prints their ids, and is killed: none has a vector,
the journal holds them, leased to the dead child for a second. A new memory on
the same store resumes them once that lease runs out: every entry and the
document get their vector and the journal empties.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from memorybank import Memory
from memorybank.core._async.embedding import EMBED_JOB, JOURNAL_TENANT
from tests.recall.conftest import HashEmbedder
from tests.reliability._harness import Child, StoreSpec, provide, store_params

COUNT = 600


@pytest.fixture
def spec(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StoreSpec]:
    yield from provide(request.param, tmp_path)


@pytest.mark.parametrize(
    "spec", store_params(("sqlite-full", "postgres", "mysql", "redis")), indirect=True
)
def test_vectors_pending_at_a_kill_are_embedded_by_the_next_start(
    spec: StoreSpec, tmp_path: Path
) -> None:
    child = Child("embed_stuck", spec, str(COUNT), "1", directory=tmp_path)
    try:
        child.wait_for(1, timeout=120)
        child.kill()
    finally:
        child.stop()
    (written,) = child.records()
    entries, document = written["entries"], written["document"]
    assert len(entries) == COUNT
    embedder = HashEmbedder()
    model = embedder.model_id
    store = spec.open()
    try:
        assert store.vector_get("default", "entry", entries, model_id=model) == {}
        assert store.vector_get("default", "document", [document], model_id=model) == {}
        assert len(store.record_list(JOURNAL_TENANT, EMBED_JOB)) == 4  # 3 batches + 1

        with Memory(store, embedder=embedder, embed="background") as memory:  # resumes
            deadline = time.monotonic() + 120
            while store.record_list(JOURNAL_TENANT, EMBED_JOB):  # once the lease ran out
                assert time.monotonic() < deadline, "the journal was never resumed"
                assert memory.embedding.flush() is True
                time.sleep(0.02)
            assert memory.embedding.flush() is True
            status = memory.embedding.status()
            assert (status.embedded, status.failed, status.pending) == (COUNT + 1, 0, 0)
        assert len(store.vector_get("default", "entry", entries, model_id=model)) == COUNT
        assert list(store.vector_get("default", "document", [document], model_id=model)) == [
            document
        ]
        assert store.record_list(JOURNAL_TENANT, EMBED_JOB) == []
        # the vectors are the embedder's: semantic search finds the entries
        with Memory(store, embedder=embedder) as memory:
            hits = memory.search("zebra number 17", mode="semantic", k=3)
            assert any(h.id == entries[17] for h in hits)
    finally:
        store.close()
