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
