"""The knowledge graph's conformance suite: the same answers on every store.

Use it like ``AsyncContract``::

    from memorybank.testing import AsyncGraphContract

    class TestMyStoreGraph(AsyncGraphContract):
        @pytest.fixture
        async def store(self):
            ...

``SyncGraphContract`` (generated from this file) runs the same through
``Memory``. Every test writes in a fresh tenant, so a store may be shared.
"""

from __future__ import annotations

import functools
import itertools
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import pytest

from memorybank.errors import Conflict, InvalidInput, NotFound
from memorybank.graph import DEFAULT_FUNCTIONAL_TYPES, Entity, Relation
from memorybank.graph._async import AsyncGraph
from memorybank.memory._async.memory import AsyncMemory
from memorybank.runtime.concurrency import arun_all
from memorybank.stores.contract._async.store import AsyncStore
from memorybank.testing._async.contract._base import _StepClock
from memorybank.testing._embedder import BrokenEmbedder, SynonymEmbedder

__all__ = ["AsyncGraphContract"]

JAN = datetime(2020, 1, 1, tzinfo=UTC)
JUN = datetime(2020, 6, 1, tzinfo=UTC)
DEC = datetime(2020, 12, 1, tzinfo=UTC)


#: Where the graph cases' clock starts (``_StepClock``: 1 ms a call).
START = datetime(2026, 1, 2, tzinfo=UTC)


def _names(entities: list[Entity]) -> list[str]:
    return [e.name for e in entities]


async def _entities(g: AsyncGraph, *names: str) -> list[Entity]:
    """Entities of these names added to ``g``, in order."""
    return [await g.add_entity(name) for name in names]


def _types(relations: list[Relation]) -> list[tuple[str, str, str]]:
    return [(r.source_id, r.type, r.target_id) for r in relations]


