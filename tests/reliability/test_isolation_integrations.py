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
