"""``ContextBuilder``, ``CompactionService`` and ``SessionManager`` make instances of
their own class: the synchronous subclass for a ``Memory``, the awaitable one for an
``AsyncMemory``, each working as before. ``CoreFacts`` and ``AsyncCoreFacts`` are plain
classes, one for each."""

from __future__ import annotations

from pathlib import Path

import pytest

from memorybank import (
    AsyncCoreFacts,
    AsyncMemory,
    CompactionService,
    ConfigurationError,
    ContextBuilder,
    ContextOptions,
    CoreFacts,
    Memory,
    SessionManager,
)
from memorybank.context._async.builder import AsyncContextBuilder
from memorybank.context._async.compaction import AsyncCompactionService
from memorybank.context._async.sessions import AsyncSessionManager
from memorybank.context._sync.builder import ContextBuilder as SyncContextBuilder
from memorybank.context._sync.compaction import CompactionService as SyncCompactionService
from memorybank.context._sync.sessions import SessionManager as SyncSessionManager
from memorybank.memory._sync.core_facts import CoreFacts as SyncCoreFacts

OPTIONS = ContextOptions(max_tokens=200, include_facts=True)


def test_a_memory_gets_the_synchronous_helpers_and_they_work(tmp_path: Path) -> None:
    with Memory(f"sqlite:///{tmp_path}/m.db") as memory:
        builder = ContextBuilder(OPTIONS, memory=memory)
        compaction = CompactionService(memory=memory, summarize=lambda m, o: "short")
        sessions = SessionManager(memory, compaction)
        core = CoreFacts(memory=memory, user_id="ana")
        assert type(builder) is SyncContextBuilder and isinstance(builder, ContextBuilder)
        assert type(compaction) is SyncCompactionService
        assert isinstance(compaction, CompactionService)
        assert type(sessions) is SyncSessionManager and isinstance(sessions, SessionManager)
        assert type(core) is SyncCoreFacts and isinstance(core, CoreFacts)

        session = sessions.get_or_create(
            channel_type="web", channel_id="c1", user_id="ana", agent_id="atlas"
        )
        memory.entries.add(session.id, {"role": "user", "content": "I live in Lisbon"})
        core.set("city", "Lisbon")
        assert core.get("city") == "Lisbon"
        built = builder.build(session.id, agent_id="atlas", user_id="ana")
        assert [m["content"] for m in built.messages] == ["I live in Lisbon"]


async def test_an_async_memory_gets_the_awaitable_helpers_and_they_work(tmp_path: Path) -> None:
    async with AsyncMemory(f"sqlite:///{tmp_path}/m.db") as memory:
        builder = ContextBuilder(OPTIONS, memory)
        compaction = CompactionService(memory=memory)
        sessions = SessionManager(memory=memory, compaction=compaction)
        core = AsyncCoreFacts(None, memory, user_id="ana")
        assert type(builder) is AsyncContextBuilder and isinstance(builder, ContextBuilder)
        assert type(compaction) is AsyncCompactionService
        assert isinstance(compaction, CompactionService)
        assert type(sessions) is AsyncSessionManager and isinstance(sessions, SessionManager)
        assert type(core) is AsyncCoreFacts

        session = await sessions.get_or_create(
            channel_type="web", channel_id="c1", user_id="ana", agent_id="atlas"
        )
        await memory.entries.add(session.id, {"role": "user", "content": "I live in Porto"})
        await core.set("city", "Porto")
        assert await core.get("city") == "Porto"
        built = await builder.build(session.id, agent_id="atlas", user_id="ana")
        assert [m["content"] for m in built.messages] == ["I live in Porto"]


def test_core_facts_without_a_memory_open_their_own_sqlite_file(tmp_path: Path) -> None:
    core = CoreFacts(tmp_path / "core.db", user_id="ana")
    try:
        assert type(core) is SyncCoreFacts and isinstance(core, CoreFacts)
        core.set("tea", "green")
        assert core.get("tea") == "green"
    finally:
        core.close()


def test_the_subclasses_are_made_directly_too(tmp_path: Path) -> None:
    with Memory(f"sqlite:///{tmp_path}/m.db") as memory:
        builder = SyncContextBuilder(OPTIONS, memory)
        assert type(builder) is SyncContextBuilder and isinstance(builder, ContextBuilder)


@pytest.mark.parametrize(
    "make",
    [
        lambda: ContextBuilder(OPTIONS, memory=object()),
        lambda: CompactionService(memory="sqlite:///x.db"),
        lambda: SessionManager(None),
        lambda: CoreFacts(memory=object()),  # type: ignore[arg-type]
        lambda: AsyncCoreFacts(memory=object()),  # type: ignore[arg-type]
    ],
    ids=["ContextBuilder", "CompactionService", "SessionManager", "CoreFacts", "AsyncCoreFacts"],
)
def test_anything_but_a_memory_is_refused(make: object) -> None:
    with pytest.raises(ConfigurationError, match=r"memory must be a memorybank\.(Async)?Memory"):
        make()  # type: ignore[operator]


def test_each_core_facts_class_takes_its_own_memory(tmp_path: Path) -> None:
    with Memory(f"sqlite:///{tmp_path}/m.db") as memory:
        with pytest.raises(ConfigurationError, match="AsyncCoreFacts an AsyncMemory"):
            AsyncCoreFacts(memory=memory)  # type: ignore[arg-type]
