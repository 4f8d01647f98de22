"""An async hybrid search embeds its query while the store runs the keyword search, and
runs the vector search beside the facts (``memorybank.runtime.concurrency.aboth``).

The overlap is shown by ordering, not by timing: the store's keyword search below waits
until the query's embedding has begun, which only a search that runs both at once
can satisfy (one after the other, it waits out its timeout and fails)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

import pytest

from memorybank import AsyncMemory
from memorybank.errors import InvalidInput
from memorybank.runtime.concurrency import aboth, both
from memorybank.stores import AsyncSQLiteStore
from memorybank.stores.contract.types import SearchHit, Visibility

from .conftest import HashEmbedder


class SignallingEmbedder(HashEmbedder):
    """HashEmbedder whose async calls say when they begin."""

    def __init__(self) -> None:
        super().__init__()
        self.began = asyncio.Event()

    async def aembed(self, texts: Sequence[str]) -> list[list[float]]:
        self.began.set()
        await asyncio.sleep(0)
        return self.embed(texts)


class WaitingStore(AsyncSQLiteStore):
    """A real SQLite store whose keyword search waits for an event first."""

    waits_for: asyncio.Event | None = None
    waited: list[bool]

    async def text_search(
        self,
        tenant: str,
        query: str,
        *,
        kinds: Sequence[str],
        k: int,
        thread_id: str | None = None,
        visible_to: Visibility | None = None,
    ) -> list[SearchHit]:
        if self.waits_for is not None:
            await asyncio.wait_for(self.waits_for.wait(), timeout=5)
            self.waited.append(True)
        return await super().text_search(
            tenant, query, kinds=kinds, k=k, thread_id=thread_id, visible_to=visible_to
        )


async def test_query_embedding_runs_beside_the_keyword_search(tmp_path: Path) -> None:
    store = WaitingStore(tmp_path / "o.db")
    store.waited = []
    embedder = SignallingEmbedder()
    memory = AsyncMemory(store, embedder=embedder)
    try:
        thread = await memory.threads.create(user_id="u", agent_id="a")
        await memory.entries.add(thread.id, {"role": "user", "content": "my car is red"})
        await memory.entries.add(thread.id, {"role": "user", "content": "I baked bread"})
        embedder.began.clear()
        store.waits_for = embedder.began  # set only once the query's embedding begins
        hits = await memory.search("automobile colour", user_id="u", agent_id="a", k=2)
        assert store.waited == [True]
        assert hits and hits[0].entry is not None
        assert hits[0].entry.content == "my car is red"  # semantic: no shared keyword
        hits = await memory.search("red car", thread_id=thread.id, k=1)
        assert store.waited == [True, True]
        assert hits[0].entry is not None and hits[0].entry.content == "my car is red"
    finally:
        await memory.close()


async def test_aboth_runs_both_at_once() -> None:
    started = asyncio.Event()

    async def first() -> str:
        await asyncio.wait_for(started.wait(), timeout=5)  # only the other task sets it
        return "first"

    async def second() -> int:
        started.set()
        return 2

    assert await aboth(first, second) == ("first", 2)


async def test_aboth_failure_of_the_first_cancels_the_second() -> None:
    cancelled = asyncio.Event()
    entered = asyncio.Event()

    async def first() -> None:
        await entered.wait()
        raise InvalidInput("bad", field="query")

    async def second() -> None:
        entered.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    with pytest.raises(InvalidInput, match="bad"):  # as raised: no ExceptionGroup
        await aboth(first, second)
    assert cancelled.is_set()


async def test_aboth_failure_of_the_second_is_raised() -> None:
    async def first() -> int:
        await asyncio.sleep(0)
        return 1

    async def second() -> int:
        raise LookupError("gone")

    with pytest.raises(LookupError, match="gone"):
        await aboth(first, second)


def test_both_calls_in_order() -> None:
    calls: list[str] = []

    def call(name: str) -> str:
        calls.append(name)
        return name.upper()

    assert both(lambda: call("a"), lambda: call("b")) == ("A", "B")
    assert calls == ["a", "b"]
