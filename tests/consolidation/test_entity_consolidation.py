"""Consolidation of graph entities on every store: aliases of one thing merged per owner
(relations re-pointed, the survivor's version naming the run), dry runs, the report,
undo that gives back every graph view exactly, owners never mixed, the judge's say."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memorybank import Memory
from memorybank.consolidation.entity_rules import alias_key
from memorybank.errors import Conflict
from memorybank.testing._embedder import SynonymEmbedder
from tests.all_stores import STORE_KINDS, open_store
from tests.consolidation.test_consolidation import Clock


@pytest.fixture(params=STORE_KINDS)
def memory(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Memory]:
    with open_store(request.param, tmp_path) as store:
        yield Memory(store, clock=Clock(), embedder=SynonymEmbedder(), tenant_id="cons-ent")


def graph_view(memory: Memory, user: str | None, ids: list[str]) -> dict[str, Any]:
    """Everything the graph API shows a user: entities (list, get, find by name and
    alias, search), relations of each (with history and inferred ones), neighbours,
    traversal, stats."""
    g = memory.graph

    def ent(e: Any) -> Any:
        return (
            e.id,
            e.name,
            e.type,
            e.aliases,
            e.observations,
            sorted(e.properties.items()),
            e.confidence,
            e.created_at,
            e.updated_at,
        )

    def rel(r: Any) -> Any:
        return (
            r.id,
            r.source_id,
            r.type,
            r.target_id,
            r.weight,
            r.valid_at,
            r.invalid_at,
            r.expired_at,
            r.provenance,
            r.confidence,
            r.source,
            r.support,
            r.label,
        )

    return {
        "list": [ent(e) for e in g.find_entities(user_id=user, limit=500)],
        "get": {i: None if (e := g.get_entity(i, user_id=user)) is None else ent(e) for i in ids},
        "names": {
            n: [e.id for e in g.find_entities(name=n, user_id=user)]
            for n in ("New York City", "NYC", "new-york city", "Alice", "Paris")
        },
        "search": [e.id for e in g.search_entities("york city", user_id=user)],
        "relations": {
            i: [
                rel(r)
                for r in g.relations(i, user_id=user, include_invalid=True, include_inferred=True)
            ]
            for i in ids
            if g.get_entity(i, user_id=user) is not None
        },
        "neighbors": {
            i: sorted(e.id for e in g.neighbors(i, user_id=user))
            for i in ids
            if g.get_entity(i, user_id=user) is not None
        },
        "stats": g.stats(user_id=user),
    }


def city_graph(memory: Memory, user: str = "u") -> dict[str, str]:
    g = memory.graph
    nyc = g.add_entity(
        "New York City",
        type="location",
        aliases=["NYC"],
        user_id=user,
        provenance=["e1"],
        observations=["has five boroughs"],
    )
    alias = g.add_entity("nyc", type="location", user_id=user, observations=["the big apple"])
    dashed = g.add_entity("New-York City!", type="location", user_id=user)
    alice = g.add_entity("Alice", type="person", user_id=user)
    paris = g.add_entity("Paris", type="location", user_id=user)
    acme = g.add_entity("Acme", type="organization", user_id=user)
    g.add_relation(alice.id, "lives_in", alias.id, user_id=user)  # functional: moves
    g.add_relation(alice.id, "visited", dashed.id, user_id=user, provenance=["e2"])
    g.add_relation(acme.id, "located_in", nyc.id, user_id=user)
    g.add_relation(dashed.id, "twinned_with", paris.id, user_id=user)
    return {
        "nyc": nyc.id,
        "alias": alias.id,
        "dashed": dashed.id,
        "alice": alice.id,
        "paris": paris.id,
        "acme": acme.id,
    }


def test_alias_key() -> None:
    assert alias_key("New-York City!") == alias_key("new york  city") == "new york city"
    assert alias_key("Café Luna") == alias_key("CAFE LUNA")
    assert alias_key("The Beatles") == alias_key("Beatles")
    assert alias_key("AT&T") == alias_key("at and t")
    assert alias_key("Dr. Smith") == alias_key("Dr Smith")
    assert alias_key("Mr Smith") != alias_key("Mrs Smith")


def test_aliases_merge_into_the_oldest_with_relations_repointed(memory: Memory) -> None:
    ids = city_graph(memory)
    report = memory.consolidate(user_id="u")
    assert report.entities_merged == 2
    by = {c.entity_id: c for c in report.entity_changes}
    assert set(by) == {ids["alias"], ids["dashed"]}
    assert {c.into for c in by.values()} == {ids["nyc"]}
    assert by[ids["alias"]].rule == "alias" and by[ids["dashed"]].rule == "name"
    assert by[ids["alias"]].relations_moved == 1 and by[ids["dashed"]].relations_moved == 2
    assert all(c.reason == "alias" and c.decided_by == "rules" for c in by.values())
    g = memory.graph
    kept = g.get_entity(ids["nyc"], user_id="u")
    assert kept is not None
    assert set(kept.aliases) == {"NYC", "New-York City!"}
    assert set(kept.observations) == {"has five boroughs", "the big apple"}
    assert kept.properties["consolidation_run"] == report.run_id
    assert kept.properties["consolidation_reason"] == "alias"
    assert sorted(kept.properties["merged_from"]) == sorted([ids["alias"], ids["dashed"]])
    assert g.get_entity(ids["alias"], user_id="u") is None
    assert g.get_entity(ids["dashed"], user_id="u") is None
    targets = {(r.type, r.target_id) for r in g.relations(ids["alice"], user_id="u")}
    assert targets == {("lives_in", ids["nyc"]), ("visited", ids["nyc"])}
    assert [r.target_id for r in g.relations(ids["nyc"], user_id="u", direction="out")] == [
        ids["paris"]
    ]
    assert [e.id for e in g.find_entities(name="new-york city", user_id="u")] == [ids["nyc"]]
    # the report is kept: the same changes read back, and listed with the run
    again = memory.consolidation.report(report.run_id)
    assert again.entity_changes == report.entity_changes
    assert report.run_id in [r.run_id for r in memory.consolidation.runs()]
    assert report.to_dict()["entity_changes"][0]["into_name"] == "New York City"
    # a second run finds nothing left to merge
    assert memory.consolidate(user_id="u").entity_changes == []


def test_dry_run_writes_nothing_and_reports_what_a_run_does(memory: Memory) -> None:
    ids = city_graph(memory)
    before = graph_view(memory, "u", list(ids.values()))
    dry = memory.consolidate(user_id="u", dry_run=True)
    assert graph_view(memory, "u", list(ids.values())) == before
    real = memory.consolidate(user_id="u")
    assert dry.entity_changes == real.entity_changes


def test_undo_restores_every_graph_view_exactly(memory: Memory) -> None:
    ids = city_graph(memory)
    memory.graph.infer(user_id="u")
    before = graph_view(memory, "u", list(ids.values()))
    report = memory.consolidate(user_id="u")
    assert graph_view(memory, "u", list(ids.values())) != before
    undone = memory.consolidation.undo(report.run_id)
    assert undone.status == "undone" and len(undone.entity_changes) == 2
    assert graph_view(memory, "u", list(ids.values())) == before
    with pytest.raises(Conflict):
        memory.consolidation.undo(report.run_id)
    # consolidating again after the undo does the same merges
    assert len(memory.consolidate(user_id="u").entity_changes) == 2


def test_undo_is_refused_when_the_graph_changed_after_the_run(memory: Memory) -> None:
    ids = city_graph(memory)
    report = memory.consolidate(user_id="u")
    memory.graph.add_observations(ids["nyc"], ["changed after the run"], user_id="u")
    after = graph_view(memory, "u", list(ids.values()))
    with pytest.raises(Conflict):
        memory.consolidation.undo(report.run_id)
    assert graph_view(memory, "u", list(ids.values())) == after


def test_owners_and_types_are_never_mixed(memory: Memory) -> None:
    g = memory.graph
    mine = g.add_entity("Paris", type="location", user_id="alice")
    theirs = g.add_entity("paris", type="location", user_id="bob")
    shared = g.add_entity("PARIS", type="location", user_id=None)
    agents = g.add_entity("Paris", type="location", user_id="alice", agent_id="bot")
    person = g.add_entity("Paris", type="person", user_id="alice")
    every = [mine.id, theirs.id, shared.id, agents.id, person.id]
    for user in ("alice", "bob", None):
        assert memory.consolidate(user_id=user).entity_changes == []
    for entity_id in every:
        assert (
            memory.graph.get_entity(entity_id, user_id=None) is not None or entity_id != shared.id
        )
    assert g.get_entity(theirs.id, user_id="bob") is not None
    assert g.get_entity(mine.id, user_id="alice") is not None
    assert g.get_entity(agents.id, user_id="alice", agent_id="bot") is not None
    assert g.get_entity(person.id, user_id="alice") is not None


def test_the_embedding_rule_merges_names_close_enough(memory: Memory) -> None:
    # SynonymEmbedder puts "car", "automobile" and "vehicle" on one axis
    g = memory.graph
    car = g.add_entity("car", type="object", user_id="u")
    auto = g.add_entity("automobile", type="object", user_id="u")
    tea = g.add_entity("tea", type="object", user_id="u")
    report = memory.consolidate(user_id="u")
    [change] = report.entity_changes
    assert (change.entity_id, change.into, change.rule) == (auto.id, car.id, "embedding")
    assert change.score is not None and change.score >= 0.92
    assert g.get_entity(tea.id, user_id="u") is not None


def test_without_an_embedder_only_names_and_aliases_decide(tmp_path: Path) -> None:
    with Memory("memory://", clock=Clock()) as memory:
        g = memory.graph
        car = g.add_entity("car", type="object", user_id="u")
        g.add_entity("automobile", type="object", user_id="u")
        g.add_entity("Bob", type="person", user_id="u")
        g.add_entity("Bob Smith", type="person", user_id="u")  # undecided: no judge
        g.add_entity("Car!", type="object", user_id="u")
        report = memory.consolidate(user_id="u")
        assert [(c.into, c.rule) for c in report.entity_changes] == [(car.id, "name")]
