"""Erasure and scope on every store: ``forget_user`` takes a user's working memory too."""

from __future__ import annotations

from pathlib import Path

import pytest

from memorybank import Memory
from tests.all_stores import STORE_KINDS, open_store


@pytest.mark.parametrize("kind", STORE_KINDS)
def test_forget_user_erases_her_working_memory(kind: str, tmp_path: Path) -> None:
    with open_store(kind, tmp_path) as store:
        memory = Memory(store, tenant_id="erase")
        alice = memory.scoped(user_id="alice", agent_id="atlas")
        alice.working("run-1").set("plan", {"steps": [1, 2]})
        memory.working("run-2", user_id="alice").set("k", "v")
        memory.scoped(user_id="bob", agent_id="atlas").working("run-1").set("plan", "bob's")
        memory.working("run-1").set("root", True)
        assert memory.forget_user("alice") > 0
        assert memory.scoped(user_id="alice", agent_id="atlas").working("run-1").get("plan") is None
        assert memory.working("run-2", user_id="alice").get("k") is None
        assert memory.scoped(user_id="bob", agent_id="atlas").working("run-1").get("plan") == (
            "bob's"
        )
        assert memory.working("run-1").get("root") is True
        assert len(store.working_runs("erase") or []) == 2
        assert store.record_list("erase", "working_owner", user_id="alice") == []


@pytest.mark.parametrize("kind", STORE_KINDS)
def test_a_cascade_deletes_only_what_the_caller_may_change(kind: str, tmp_path: Path) -> None:
    """alice deletes her entry with cascade_facts: her fact and the graph edge derived from it
    go; bob's fact and bob's relation that cite the same entry stay."""
    with open_store(kind, tmp_path) as store:
        memory = Memory(store, tenant_id="cascade")
        alice = memory.scoped(user_id="alice")
        thread = alice.threads.create()
        entry = alice.entries.add(thread.id, {"role": "user", "content": "I moved to Porto"})
        hers = memory.facts.add(
            content="alice lives in Porto", user_id="alice", source_entries=[entry.id]
        )
        his = memory.facts.add(
            content="bob heard alice moved", user_id="bob", source_entries=[entry.id]
        )
        bob_graph = memory.scoped(user_id="bob").graph
        a = bob_graph.add_entity("Alice", type="person")
        p = bob_graph.add_entity("Porto", type="location")
        relation = bob_graph.add_relation(a.id, "lives_in", p.id, provenance=[entry.id])
        assert alice.entries.delete(thread.id, entry.id, cascade_facts=True)
        assert memory.facts.get(hers.id) is None
        assert memory.facts.get(his.id) is not None
        assert [r.id for r in bob_graph.relations(a.id, direction="out")] == [relation.id]


def test_cortex_thread_ids_never_collide() -> None:
    """Distinct (agent, user) pairs map to distinct threads, by construction over the
    characters the readable form uses; plain names keep their old ids."""
    import itertools

    from memorybank.server.routes.cortex import agent_thread_id

    assert agent_thread_id("atlas") == "agent:atlas"
    assert agent_thread_id("atlas", "ana") == "agent:atlas:user:ana"
    assert agent_thread_id("a:user:b", "c") != agent_thread_id("a", "b:user:c")
    pieces = ["a", "b", ":", "user", "%", "%3A", "%25", ":user:", "agent:"]
    names = {"".join(p) for n in (1, 2, 3) for p in itertools.product(pieces, repeat=n)}
    seen: dict[str, tuple[str, str | None]] = {}
    for name in names:
        for user in [None, *sorted(names)[:120]]:
            key = agent_thread_id(name, user)
            assert seen.setdefault(key, (name, user)) == (name, user), key
