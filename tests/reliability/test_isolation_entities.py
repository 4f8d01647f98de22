"""Isolation of entity consolidation: two users' (and a user's and the shared) entities
of one name are never merged, by any handle, on every store; bob's run reports nothing
of alice's and cannot undo hers."""

from __future__ import annotations

import pytest

from memorybank.errors import NotFound
from tests.reliability import _isolation
from tests.reliability._isolation import SECRET, World

world = _isolation.world  # the fixture: alice's world on every store


def test_same_named_entities_of_two_owners_are_never_merged(world: World) -> None:
    root = world.root
    name = f"Alice {SECRET}"
    bobs = world.bob.graph.add_entity(name.upper(), type="person")  # bob's, same alias key
    shared = root.graph.add_entity(f"alice {SECRET}!", type="person", user_id=None, agent_id="bot")
    other_agent = root.graph.add_entity(name + ".", type="person", user_id="alice", agent_id="x")
    twin = root.graph.add_entity(name + "!", type="person", user_id="alice", agent_id="bot")
    mine = world.bob.consolidate()
    assert mine.user_id == "bob" and mine.entity_changes == []
    shared_run = root.consolidate(user_id=None)
    assert shared_run.entity_changes == []
    alices = root.consolidate(user_id="alice")
    # alice's own twin merges into her entity; no one else's entity takes part
    assert [(c.entity_id, c.into) for c in alices.entity_changes] == [(twin.id, world.entity)]
    for entity_id, user, agent in (
        (world.entity, "alice", "bot"),
        (bobs.id, "bob", "bot"),
        (shared.id, None, "bot"),
        (other_agent.id, "alice", "x"),
    ):
        assert root.graph.get_entity(entity_id, user_id=user, agent_id=agent) is not None
    # bob cannot read nor undo a run over alice's entities
    with pytest.raises(NotFound):
        world.bob.consolidation.report(alices.run_id)
    with pytest.raises(NotFound):
        world.bob.consolidation.undo(alices.run_id)
