"""Facts, core facts and sessions."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path

import pytest

from memorybank import (
    AsyncCoreFacts,
    AsyncMemory,
    CompactionService,
    ConfigurationError,
    CoreFacts,
    Fact,
    InvalidInput,
    NotFound,
    SessionManager,
)

from .conftest import BagOfWords, StepClock, Words, fill, new_id

# -- facts -----------------------------------------------------------------------------


async def test_add_get_update_delete(memory: AsyncMemory) -> None:
    fact = await memory.facts.add(
        agent_id="a",
        content="likes tea",
        category="pref",
        confidence=0.8,
        source="user",
        user_id="alice",
        metadata={"k": 1},
    )
    assert isinstance(fact, Fact) and fact.version == 1
    assert await memory.facts.get(fact.id) == fact
    fixed = await memory.facts.update(fact.id, content="likes green tea")
    assert fixed.version == 1 and fixed.content == "likes green tea"
    assert await memory.facts.history(fact.id) == [fixed]  # a correction keeps no history
    assert await memory.facts.delete(fact.id) is True
    assert await memory.facts.get(fact.id) is None
    assert await memory.facts.delete(fact.id) is False
    with pytest.raises(NotFound):
        await memory.facts.update(fact.id, content="x")
    with pytest.raises(InvalidInput):
        await memory.facts.add(agent_id="a", content="x", confidence=2)


async def test_supersession_keeps_history_but_returns_only_the_new_value(
    memory: AsyncMemory,
) -> None:
    fact = await memory.facts.add(agent_id="a", user_id="alice", content="lives in Rome")
    second = await memory.facts.update(fact.id, content="lives in Paris", supersede=True)
    third = await memory.facts.supersede(fact.id, "lives in Berlin")
    assert (second.version, third.version) == (2, 3)
    assert [f.content for f in await memory.facts.list(agent_id="a", user_id="alice")] == [
        "lives in Berlin"
    ]
    history = await memory.facts.history(fact.id)
    assert [(f.content, f.version) for f in history] == [
        ("lives in Rome", 1),
        ("lives in Paris", 2),
        ("lives in Berlin", 3),
    ]
    assert await memory.facts.search("Rome", agent_id="a", user_id="alice") == []


async def test_expired_facts_are_never_returned(memory: AsyncMemory) -> None:
    now = memory._core.now()
    gone = await memory.facts.add(agent_id="a", content="old news", expires_at=now)
    live = await memory.facts.add(
        agent_id="a", content="fresh news", expires_at=now + timedelta(days=1)
    )
    assert await memory.facts.get(gone.id) is None
    assert [f.id for f in await memory.facts.list()] == [live.id]
    assert [f.id for f in await memory.facts.list(include_expired=True)] == [gone.id, live.id]
    assert [f.id for f in await memory.facts.search("news")] == [live.id]


async def test_scoping_user_and_agent(memory: AsyncMemory) -> None:
    await memory.facts.add(agent_id="a", user_id="alice", content="alice fact")
    await memory.facts.add(agent_id="a", user_id="bob", content="bob fact")
    await memory.facts.add(agent_id="a", content="shared fact")
    await memory.facts.add(agent_id="b", content="agent b fact")
    alice = await memory.facts.list(agent_id="a", user_id="alice")
    assert sorted(f.content for f in alice) == ["alice fact", "shared fact"]
    found = await memory.facts.search("fact", agent_id="a", user_id="bob", k=10)
    assert sorted(f.content for f in found) == ["bob fact", "shared fact"]
    assert len(await memory.facts.list()) == 4


async def test_semantic_search_with_an_embedder(smart: AsyncMemory) -> None:
    await smart.facts.add(agent_id="a", content="the user prefers dark mode")
    await smart.facts.add(agent_id="a", content="the user has a cat named Tom")
    found = await smart.facts.search("cat named Tom", agent_id="a", user_id="u", k=1)
    assert [f.content for f in found] == ["the user has a cat named Tom"]


async def test_provenance_and_cascading_delete(memory: AsyncMemory) -> None:
    tid = (await memory.threads.create(thread_id=new_id())).id
    entries = await fill(memory, tid, ["I am vegan", "noted", "I live in Oslo"])
    vegan = await memory.facts.add(agent_id="a", content="vegan", source_entries=[entries[0].id])
    oslo = await memory.facts.add(
        agent_id="a", content="lives in Oslo", source_entries=[entries[2].id, entries[0].id]
    )
    assert vegan.source_entries == (entries[0].id,)
    assert (await memory.facts.get(oslo.id)) is not None
    await memory.entries.delete(tid, entries[1].id, cascade_facts=True)  # no facts from it
    assert len(await memory.facts.list()) == 2
    await memory.entries.delete(tid, entries[2].id)  # no cascade
    assert len(await memory.facts.list()) == 2
    await memory.entries.delete(tid, entries[0].id, cascade_facts=True)
    assert await memory.facts.list() == []


async def test_facts_are_forgotten_with_their_user(memory: AsyncMemory) -> None:
    await memory.facts.add(agent_id="a", user_id="alice", content="alice fact")
    await memory.facts.add(agent_id="a", content="shared")
    await memory.forget_user("alice")
    assert [f.content for f in await memory.facts.list()] == ["shared"]


# -- core facts ------------------------------------------------------------------------


async def test_core_facts_on_any_store(memory: AsyncMemory) -> None:
    core = AsyncCoreFacts(memory=memory, user_id="alice")
    assert await core.format_for_prompt() == ""
    await core.set("timezone", "UTC")
    await core.set("name", "Alice")
    await core.set("timezone", "Europe/Berlin")
    assert await core.get("timezone") == "Europe/Berlin"
    assert await core.format_for_prompt() == "name: Alice\ntimezone: Europe/Berlin"
    history = await core.history("timezone")
    assert [value for value, _ in history] == ["UTC", "Europe/Berlin"]
    assert history[0][1] < history[1][1]
    assert await core.delete("timezone") is True
    assert await core.get("timezone") is None
    assert [value for value, _ in await core.history("timezone")] == ["UTC", "Europe/Berlin"]
    assert await AsyncCoreFacts(memory=memory, user_id="bob").format_for_prompt() == ""
    assert await AsyncCoreFacts(memory=memory).get("name") is None
    with pytest.raises(ConfigurationError, match="CoreFacts takes a Memory"):
        CoreFacts(memory=memory)  # type: ignore[arg-type]


def test_core_facts_on_the_sqlite_file(tmp_path: Path) -> None:
    path = tmp_path / "core.db"
    core = CoreFacts(path)
    core.set("name", "Alice")
    core.close()
    again = CoreFacts(str(path))
    assert again.get("name") == "Alice"
    assert again.history("name")[0][0] == "Alice"
    again.close()
    with pytest.raises(ConfigurationError):
        CoreFacts(path, memory=object())  # type: ignore[arg-type]


# -- sessions --------------------------------------------------------------------------


async def test_get_or_create_update_archive_reactivate(memory: AsyncMemory) -> None:
    sessions = SessionManager(memory)
    session = await sessions.get_or_create(
        user_id="alice", channel_type="telegram", channel_id="chat-1", agent_id="a"
    )
    assert session.id == "session_telegram_chat-1_a_alice"
    assert (session.status, session.message_count, session.channel_id) == ("active", 0, "chat-1")
    again = await sessions.get_or_create(
        user_id="alice", channel_type="telegram", channel_id="chat-1", agent_id="a"
    )
    assert again.id == session.id
    updated = await sessions.update(
        session.id,
        config={"temperature": 0.2},
        metadata={"topic": "orders", "status": "hacked", "message_count": 99},
    )
    assert updated.config == {"temperature": 0.2}
    assert updated.metadata == {"topic": "orders"}
    assert updated.status == "active" and updated.message_count == 0
    archived = await sessions.archive(session.id)
    assert archived.status == "archived"
    revived = await sessions.get_or_create(
        user_id="alice", channel_type="telegram", channel_id="chat-1", agent_id="a"
    )
    assert revived.status == "active" and revived.config == {"temperature": 0.2}


async def test_message_count_is_exact_under_concurrent_writers(memory: AsyncMemory) -> None:
    sessions = SessionManager(memory)
    session = await sessions.get_or_create(
        user_id="u1", channel_type="web", channel_id="c", agent_id="a"
    )
    await asyncio.gather(
        *(memory.entries.add(session.id, {"role": "user", "content": f"m{i}"}) for i in range(25))
    )
    got = await sessions.get(session.id)
    assert got is not None and got.message_count == 25


async def test_list_newest_activity_first_with_filters(memory: AsyncMemory) -> None:
    sessions = SessionManager(memory)
    first = await sessions.get_or_create(
        user_id="u1", channel_type="web", channel_id="1", agent_id="a"
    )
    second = await sessions.get_or_create(
        user_id="u2", channel_type="web", channel_id="2", agent_id="a"
    )
    third = await sessions.get_or_create(
        user_id="u3", channel_type="sms", channel_id="3", agent_id="a"
    )
    await memory.threads.create(thread_id=new_id())  # not a session
    await memory.entries.add(first.id, {"role": "user", "content": "hi"})  # most recent activity
    await sessions.update(second.id, status="paused")
    listed = await sessions.list()
    assert [s.id for s in listed] == [second.id, first.id, third.id]
    assert [s.id for s in await sessions.list(limit=2)] == [second.id, first.id]
    assert [s.id for s in await sessions.list(status="paused")] == [second.id]
    await sessions.archive(third.id)
    assert [s.id for s in await sessions.list(status="archived")] == [third.id]
    assert [s.id for s in await sessions.list(status="active")] == [first.id]
    with pytest.raises(InvalidInput):
        await sessions.list(status="gone")


async def test_compact_needs_a_compaction_service(memory: AsyncMemory) -> None:
    session = await SessionManager(memory).get_or_create(
        user_id="u", channel_type="web", channel_id="c", agent_id="a"
    )
    with pytest.raises(ConfigurationError):
        await SessionManager(memory).compact(session.id, threshold=0, keep_recent=1)
    await fill(memory, session.id, ["a b c"] * 4)
    service = CompactionService(memory=memory, summarize=lambda messages, options: "sum")
    result = await SessionManager(memory, service).compact(session.id, threshold=0, keep_recent=1)
    assert (result.original_messages, result.compacted_messages) == (4, 2)


async def test_update_of_a_missing_session(memory: AsyncMemory) -> None:
    with pytest.raises(NotFound):
        await SessionManager(memory).update("session_web_nobody", status="paused")
    assert await SessionManager(memory).get("session_web_nobody") is None


_ = (BagOfWords, StepClock, Words)