class AsyncGraphContract:
    """Graph behaviour every store must have. Subclasses provide the ``store`` fixture."""

    @pytest.fixture
    async def memory(self, store: AsyncStore) -> AsyncIterator[AsyncMemory]:
        root = AsyncMemory(store, clock=_StepClock(START))
        yield root.tenant(f"g-{uuid.uuid4().hex[:10]}")
        await root.close()

    # -- entities ----------------------------------------------------------------------

    async def test_add_and_get_entity_round_trips_every_field(self, memory: AsyncMemory) -> None:
        g = memory.graph
        alice = await g.add_entity(
            "Alice  Smith",
            type="person",
            aliases=["Ali"],
            observations=["likes tea"],
            properties={"age": 30, "tags": ["a"]},
            confidence=0.5,
        )
        got = await g.get_entity(alice.id)
        assert got == alice
        assert (got.name, got.type, got.aliases, got.observations) == (
            "Alice  Smith",
            "person",
            ("Ali",),
            ("likes tea",),
        )
        assert got.properties == {"age": 30, "tags": ["a"]}
        assert (got.agent_id, got.user_id, got.source, got.confidence) == (None, None, "user", 0.5)
        assert got.tenant_id == memory.tenant_id
        assert await g.get_entity("missing") is None

    async def test_same_normalised_name_merges_instead_of_duplicating(
        self, memory: AsyncMemory
    ) -> None:
        g = memory.graph
        first = await g.add_entity(
            "Alice Smith", type="person", observations=["likes tea"], properties={"a": 1}
        )
        first = await g.update_entity(first.id, confidence=0.5)
        again = await g.add_entity(
            "  alice   SMITH ",
            type="person",
            aliases=["Al"],
            observations=["likes tea", "plays chess"],
            properties={"b": 2},
            confidence=0.5,
        )
        assert again.id == first.id
        assert again.name == "Alice Smith"
        assert again.aliases == ("Al",)  # the new spelling is the same name: not an alias
        assert again.observations == ("likes tea", "plays chess")
        assert again.properties == {"a": 1, "b": 2}
        assert again.confidence == 0.75
        other_type = await g.add_entity("Alice Smith", type="concept")
        assert other_type.id != first.id
        private = await g.add_entity("Alice Smith", type="person", user_id="u1")
        assert private.id != first.id and private.user_id == "u1"
        assert len(await g.find_entities()) == 2  # the private one is not seen unscoped

    async def test_long_and_unusual_names_round_trip(self, memory: AsyncMemory) -> None:
        g = memory.graph
        long_name = "Ünïcode 𝄞 " * 90  # 990 characters, 4-byte ones among them
        e = await g.add_entity(long_name, aliases=["x" * 1000], type="t" * 1000)
        assert (await g.get_entity(e.id)) == e
        assert [x.id for x in await g.find_entities(long_name.upper())] == [e.id]
        assert [x.id for x in await g.find_entities("X" * 1000)] == [e.id]
        again = await g.add_entity(" " + long_name.lower(), type="t" * 1000)
        assert again.id == e.id
        other = await g.add_entity("x ")
        rel = await g.add_relation(e.id, "r" * 1000, other.id, label="l" * 1000)
        assert [r.id for r in await g.relations(other.id)] == [rel.id]

    async def test_concurrent_same_relation_is_one_relation(self, memory: AsyncMemory) -> None:
        g = memory.graph
        a, b = await _entities(g, "A", "B")

        async def add(i: int) -> Relation:
            return await g.add_relation(a.id, "knows", b.id, provenance=[f"e{i}"])

        made = await arun_all([functools.partial(add, i) for i in range(6)])
        assert len({r.id for r in made}) == 1
        (stored,) = await g.relations(a.id)
        assert stored.weight == 6.0
        assert sorted(stored.provenance) == [f"e{i}" for i in range(6)]

    async def test_concurrent_adds_of_one_name_make_one_entity(self, memory: AsyncMemory) -> None:
        g = memory.graph

        async def add(i: int) -> Entity:
            return await g.add_entity("Paris", type="location", observations=[f"fact {i}"])

        made = await arun_all([functools.partial(add, i) for i in range(6)])
        assert len({e.id for e in made}) == 1
        stored = await g.get_entity(made[0].id)
        assert stored is not None
        assert sorted(stored.observations) == [f"fact {i}" for i in range(6)]
        assert len(await g.find_entities("paris")) == 1

    async def test_find_entities_by_name_alias_type_and_pages(self, memory: AsyncMemory) -> None:
        g = memory.graph
        alice = await g.add_entity("Alice", type="person", aliases=["Ally Cat"])
        bob = await g.add_entity("Bob Stone", type="person")
        acme = await g.add_entity("ACME corp", type="organization")
        assert _names(await g.find_entities("alice")) == ["Alice"]
        assert _names(await g.find_entities("ALLY  cat")) == ["Alice"]
        assert _names(await g.find_entities("stone")) == ["Bob Stone"]
        assert await g.find_entities("nobody") == []
        assert _names(await g.find_entities(types=["person"])) == ["Alice", "Bob Stone"]
        assert _names(await g.find_entities(types="organization")) == ["ACME corp"]
        page1 = await g.find_entities(limit=2)
        assert [e.id for e in page1] == [alice.id, bob.id]
        page2 = await g.find_entities(limit=2, cursor=page1[-1].id)
        assert [e.id for e in page2] == [acme.id]
        await g.update_entity(acme.id, confidence=0.2)
        assert _names(await g.find_entities(min_confidence=0.5)) == ["Alice", "Bob Stone"]

    async def test_search_entities_over_names_and_observations(self, memory: AsyncMemory) -> None:
        g = memory.graph
        await g.add_entity("Alice", type="person", observations=["enjoys mountain hiking"])
        await g.add_entity("Bob", type="person", observations=["collects stamps"])
        await g.add_entity("Carol", type="person", aliases=["hiking buddy"])
        found = await g.search_entities("hiking", k=5)
        assert sorted(_names(found)) == ["Alice", "Carol"]
        assert _names(await g.search_entities("Bob", k=5))[0] == "Bob"

    async def test_search_entities_is_semantic_with_an_embedder(
        self, store: AsyncStore, memory: AsyncMemory
    ) -> None:
        smart = AsyncMemory(store, clock=_StepClock(START), embedder=SynonymEmbedder())
        g = smart.tenant(memory.tenant_id).graph
        alice = await g.add_entity("Alice", type="person", observations=["drives an automobile"])
        await g.add_entity("Bob", type="person", observations=["grows roses"])
        assert await memory.graph.search_entities("car") == []  # no keyword in common
        assert _names(await g.search_entities("car", k=1)) == ["Alice"]
        await g.add_observations(alice.id, ["drinks chai"])
        assert _names(await g.search_entities("tea", k=1)) == ["Alice"]
        private = await g.add_entity("Carol", user_id="u", observations=["sells vehicles"])
        assert private.id not in [e.id for e in await g.search_entities("car", k=5)]

    async def test_a_vector_no_store_can_keep_writes_nothing(
        self, store: AsyncStore, memory: AsyncMemory
    ) -> None:
        broken = AsyncMemory(store, clock=_StepClock(START), embedder=BrokenEmbedder())
        g = broken.tenant(memory.tenant_id).graph
        with pytest.raises(InvalidInput) as caught:
            await g.add_entity("Zed", observations=["z"])
        assert caught.value.field == "embedding"
        assert await memory.graph.find_entities() == []
        kept = await memory.graph.add_entity("Kept")
        with pytest.raises(InvalidInput):
            await g.add_observations(kept.id, ["more"])
        assert await memory.graph.get_entity(kept.id) == kept

    async def test_observations_add_and_delete(self, memory: AsyncMemory) -> None:
        g = memory.graph
        e = await g.add_entity("Alice", observations=["a"])
        e = await g.add_observations(e.id, ["b", "a", "c"])
        assert e.observations == ("a", "b", "c")
        e = await g.delete_observations(e.id, ["a", "zzz"])
        assert e.observations == ("b", "c")
        assert (await g.get_entity(e.id)) == e
        with pytest.raises(NotFound):
            await g.add_observations("missing", ["x"])

    async def test_update_entity_renames_and_refuses_a_taken_name(
        self, memory: AsyncMemory
    ) -> None:
        g = memory.graph
        a = await g.add_entity("Alice", type="person")
        b = await g.add_entity("Bob", type="person")
        renamed = await g.update_entity(a.id, name="Alicia", aliases=["Alice"])
        assert renamed.name == "Alicia"
        assert _names(await g.find_entities("alicia")) == ["Alicia"]
        assert _names(await g.find_entities("alice")) == ["Alicia"]  # now an alias
        with pytest.raises(Conflict, match="merge_entities"):
            await g.update_entity(b.id, name="alicia")
        assert (await g.get_entity(b.id)) == b
        again = await g.add_entity("Alicia", type="person")
        assert again.id == a.id
        with pytest.raises(NotFound):
            await g.update_entity("missing", name="x")

    async def test_merge_entities_moves_relations_and_names(self, memory: AsyncMemory) -> None:
        g = memory.graph
        keep = await g.add_entity("Robert", type="person", observations=["tall"])
        dup = await g.add_entity("Bob", type="person", observations=["likes jazz"])
        acme = await g.add_entity("Acme", type="organization")
        paris = await g.add_entity("Paris", type="location")
        await g.add_relation(dup.id, "works_at", acme.id, provenance=["e1"])
        await g.add_relation(keep.id, "works_at", acme.id, provenance=["e2"])
        await g.add_relation(paris.id, "home_of", dup.id)
        merged = await g.merge_entities(keep.id, dup.id)
        assert merged.aliases == ("Bob",)
        assert merged.observations == ("tall", "likes jazz")
        assert await g.get_entity(dup.id) is None
        rels = await g.relations(keep.id)
        assert sorted(_types(rels)) == sorted(
            [(keep.id, "works_at", acme.id), (paris.id, "home_of", keep.id)]
        )
        works = next(r for r in rels if r.type == "works_at")
        assert set(works.provenance) == {"e1", "e2"} and works.weight == 2.0
        assert _names(await g.find_entities("bob")) == ["Robert"]

    async def test_delete_entity_cascades_to_its_relations(self, memory: AsyncMemory) -> None:
        g = memory.graph
        a, b, c = await _entities(g, "A", "B", "C")
        r1 = await g.add_relation(a.id, "knows", b.id)
        r2 = await g.add_relation(c.id, "knows", a.id)
        r3 = await g.add_relation(b.id, "knows", c.id)
        assert await g.delete_entity(a.id) is True
        assert await g.delete_entity(a.id) is False
        assert await g.get_entity(a.id) is None
        assert await g.get_relation(r1.id) is None and await g.get_relation(r2.id) is None
        assert await g.get_relation(r3.id) == r3
        assert await g.find_entities("a") == []
        again = await g.add_entity("A")
        assert again.id != a.id

    # -- relations ---------------------------------------------------------------------

    async def test_add_relation_and_read_by_direction(self, memory: AsyncMemory) -> None:
        g = memory.graph
        a, b, c = await _entities(g, "A", "B", "C")
        ab = await g.add_relation(a.id, "knows", b.id, weight=2.0, label="old friends")
        ca = await g.add_relation(c.id, "likes", a.id, properties={"since": 2019})
        assert await g.get_relation(ab.id) == ab
        assert (ab.weight, ab.label, ab.source, ab.valid_at, ab.invalid_at) == (
            2.0,
            "old friends",
            "user",
            None,
            None,
        )
        assert ab.created_at.tzinfo is not None and ab.expired_at is None
        assert [r.id for r in await g.relations(a.id)] == [ab.id, ca.id]
        assert [r.id for r in await g.relations(a.id, direction="out")] == [ab.id]
        assert [r.id for r in await g.relations(a.id, direction="in")] == [ca.id]
        assert [r.id for r in await g.relations(a.id, types=["likes"])] == [ca.id]
        assert [r.id for r in await g.relations(a.id, limit=1)] == [ab.id]
        assert (await g.relations(a.id, direction="in"))[0].properties == {"since": 2019}
        with pytest.raises(NotFound):
            await g.relations("missing")
        with pytest.raises(NotFound):
            await g.add_relation(a.id, "knows", "missing")

    async def test_same_relation_again_extends_provenance_and_weight(
        self, memory: AsyncMemory
    ) -> None:
        g = memory.graph
        a, b = await _entities(g, "A", "B")
        first = await g.add_relation(a.id, "knows", b.id, provenance=["e1"])
        again = await g.add_relation(a.id, "knows", b.id, provenance=["e2", "e1"], weight=0.5)
        assert again.id == first.id
        assert again.provenance == ("e1", "e2")
        assert again.weight == 1.5
        assert len(await g.relations(a.id)) == 1
        reverse = await g.add_relation(b.id, "knows", a.id)
        assert reverse.id != first.id

    async def test_bidirectional_relation_counts_both_ways(self, memory: AsyncMemory) -> None:
        g = memory.graph
        a, b = await _entities(g, "A", "B")
        rel = await g.add_relation(a.id, "married_to", b.id, bidirectional=True)
        assert [r.id for r in await g.relations(b.id, direction="out")] == [rel.id]
        assert _names(await g.neighbors(b.id, direction="out")) == ["A"]

    async def test_functional_type_closes_only_same_source_and_type(
        self, memory: AsyncMemory
    ) -> None:
        g = memory.graph
        assert g.functional_types == set(DEFAULT_FUNCTIONAL_TYPES)
        alice = await g.add_entity("Alice", type="person")
        bob = await g.add_entity("Bob", type="person")
        paris = await g.add_entity("Paris", type="location")
        berlin = await g.add_entity("Berlin", type="location")
        a_paris = await g.add_relation(alice.id, "lives_in", paris.id, valid_at=JAN)
        b_paris = await g.add_relation(bob.id, "lives_in", paris.id, valid_at=JAN)
        likes = await g.add_relation(alice.id, "likes", paris.id, valid_at=JAN)
        a_berlin = await g.add_relation(alice.id, "lives_in", berlin.id, valid_at=JUN)
        closed = await g.get_relation(a_paris.id)
        assert closed is not None
        assert closed.invalid_at == JUN and closed.expired_at is not None
        assert not closed.is_valid
        now = await g.relations(alice.id, direction="out")
        assert sorted(r.id for r in now) == sorted([likes.id, a_berlin.id])
        march = datetime(2020, 3, 1, tzinfo=UTC)
        before = await g.relations(alice.id, direction="out", as_of=march)
        assert sorted(r.id for r in before) == sorted([a_paris.id, likes.id])
        history = await g.relations(alice.id, direction="out", include_invalid=True)
        assert sorted(r.id for r in history) == sorted([a_paris.id, likes.id, a_berlin.id])
        assert (await g.get_relation(b_paris.id)) == b_paris  # another source: untouched
        assert [r.id for r in await g.relations(bob.id)] == [b_paris.id]

    async def test_functional_types_are_configurable(self, memory: AsyncMemory) -> None:
        g = memory.graph
        alice, x, y = await _entities(g, "Alice", "X", "Y")
        g.functional_types.discard("lives_in")
        try:
            await g.add_relation(alice.id, "lives_in", x.id)
            await g.add_relation(alice.id, "lives_in", y.id)
            assert len(await g.relations(alice.id)) == 2
            g.functional_types.add("owns")
            await g.add_relation(alice.id, "owns", x.id)
            await g.add_relation(alice.id, "owns", y.id)
            owns = await g.relations(alice.id, types="owns")
            assert [r.target_id for r in owns] == [y.id]
        finally:
            g.functional_types.add("lives_in")
            g.functional_types.discard("owns")

    async def test_a_past_value_learnt_late_does_not_close_the_current_one(
        self, memory: AsyncMemory
    ) -> None:
        g = memory.graph
        alice, berlin, paris = await _entities(g, "Alice", "Berlin", "Paris")
        now_rel = await g.add_relation(alice.id, "lives_in", berlin.id, valid_at=JUN)
        past = await g.add_relation(alice.id, "lives_in", paris.id, valid_at=JAN)
        assert past.invalid_at == JUN
        assert await g.get_relation(now_rel.id) == now_rel
        assert [r.id for r in await g.relations(alice.id)] == [now_rel.id]
        march = datetime(2020, 3, 1, tzinfo=UTC)
        assert [r.id for r in await g.relations(alice.id, as_of=march)] == [past.id]

    async def test_concurrent_functional_adds_leave_one_open(self, memory: AsyncMemory) -> None:
        g = memory.graph
        alice = await g.add_entity("Alice")
        cities = [await g.add_entity(f"City {i}") for i in range(5)]

        async def move(i: int) -> Relation:
            return await g.add_relation(alice.id, "lives_in", cities[i].id)

        await arun_all([functools.partial(move, i) for i in range(5)])
        assert len(await g.relations(alice.id)) == 1
        assert len(await g.relations(alice.id, include_invalid=True)) == 5

    async def test_invalidate_keeps_history_and_delete_removes(self, memory: AsyncMemory) -> None:
        g = memory.graph
        a, b = await _entities(g, "A", "B")
        rel = await g.add_relation(a.id, "knows", b.id, valid_at=JAN)
        gone = await g.invalidate_relation(rel.id, at=JUN)
        assert gone.invalid_at == JUN and gone.expired_at is not None
        assert await g.relations(a.id) == []
        assert [r.id for r in await g.relations(a.id, include_invalid=True)] == [rel.id]
        assert [r.id for r in await g.relations(a.id, as_of=datetime(2020, 2, 1, tzinfo=UTC))] == [
            rel.id
        ]
        assert await g.relations(a.id, as_of=DEC) == []
        assert await g.get_relation(rel.id) == gone
        assert await g.delete_relation(rel.id) is True
        assert await g.delete_relation(rel.id) is False
        assert await g.get_relation(rel.id) is None
        assert await g.relations(a.id, include_invalid=True) == []
        with pytest.raises(NotFound):
            await g.invalidate_relation(rel.id)

    async def test_update_relation(self, memory: AsyncMemory) -> None:
        g = memory.graph
        a, b = await _entities(g, "A", "B")
        rel = await g.add_relation(a.id, "knows", b.id)
        new = await g.update_relation(rel.id, weight=3.0, label="close", properties={"k": 1})
        assert (new.weight, new.label, new.properties) == (3.0, "close", {"k": 1})
        assert await g.get_relation(rel.id) == new
        with pytest.raises(NotFound):
            await g.update_relation("missing", weight=1.0)

    # -- traversal ---------------------------------------------------------------------

    async def _chain(self, memory: AsyncMemory, n: int) -> list[Entity]:
        nodes = [await memory.graph.add_entity(f"N{i}") for i in range(n)]
        for left, right in itertools.pairwise(nodes):
            await memory.graph.add_relation(left.id, "next", right.id)
        return nodes

    async def test_neighbors_by_depth_and_direction(self, memory: AsyncMemory) -> None:
        g = memory.graph
        n = await self._chain(memory, 4)
        assert _names(await g.neighbors(n[1].id)) == ["N0", "N2"]  # by the relations' age
        assert _names(await g.neighbors(n[1].id, direction="out")) == ["N2"]
        assert _names(await g.neighbors(n[1].id, direction="in")) == ["N0"]
        assert _names(await g.neighbors(n[0].id, depth=2)) == ["N1", "N2"]
        assert _names(await g.neighbors(n[0].id, depth=3, limit=2)) == ["N1", "N2"]
        assert _names(await g.neighbors(n[0].id, types=["other"])) == []
        heavy = await g.add_entity("Heavy")
        await g.add_relation(n[0].id, "next", heavy.id, weight=5.0)
        assert _names(await g.neighbors(n[0].id, min_weight=2.0)) == ["Heavy"]

    async def test_traverse_returns_a_bounded_subgraph(self, memory: AsyncMemory) -> None:
        g = memory.graph
        n = await self._chain(memory, 6)
        sub = await g.traverse([n[0].id], max_depth=2)
        assert _names(sub.entities) == ["N0", "N1", "N2"]
        assert len(sub.relations) == 2 and not sub.truncated
        full = await g.traverse(n[2].id, max_depth=10)
        assert _names(full.entities) == ["N2", "N1", "N3", "N0", "N4", "N5"]
        assert len(full.relations) == 5
        cut = await g.traverse([n[0].id], max_depth=10, max_nodes=3)
        assert _names(cut.entities) == ["N0", "N1", "N2"] and cut.truncated
        few = await g.traverse([n[0].id], max_depth=10, max_edges=2)
        assert len(few.relations) == 2 and few.truncated
        with pytest.raises(NotFound):
            await g.traverse(["missing"])

    async def test_traverse_keeps_edges_among_the_last_level(self, memory: AsyncMemory) -> None:
        g = memory.graph
        hub, a, b = await _entities(g, "Hub", "A", "B")
        await g.add_relation(hub.id, "has", a.id)
        await g.add_relation(hub.id, "has", b.id)
        ab = await g.add_relation(a.id, "knows", b.id)
        sub = await g.traverse([hub.id], max_depth=1)
        assert ab.id in {r.id for r in sub.relations}

    async def test_shortest_path_is_deterministic(self, memory: AsyncMemory) -> None:
        g = memory.graph
        a, b, c, d, e = [await g.add_entity(x) for x in "ABCDE"]
        await g.add_relation(a.id, "r", b.id, weight=1.0)
        await g.add_relation(b.id, "r", e.id, weight=1.0)
        await g.add_relation(a.id, "r", c.id, weight=4.0)
        await g.add_relation(c.id, "r", e.id, weight=4.0)  # same hops, cheaper: wins
        await g.add_relation(a.id, "r", d.id)
        path = await g.shortest_path(a.id, e.id)
        assert path is not None
        assert _names(path.entities) == ["A", "C", "E"] and path.hops == 2
        assert path.cost == 0.5
        direct = await g.add_relation(a.id, "r", e.id, weight=0.1)
        short = await g.shortest_path(a.id, e.id)
        assert short is not None and [r.id for r in short.relations] == [direct.id]
        assert await g.shortest_path(d.id, e.id, max_depth=1) is None
        assert await g.shortest_path(d.id, e.id, direction="out") is None
        same = await g.shortest_path(a.id, a.id)
        assert same is not None and same.hops == 0

    async def test_shortest_path_ties_break_on_ids(self, memory: AsyncMemory) -> None:
        g = memory.graph
        a, b, c, z = [await g.add_entity(x) for x in ("A", "B", "C", "Z")]
        first = await g.add_relation(a.id, "r", b.id)
        await g.add_relation(b.id, "r", z.id)
        await g.add_relation(a.id, "r", c.id)
        await g.add_relation(c.id, "r", z.id)
        path = await g.shortest_path(a.id, z.id)
        assert path is not None and path.relations[0].id == first.id  # lower (older) id

    # -- scope -------------------------------------------------------------------------

    async def test_private_nodes_are_never_reached_by_others(self, memory: AsyncMemory) -> None:
        g = memory.graph
        shared_a, shared_b = await _entities(g, "Shared A", "Shared B")
        secret = await g.add_entity("Secret", user_id="alice")
        beyond = await g.add_entity("Beyond")
        r1 = await g.add_relation(shared_a.id, "knows", secret.id, user_id="alice")
        await g.add_relation(secret.id, "knows", beyond.id, user_id="alice")
        shared_rel = await g.add_relation(shared_a.id, "knows", shared_b.id)
        assert r1.user_id == "alice"
        for user in ("bob", None):
            assert await g.get_entity(secret.id, user_id=user) is None
            assert await g.get_relation(r1.id, user_id=user) is None
            assert _names(await g.neighbors(shared_a.id, user_id=user, depth=3)) == ["Shared B"]
            sub = await g.traverse([shared_a.id], user_id=user)
            assert _names(sub.entities) == ["Shared A", "Shared B"]
            assert [r.id for r in sub.relations] == [shared_rel.id]
            assert not sub.truncated
            tight = await g.traverse([shared_a.id], user_id=user, max_nodes=2)
            assert not tight.truncated  # a hidden node must not show as "more"
            assert await g.shortest_path(shared_a.id, beyond.id, user_id=user) is None
            assert "Secret" not in _names(await g.find_entities(user_id=user))
            assert await g.find_entities("secret", user_id=user) == []
            assert await g.search_entities("secret", user_id=user) == []
            assert (await g.stats(user_id=user)).entities == 3
            with pytest.raises(NotFound) as missing:
                await g.relations(secret.id, user_id=user)
            with pytest.raises(NotFound) as absent:
                await g.relations("no-such-id", user_id=user)
            assert str(missing.value).replace(secret.id, "X") == str(absent.value).replace(
                "no-such-id", "X"
            )
            assert await g.delete_entity(secret.id, user_id=user) is False
            assert await g.delete_relation(r1.id, user_id=user) is False
            with pytest.raises(NotFound):
                await g.add_relation(shared_b.id, "knows", secret.id, user_id=user)
            with pytest.raises(NotFound):
                await g.invalidate_relation(r1.id, user_id=user)
        assert (await g.traverse([shared_a.id], user_id="alice", max_nodes=2)).truncated
        path = await g.shortest_path(shared_a.id, beyond.id, user_id="alice")
        assert path is not None and _names(path.entities) == ["Shared A", "Secret", "Beyond"]
        assert (await g.stats(user_id="alice")).entities == 4

    async def test_a_relation_touching_a_private_entity_is_private(
        self, memory: AsyncMemory
    ) -> None:
        alice = memory.scoped(user_id="alice")
        shared = await memory.graph.add_entity("Paris")
        mine = await alice.graph.add_entity("My flat")
        rel = await alice.graph.add_relation(mine.id, "located_in", shared.id)
        assert (mine.user_id, rel.user_id) == ("alice", "alice")
        assert await memory.graph.relations(shared.id) == []
        assert [r.id for r in await alice.graph.relations(shared.id)] == [rel.id]
        private_edge = await alice.graph.add_relation(shared.id, "near", shared.id)
        assert private_edge.user_id == "alice"
        assert await memory.graph.relations(shared.id) == []
        with pytest.raises(InvalidInput):
            await alice.graph.add_entity("x", user_id="bob")  # a scoped handle cannot widen

    async def test_agents_are_scoped_like_users(self, memory: AsyncMemory) -> None:
        g = memory.graph
        mine = await g.add_entity("Tool", agent_id="bot")
        assert await g.get_entity(mine.id) is None
        assert await g.get_entity(mine.id, agent_id="other") is None
        assert await g.get_entity(mine.id, agent_id="bot") == mine
        bot = memory.scoped(agent_id="bot")
        assert _names(await bot.graph.find_entities()) == ["Tool"]

    # -- inference -----------------------------------------------------------------------

    async def test_infer_transitive_colleagues_and_symmetry(self, memory: AsyncMemory) -> None:
        g = memory.graph
        room, house, town = await _entities(g, "Room", "House", "Town")
        r1 = await g.add_relation(room.id, "part_of", house.id)
        await g.add_relation(house.id, "part_of", town.id)
        alice = await g.add_entity("Alice", type="person")
        bob = await g.add_entity("Bob", type="person")
        acme = await g.add_entity("Acme", type="organization")
        await g.add_relation(alice.id, "works_at", acme.id)
        w2 = await g.add_relation(bob.id, "works_at", acme.id)
        await g.add_relation(alice.id, "knows", bob.id)
        made = await g.infer()
        assert sorted((r.type, r.source) for r in made) == [
            ("colleague_of", "inferred"),
            ("knows", "inferred"),
            ("part_of", "inferred"),
        ]
        transitive = next(r for r in made if r.type == "part_of")
        assert (transitive.source_id, transitive.target_id) == (room.id, town.id)
        assert len(transitive.support) == 2 and r1.id in transitive.support
        assert await g.infer() == []  # nothing new the second time
        assert [r.type for r in await g.relations(room.id)] == ["part_of"]
        assert len(await g.relations(room.id, include_inferred=True)) == 2
        assert _names(await g.neighbors(room.id, include_inferred=True)) == ["House", "Town"]
        colleague = next(r for r in made if r.type == "colleague_of")
        assert colleague.bidirectional
        await g.invalidate_relation(r1.id)
        assert await g.get_relation(transitive.id) is None
        await g.delete_relation(w2.id)
        assert await g.get_relation(colleague.id) is None
        knows = next(r for r in made if r.type == "knows")
        assert await g.get_relation(knows.id) is not None
        with pytest.raises(InvalidInput) as bad:
            await g.infer(rules=["astrology"])
        assert bad.value.field == "rules"

    # -- provenance, forgetting, portability --------------------------------------------

    async def test_deleting_an_entry_removes_what_only_it_supported(
        self, memory: AsyncMemory
    ) -> None:
        g = memory.graph
        thread = await memory.threads.create()
        e1 = await memory.entries.add(thread.id, {"role": "user", "content": "Alice in Paris"})
        e2 = await memory.entries.add(thread.id, {"role": "user", "content": "Alice likes tea"})
        alice = await g.add_entity("Alice", observations=["in Paris"], provenance=[e1.id])
        await g.add_observations(alice.id, ["likes tea"], provenance=[e2.id])
        await g.add_observations(alice.id, ["typed by hand"])
        paris = await g.add_entity("Paris")
        only = await g.add_relation(alice.id, "visited", paris.id, provenance=[e1.id])
        both = await g.add_relation(alice.id, "likes", paris.id, provenance=[e1.id, e2.id])
        manual = await g.add_relation(paris.id, "near", alice.id)
        assert await memory.entries.delete(thread.id, e1.id, cascade_facts=True)
        kept = await g.get_entity(alice.id)
        assert kept is not None and kept.observations == ("likes tea", "typed by hand")
        assert await g.get_relation(only.id) is None
        left = await g.get_relation(both.id)
        assert left is not None and left.provenance == (e2.id,)
        assert await g.get_relation(manual.id) == manual

    async def test_forget_user_removes_the_users_graph(self, memory: AsyncMemory) -> None:
        g = memory.graph
        shared = await g.add_entity("Paris")
        mine = await g.add_entity("My flat", user_id="alice", observations=["secret"])
        rel = await g.add_relation(shared.id, "has", mine.id, user_id="alice")
        on_shared = await g.add_relation(shared.id, "visited_by", shared.id, user_id="alice")
        theirs = await g.add_entity("Bob's", user_id="bob")
        await memory.forget_user("alice")
        assert await g.get_entity(mine.id, user_id="alice") is None
        assert await g.get_relation(rel.id, user_id="alice") is None
        assert await g.get_relation(on_shared.id, user_id="alice") is None
        assert await g.find_entities("my flat", user_id="alice") == []
        assert await g.get_entity(shared.id) == shared
        assert await g.get_entity(theirs.id, user_id="bob") == theirs
        again = await g.add_entity("My flat", user_id="alice")
        assert again.observations == ()

    async def test_stats_and_clear(self, memory: AsyncMemory) -> None:
        g = memory.graph
        a = await g.add_entity("A", type="person")
        b = await g.add_entity("B", type="person")
        c = await g.add_entity("C", type="place")
        await g.add_relation(a.id, "knows", b.id)
        old = await g.add_relation(a.id, "lives_in", c.id)
        await g.invalidate_relation(old.id)
        mine = await g.add_entity("Mine", user_id="u")
        await g.add_relation(mine.id, "knows", a.id, user_id="u")
        stats = await g.stats()
        assert (stats.entities, stats.relations, stats.valid_relations) == (3, 2, 1)
        assert stats.entity_types == {"person": 2, "place": 1}
        assert stats.relation_types == {"knows": 1, "lives_in": 1}
        assert (await g.stats(user_id="u")).entities == 4
        assert await g.clear(user_id="u") == 2
        assert (await g.stats(user_id="u")).entities == 3
        assert await g.clear() == 5
        assert (await g.stats()).entities == 0

    async def test_bad_input_is_refused_and_writes_nothing(self, memory: AsyncMemory) -> None:
        g = memory.graph
        a, b = await _entities(g, "A", "B")
        naive: Any = datetime(2020, 1, 1, tzinfo=UTC).replace(tzinfo=None)
        one: Any = 1
        up: Any = "up"
        text: Any = "x"
        cases: list[tuple[Any, str]] = [
            (lambda: g.add_entity(""), "name"),
            (lambda: g.add_entity("x", type=""), "type"),
            (lambda: g.add_entity("x", aliases="notalist"), "aliases"),
            (lambda: g.add_entity("x", observations=[one]), "observations"),
            (lambda: g.add_entity("x", properties={"a": float("nan")}), "properties"),
            (lambda: g.add_entity("x", confidence=2), "confidence"),
            (lambda: g.add_entity("x", source="magic"), "source"),
            (lambda: g.add_entity("x", user_id=one), "user_id"),
            (lambda: g.add_relation(a.id, "", b.id), "type"),
            (lambda: g.add_relation(a.id, "r", b.id, weight=0), "weight"),
            (lambda: g.add_relation(a.id, "r", b.id, weight=float("inf")), "weight"),
            (lambda: g.add_relation(a.id, "r", b.id, valid_at=naive), "valid_at"),
            (lambda: g.add_relation(a.id, "r", b.id, provenance="e1"), "provenance"),
            (lambda: g.add_relation(a.id, "r", b.id, bidirectional=text), "bidirectional"),
            (lambda: g.add_relation(a.id, "r", b.id, valid_at=JUN, invalid_at=JAN), "invalid_at"),
            (lambda: g.relations(a.id, direction=up), "direction"),
            (lambda: g.neighbors(a.id, depth=-1), "depth"),
            (lambda: g.traverse([a.id], max_nodes=-1), "max_nodes"),
            (lambda: g.shortest_path(a.id, b.id, max_depth=text), "max_depth"),
            (lambda: g.find_entities(limit=-1), "limit"),
            (lambda: g.search_entities(" "), "query"),
            (lambda: g.get_entity(""), "entity_id"),
        ]
        for call, field in cases:
            with pytest.raises(InvalidInput) as caught:
                await call()
            assert caught.value.field == field, (field, caught.value)
        # a cursor naming no entity the caller sees is gone, not malformed; merging an
        # entity into itself changes nothing
        with pytest.raises(NotFound):
            await g.find_entities(cursor="nope")
        assert (await g.merge_entities(a.id, a.id)).id == a.id
        assert _names(await g.find_entities()) == ["A", "B"]
        assert await g.relations(a.id, include_invalid=True) == []
