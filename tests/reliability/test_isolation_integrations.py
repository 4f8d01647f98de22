"""Isolation through the framework adapters (``memorybank.integrations``), on every store.

Each adapter is built on a scoped handle and holds no scope logic of its own, so
bob's adapter, given alice's ids and names, learns nothing of hers and changes
nothing: her threads raise ``ThreadForbidden`` (fail closed) or read as absent,
and alice's world stays intact.
"""

from __future__ import annotations

import pytest

from memorybank import ThreadForbidden
from tests.reliability import _isolation
from tests.reliability._isolation import SECRET, World, alice_intact

world = _isolation.world  # the fixture: alice's world on every store


def test_pydantic_ai_history_of_bob_never_reads_alices(world: World) -> None:
    pytest.importorskip("pydantic_ai")
    from pydantic_ai.messages import ModelRequest, UserPromptPart

    from memorybank.integrations.pydantic_ai import MemorybankHistory

    alice = MemorybankHistory(world.root.scoped(user_id="alice", agent_id="bot"), "pai-alice")
    alice.save([ModelRequest(parts=[UserPromptPart(f"my pin is {SECRET}")])])
    for thread in ("pai-alice", world.thread, world.session):
        bob = MemorybankHistory(world.bob, thread)
        for verb in (bob.load, bob.clear, lambda b=bob: b.save([])):
            with pytest.raises(ThreadForbidden):
                verb()
    assert MemorybankHistory(world.bob, "pai-new").load() == []
    other = MemorybankHistory(world.root.tenant("elsewhere").scoped(user_id="alice"), "pai-alice")
    assert other.load() == []
    assert SECRET in repr(alice.load())
    alice_intact(world)


def test_llama_index_chat_store_of_bob_never_reads_alices(world: World) -> None:
    pytest.importorskip("llama_index.core")
    from llama_index.core.llms import ChatMessage

    from memorybank.integrations.llama_index import MemorybankChatStore

    alice = MemorybankChatStore(world.root.scoped(user_id="alice", agent_id="bot"))
    alice.set_messages("li-alice", [ChatMessage(role="user", content=f"my pin is {SECRET}")])
    bob = MemorybankChatStore(world.bob)
    for key in ("li-alice", world.thread, world.session):
        for verb in (
            bob.get_messages,
            bob.delete_messages,
            bob.delete_last_message,
            lambda k: bob.delete_message(k, 0),
            lambda k: bob.set_messages(k, []),
            lambda k: bob.add_message(k, ChatMessage(role="user", content="mine")),
        ):
            with pytest.raises(ThreadForbidden):
                verb(key)
    assert bob.get_keys() == []
    assert bob.get_messages("li-new") == []
    other = MemorybankChatStore(world.root.tenant("elsewhere").scoped(user_id="alice"))
    assert other.get_messages("li-alice") == [] and other.get_keys() == []
    assert SECRET in repr(alice.get_messages("li-alice"))
    alice_intact(world)


def test_adk_services_of_bob_never_read_alices(world: World) -> None:
    pytest.importorskip("google.adk")
    import asyncio

    from google.adk.events.event import Event
    from google.adk.events.event_actions import EventActions
    from google.adk.sessions.session import Session
    from google.genai import types

    from memorybank import InvalidInput
    from memorybank.integrations.adk import MemorybankMemoryService, MemorybankSessionService

    said = types.Content(role="user", parts=[types.Part(text=f"my pin is {SECRET}")])
    handle = world.root.scoped(user_id="alice", agent_id="bot")
    alice, alice_memory = MemorybankSessionService(handle), MemorybankMemoryService(handle)
    bob, bob_memory = MemorybankSessionService(world.bob), MemorybankMemoryService(world.bob)

    async def scenario() -> None:
        session = await alice.create_session(
            app_name="app", user_id="alice", session_id="s1", state={"user:pin": SECRET}
        )
        event = Event(
            author="user", content=said, actions=EventActions(state_delta={"pin": SECRET})
        )
        await alice.append_event(session, event)
        await alice_memory.add_session_to_memory(session)
        # bob's services naming alice are refused by his handle's scope, before any read
        forged = Session(id="s1", app_name="app", user_id="alice")
        for call in (
            bob.get_session(app_name="app", user_id="alice", session_id="s1"),
            bob.list_sessions(app_name="app", user_id="alice"),
            bob.get_user_state(app_name="app", user_id="alice"),
            bob.delete_session(app_name="app", user_id="alice", session_id="s1"),
            bob.create_session(app_name="app", user_id="alice", session_id="s2"),
            bob.append_event(forged, Event(author="user", content=said)),
            bob_memory.search_memory(app_name="app", user_id="alice", query=SECRET),
            bob_memory.add_session_to_memory(forged),
        ):
            with pytest.raises(InvalidInput):
                await call
        # as himself, he finds nothing of hers: her session id names his own (absent) one
        assert await bob.get_session(app_name="app", user_id="bob", session_id="s1") is None
        assert (await bob.list_sessions(app_name="app")).sessions == []
        assert await bob.get_user_state(app_name="app", user_id="bob") == {}
        found = await bob_memory.search_memory(app_name="app", user_id="bob", query=SECRET)
        assert found.memories == []
        other = MemorybankSessionService(world.root.tenant("elsewhere").scoped(user_id="alice"))
        assert await other.get_session(app_name="app", user_id="alice", session_id="s1") is None
        mine = await alice.get_session(app_name="app", user_id="alice", session_id="s1")
        assert mine is not None and mine.state == {"user:pin": SECRET, "pin": SECRET}
        assert len(mine.events) == 1
        hits = await alice_memory.search_memory(app_name="app", user_id="alice", query=SECRET)
        assert len(hits.memories) == 1

    asyncio.run(scenario())
    alice_intact(world)


