"""The per-turn helper (async and sync), and the sync twins of the helpers."""

from __future__ import annotations

import logging
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memorybank import (
    AsyncMemory,
    CompactionService,
    ContextBuilder,
    ContextOptions,
    CoreFacts,
    Memory,
    SessionManager,
    StoreClosed,
    StoreUnavailable,
    ThreadForbidden,
)
from memorybank.stores import InMemoryStore, SQLiteStore

from .conftest import StepClock, Words, new_id


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])  # closed again when the block exits


async def test_a_turn_loads_context_and_saves_input_and_output_atomically(
    memory: AsyncMemory,
) -> None:
    tid = new_id()
    async with memory.turn(tid, user_id="alice", agent_id="a", input="Hi, I am Alice") as turn:
        assert turn.messages == [{"role": "user", "content": "Hi, I am Alice"}]
        turn.add({"role": "assistant", "content": "Hello Alice!"})
    assert [e.content for e in turn.saved] == ["Hi, I am Alice", "Hello Alice!"]
    options = ContextOptions(max_tokens=1000)
    async with memory.turn(
        tid,
        user_id="alice",
        agent_id="a",
        input="What is my name?",
        context=options,
        system_prompt="Be brief.",
    ) as turn:
        assert turn.messages == [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Hi, I am Alice"},
            {"role": "assistant", "content": "Hello Alice!"},
            {"role": "user", "content": "What is my name?"},
        ]
        turn.add_many([{"role": "assistant", "content": "Alice."}])
    thread = await memory.threads.get(tid)
    assert thread is not None and thread.user_id == "alice" and thread.agent_id == "a"
    assert await memory.entries.count(tid) == 4


async def test_nothing_is_saved_when_the_agent_fails(memory: AsyncMemory) -> None:
    tid = new_id()
    with pytest.raises(RuntimeError):
        async with memory.turn(tid, user_id="u", agent_id="a", input="hi") as turn:
            turn.add({"role": "assistant", "content": "partial"})
            raise RuntimeError("model error")
    assert await memory.entries.count(tid) == 0


async def test_load_and_save_can_be_switched_off(memory: AsyncMemory) -> None:
    tid = new_id()
    async with memory.turn(tid, user_id="u", agent_id="a", input="one"):
        pass
    async with memory.turn(
        tid, user_id="u", agent_id="a", input="two", load_history=False, save_history=False
    ) as turn:
        assert turn.messages == [{"role": "user", "content": "two"}]
    assert await memory.entries.count(tid) == 1


async def test_another_users_thread_is_refused(memory: AsyncMemory) -> None:
    tid = new_id()
    async with memory.turn(tid, user_id="alice", agent_id="a", input="mine"):
        pass
    with pytest.raises(ThreadForbidden):
        async with memory.turn(tid, user_id="bob", agent_id="a", input="let me in"):
            pass


async def test_an_unreachable_store_lets_the_agent_run_without_memory(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from memorybank.stores import AsyncRedisStore

    store = AsyncRedisStore.from_url(f"redis://127.0.0.1:{closed_port()}/0", timeout=0.5)
    memory = AsyncMemory(store, clock=StepClock(), tokenizer=Words())
    seen: list[tuple[str, str]] = []

    async def on_error(error: BaseException, operation: str) -> None:
        seen.append((type(error).__name__, operation))

    with caplog.at_level(logging.WARNING, logger="memorybank"):
        async with memory.turn(
            "t1",
            user_id="u",
            agent_id="a",
            input="hello",
            on_error=on_error,
            system_prompt="sys",
        ) as turn:
            assert turn.messages == [
                {"role": "system", "content": "sys"},
                {"role": "user", "content": "hello"},
            ]
            assert not turn.memory_available
            turn.add({"role": "assistant", "content": "hi"})
    assert seen == [("StoreUnavailable", "load"), ("StoreUnavailable", "save")]
    assert "unreachable" in caplog.text
    with pytest.raises(StoreUnavailable):
        async with memory.turn("t1", user_id="u", agent_id="a", input="x", raise_errors=True):
            pass
    await memory.close()
    await store.close()


async def test_a_closed_memory_is_a_bug_not_an_outage(tmp_path: Path) -> None:
    memory = AsyncMemory(f"sqlite:///{tmp_path / 'x.db'}")
    await memory.close()
    with pytest.raises(StoreClosed):
        async with memory.turn("t1", user_id="u", agent_id="a", input="x"):
            pass


# -- the sync twins --------------------------------------------------------------------


@pytest.fixture(params=["memory", "sqlite"])
def sync_memory(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Memory]:
    store = InMemoryStore() if request.param == "memory" else SQLiteStore(tmp_path / "s.db")
    memory = Memory(store, clock=StepClock(), tokenizer=Words())
    yield memory
    store.close()


def summarize(messages: list[dict[str, Any]], options: Any) -> str:
    return f"{len(messages)} messages"


def test_sync_helpers(sync_memory: Memory) -> None:
    memory = sync_memory
    sessions = SessionManager(memory, CompactionService(memory=memory, summarize=summarize))
    session = sessions.get_or_create(user_id="u", channel_type="web", channel_id="c", agent_id="a")
    for i in range(12):
        with memory.turn(session.id, user_id="u", agent_id="a", input=f"question {i}") as turn:
            turn.add({"role": "assistant", "content": f"answer {i}"})
    assert sessions.get(session.id).message_count == 24
    memory.facts.add(agent_id="a", user_id="u", content="likes short answers", confidence=0.9)
    builder = ContextBuilder(ContextOptions(max_tokens=200, include_facts=True), memory=memory)
    context = builder.build(session.id, agent_id="a", user_id="u", system_prompt="sys")
    assert context.messages[0]["content"] == "sys\n\nKnown facts:\n- likes short answers"
    assert context.token_count <= 100 and context.truncated
    result = sessions.compact(session.id, threshold=0, keep_recent=4)
    assert (result.original_messages, result.compacted_messages) == (24, 5)
    assert memory.entries.list(session.id)[0].content == "[Conversation summary]\n20 messages"
    core = CoreFacts(memory=memory, user_id="u")
    core.set("name", "U")
    assert core.format_for_prompt() == "name: U"


def test_sync_helpers_are_synchronous(sync_memory: Memory) -> None:
    builder = ContextBuilder(ContextOptions(max_tokens=200), memory=sync_memory)
    assert type(builder).__module__ == "memorybank.context._sync.builder"
    service = CompactionService(memory=sync_memory)
    assert type(service).__module__ == "memorybank.context._sync.compaction"
    assert type(SessionManager(sync_memory)).__module__ == "memorybank.context._sync.sessions"
    assert type(CoreFacts(memory=sync_memory)).__module__ == "memorybank.memory._sync.core_facts"


async def test_async_helpers_are_awaitable(memory: AsyncMemory) -> None:
    builder = ContextBuilder(ContextOptions(max_tokens=200), memory=memory)
    assert type(builder).__module__ == "memorybank.context._async.builder"
    assert (
        type(CompactionService(memory=memory)).__module__ == "memorybank.context._async.compaction"
    )
    assert type(SessionManager(memory)).__module__ == "memorybank.context._async.sessions"
