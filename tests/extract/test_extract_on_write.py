"""extract_on_write: background extraction that never blocks nor fails a write."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from memorybank import AsyncMemory, ConfigurationError, Memory
from memorybank.core._async import core as async_core
from memorybank.extract import LLMExtractor, RuleExtractor
from memorybank.memory._async import memory as async_memory
from memorybank.memory._sync import memory as sync_memory
from memorybank.stores import AsyncSQLiteStore, SQLiteStore
from tests.llm_server import Planned, ScriptedLLM, extraction_model, running
from tests.reliability._harness import Words

OWNER: dict[str, Any] = {"user_id": "alice", "agent_id": "helper"}


MODEL = "test-extract"


@pytest.fixture
def chat() -> Iterator[ScriptedLLM]:
    yield from running(ScriptedLLM(MODEL, extraction_model))


@pytest.fixture
async def llm(chat: ScriptedLLM) -> AsyncIterator[LLMExtractor]:
    extractor = LLMExtractor(
        base_url=chat.base_url, model=MODEL, api_key="k", max_retries=0, timeout=20
    )
    async with extractor:  # the test loop's client (a memory never closes its extractor)
        yield extractor
    extractor.close()


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[AsyncSQLiteStore]:
    store = AsyncSQLiteStore(tmp_path / "m.db")
    yield store
    await store.close()


def opened(store: Any, extractor: Any, **options: Any) -> AsyncMemory:
    return AsyncMemory(
        store, tokenizer=Words(), extractor=extractor, extract_on_write=True, **options
    )


async def test_the_write_returns_before_extraction(
    store: AsyncSQLiteStore, chat: ScriptedLLM, llm: LLMExtractor
) -> None:
    chat.add(Planned(delay=0.5))
    memory = opened(store, llm)
    thread = await memory.ensure_thread(None, **OWNER)
    entry = await memory.remember(thread.id, "user", "Alice lives in Paris.")
    backlog = memory.graph.pending()
    assert backlog.queued + backlog.running == 1  # still extracting: the write did not wait
    assert await memory.entries.count(thread.id) == 1
    assert await memory.graph.drain()
    assert memory.graph.pending().done == 1
    (person,) = await memory.graph.find_entities("Alice", **OWNER)
    (lives,) = await memory.graph.relations(person.id, **OWNER)
    assert lives.provenance == (entry.id,)
    await memory.close()


async def test_failures_are_counted_and_caught_up_later(
    store: AsyncSQLiteStore, chat: ScriptedLLM, llm: LLMExtractor
) -> None:
    chat.add(
        Planned(status=500, raw=b"down"),
        Planned(content="not json at all"),
    )
    memory = opened(store, llm)
    thread = await memory.ensure_thread(None, **OWNER)
    await memory.remember(thread.id, "user", "Alice lives in Paris.")
    await memory.remember(thread.id, "assistant", "Bob works at Acme.")
    assert await memory.graph.drain()
    backlog = memory.graph.pending()
    assert (backlog.failed, backlog.done) == (2, 0)
    assert backlog.last_error is not None and "ExtractionError" in backlog.last_error
    assert await memory.graph.find_entities("Alice", **OWNER) == []
    # nothing was marked done: an ingest catches up
    report = await memory.graph.ingest(thread.id)
    assert report.entries == 2
    assert [e.name for e in await memory.graph.find_entities("Alice", **OWNER)] == ["Alice"]
    await memory.close()


async def test_a_down_endpoint_gets_no_storm(
    store: AsyncSQLiteStore, chat: ScriptedLLM, llm: LLMExtractor
) -> None:
    chat.add(*[Planned(status=503, raw=b"down") for _ in range(40)])
    memory = opened(store, llm, extract_concurrency=1)
    thread = await memory.ensure_thread(None, **OWNER)
    for i in range(12):
        await memory.remember(thread.id, "user", f"Message {i} about Alice.")
    assert await memory.graph.drain()
    backlog = memory.graph.pending()
    assert (backlog.failed, backlog.done) == (12, 0)
    assert len(chat.requests) == async_core.EXTRACT_BREAKER_THRESHOLD == 5
    assert backlog.last_error is not None and "paused" in backlog.last_error
    await memory.close()


async def test_system_and_tool_messages_are_not_queued(store: AsyncSQLiteStore) -> None:
    memory = opened(store, RuleExtractor())
    thread = await memory.ensure_thread(None)
    await memory.remember(thread.id, "system", "Alice lives in Paris.")
    await memory.remember(thread.id, "user", "   ")
    assert memory.graph.pending().queued == 0
    await memory.close()
    assert memory.graph.pending() == type(memory.graph.pending())()


async def test_order_per_thread_keeps_the_latest_value(store: AsyncSQLiteStore) -> None:
    memory = opened(store, RuleExtractor(), extract_concurrency=4)
    thread = await memory.ensure_thread(None, **OWNER)
    await memory.entries.add_many(
        thread.id,
        [{"role": "user", "content": f"Alice lives in {city}."} for city in ("Paris", "Oslo")],
    )
    await memory.remember(thread.id, "user", "Alice lives in Rome.")
    await memory.close()  # drains
    assert memory.graph.pending().done == 3
    (fact,) = await memory.facts.list(**OWNER)
    history = await memory.facts.history(fact.id, **OWNER)
    assert [h.content for h in history] == [
        "Alice lives in Paris",
        "Alice lives in Oslo",
        "Alice lives in Rome",
    ]


async def test_concurrency_is_bounded(
    store: AsyncSQLiteStore, chat: ScriptedLLM, llm: LLMExtractor
) -> None:
    chat.gate.clear()  # the model answers nothing until the test says so
    memory = opened(store, llm, extract_concurrency=2)
    for i in range(6):
        thread = await memory.ensure_thread(f"t{i}")
        await memory.remember(thread.id, "user", f"Person{i} works at Acme.")
    for _ in range(500):
        if chat.in_flight == 2:
            break
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.05)  # room for a third request, were the bound broken
    backlog = memory.graph.pending()
    assert (chat.in_flight, backlog.running, backlog.queued) == (2, 2, 4)
    chat.gate.set()
    await memory.close()
    assert memory.graph.pending().done == 6
    assert chat.most_in_flight == 2


async def test_full_backlog_drops_and_close_cancels(
    store: AsyncSQLiteStore,
    chat: ScriptedLLM,
    llm: LLMExtractor,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(async_core, "EXTRACT_MAX_BACKLOG", 2)
    monkeypatch.setattr(async_memory, "EXTRACT_CLOSE_TIMEOUT", 0.1)
    chat.add(*[Planned(delay=3) for _ in range(3)])
    memory = opened(store, llm, extract_concurrency=1)
    thread = await memory.ensure_thread(None, **OWNER)
    for text in ("Alice lives in Paris.", "Bob lives in Rome.", "Carol lives in Oslo."):
        await memory.remember(thread.id, "user", text)  # never blocks, never raises
    assert memory.graph.pending().dropped == 1
    await memory.close()
    backlog = memory.graph.pending()
    assert (backlog.cancelled, backlog.running, backlog.queued, backlog.done) == (2, 0, 0, 0)
    await memory.remember(thread.id, "user", "Dan lives in Lima.")  # after close: dropped
    assert memory.graph.pending().dropped == 2
    assert await memory.entries.count(thread.id) == 4


async def test_tenant_and_scoped_handles_share_the_backlog(store: AsyncSQLiteStore) -> None:
    memory = opened(store, RuleExtractor())
    acme = memory.tenant("acme").scoped(user_id="alice")
    thread = await acme.ensure_thread(None, agent_id="helper")
    await acme.remember(thread.id, "user", "Alice works at Initech.")
    assert await memory.graph.drain()
    assert memory.graph.pending().done == acme.graph.pending().done == 1
    found = await acme.graph.find_entities("Initech", agent_id="helper")
    assert [e.name for e in found] == ["Initech"]
    assert await memory.graph.find_entities("Initech", **OWNER) == []  # other tenant
    await memory.close()


def test_options_are_checked() -> None:
    with pytest.raises(ConfigurationError, match="needs an extractor"):
        AsyncMemory("memory://", extract_on_write=True)
    with pytest.raises(ConfigurationError, match="extract"):
        Memory("memory://", extractor=object())  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="extract_concurrency"):
        Memory("memory://", extractor=RuleExtractor(), extract_concurrency=0)


def test_sync_memory_extracts_on_threads(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "s.db")
    memory = Memory(store, tokenizer=Words(), extractor=RuleExtractor(), extract_on_write=True)
    threads = [memory.ensure_thread(f"s{i}", **OWNER) for i in range(3)]
    caller = threading.get_ident()
    people = ("Bob", "Carol", "Dan")
    for thread, person in zip(threads, people, strict=True):
        memory.remember(thread.id, "user", "Alice lives in Paris.")
        memory.remember(thread.id, "user", f"{person} works at Acme.")
    assert memory.graph.drain(10)
    assert memory.graph.pending().done == 6
    for person in people:
        assert [e.name for e in memory.graph.find_entities(person, **OWNER)] == [person]
    assert [e.name for e in memory.graph.find_entities("Alice", **OWNER)] == ["Alice"]
    assert threading.get_ident() == caller
    memory.close()
    store.close()


def test_sync_failure_never_fails_the_write(
    tmp_path: Path, chat: ScriptedLLM, llm: LLMExtractor, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sync_memory, "EXTRACT_CLOSE_TIMEOUT", 0.1)
    chat.add(Planned(status=503, raw=b"busy"), Planned(delay=2))
    store = SQLiteStore(tmp_path / "s.db")
    memory = Memory(store, tokenizer=Words(), extractor=llm, extract_on_write=True)
    thread = memory.ensure_thread(None, **OWNER)
    memory.remember(thread.id, "user", "Alice lives in Paris.")
    assert memory.graph.drain(10)
    assert memory.graph.pending().failed == 1
    memory.remember(thread.id, "user", "Bob lives in Rome.")  # slow: close gives up waiting
    memory.remember(thread.id, "user", "Carol lives in Oslo.")
    memory.close()
    backlog = memory.graph.pending()
    assert (backlog.failed, backlog.done, backlog.cancelled, backlog.running) == (1, 1, 1, 0)
    store.close()


async def test_sync_memory_inside_an_event_loop(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "s.db")
    memory = Memory(store, tokenizer=Words(), extractor=RuleExtractor(), extract_on_write=True)
    thread = memory.ensure_thread(None, **OWNER)
    memory.remember(thread.id, "user", "Alice works at Acme.")
    await asyncio.sleep(0)
    assert memory.graph.drain(10)
    assert [e.name for e in memory.graph.find_entities("Acme", **OWNER)] == ["Acme"]
    memory.close()
    store.close()
