"""Shared setup of the long-term memory tests: both embedded stores, a word tokenizer
(so budgets are easy to compute by hand) and a small, real, deterministic embedder."""

from __future__ import annotations

import hashlib
import itertools
import math
import re
import uuid
from collections.abc import AsyncIterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from memorybank import AsyncMemory
from memorybank.records import Entry
from memorybank.stores import AsyncInMemoryStore, AsyncSQLiteStore
from memorybank.stores.contract._async.store import AsyncStore, VectorItem


class Words:
    """A tokenizer counting whitespace-separated words: a message costs 3 + 1 + words."""

    name = "words"

    def count(self, text: str) -> int:
        return len(text.split())


class BagOfWords:
    """A real embedder: hashed bag of words, L2-normalised (cosine = word overlap)."""

    model_id = "test:bag-of-words-512"
    dimensions = 512

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        out = []
        for text in texts:
            vector = [0.0] * self.dimensions
            for word in re.findall(r"[a-z0-9]+", text.lower()):
                digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
                vector[int.from_bytes(digest, "big") % self.dimensions] += 1.0
            norm = math.sqrt(sum(x * x for x in vector)) or 1.0
            out.append([x / norm for x in vector])
        return out

    async def aembed(self, texts: Sequence[str]) -> list[list[float]]:
        return self.embed(texts)


class StepClock:
    """Each call is 1 ms after the previous one."""

    def __init__(self) -> None:
        self._ticks = itertools.count()
        self.start = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.start + timedelta(milliseconds=next(self._ticks))


def new_id(prefix: str = "t") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


def words(n: int, word: str = "w") -> str:
    """``n`` words (a user/assistant message of them costs ``n + 4`` tokens)."""
    return " ".join([word] * n)


@pytest.fixture(params=["memory", "sqlite"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[AsyncStore]:
    store: AsyncStore
    if request.param == "memory":
        store = AsyncInMemoryStore()
    else:
        store = AsyncSQLiteStore(tmp_path / "longterm.db")
    yield store
    await store.close()


@pytest.fixture
async def memory(store: AsyncStore) -> AsyncIterator[AsyncMemory]:
    memory = AsyncMemory(store, clock=StepClock(), tokenizer=Words())
    yield memory
    await memory.close()


@pytest.fixture
async def smart(store: AsyncStore) -> AsyncIterator[AsyncMemory]:
    """A memory with the bag-of-words embedder."""
    memory = AsyncMemory(store, clock=StepClock(), tokenizer=Words(), embedder=BagOfWords())
    yield memory
    await memory.close()


async def index_entries(memory: AsyncMemory, entries: Sequence[Entry]) -> None:
    """Store the entries' vectors (what the recall indexer does on write)."""
    embedder = memory._core.embedder
    assert embedder is not None
    items = [e for e in entries if e.content]
    vectors = embedder.embed([e.content or "" for e in items])
    await memory.store.vector_put(
        memory.tenant_id,
        [
            VectorItem("entry", e.id, embedder.model_id, v, thread_id=e.thread_id)
            for e, v in zip(items, vectors, strict=True)
        ],
    )


async def fill(
    memory: AsyncMemory, thread_id: str, messages: Sequence[dict[str, Any] | str], **kw: Any
) -> list[Entry]:
    """Append messages (a str alternates user/assistant) and index them when possible."""
    out: list[Entry] = []
    for i, m in enumerate(messages):
        message = (
            m
            if isinstance(m, dict)
            else {"role": "user" if i % 2 == 0 else "assistant", "content": m}
        )
        out.append(await memory.entries.add(thread_id, message, **kw))
    if memory._core.embedder is not None:
        await index_entries(memory, out)
    return out