def test_autogen_memory_and_context_of_bob_never_read_alices(world: World) -> None:
    pytest.importorskip("autogen_core")
    import asyncio

    from autogen_core.memory import MemoryContent
    from autogen_core.models import UserMessage

    from memorybank.integrations.autogen import MemorybankChatCompletionContext, MemorybankMemory

    async def run() -> None:
        alice = MemorybankMemory(world.root.scoped(user_id="alice", agent_id="bot"))
        await alice.add(MemoryContent(content=f"my pin is {SECRET}", mime_type="text/plain"))
        bob = MemorybankMemory(world.bob)
        for query in (SECRET, "pin", "alice notes", ""):
            assert (await bob.query(query)).results == []
        await bob.clear()
        mine = MemorybankChatCompletionContext(world.bob, "ag-bob")
        await mine.add_message(UserMessage(content="mine", source="bob"))
        for thread in (world.thread, world.session):
            context = MemorybankChatCompletionContext(world.bob, thread)
            message = UserMessage(content="mine", source="bob")
            for verb in (
                context.get_messages,
                context.clear,
                context.save_state,
                lambda c=context, m=message: c.add_message(m),
            ):
                with pytest.raises(ThreadForbidden):
                    await verb()
        other = MemorybankMemory(world.root.tenant("elsewhere").scoped(user_id="alice"))
        assert (await other.query(SECRET)).results == []
        assert SECRET in repr((await alice.query("")).results)

    asyncio.run(run())
    alice_intact(world)


def test_claude_memory_tool_of_bob_never_reads_alices(world: World) -> None:
    pytest.importorskip("anthropic")
    from anthropic.lib.tools._beta_functions import ToolError

    from memorybank.integrations.anthropic import MemorybankMemoryTool

    alice = MemorybankMemoryTool(world.root.scoped(user_id="alice", agent_id="bot"))
    alice.call({"command": "create", "path": "/memories/pin.md", "file_text": f"pin {SECRET}"})
    bob = MemorybankMemoryTool(world.bob)
    assert SECRET not in bob.call({"command": "view", "path": "/memories"})
    assert "pin.md" not in bob.call({"command": "view", "path": "/memories"})
    for call in (
        {"command": "view", "path": "/memories/pin.md"},
        {"command": "str_replace", "path": "/memories/pin.md", "old_str": "pin", "new_str": "x"},
        {"command": "insert", "path": "/memories/pin.md", "insert_line": 0, "insert_text": "x"},
        {"command": "delete", "path": "/memories/pin.md"},
        {"command": "rename", "old_path": "/memories/pin.md", "new_path": "/memories/b.md"},
    ):
        with pytest.raises(ToolError, match="does not exist"):
            bob.call(call)
    assert bob.history("/memories/pin.md") == []
    bob.call({"command": "create", "path": "/memories/pin.md", "file_text": "bob's own"})
    bob.clear_all_memory()
    for stranger in (
        world.root,  # the unscoped handle: shared files only
        world.root.scoped(user_id="alice"),  # alice with no agent: another /memories
        world.root.tenant("elsewhere").scoped(user_id="alice", agent_id="bot"),
    ):
        assert MemorybankMemoryTool(stranger).contents() == {}
    assert alice.contents() == {"/memories/pin.md": f"pin {SECRET}"}
    assert [v.op for v in alice.history("/memories/pin.md")] == ["create"]
    alice_intact(world)
